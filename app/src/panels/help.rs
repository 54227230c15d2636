//! The help window (F1): every keyboard shortcut from the one table, the mouse, and what the
//! per-rank figures mean.

use crate::command::{Command, SHORTCUTS, describe};
use egui::RichText;

/// Mouse gestures, in words.
const MOUSE: [(&str, &str); 8] = [
    (
        "wheel, pinch",
        "zoom the timeline at the pointer (the page does not scroll)",
    ),
    ("shift + wheel", "pan the timeline"),
    ("drag", "pan the timeline"),
    ("shift + drag", "zoom to the dragged box"),
    ("double-click", "show the whole step"),
    (
        "click an event",
        "select it: arrows to what it waits for and what waits for it, the critical path in gold",
    ),
    ("hover a transfer", "its collective, ranks and times"),
    (
        "drop files",
        "a scenario opens; traces are imported beside it",
    ),
];

/// Draws the help window while it is open; returns a command when it is closed.
pub fn help_ui(ctx: &egui::Context, open: bool) -> Vec<Command> {
    let mut still_open = open;
    if !open {
        return Vec::new();
    }
    egui::Window::new("Keyboard and mouse")
        .open(&mut still_open)
        .collapsible(false)
        .show(ctx, |ui| {
            egui::Grid::new("help").striped(true).show(ui, |ui| {
                for (shortcut, _, what) in SHORTCUTS {
                    ui.label(RichText::new(describe(shortcut)).monospace());
                    ui.label(*what);
                    ui.end_row();
                }
                for (keys, what) in MOUSE {
                    ui.label(RichText::new(keys).monospace());
                    ui.label(what);
                    ui.end_row();
                }
            });
            ui.separator();
            ui.label(RichText::new("Per-rank figures").strong());
            for (head, help) in mpipe::report::simulate::RANK_COLUMNS
                .iter()
                .zip(mpipe::report::simulate::RANK_COLUMN_HELP)
                .chain(
                    mpipe::report::simulate::STAGE_COLUMNS
                        .iter()
                        .zip(mpipe::report::simulate::STAGE_COLUMN_HELP),
                )
                .skip(1)
            {
                ui.label(RichText::new(format!("{head}: {help}")).small());
            }
        });
    if still_open {
        Vec::new()
    } else {
        vec![Command::ToggleHelp]
    }
}
