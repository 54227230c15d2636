//! The in-app file dialog for Open…, Save as…, Export SVG…/PNG… and Open traces…, drawn. It
//! works on every system (a bare X11 session has no desktop portal for a native dialog): a folder
//! you can type or walk (Up, Home, click a folder), the files of the right type, a file name for
//! saving, and every failure to read a folder said in the dialog. Its state is the state's
//! ([`crate::state::dialog`]).

use crate::command::Command;
use crate::state::dialog::{Entry, FileDialog, FilePurpose};
use egui::{Color32, RichText};
use std::path::PathBuf;

/// Draws the dialog. `Some(Some(command))` when confirmed, `Some(None)` when cancelled.
pub fn file_dialog_ui(dialog: &mut FileDialog, ctx: &egui::Context) -> Option<Option<Command>> {
    let mut result = None;
    let mut go: Option<PathBuf> = None;
    let modal = egui::Modal::new(egui::Id::unique("file dialog")).show(ctx, |ui| {
        ui.set_width(560.0);
        ui.heading(dialog.title());
        folder_bar_ui(ui, dialog, &mut go);
        ui.separator();
        let mut confirm = listing_ui(ui, dialog, &mut go);
        ui.separator();
        choice_ui(ui, dialog);
        ui.horizontal(|ui| {
            if ui.button(dialog.confirm_label()).clicked() {
                confirm = true;
            }
            if ui.button("Cancel").clicked() {
                result = Some(None);
            }
        });
        if confirm {
            match dialog.outcome() {
                Ok(chosen) => result = Some(Some(Command::from(chosen))),
                Err(e) => dialog.error = Some(e),
            }
        }
    });
    if modal.should_close() && result.is_none() {
        result = Some(None);
    }
    if let Some(dir) = go {
        dialog.navigate(&dir);
    }
    result
}

/// The folder as typed (Go, or Enter), Up and Home; `go` gets the folder to show next.
fn folder_bar_ui(ui: &mut egui::Ui, dialog: &mut FileDialog, go: &mut Option<PathBuf>) {
    ui.horizontal(|ui| {
        let label = ui.label("Folder");
        let field = ui
            .add(egui::TextEdit::singleline(&mut dialog.dir_text).desired_width(330.0))
            .labelled_by(label.id);
        if ui.button("Go").clicked()
            || field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter))
        {
            *go = Some(PathBuf::from(dialog.dir_text.trim()));
        }
        if ui.button("Up").clicked()
            && let Some(parent) = dialog.dir.parent()
        {
            *go = Some(parent.to_path_buf());
        }
        if ui.button("Home").clicked()
            && let Some(home) = std::env::var_os("HOME")
        {
            *go = Some(PathBuf::from(home));
        }
    });
}

/// The folder's entries (or why it cannot be read): a folder clicked is shown next, a file
/// clicked is chosen; true when a file was double-clicked (confirm).
fn listing_ui(ui: &mut egui::Ui, dialog: &mut FileDialog, go: &mut Option<PathBuf>) -> bool {
    let mut confirm = false;
    let mut clicked: Option<(Entry, bool)> = None;
    egui::ScrollArea::vertical()
        .max_height(300.0)
        .auto_shrink([false, false])
        .show(ui, |ui| match &dialog.listing {
            Err(e) => {
                ui.colored_label(Color32::from_rgb(0xE0, 0x50, 0x50), e);
            }
            Ok((entries, more)) => {
                if entries.is_empty() {
                    ui.label(RichText::new("(no folders or files of this type here)").weak());
                }
                for entry in entries {
                    if entry.is_dir {
                        if ui
                            .selectable_label(false, format!("▸ {}/", entry.name))
                            .clicked()
                        {
                            *go = Some(entry.path.clone());
                        }
                        continue;
                    }
                    let response =
                        ui.selectable_label(dialog.chosen.contains(&entry.path), &entry.name);
                    if response.double_clicked() {
                        clicked = Some((entry.clone(), true));
                    } else if response.clicked() {
                        clicked = Some((entry.clone(), false));
                    }
                }
                if *more > 0 {
                    ui.label(RichText::new(format!("… and {more} more not listed")).weak());
                }
            }
        });
    match clicked {
        Some((entry, true)) => {
            dialog.double_click(&entry);
            confirm = true;
        }
        Some((entry, false)) => dialog.click(&entry),
        None => {}
    }
    confirm
}

/// The file name (saving, with a warning when it replaces a file) or how many traces are chosen,
/// and the last error.
fn choice_ui(ui: &mut egui::Ui, dialog: &mut FileDialog) {
    if dialog.saving() {
        ui.horizontal(|ui| {
            let label = ui.label("File name");
            ui.add(egui::TextEdit::singleline(&mut dialog.name).desired_width(330.0))
                .labelled_by(label.id);
        });
        if let Some(p) = dialog.replaces() {
            ui.label(RichText::new(format!("{} exists and will be replaced", p.display())).small());
        }
    } else if dialog.purpose == FilePurpose::OpenTraces {
        ui.label(
            RichText::new(format!(
                "{} file(s) chosen: click files to choose several (one per rank)",
                dialog.chosen.len()
            ))
            .small(),
        );
    }
    if let Some(e) = &dialog.error {
        ui.colored_label(Color32::from_rgb(0xE0, 0x50, 0x50), e);
    }
}
