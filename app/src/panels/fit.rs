//! Beside the memory plot's capacity line: fit the schedule under the device's capacity by
//! offload and recomputation per stage (`mpipe fit-memory`), with progress and Cancel while it
//! runs, what it chose and what it costs, and a button to use the fitted scenario.

use crate::command::Command;
use crate::state::Studio;
use egui::{RichText, Ui};
use mpipe::tune::fit_memory::{MemoryChoice, MemoryFit};
use mpipe::vocab::units::{bytes, secs};

/// The fit row, shown when the hardware gives a capacity.
pub fn fit_ui(ui: &mut Ui, studio: &Studio, over_capacity: bool, out: &mut Vec<Command>) {
    let Some(capacity) = studio
        .scenario()
        .and_then(|s| s.hardware.as_ref())
        .and_then(|h| h.memory_bytes)
    else {
        return;
    };
    ui.horizontal_wrapped(|ui| {
        match &studio.analyses.fit.running {
            Some(r) => {
                ui.add(egui::ProgressBar::new(r.job.progress()).desired_width(160.0));
                if ui.button("Cancel fit").clicked() {
                    out.push(Command::CancelFit);
                }
            }
            None => {
                let label = format!("Fit under {}", bytes(capacity));
                if ui
                    .button(label)
                    .on_hover_text(
                        "The cheapest offload or full recomputation per stage that brings every rank's peak under the device's capacity (mpipe fit-memory)",
                    )
                    .clicked()
                {
                    out.push(Command::FitMemory);
                }
            }
        }
        if over_capacity {
            ui.label(RichText::new("a rank is over the device's capacity").small());
        }
    });
    if let Some(fit) = studio.analyses.fit.current(studio.doc.generation()) {
        result_ui(ui, fit, out);
    }
}

/// What the fit found: the step and peaks it costs and each stage's choice, or why nothing fits.
fn result_ui(ui: &mut Ui, fit: &MemoryFit, out: &mut Vec<Command>) {
    let top = |peaks: &[f64]| peaks.iter().copied().fold(0.0, f64::max);
    let chosen: Vec<String> = fit
        .stages
        .iter()
        .filter(|s| s.choice != MemoryChoice::Keep)
        .map(|s| {
            let ranks: Vec<String> = s.ranks.iter().map(usize::to_string).collect();
            format!(
                "layers {}..{} (rank {}): {}",
                s.layers.start,
                s.layers.end,
                ranks.join(","),
                s.choice.label()
            )
        })
        .collect();
    match (&fit.after, fit.smallest_peak) {
        (Some(after), _) if chosen.is_empty() => {
            ui.label(
                RichText::new(format!(
                    "fits under {} as given (highest peak {})",
                    bytes(fit.cap_bytes),
                    bytes(top(&after.peaks_bytes))
                ))
                .small(),
            );
        }
        (Some(after), _) => {
            let added = after.makespan_s - fit.before.makespan_s;
            ui.horizontal_wrapped(|ui| {
                ui.label(
                    RichText::new(format!(
                        "fits under {}: step {} → {} ({}{}), highest peak {} → {}",
                        bytes(fit.cap_bytes),
                        secs(fit.before.makespan_s),
                        secs(after.makespan_s),
                        if added >= 0.0 { "+" } else { "" },
                        secs(added),
                        bytes(top(&fit.before.peaks_bytes)),
                        bytes(top(&after.peaks_bytes)),
                    ))
                    .small(),
                );
                if ui.button("Use the fit").clicked() {
                    out.push(Command::UseFit);
                }
            });
            ui.label(RichText::new(chosen.join("; ")).small());
        }
        (None, Some((rank, peak))) => {
            ui.label(
                RichText::new(format!(
                    "nothing {}fits under {}: rank {rank} goes no lower than {}",
                    if fit.budget_reached {
                        "the search reached within its budget "
                    } else {
                        ""
                    },
                    bytes(fit.cap_bytes),
                    bytes(peak)
                ))
                .small(),
            );
        }
        (None, None) => {}
    }
}
