//! The top bar: File and View menus, the sample chooser, Undo/Redo, pinning baselines, Teach and
//! Help. It wraps onto a second row rather than cut anything off on a narrow window.

use crate::command::{Command, SHORTCUTS, describe};
use crate::samples::SAMPLES;
use crate::state::Studio;
use crate::state::dialog::FilePurpose;
use egui::RichText;

/// The shortcut text of the first binding of `key` (for menu entries).
fn keys_of(key: crate::command::KeyCommand) -> String {
    SHORTCUTS
        .iter()
        .find(|(_, k, _)| *k == key)
        .map_or(String::new(), |(s, _, _)| describe(s))
}

fn file_menu_ui(ui: &mut egui::Ui, studio: &Studio, out: &mut Vec<Command>) {
    use crate::command::KeyCommand;
    ui.menu_button("File", |ui| {
        let item = |ui: &mut egui::Ui, label: &str, keys: String| {
            let button = egui::Button::new(label);
            let button = if keys.is_empty() {
                button
            } else {
                button.shortcut_text(keys)
            };
            ui.add(button).clicked()
        };
        if item(ui, "Open…", keys_of(KeyCommand::Open)) {
            out.push(Command::ShowFileDialog(FilePurpose::OpenScenario));
        }
        if item(ui, "Save", keys_of(KeyCommand::Save)) {
            out.push(Command::Save);
        }
        if item(ui, "Save as…", String::new()) {
            out.push(Command::ShowFileDialog(FilePurpose::SaveScenario));
        }
        ui.separator();
        if item(ui, "Export SVG…", String::new()) {
            out.push(Command::ShowFileDialog(FilePurpose::ExportSvg));
        }
        if item(ui, "Export PNG…", String::new()) {
            out.push(Command::ShowFileDialog(FilePurpose::ExportPng));
        }
        ui.separator();
        if item(ui, "Open traces…", String::new()) {
            out.push(Command::ShowFileDialog(FilePurpose::OpenTraces));
        }
        if item(ui, "Share link", String::new()) {
            out.push(Command::ShareLink);
        }
        // The browser keeps no paths: Recent is the desktop's.
        if cfg!(not(target_arch = "wasm32")) {
            ui.separator();
            ui.add_enabled_ui(!studio.io.recent.is_empty(), |ui| {
                ui.menu_button("Recent", |ui| {
                    for r in &studio.io.recent {
                        if ui.button(r).clicked() {
                            out.push(Command::OpenPath(r.into()));
                        }
                    }
                });
            });
        }
    });
}

fn view_menu_ui(ui: &mut egui::Ui, studio: &Studio, out: &mut Vec<Command>) {
    use crate::command::KeyCommand;
    ui.menu_button("View", |ui| {
        let mut legend = studio.view.show_legend;
        if ui.checkbox(&mut legend, "Legend").changed() {
            out.push(Command::ToggleLegend);
        }
        if ui
            .add(egui::Button::new("Search events…").shortcut_text(keys_of(KeyCommand::Search)))
            .clicked()
        {
            out.push(Command::ToggleSearch);
        }
        if ui
            .add(egui::Button::new("Fit the selection").shortcut_text(keys_of(KeyCommand::Fit)))
            .clicked()
        {
            out.push(Command::FitSelection);
        }
        if ui.button("Show the whole step").clicked() {
            out.push(Command::FitAll);
        }
    });
}

/// Draws the top bar; returns what the user asked for.
pub fn top_bar_ui(ui: &mut egui::Ui, studio: &Studio) -> Vec<Command> {
    let mut out = Vec::new();
    ui.horizontal_wrapped(|ui| {
        ui.heading("Mpipe Studio");
        ui.separator();
        file_menu_ui(ui, studio, &mut out);
        view_menu_ui(ui, studio, &mut out);
        ui.separator();
        let current = SAMPLES
            .iter()
            .find(|s| s.file == studio.source())
            .map_or(studio.source(), |s| s.title);
        // Tall enough for every sample where the window is (at 1280×720 the default height hid
        // the last one with no hint that the list scrolls).
        let room = ui.ctx().content_rect().height() - ui.max_rect().bottom() - 16.0;
        egui::ComboBox::from_label("Sample")
            .selected_text(current.to_string())
            .width(230.0)
            .height(room.max(200.0))
            .truncate()
            .show_ui(ui, |ui| {
                // Columns of at most 10 samples: every one shows without scrolling at 1280×720.
                let columns = SAMPLES.len().div_ceil(10).max(1);
                let per_column = SAMPLES.len().div_ceil(columns).max(1);
                ui.horizontal_top(|ui| {
                    for column in SAMPLES.chunks(per_column) {
                        ui.vertical(|ui| {
                            for sample in column {
                                if ui
                                    .selectable_label(sample.file == studio.source(), sample.title)
                                    .clicked()
                                {
                                    out.push(Command::OpenSample(sample));
                                }
                            }
                        });
                    }
                });
            });
        ui.separator();
        if ui
            .add_enabled(studio.doc.can_undo(), egui::Button::new("Undo"))
            .on_hover_text("Ctrl+Z")
            .clicked()
        {
            out.push(Command::Undo);
        }
        if ui
            .add_enabled(studio.doc.can_redo(), egui::Button::new("Redo"))
            .on_hover_text("Ctrl+Shift+Z or Ctrl+Y")
            .clicked()
        {
            out.push(Command::Redo);
        }
        ui.separator();
        if ui
            .add_enabled(studio.shown().is_some(), egui::Button::new("Pin as baseline"))
            .on_hover_text("keep this schedule on screen to compare edits against (pin several)")
            .clicked()
        {
            out.push(Command::PinBaseline);
        }
        if !studio.baselines.is_empty() && ui.button("Unpin all").clicked() {
            out.push(Command::UnpinAll);
        }
        let mut teach = studio.view.teach.is_some();
        if ui
            .checkbox(&mut teach, "Teach")
            .on_hover_text("a time cursor that steps or plays through the step, saying what every rank does and why it waits")
            .changed()
        {
            out.push(Command::ToggleTeach);
        }
        if ui.button(RichText::new("Help (F1)")).clicked() {
            out.push(Command::ToggleHelp);
        }
    });
    out
}
