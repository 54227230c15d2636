//! The frame loop: take finished background work, read the keys and dropped files, draw the
//! window (the panels return commands), and carry the commands out.

use crate::command::Command;
use crate::state::Studio;

impl Studio {
    /// Draws the whole window into `ui` and carries out what the user did.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        if self.poll() {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(30));
        }
        self.advance(ui);
        self.refresh();
        // The open file dialog has the keyboard: Escape closes it, and no shortcut opens another
        // dialog over it or acts behind it.
        let mut commands = if self.io.dialog.is_none() {
            crate::command::shortcuts(ui.ctx())
        } else {
            Vec::new()
        };
        let dropped = ui.input(|i| i.raw.dropped_files.clone());
        if !dropped.is_empty() {
            commands.push(Command::Dropped(dropped));
        }
        let (drawn, frame) = crate::panels::window_ui(ui, self);
        commands.extend(drawn);
        self.view.chart_rects = frame.chart_rects;
        self.view.figure_rect = frame.figure_rect;
        self.view.timeline_x = frame.timeline_x;
        self.view.memory_frame = frame.memory_frame;
        if let Some(dialog) = &self.io.dialog {
            commands.extend(crate::panels::file_dialog::file_dialog_ui(dialog, ui.ctx()));
        }
        // A gesture that edited the scenario (a drag, typing a name) has ended once its widget
        // is neither dragged nor has the keyboard.
        if let Some(id) = self.doc.gesture()
            && ui.ctx().dragged_id().is_none()
            && !ui.ctx().memory(|m| m.has_focus(id))
        {
            commands.push(Command::EndGesture);
        }
        if !commands.is_empty() {
            // What the commands changed is drawn next frame.
            ui.ctx().request_repaint();
        }
        for command in commands {
            command.apply(self, Some(ui.ctx()));
        }
        #[cfg(target_arch = "wasm32")]
        crate::state::browser::publish_state(&self.state_line());
    }

    /// Advances the teaching cursor while playing: the whole step in `10 s / speed`.
    fn advance(&mut self, ui: &egui::Ui) {
        let span = self.current_makespan();
        let Some(teach) = self.view.teach.as_mut() else {
            return;
        };
        if !teach.playing {
            return;
        }
        let dt = f64::from(ui.input(|i| i.stable_dt)).min(0.1);
        let next = teach.t + dt * teach.speed * (span / 10.0).max(1e-9);
        if next >= span {
            teach.t = span;
            teach.playing = false;
        } else {
            teach.t = next;
            ui.ctx().request_repaint();
        }
    }

    /// Computes what the panels read this frame and is not yet computed for the simulation on
    /// screen: the search matches and the trace comparison (each cached by what it is derived
    /// from, so this is free when nothing changed).
    fn refresh(&mut self) {
        if let Some(shown) = self.shown().cloned() {
            if self.view.search.open {
                self.view.search.matches(&shown);
            }
            self.traces.view(&shown);
        }
    }
}
