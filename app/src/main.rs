//! `mpipe-studio [SCENARIO.json] [TRACE...]`: opens the embedded default scenario (Mpipe
//! ⟨transpose, 1f1b⟩) or the last session's; a scenario file given on the command line opens
//! instead, and profiler traces given after it are imported for comparison.

use mpipe_studio::StudioApp;

/// mimalloc keeps freed memory for reuse: re-deriving a million-event schedule after each edit
/// does not page-fault its graph in again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
