//! Mpipe Studio: the egui app around the `mpipe` core. Nothing but UI and app state.

pub mod cut_strip;
pub mod editors;
pub mod files;
pub mod fonts;
pub mod gantt;
pub mod history;
pub mod palette;
pub mod png_export;
pub mod presets;
pub mod samples;
pub mod stats;
pub mod studio;
pub mod trace_view;
pub mod traces;
pub mod workload_bars;

pub use studio::Studio;

/// The key the last session's scenario is stored under (eframe persistence).
pub const SESSION_KEY: &str = "mpipe-studio/scenario";
/// The key of the recent-files list.
pub const RECENT_KEY: &str = "mpipe-studio/recent";

/// The eframe application.
#[derive(Debug, Default)]
pub struct StudioApp {
    pub studio: Studio,
}

impl StudioApp {
    /// Starts on the last session's scenario when there is a valid one, else on the default sample.
    pub fn restore(storage: Option<&dyn eframe::Storage>) -> Self {
        let mut app = StudioApp::default();
        if let Some(text) = storage.and_then(|s| s.get_string(SESSION_KEY))
            && mpipe::Scenario::from_json_str(&text, "last session").is_ok()
        {
            app.studio.open_text(&text, "last session");
            app.studio.history = history::History::default();
        }
        if let Some(recent) = storage
            .and_then(|s| s.get_string(RECENT_KEY))
            .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        {
            app.studio.recent = recent;
        }
        app
    }
}

impl eframe::App for StudioApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.studio.show(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if let Some(s) = &self.studio.scenario {
            storage.set_string(SESSION_KEY, s.to_json_string());
        }
        if let Ok(recent) = serde_json::to_string(&self.studio.recent) {
            storage.set_string(RECENT_KEY, recent);
        }
    }
}
