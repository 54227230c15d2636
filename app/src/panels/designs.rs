//! BigMac's three designs of the scenario (compute-efficient, memory-efficient, nested): step time
//! and the highest rank's peak memory against M, with the device's capacity, and a button to make
//! the scenario any of them.

use super::plots::{self, CAPACITY, Entry};
use crate::command::Command;
use crate::state::Studio;
use egui::{Color32, RichText, Ui};
use egui_plot::{HLine, Line, Plot, PlotPoints};
use mpipe::tune::designs::{Design, DesignComparison, DesignPoint};

/// The designs section.
pub fn designs_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    egui::CollapsingHeader::new("Three designs (BigMac): step time and memory against M")
        .id_salt("designs")
        .show(ui, |ui| {
            let Some(scenario) = studio.scenario() else {
                return;
            };
            if let Err(why) = mpipe::tune::designs::check_shape(scenario) {
                ui.label(RichText::new(why).small());
                return;
            }
            controls_ui(ui, studio, out);
            let Some(c) = studio.analyses.designs.current(studio.doc.generation()) else {
                ui.label(
                    RichText::new(format!(
                        "Simulates each design at M = {:?}.",
                        crate::state::analysis::DESIGN_MICROBATCHES
                    ))
                    .small(),
                );
                return;
            };
            for (design, why) in &c.refused {
                ui.label(RichText::new(format!("{}: {why}", design.name())).small());
            }
            let mut entries: Vec<Entry> = Design::ALL
                .iter()
                .map(|&d| Entry::line(d.name(), colour(d)))
                .collect();
            if c.capacity_bytes.is_some() {
                entries.push(Entry::line("device capacity", CAPACITY));
            }
            if c.points.iter().any(|p| p.fitted.is_some()) {
                entries.push(Entry::line(
                    "dashed: over capacity, fitted under it (offload, recomputation)",
                    Color32::GRAY,
                ));
            }
            plots::legend_ui(ui, &entries);
            ui.columns(2, |cols| {
                if let Some(left) = cols.get_mut(0) {
                    left.label(RichText::new("step time (s) against M").small());
                    let axes = ("M", "step time (s)");
                    plot_ui(
                        left,
                        "designs makespan",
                        axes,
                        c,
                        None,
                        |p, fitted| match fitted {
                            false => Some(p.makespan_s),
                            true => p.fitted.as_ref().map(|f| f.makespan_s.unwrap_or(f64::NAN)),
                        },
                    );
                }
                if let Some(right) = cols.get_mut(1) {
                    right.label(RichText::new("peak memory (GB, highest rank) against M").small());
                    let capacity = c.capacity_bytes.map(|b| b / 1e9);
                    let axes = ("M", "peak memory (GB)");
                    plot_ui(
                        right,
                        "designs memory",
                        axes,
                        c,
                        capacity,
                        |p, fitted| match fitted {
                            false => Some(p.peak() / 1e9),
                            true => p.fitted.as_ref().map(|f| f.peak_bytes / 1e9),
                        },
                    );
                }
            });
        });
}

/// Compare (or Cancel while it runs), and a button to use each design.
fn controls_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        match &studio.analyses.designs.running {
            Some(r) => {
                ui.add(egui::ProgressBar::new(r.job.progress()).desired_width(160.0));
                if ui.button("Cancel designs").clicked() {
                    out.push(Command::CancelDesigns);
                }
            }
            None => {
                if ui.button("Compare the designs").clicked() {
                    out.push(Command::CompareDesigns);
                }
            }
        }
        for design in Design::ALL {
            if ui
                .button(format!("Use {}", design.name()))
                .on_hover_text(design.summary())
                .clicked()
            {
                out.push(Command::UseDesign(design));
            }
        }
    });
}

/// One line per design of `y(point, false)` against M (axes named `x`, `y`), dashed where the
/// point was fitted under the capacity (`y(point, true)`: the fitted figure; NaN where nothing
/// fits), with a `capacity` line where one is given.
fn plot_ui(
    ui: &mut Ui,
    id: &str,
    (x_name, y_name): (&str, &str),
    c: &DesignComparison,
    capacity: Option<f64>,
    y: impl Fn(&DesignPoint, bool) -> Option<f64>,
) {
    let plot = Plot::new(id).height(150.0).allow_scroll(false);
    let response = plots::readable(plot, x_name, y_name).show(ui, |plot| {
        for d in Design::ALL {
            let line = |fitted: bool| -> Vec<[f64; 2]> {
                c.points
                    .iter()
                    .filter(|p| p.design == d)
                    .filter_map(|p| Some([p.microbatches as f64, y(p, fitted)?]))
                    .filter(|p| p[1].is_finite())
                    .collect()
            };
            plot.line(Line::new(d.name(), PlotPoints::from(line(false))).color(colour(d)));
            let fitted = line(true);
            if !fitted.is_empty() {
                plot.line(
                    Line::new(format!("{} fitted", d.name()), PlotPoints::from(fitted))
                        .color(colour(d))
                        .style(egui_plot::LineStyle::dashed_loose()),
                );
            }
        }
        if let Some(cap) = capacity {
            plot.hline(HLine::new("device capacity", cap).color(CAPACITY));
        }
    });
    plots::remember(ui, id, response.transform);
}

/// Each design's colour in both plots.
fn colour(d: Design) -> Color32 {
    match d {
        Design::ComputeEfficient => Color32::from_rgb(0xE8, 0x8A, 0x2E),
        Design::MemoryEfficient => Color32::from_rgb(0x5A, 0x9B, 0xD5),
        Design::Nested => Color32::from_rgb(0x7C, 0xC4, 0x6E),
    }
}
