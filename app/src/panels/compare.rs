//! Comparing schedules: every pinned baseline with its makespan, the current schedule's speedup
//! over it and an Unpin button, and per baseline the per-rank difference table `mpipe compare`
//! prints (baseline as A, current as B).

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
            let heads: Vec<(&str, &str)> = COMPARE_COLUMNS
                .iter()
                .map(|h| {
                    (
                        *h,
                        if h.ends_with('A') {
                            "the baseline"
                        } else if h.ends_with('B') {
                            "the current schedule"
                        } else {
                            ""
                        },
                    )
                })
                .collect();
            egui::CollapsingHeader::new(format!("Per rank: {} (A) vs current (B)", b.name))
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
