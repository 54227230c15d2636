//! The what-if over every schedule (DESIGN.md §5 "Reading a run right"): after a calibration,
//! one click predicts every registered schedule that fits the model with the costs fitted on
//! the run, and a ranked bar chart shows each one's step time beside the run's measured median
//! (the schedule that ran marked) and its memory peak per rank on the measured basis. The
//! predictions are `mpipe compare-trace --what-if-all`'s; this only paints them.

use crate::command::Command;
use crate::state::Studio;
use egui::{Align2, Color32, FontId, RichText, Sense, Stroke};
use mpipe::trace::report::CompareTraceReport;
use mpipe::trace::whatif::{MemoryBasis, Prediction};
use mpipe::vocab::units::{kib, ms};

const BAR: Color32 = Color32::from_rgb(0x4C, 0x8E, 0xD9);
const RAN: Color32 = Color32::from_rgb(0x3F, 0xB9, 0x6E);
const MEASURED: Color32 = Color32::from_rgb(0xF0, 0xA0, 0x30);
/// The range of a split schedule's step over the split's measured costs.
const SPLIT: Color32 = Color32::from_rgb(0xB0, 0x7C, 0xE0);
const ROW: f32 = 18.0;
const LABEL: f32 = 230.0;
/// Room right of the bars for the row's figures.
const TEXT: f32 = 410.0;

/// The button (with progress and Cancel while it runs) and the ranked chart once it ran.
pub fn what_if_ui(
    ui: &mut egui::Ui,
    studio: &Studio,
    report: &CompareTraceReport,
    out: &mut Vec<Command>,
) {
    let traces = &studio.traces;
    let current = traces.calibrated_generation == Some(studio.doc.generation());
    ui.horizontal(|ui| {
        let running = traces.ranking.is_some();
        if ui
            .add_enabled(
                !running && current,
                egui::Button::new("What-if: rank every schedule"),
            )
            .on_hover_text(
                "Predict every registered schedule that fits this model with the costs just \
                 fitted on the run, ranked by step time (mpipe compare-trace --what-if-all)",
            )
            .on_disabled_hover_text(
                "running, or the scenario changed since it was calibrated: calibrate again",
            )
            .clicked()
        {
            out.push(Command::RankSchedules);
        }
        if let Some(r) = &traces.ranking {
            ui.add(egui::ProgressBar::new(r.job.progress()).desired_width(120.0));
            if r.job.is_cancelled() {
                ui.label("stopping…");
            } else if ui.button("Cancel what-if").clicked() {
                out.push(Command::CancelRanking);
            }
        }
    });
    if !report.what_if_all.is_empty() {
        if !current {
            ui.colored_label(
                egui::Color32::from_rgb(0xF0, 0xA0, 0x30),
                RichText::new(
                    "stale: the scenario changed since this ranking; calibrate again to rank anew",
                )
                .small(),
            );
        }
        ranked_chart(ui, report, current);
    }
}

/// The run's measured median step (its steps other than none: all of them).
fn measured_median(report: &CompareTraceReport) -> Option<f64> {
    let mut steps: Vec<f64> = report
        .steps
        .iter()
        .map(|s| s.measured_s)
        .filter(|&s| s > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    let n = steps.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => steps.get(n / 2).copied(),
        _ => Some(0.5 * (steps.get(n / 2 - 1)? + steps.get(n / 2)?)),
    }
}

/// One bar per schedule, fastest first, to one scale with the measured median's line.
fn ranked_chart(ui: &mut egui::Ui, report: &CompareTraceReport, current: bool) {
    let predictions = &report.what_if_all;
    let median = measured_median(report);
    let basis = predictions
        .first()
        .map_or(MemoryBasis::Dynamic, |p| p.basis);
    ui.label(
        RichText::new(format!(
            "What-if for {} with the costs {}: every schedule that fits the model, fastest first{} (green: the one that ran; amber line: the run's measured median step{}{}); memory peaks in {} bytes",
            report.scenario,
            report.fitted_on(),
            if predictions.iter().any(|p| p.expected.is_some()) {
                " by the expected step under the run's measured jitter (whiskers: its 10–90 %)"
            } else {
                ""
            },
            median.map_or(String::new(), |m| format!(", {}", ms(m))),
            if predictions.iter().any(|p| p.split_range_s.is_some()) {
                format!(
                    "; violet line under a bar: its step {}",
                    mpipe::trace::whatif::SPLIT_RANGE_TEXT
                )
            } else {
                String::new()
            },
            basis.short()
        ))
        .small(),
    );
    let longest = predictions
        .iter()
        .map(|p| {
            let high = p.split_range_s.map_or(p.step_s, |[_, h]| h.max(p.step_s));
            p.expected.map_or(high, |e| e.high_s.max(high))
        })
        .chain(median)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let width = ui.available_width().max(LABEL + TEXT + 120.0);
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(width, ROW * predictions.len() as f32 + 4.0),
        Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let text = ui.visuals().text_color();
    let font = FontId::proportional(11.0);
    let bars = (rect.left() + LABEL, rect.right() - TEXT);
    let x_of = |s: f64| bars.0 + (bars.1 - bars.0).max(1.0) * (s / longest) as f32;
    let fastest = predictions.first().map_or(0.0, |p| p.step_s);
    for (i, p) in predictions.iter().enumerate() {
        let top = rect.top() + 2.0 + ROW * i as f32;
        let y = top + ROW / 2.0;
        painter.text(
            egui::pos2(rect.left(), y),
            Align2::LEFT_CENTER,
            format!("{}. {} (v={})", i + 1, p.schedule, p.chunks),
            font.clone(),
            text,
        );
        let bar = egui::Rect::from_min_max(
            egui::pos2(bars.0, top + 3.0),
            egui::pos2(x_of(p.step_s), top + ROW - 3.0),
        );
        let colour = if p.ran { RAN } else { BAR };
        // A stale ranking is drawn faded: it no longer says what the scenario on screen does.
        let colour = if current {
            colour
        } else {
            colour.gamma_multiply(0.35)
        };
        painter.rect_filled(bar, 2.0, colour);
        // The expected step's 10–90 % range under the run's jitter: a whisker across the bar's
        // end.
        if let Some(e) = p.expected {
            let whisker = Stroke::new(1.0, text.gamma_multiply(if current { 0.8 } else { 0.3 }));
            painter.line_segment(
                [egui::pos2(x_of(e.low_s), y), egui::pos2(x_of(e.high_s), y)],
                whisker,
            );
            for x in [x_of(e.low_s), x_of(e.high_s)] {
                painter.line_segment([egui::pos2(x, y - 3.0), egui::pos2(x, y + 3.0)], whisker);
            }
        }
        // The split schedules' steps over the split's measured costs: a line under the bar.
        if let Some([low, high]) = p.split_range_s {
            let under = top + ROW - 2.0;
            painter.line_segment(
                [egui::pos2(x_of(low), under), egui::pos2(x_of(high), under)],
                Stroke::new(2.0, SPLIT.gamma_multiply(if current { 1.0 } else { 0.35 })),
            );
        }
        painter.text(
            egui::pos2(bars.1 + 6.0, y),
            Align2::LEFT_CENTER,
            row_text(p, fastest),
            font.clone(),
            text,
        );
    }
    if let Some(m) = median {
        let x = x_of(m);
        painter.line_segment(
            [egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
            Stroke::new(1.5, MEASURED),
        );
    }
    // What the split schedules' halves are priced at where the run could not show it.
    if let Some(note) = report.unfitted_split_note() {
        ui.label(RichText::new(note).small());
    }
}

/// `123.4 ms  +5.2%  peak 1.2 MiB / 1.1 MiB`, with a split schedule's range over the split's
/// measured costs (`(120.1–130.2 ms)`) where the run could not show its own, and what is
/// beyond capacity.
fn row_text(p: &Prediction, fastest: f64) -> String {
    let peaks: Vec<String> = p.peak_bytes.iter().map(|&b| kib(b)).collect();
    format!(
        "{}{}  {:+.1}%  peak {}{}{}",
        ms(p.step_s),
        p.split_range_s.map_or(String::new(), |[low, high]| format!(
            " ({:.1}–{:.1} ms)",
            low * 1e3,
            high * 1e3
        )),
        if fastest > 0.0 {
            100.0 * (p.step_s - fastest) / fastest
        } else {
            0.0
        },
        peaks.join(" / "),
        if p.over_capacity {
            "  over capacity"
        } else {
            ""
        },
        if p.ran { "  ← ran" } else { "" }
    )
}
