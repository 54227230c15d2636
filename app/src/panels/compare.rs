//! Comparing schedules: every pinned baseline with its makespan, the current schedule's speedup
//! over it and an Unpin button, and per baseline the per-rank difference table `mpipe compare`
//! prints, its columns named by the baseline's own letter and "now" for the current schedule
//! (`mpipe compare`'s A and B would clash with the baselines' letters).

use super::stats::table_ui;
use crate::command::Command;
use crate::state::Studio;
use egui::{RichText, Ui};
use mpipe::report::simulate::{COMPARE_COLUMNS, compare_rows};
use mpipe::vocab::units::secs;

/// Draws the comparison; returns what the user asked for.
pub fn compare_ui(ui: &mut Ui, studio: &Studio) -> Vec<Command> {
    let mut out = Vec::new();
    let current = studio.current();
    for (i, b) in studio.baselines.iter().enumerate() {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(&b.name).strong());
            let speedup = studio.speedup_over(i).map_or(String::new(), |x| {
                format!(" · speedup of the current schedule: {x:.3}×")
            });
            ui.label(format!(
                "makespan {}, bubble {:.1} %{speedup}",
                secs(b.shown.sim.makespan_s),
                100.0 * b.shown.sim.bubble_fraction
            ));
            if ui.small_button("Unpin").clicked() {
                out.push(Command::Unpin(i));
            }
        });
        if let Some(current) = current {
            let letter = baseline_letter(&b.name);
            let heads: Vec<(String, String)> = COMPARE_COLUMNS
                .iter()
                .map(|h| {
                    if let Some(what) = h.strip_suffix(" A") {
                        (format!("{what} {letter}"), format!("baseline {letter}"))
                    } else if let Some(what) = h.strip_suffix(" B") {
                        (format!("{what} now"), "the current schedule".to_string())
                    } else if h.starts_with('Δ') {
                        (h.to_string(), format!("now − baseline {letter}"))
                    } else {
                        (h.to_string(), String::new())
                    }
                })
                .collect();
            let heads: Vec<(&str, &str)> = heads
                .iter()
                .map(|(h, t)| (h.as_str(), t.as_str()))
                .collect();
            egui::CollapsingHeader::new(format!(
                "Per rank: baseline {letter} vs the current schedule (now)"
            ))
            .id_salt(("compare", i))
            .show(ui, |ui| {
                table_ui(
                    ui,
                    &format!("compare-{i}"),
                    &heads,
                    &compare_rows(&b.shown.sim, &current.sim),
                    |_, _| false,
                );
            });
        }
    }
    out
}

/// A baseline's letter (`B` of `B: gpipe · P = 4 · M = 8 …`).
pub fn baseline_letter(name: &str) -> &str {
    name.split(':').next().unwrap_or("")
}
