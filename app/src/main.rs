//! `mpipe-studio [SCENARIO.json] [TRACE...]`: opens the embedded default scenario (Mpipe
//! ⟨transpose, 1f1b⟩) or the last session's; a scenario file given on the command line opens
//! instead, and profiler traces given after it are imported for comparison.
//!
//! Built for the web (`app/web/build.sh`), the same app starts in the page's canvas: a scenario
//! in the address's fragment (`#scenario=…`, `#sample=…`) opens first, else the last session's
//! (kept in the browser's storage), else the default sample.

#![forbid(unsafe_code)] // the workspace denies it; only the `mpipe` CLI's allocator module may allow it

use mpipe_studio::StudioApp;

/// mimalloc keeps freed memory for reuse: a derivation frees and allocates blocks of the same
/// sizes without page-faulting each in again; its v2 line (the workspace's choice) gives what
/// stays free back to the kernel after 10 ms, so the memory of an edit's last schedule, or of an
/// import's growing lists, is not held while the app waits.
#[cfg(not(target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> eframe::Result {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Mpipe Studio")
            .with_inner_size([1500.0, 900.0]),
        ..Default::default()
    };
    let args: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    eframe::run_native(
        "Mpipe Studio",
        options,
        Box::new(move |cc| {
            mpipe_studio::fonts::install(&cc.egui_ctx);
            let mut app = StudioApp::restore(cc.storage);
            // Read on a worker: the window appears at once, even for a FIFO or a slow disk.
            app.studio.open_given(args);
            Ok(Box::new(app))
        }),
    )
}

/// The page's canvas (`index.html`'s `mpipe_canvas`) runs the app; a start that fails says why
/// in the page's loading line.
#[cfg(target_arch = "wasm32")]
fn main() {
    use mpipe_studio::state::browser;
    use wasm_bindgen::JsCast;
    let document = web_sys::window().and_then(|w| w.document());
    let canvas = document
        .as_ref()
        .and_then(|d| d.get_element_by_id("mpipe_canvas"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok());
    let say = move |text: &str| {
        if let Some(line) = document
            .as_ref()
            .and_then(|d| d.get_element_by_id("mpipe_loading"))
        {
            line.set_text_content(Some(text));
        }
    };
    let Some(canvas) = canvas else {
        say("Mpipe Studio: the page has no canvas `mpipe_canvas`");
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let started = eframe::WebRunner::new()
            .start(
                canvas,
                eframe::WebOptions::default(),
                Box::new(|cc| {
                    mpipe_studio::fonts::install(&cc.egui_ctx);
                    browser::set_context(&cc.egui_ctx);
                    let mut app = StudioApp::restore(cc.storage);
                    app.studio.follow_address();
                    Ok(Box::new(app))
                }),
            )
            .await;
        match started {
            Ok(()) => say(""),
            Err(e) => say(&format!("Mpipe Studio could not start: {e:?}")),
        }
    });
}
