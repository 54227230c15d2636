//! The selection's details: the event, when it runs, its slack, whether it is on the critical
//! path, what it waits for and what waits for it (the arrows on the timeline), with buttons to
//! fit it into view, select a neighbour or clear.

use crate::command::Command;
use crate::state::derived::Shown;
use egui::{RichText, Ui};
use mpipe::vocab::units::secs;

/// Draws the details of event `index` of `shown`; returns what the user asked for.
pub fn selection_ui(ui: &mut Ui, shown: &Shown, index: usize) -> Vec<Command> {
    let mut out = Vec::new();
    let scene = &shown.scene;
    let Some(e) = scene.events.get(index) else {
        return out;
    };
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("Selected: {}", e.action)).strong());
            if let Some([what, place, when]) = shown.describe(index) {
                ui.label(format!("{what} · {place} · {when}"));
            }
            if ui.button("Fit (F)").clicked() {
                out.push(Command::FitSelection);
            }
            if ui.button("Clear (Esc)").clicked() {
                out.push(Command::Select(None));
            }
        });
        let deps = scene.dependencies(&shown.sim, index);
        for (title, upstream) in [("waits for", true), ("feeds", false)] {
            let list: Vec<(usize, mpipe::graph::event::EdgeKind)> = deps
                .iter()
                .filter(|d| {
                    if upstream {
                        d.to == index
                    } else {
                        d.from == index
                    }
                })
                .map(|d| (if upstream { d.from } else { d.to }, d.kind))
                .collect();
            if list.is_empty() {
                continue;
            }
            ui.horizontal_wrapped(|ui| {
                ui.label(RichText::new(title).small());
                for (other, kind) in list {
                    let Some(o) = scene.events.get(other) else {
                        continue;
                    };
                    if ui
                        .small_button(format!("{} (rank {}, {kind:?})", o.action, o.rank))
                        .on_hover_text(format!("{} → {}", secs(o.start_s), secs(o.end_s)))
                        .clicked()
                    {
                        out.push(Command::Select(Some(other)));
                    }
                }
            });
        }
    });
    out
}
