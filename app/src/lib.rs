//! Mpipe Studio: the egui app around the `mpipe` core. Nothing but UI and app state, in floors
//! (a module imports only from floors below its own; `core/tests/architecture.rs` checks it):
//! `geometry` (pure time ↔ pixel and lane layout), `samples` and `fonts`; `state` (the document,
//! what is derived from it, the view, jobs, traces, analyses); `command` (every user action);
//! `timeline` (the charts, painted) and `panels` (draw the state, return commands); `apply`
//! (carries a command out); `frame` (the frame loop).

#![forbid(unsafe_code)] // the workspace denies it; only the `mpipe` CLI's allocator module may allow it

pub mod apply;
pub mod command;
pub mod fonts;
pub mod frame;
pub mod geometry;
pub mod panels;
pub mod samples;
pub mod state;
pub mod timeline;

pub use state::Studio;

/// The key the last session's scenario is stored under (eframe persistence).
pub const SESSION_KEY: &str = "mpipe-studio/scenario";
/// The key of the recent-files list.
pub const RECENT_KEY: &str = "mpipe-studio/recent";
/// The key of the folder the file dialogs last confirmed in.
pub const FOLDER_KEY: &str = "mpipe-studio/folder";

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
            app.studio.open_text(&text, "last session", None);
            app.studio.doc.clear_history();
        }
        if let Some(recent) = storage
            .and_then(|s| s.get_string(RECENT_KEY))
            .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
        {
            app.studio.io.recent = recent;
        }
        app.studio.io.folder = storage
            .and_then(|s| s.get_string(FOLDER_KEY))
            .map(std::path::PathBuf::from);
        app
    }
}

impl eframe::App for StudioApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.studio.show(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if let Some(s) = self.studio.scenario() {
            storage.set_string(SESSION_KEY, s.to_json_string());
        }
        if let Ok(recent) = serde_json::to_string(&self.studio.io.recent) {
            storage.set_string(RECENT_KEY, recent);
        }
        if let Some(folder) = self.studio.io.folder.as_ref().and_then(|f| f.to_str()) {
            storage.set_string(FOLDER_KEY, folder.to_string());
        }
    }
}
