//! `mpipe-studio [SCENARIO.json] [TRACE...]`: opens the embedded default scenario (Mpipe
//! ⟨transpose, 1f1b⟩) or the last session's; a scenario file given on the command line opens
//! instead, and profiler traces given after it are imported for comparison.

use mpipe::trace::looks_like_trace;
use mpipe_studio::StudioApp;
use mpipe_studio::traces::TraceSource;

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
            let mut traces = Vec::new();
            for path in args {
                let mut head = [0u8; 4096];
                let n = std::fs::File::open(&path)
                    .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                    .unwrap_or(0);
                if looks_like_trace(head.get(..n).unwrap_or_default()) {
                    traces.push(TraceSource::Path(path));
                } else {
                    app.studio.open_path(&path);
                }
            }
            app.studio.open_traces(traces);
            Ok(Box::new(app))
        }),
    )
}
