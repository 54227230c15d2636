//! OctoPipe's tuner: Tune / Stop, the search live (iteration, phase, step time against the
//! iteration), each iteration's change, and a button to make the scenario the tuned pipeline.

use super::plots::{self, Entry};
use crate::command::Command;
use crate::state::Studio;
use egui::{RichText, Ui};
use egui_plot::{Line, Plot, PlotPoints, Points};
use mpipe::tune::octopipe::{Iteration, Tuned};
use mpipe::vocab::units::secs;

/// The tuner section.
pub fn tuner_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    egui::CollapsingHeader::new("Tune (OctoPipe): partitioning, placement, scheduling")
        .id_salt("tuner")
        .show(ui, |ui| {
            let generation = studio.doc.generation();
            let tuner = &studio.analyses.tuner;
            let (iterations, done) = match (&tuner.running, tuner.current(generation)) {
                (Some(r), _) => (r.iterations(), None),
                (None, Some(t)) => (t.iterations.clone(), Some(t)),
                (None, None) => (Vec::new(), None),
            };
            controls_ui(ui, studio, iterations.len(), done, out);
            let Some(last) = iterations.last() else {
                ui.label(
                    RichText::new(
                        "Each iteration measures the bubbles and tunes the phase they call for (the device's capacity caps memory).",
                    )
                    .small(),
                );
                return;
            };
            match done {
                Some(t) => {
                    ui.label(
                        RichText::new(format!(
                            "{} → {} (bubble {:.1} % → {:.1} %){}",
                            secs(t.start_makespan_s),
                            secs(t.makespan_s),
                            100.0 * t.start_bubble_fraction,
                            100.0 * t.bubble_fraction,
                            if t.stopped { ", stopped" } else { "" }
                        ))
                        .strong(),
                    );
                }
                None => {
                    ui.label(format!(
                        "iteration {}: {} — {}",
                        last.index,
                        last.phase.name(),
                        last.change
                    ));
                }
            }
            // The start at 0 (the tuned result's, or the simulation on screen, which is the
            // document the search started from), then each iteration's kept step at its number.
            let start = done.map(|t| t.start_makespan_s).or_else(|| {
                studio
                    .shown()
                    .filter(|_| {
                        tuner
                            .running
                            .as_ref()
                            .is_some_and(|r| r.generation == generation)
                    })
                    .map(|s| s.sim.makespan_s)
            });
            plot_ui(ui, start, &iterations);
            log_ui(ui, &iterations);
        });
}

/// Tune / Stop (with the progress), and Use when the search found a faster pipeline.
fn controls_ui(
    ui: &mut Ui,
    studio: &Studio,
    iterations: usize,
    done: Option<&Tuned>,
    out: &mut Vec<Command>,
) {
    ui.horizontal(|ui| match &studio.analyses.tuner.running {
        Some(r) => {
            ui.add(
                egui::ProgressBar::new(r.job.progress())
                    .desired_width(160.0)
                    .text(format!("iteration {iterations} of at most {}", r.budget)),
            );
            if ui.button("Stop tuning").clicked() {
                out.push(Command::StopTuner);
            }
        }
        None => {
            if ui.button("Tune the pipeline").clicked() {
                out.push(Command::StartTuner);
            }
            let mut only = studio.analyses.tuner.own_moves_only;
            if ui
                .checkbox(&mut only, "OctoPipe's own moves only")
                .on_hover_text(
                    "the scheduling phase tries only the split backward (the paper's Algorithm 1), not every other schedule of the registry",
                )
                .changed()
            {
                out.push(Command::TunerOwnMovesOnly(only));
            }
            if let Some(t) = done
                && t.makespan_s < t.start_makespan_s
                && ui.button("Use the tuned pipeline").clicked()
            {
                out.push(Command::UseTuned);
            }
        }
    });
}

const KEPT: egui::Color32 = egui::Color32::from_rgb(0x5A, 0x9B, 0xD5);
const TAKEN: egui::Color32 = egui::Color32::from_rgb(0xE8, 0x8A, 0x2E);

/// The step time kept against the iteration (0: the start), the changes taken marked.
fn plot_ui(ui: &mut Ui, start: Option<f64>, iterations: &[Iteration]) {
    let curve: Vec<[f64; 2]> = start
        .map(|t| [0.0, t])
        .into_iter()
        .chain(iterations.iter().map(|i| [i.index as f64, i.makespan_s]))
        .collect();
    let taken: Vec<[f64; 2]> = iterations
        .iter()
        .filter(|i| i.taken)
        .map(|i| [i.index as f64, i.makespan_s])
        .collect();
    ui.label(RichText::new("step time against iteration (0: the start)").small());
    plots::legend_ui(
        ui,
        &[
            Entry::line("step time kept", KEPT),
            Entry::dot("change taken", TAKEN),
        ],
    );
    let plot = Plot::new("tuner makespan")
        .height(120.0)
        .allow_scroll(false);
    plots::readable(plot, "iteration", "step time (s)").show(ui, |plot| {
        plot.line(Line::new("step time kept", PlotPoints::from(curve)).color(KEPT));
        plot.points(
            Points::new("change taken", PlotPoints::from(taken))
                .radius(3.0)
                .color(TAKEN),
        );
    });
}

/// Every iteration: its phase, whether its change was taken, the step time, the change.
fn log_ui(ui: &mut Ui, iterations: &[Iteration]) {
    egui::ScrollArea::vertical()
        .id_salt("tuner iterations")
        .max_height(140.0)
        .show(ui, |ui| {
            for i in iterations {
                ui.label(
                    RichText::new(format!(
                        "{:>3} {:<12} {} {}  {}",
                        i.index,
                        i.phase.name(),
                        if i.taken { "taken" } else { "  —  " },
                        secs(i.makespan_s),
                        i.change
                    ))
                    .small()
                    .monospace(),
                );
            }
        });
}
