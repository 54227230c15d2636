//! Mpipe Studio: the egui app around the `mpipe` core. Nothing but UI and app state.

pub mod editors;
pub mod fonts;
pub mod gantt;
pub mod history;
pub mod palette;
pub mod samples;
pub mod stats;
pub mod studio;

pub use studio::Studio;

/// The eframe application.
#[derive(Debug, Default)]
pub struct StudioApp {
    pub studio: Studio,
}

impl eframe::App for StudioApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.studio.show(ui);
    }
}
