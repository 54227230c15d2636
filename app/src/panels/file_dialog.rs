//! The in-app file dialog for Open…, Save as…, Export SVG…/PNG… and Open traces…, drawn. It
//! works on every system (a bare X11 session has no desktop portal for a native dialog): a folder
//! you can type or walk (Up, Home, click a folder), the files of the right type, a file name for
//! saving, and every failure to read a folder said in the dialog. Its state is the state's
//! ([`crate::state::dialog`]).

use crate::command::Command;
use crate::state::dialog::{FileDialog, FilePurpose};
use egui::{Color32, RichText};
use std::path::PathBuf;

/// Draws the dialog. `Some(Some(command))` when confirmed, `Some(None)` when cancelled.
pub fn file_dialog_ui(dialog: &mut FileDialog, ctx: &egui::Context) -> Option<Option<Command>> {
    let mut result = None;
    let mut go: Option<PathBuf> = None;
    let modal = egui::Modal::new(egui::Id::unique("file dialog")).show(ctx, |ui| {
        ui.set_width(560.0);
        ui.heading(dialog.title());
        ui.horizontal(|ui| {
            let label = ui.label("Folder");
            let field = ui
                .add(egui::TextEdit::singleline(&mut dialog.dir_text).desired_width(330.0))
                .labelled_by(label.id);
            if ui.button("Go").clicked()
                || field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter))
            {
                go = Some(PathBuf::from(dialog.dir_text.trim()));
            }
            if ui.button("Up").clicked()
                && let Some(parent) = dialog.dir.parent()
            {
                go = Some(parent.to_path_buf());
            }
            if ui.button("Home").clicked()
                && let Some(home) = std::env::var_os("HOME")
            {
                go = Some(PathBuf::from(home));
            }
        });
        ui.separator();
        let mut confirm = false;
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
                                go = Some(entry.path.clone());
                            }
                            continue;
                        }
                        let chosen = dialog.chosen.contains(&entry.path);
                        let response = ui.selectable_label(chosen, &entry.name);
                        if response.clicked() {
                            if dialog.purpose == FilePurpose::OpenTraces {
                                if chosen {
                                    dialog.chosen.retain(|p| p != &entry.path);
                                } else {
                                    dialog.chosen.push(entry.path.clone());
                                }
                            } else {
                                dialog.chosen = vec![entry.path.clone()];
                                dialog.name = entry.name.clone();
                            }
                        }
                        if response.double_clicked() {
                            if !dialog.chosen.contains(&entry.path) {
                                dialog.chosen.push(entry.path.clone());
                            }
                            dialog.name = entry.name.clone();
                            confirm = true;
                        }
                    }
                    if *more > 0 {
                        ui.label(RichText::new(format!("… and {more} more not listed")).weak());
                    }
                }
            });
        ui.separator();
        if dialog.saving() {
            ui.horizontal(|ui| {
                let label = ui.label("File name");
                ui.add(egui::TextEdit::singleline(&mut dialog.name).desired_width(330.0))
                    .labelled_by(label.id);
            });
            if let Some(p) = dialog.replaces() {
                ui.label(
                    RichText::new(format!("{} exists and will be replaced", p.display())).small(),
                );
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
