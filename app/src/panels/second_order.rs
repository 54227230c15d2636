//! JanusPipe's two panels under the chart: the WaveK sweep (throughput and peak memory against
//! the unit size k, the paper's Fig. 12, with one click to run any k) and GARS before and after
//! (each microbatch's load under sequential packing and under GARS, with the step each gives).

use super::plots::{self, Entry};
use crate::command::Command;
use crate::state::Studio;
use egui::{Color32, RichText, Ui};
use egui_plot::{HLine, Line, LineStyle, Plot, PlotPoints, Points};
use mpipe::tune::packing::PackingComparison;
use mpipe::tune::wave_sweep::{WavePoint, WaveSweep};
use mpipe::vocab::parameter::Parameter;
use mpipe::vocab::units::{bytes, secs};
use mpipe::workload::gars::Packing;

const SEQUENTIAL: Color32 = Color32::from_rgb(0xB0, 0xB0, 0xB0);
const GARS: Color32 = Color32::from_rgb(0x7C, 0xC4, 0x6E);
const RED: Color32 = Color32::from_rgb(0xE0, 0x50, 0x50);
const THROUGHPUT: Color32 = Color32::from_rgb(0x5A, 0x9B, 0xD5);
const MEMORY: Color32 = Color32::from_rgb(0x7C, 0xC4, 0x6E);
const TRAILING: Color32 = Color32::from_rgb(0xE8, 0x8A, 0x2E);

/// A progress bar and its Cancel button while `progress` is `Some`, else `start`'s button.
fn run_row(
    ui: &mut Ui,
    progress: Option<f32>,
    start: (&str, Command),
    cancel: (&str, Command),
    out: &mut Vec<Command>,
) {
    ui.horizontal(|ui| match progress {
        Some(f) => {
            ui.add(egui::ProgressBar::new(f).desired_width(160.0));
            if ui.button(cancel.0).clicked() {
                out.push(cancel.1);
            }
        }
        None => {
            if ui.button(start.0).clicked() {
                out.push(start.1);
            }
        }
    });
}

/// The WaveK sweep, for a scenario whose schedule can run with a unit size k.
pub fn wave_sweep_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    let Some(scenario) = studio.scenario() else {
        return;
    };
    if !mpipe::tune::wave_sweep::sweepable(scenario) {
        return;
    }
    egui::CollapsingHeader::new("WaveK sweep (JanusPipe): throughput and memory against k")
        .id_salt("wave sweep")
        .show(ui, |ui| {
            run_row(
                ui,
                studio.analyses.wave_sweep.progress(),
                ("Sweep k", Command::SweepWaveK),
                ("Cancel sweep", Command::CancelWaveSweep),
                out,
            );
            let Some(w) = studio.analyses.wave_sweep.current(studio.doc.generation()) else {
                ui.label(
                    RichText::new(format!(
                        "Simulates the scenario with unit size k = 1 … {} (at most M), each k's throughput against k = P and its peak memory.",
                        crate::state::analysis::WAVE_SWEEP_MAX_K
                    ))
                    .small(),
                );
                return;
            };
            match w.best_k.and_then(|k| w.points.iter().find(|p| p.k == k)) {
                Some(best) => {
                    ui.label(
                        RichText::new(format!(
                            "best k within capacity: {} ({}, {} against k = {})",
                            best.k,
                            secs(best.makespan_s),
                            best.throughput_vs_default
                                .map_or("–".into(), |t| format!("{t:.3}×")),
                            w.default_k
                        ))
                        .strong(),
                    );
                }
                None => {
                    ui.colored_label(RED, "no k fits the device's capacity");
                }
            }
            if let Some((k, t)) = w.best_fitted {
                ui.label(
                    RichText::new(format!(
                        "faster with a fit under the capacity: k = {k} at {} (recomputation or offload; its button's hover says which)",
                        secs(t)
                    ))
                    .small(),
                );
            }
            let mut entries = vec![
                Entry::line("throughput", THROUGHPUT),
                Entry::dot("k ∤ M (trailing wave)", TRAILING),
                Entry::line("peak memory", MEMORY),
                Entry::dot("over capacity", RED),
            ];
            if w.capacity_bytes.is_some() {
                entries.push(Entry::line("device capacity", RED));
            }
            plots::legend_ui(ui, &entries);
            ui.columns(2, |cols| {
                if let Some(left) = cols.get_mut(0) {
                    throughput_plot_ui(left, w);
                }
                if let Some(right) = cols.get_mut(1) {
                    memory_plot_ui(right, w);
                }
            });
            choose_k_ui(ui, w, scenario.parameter(Parameter::WaveK), out);
        });
}

/// The sweep's points `keep` selects, as `[k, y(point)]`.
fn sweep_points(
    w: &WaveSweep,
    keep: impl Fn(&WavePoint) -> bool,
    y: impl Fn(&WavePoint) -> f64,
) -> PlotPoints<'static> {
    PlotPoints::from(
        w.points
            .iter()
            .filter(|p| keep(p))
            .map(|p| [p.k as f64, y(p)])
            .collect::<Vec<[f64; 2]>>(),
    )
}

/// Throughput against `k` (the points with a trailing wave, and over capacity, marked); a `k`
/// without a throughput figure (the default not among the candidates) is left out.
fn throughput_plot_ui(ui: &mut Ui, w: &WaveSweep) {
    let has = |p: &WavePoint| p.throughput_vs_default.is_some();
    let throughput = |p: &WavePoint| p.throughput_vs_default.unwrap_or_default();
    ui.label(RichText::new(format!("throughput against k = {} (k on x)", w.default_k)).small());
    let plot = Plot::new("wave sweep throughput")
        .height(180.0)
        .allow_scroll(false);
    let throughput_axis = format!("throughput (× k = {})", w.default_k);
    let response = plots::readable(plot, "k", &throughput_axis).show(ui, |plot| {
        plot.line(Line::new("throughput", sweep_points(w, has, throughput)).color(THROUGHPUT));
        plot.points(
            Points::new(
                "k ∤ M (trailing wave)",
                sweep_points(w, |p| has(p) && p.trailing > 0, throughput),
            )
            .radius(3.5)
            .color(TRAILING),
        );
        plot.points(
            Points::new(
                "over capacity",
                sweep_points(w, |p| has(p) && p.over_capacity, throughput),
            )
            .radius(4.5)
            .color(RED),
        );
    });
    plots::remember(ui, "wave sweep throughput", response.transform);
}

/// Peak memory against `k`, with the device's capacity.
fn memory_plot_ui(ui: &mut Ui, w: &WaveSweep) {
    let memory = |p: &WavePoint| p.peak_memory_bytes / 1e9;
    ui.label(RichText::new("peak memory (GB, highest rank) against k").small());
    let plot = Plot::new("wave sweep memory")
        .height(180.0)
        .allow_scroll(false);
    let response = plots::readable(plot, "k", "peak memory (GB)").show(ui, |plot| {
        plot.line(Line::new("peak memory", sweep_points(w, |_| true, memory)).color(MEMORY));
        plot.points(
            Points::new(
                "over capacity",
                sweep_points(w, |p| p.over_capacity, memory),
            )
            .radius(4.5)
            .color(RED),
        );
        if let Some(cap) = w.capacity_bytes {
            plot.hline(
                HLine::new("device capacity", cap / 1e9)
                    .color(RED)
                    .style(LineStyle::dashed_loose()),
            );
        }
    });
    plots::remember(ui, "wave sweep memory", response.transform);
}

/// A button for each `k` swept (over capacity in red); `current`: the `k` the scenario runs.
fn choose_k_ui(ui: &mut Ui, w: &WaveSweep, current: Option<usize>, out: &mut Vec<Command>) {
    ui.label(RichText::new("run the scenario with k =").small());
    ui.horizontal_wrapped(|ui| {
        for p in &w.points {
            let text = RichText::new(format!("{}", p.k));
            let text = if p.over_capacity {
                text.color(RED)
            } else {
                text
            };
            let button = ui
                .selectable_label(current == Some(p.k), text)
                .on_hover_text(format!(
                    "k = {}: {}, peak {}{}{}",
                    p.k,
                    secs(p.makespan_s),
                    bytes(p.peak_memory_bytes),
                    if p.trailing > 0 {
                        format!(", trailing wave of {}", p.trailing)
                    } else {
                        String::new()
                    },
                    mpipe::tune::fit_memory::capacity_note(
                        p.over_capacity,
                        p.fitted.as_ref(),
                        p.makespan_s
                    )
                ));
            if button.clicked() && current != Some(p.k) {
                out.push(Command::UseWaveK(p.k));
            }
        }
    });
}

/// GARS before and after, for a scenario with a batch of graphs.
pub fn packing_ui(ui: &mut Ui, studio: &Studio, out: &mut Vec<Command>) {
    let Some(graphs) = studio
        .scenario()
        .and_then(|s| s.workload.as_ref())
        .and_then(|w| w.graphs.as_ref())
    else {
        return;
    };
    egui::CollapsingHeader::new("Graph packing (GARS): per-microbatch load before and after")
        .id_salt("packing")
        .show(ui, |ui| {
            run_row(
                ui,
                studio.analyses.packing.progress(),
                ("Compare packings", Command::ComparePacking),
                ("Cancel packing", Command::CancelPacking),
                out,
            );
            let Some(c) = studio.analyses.packing.current(studio.doc.generation()) else {
                ui.label(
                    RichText::new(
                        "Packs the scenario's graphs sequentially (dataset order, an even share of atoms each) and by GARS (largest first to the least loaded), and simulates both.",
                    )
                    .small(),
                );
                return;
            };
            numbers_ui(ui, c);
            if c.gars.packed.kept_sequential {
                ui.label(
                    RichText::new("GARS kept the sequential grouping: sorted greedy was no better.")
                        .small(),
                );
            }
            loads_plot_ui(ui, c);
            let other = match graphs.packing {
                Packing::Gars => Packing::Sequential,
                Packing::Sequential => Packing::Gars,
            };
            ui.horizontal(|ui| {
                ui.label(format!("packed by {}", graphs.packing.name()));
                let label = match other {
                    Packing::Gars => "Use GARS",
                    Packing::Sequential => "Use sequential packing",
                };
                if ui.button(label).clicked() {
                    out.push(Command::UsePacking(other));
                }
            });
        });
}

/// Step time, imbalance, largest microbatch, peak memory and dist microbatches, sequential
/// against GARS.
fn numbers_ui(ui: &mut Ui, c: &PackingComparison) {
    egui::Grid::new("packing numbers")
        .num_columns(3)
        .show(ui, |ui| {
            ui.label("");
            ui.label(RichText::new("sequential").strong());
            ui.label(RichText::new("GARS").strong());
            ui.end_row();
            let (s, g) = (&c.sequential, &c.gars);
            // With a per-rank atom budget: how many microbatches need dist execution.
            let dist = |r: &mpipe::tune::packing::PackingRun| {
                r.dist_microbatches()
                    .map_or("–".to_string(), |(d, n)| format!("{d} of {n}"))
            };
            let rows: [(&str, String, String); 5] = [
                ("step time", secs(s.makespan_s), secs(g.makespan_s)),
                (
                    "imbalance (max / mean edges)",
                    format!("{:.3}", s.imbalance),
                    format!("{:.3}", g.imbalance),
                ),
                (
                    "largest microbatch",
                    format!("{} atoms", s.max_atoms),
                    format!("{} atoms", g.max_atoms),
                ),
                (
                    "peak memory",
                    bytes(s.peak_memory_bytes),
                    bytes(g.peak_memory_bytes),
                ),
                ("dist microbatches", dist(s), dist(g)),
            ];
            for (what, a, b) in rows {
                ui.label(what);
                ui.label(a);
                ui.label(b);
                ui.end_row();
            }
        });
}

/// Each microbatch's load (edges over the mean microbatch's), sequential beside GARS.
fn loads_plot_ui(ui: &mut Ui, c: &PackingComparison) {
    use egui_plot::{Bar, BarChart};
    ui.label(RichText::new("load per microbatch (edges over the mean microbatch's)").small());
    plots::legend_ui(
        ui,
        &[
            Entry::line("sequential", SEQUENTIAL),
            Entry::line("GARS", GARS),
        ],
    );
    let bars = |factors: &[f64], offset: f64| -> Vec<Bar> {
        factors
            .iter()
            .enumerate()
            .map(|(j, &f)| Bar::new(j as f64 + offset, f).width(0.4))
            .collect()
    };
    let plot = Plot::new("packing loads").height(150.0).allow_scroll(false);
    plots::readable(plot, "microbatch", "load (× mean)").show(ui, |plot| {
        plot.bar_chart(
            BarChart::new("sequential", bars(&c.sequential.factors, -0.2)).color(SEQUENTIAL),
        );
        plot.bar_chart(BarChart::new("GARS", bars(&c.gars.factors, 0.2)).color(GARS));
    });
}
