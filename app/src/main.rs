//! `mpipe-studio`: opens the embedded default scenario (Mpipe ⟨transpose, 1f1b⟩).

use mpipe_studio::StudioApp;

fn main() -> eframe::Result {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Mpipe Studio")
            .with_inner_size([1500.0, 900.0]),
        ..Default::default()
    };
    eframe::run_native(
        "Mpipe Studio",
        options,
        Box::new(|cc| {
            mpipe_studio::fonts::install(&cc.egui_ctx);
            Ok(Box::new(StudioApp::restore(cc.storage)))
        }),
    )
}
