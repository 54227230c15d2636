//! The in-app file dialog for Open…, Save as…, Export SVG…/PNG… and Open traces…, drawn. It
//! works on every system (a bare X11 session has no desktop portal for a native dialog): a folder
//! you can type or walk (Up, Home, click a folder), the files of the right type, a file name for
//! saving, and every failure to read a folder said in the dialog. Its state is the state's
//! ([`crate::state::dialog`]); like every panel it draws that state read-only and returns what the
//! user did (`Command::Dialog`), which `apply` carries out.

use crate::command::Command;
use crate::state::dialog::{DialogAction, FileDialog, FilePurpose};
use egui::{Color32, RichText};
use std::path::PathBuf;

/// Draws the dialog; what the user did, in order.
pub fn file_dialog_ui(dialog: &FileDialog, ctx: &egui::Context) -> Vec<Command> {
    let mut actions = Vec::new();
    let modal = egui::Modal::new(egui::Id::unique("file dialog")).show(ctx, |ui| {
        ui.set_width(560.0);
        ui.heading(dialog.title());
        folder_bar_ui(ui, dialog, &mut actions);
        ui.separator();
        listing_ui(ui, dialog, &mut actions);
        ui.separator();
        choice_ui(ui, dialog, &mut actions);
        ui.horizontal(|ui| {
            if ui.button(dialog.confirm_label()).clicked() {
                actions.push(DialogAction::Confirm);
            }
            if ui.button("Cancel").clicked() {
                actions.push(DialogAction::Cancel);
            }
        });
    });
    // Escape or a click beside the dialog closes it, whatever else happened in the frame, unless
    // it was confirmed or cancelled already.
    let decided = actions
        .iter()
        .any(|a| matches!(a, DialogAction::Confirm | DialogAction::Cancel));
    if modal.should_close() && !decided {
        actions.push(DialogAction::Cancel);
    }
    actions.into_iter().map(Command::Dialog).collect()
}

/// The folder as typed (Go, or Enter), Up and Home.
fn folder_bar_ui(ui: &mut egui::Ui, dialog: &FileDialog, out: &mut Vec<DialogAction>) {
    ui.horizontal(|ui| {
        let label = ui.label("Folder");
        let mut text = dialog.dir_text.clone();
        let field = ui
            .add(egui::TextEdit::singleline(&mut text).desired_width(330.0))
            .labelled_by(label.id);
        if field.changed() {
            out.push(DialogAction::FolderText(text.clone()));
        }
        if ui.button("Go").clicked()
            || field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter))
        {
            out.push(DialogAction::Navigate(PathBuf::from(text.trim())));
        }
        if ui.button("Up").clicked()
            && let Some(parent) = dialog.dir.parent()
        {
            out.push(DialogAction::Navigate(parent.to_path_buf()));
        }
        if ui.button("Home").clicked()
            && let Some(home) = std::env::var_os("HOME")
        {
            out.push(DialogAction::Navigate(PathBuf::from(home)));
        }
    });
}

/// The folder's entries (or why it cannot be read): a folder clicked is shown next, a file
/// clicked is chosen, a file double-clicked is chosen and confirmed.
fn listing_ui(ui: &mut egui::Ui, dialog: &FileDialog, out: &mut Vec<DialogAction>) {
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
                            out.push(DialogAction::Navigate(entry.path.clone()));
                        }
                        continue;
                    }
                    let response =
                        ui.selectable_label(dialog.chosen.contains(&entry.path), &entry.name);
                    if response.double_clicked() {
                        out.push(DialogAction::DoubleClick(entry.clone()));
                        out.push(DialogAction::Confirm);
                    } else if response.clicked() {
                        out.push(DialogAction::Click(entry.clone()));
                    }
                }
                if *more > 0 {
                    ui.label(RichText::new(format!("… and {more} more not listed")).weak());
                }
            }
        });
}

/// The file name (saving, with a warning when it replaces a file) or how many traces are chosen,
/// and the last error.
fn choice_ui(ui: &mut egui::Ui, dialog: &FileDialog, out: &mut Vec<DialogAction>) {
    if dialog.saving() {
        ui.horizontal(|ui| {
            let label = ui.label("File name");
            let mut text = dialog.name.clone();
            let field = ui
                .add(egui::TextEdit::singleline(&mut text).desired_width(330.0))
                .labelled_by(label.id);
            if field.changed() {
                out.push(DialogAction::NameText(text));
            }
            // Enter in the name field confirms, as the Save / Export button does.
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                out.push(DialogAction::Confirm);
            }
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
