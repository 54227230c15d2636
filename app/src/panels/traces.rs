//! The "Predicted vs measured" part of the window: importing traces (progress bar, Cancel), the
//! comparison summary and chart, calibration (an undoable edit of the scenario) and what it
//! fitted — factors, link latency and the per-rank residual table `mpipe compare-trace` prints —,
//! the warnings, the files and their ranks, and the rules editor.

use super::stats::table_ui;
use crate::command::Command;
use crate::state::Studio;
use crate::state::derived::Shown;
use crate::state::dialog::FilePurpose;
use crate::state::traces::Traces;
use crate::timeline::measured::measured_chart;
use egui::{Color32, RichText};
use mpipe::trace::Measurement;
use mpipe::trace::align::{AlignMethod, Alignment};
use mpipe::trace::compare::Comparison;
use mpipe::trace::report::CompareTraceReport;
use mpipe::vocab::units::{kib, ms, secs};

const RED: Color32 = Color32::from_rgb(0xE0, 0x50, 0x50);

/// Text of an error that may carry a `^` caret under a column (regex errors do): monospace, so
/// the caret stands under the character it points at.
pub fn error_text(message: &str) -> RichText {
    let text = RichText::new(message).color(RED);
    if message.lines().any(|l| l.trim_start().starts_with('^')) {
        text.monospace()
    } else {
        text
    }
}

/// The traces section, under the main chart. `can_calibrate`: the scenario on screen is valid.
pub fn traces_ui(ui: &mut egui::Ui, studio: &Studio, shown: &Shown) -> Vec<Command> {
    let mut out = Vec::new();
    let traces = &studio.traces;
    import_ui(ui, traces, &mut out);
    if traces.raw.is_empty() {
        ui.label(
            RichText::new(
                "Open or drop profiler traces (Chrome trace JSON or .json.gz, one per rank) to \
                 see what the run did under each rank's prediction.",
            )
            .small(),
        );
        return out;
    }
    if let Some(comparison) = traces.cached_view(shown)
        && let (Some(m), Some(alignment)) = (&traces.measurement, &traces.alignment)
    {
        measurement_summary_ui(ui, m, alignment, &comparison);
        step_and_calibrate_ui(ui, studio, &mut out);
        if let Some(report) = &traces.calibration {
            calibration_ui(ui, report);
            super::what_if::what_if_ui(ui, studio, report, &mut out);
        }
        // The span every chart shares (it includes the measured step).
        let span = studio.span();
        if let Some(range) = measured_chart(ui, shown, &comparison.blocks, span, studio.view.range)
        {
            out.push(Command::Range(range));
        }
        ui.label(
            RichText::new(
                "Measured start vs predicted: green within 2% of the step, amber within 10%, red beyond; grey: not predicted. The dark slate head of a block is its wait for inputs (the span minus its compute).",
            )
            .small(),
        );
        warnings_ui(ui, m, alignment, &comparison);
    }
    files_and_ranks_ui(ui, studio, &mut out);
    rules_ui(ui, studio, &mut out);
    out
}

/// The section's head (open, clear) and an import's progress with Cancel.
fn import_ui(ui: &mut egui::Ui, traces: &Traces, out: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("Predicted vs measured").strong());
        if ui.button("Open traces…").clicked() {
            out.push(Command::ShowFileDialog(FilePurpose::OpenTraces));
        }
        if !traces.raw.is_empty() && ui.button("Clear traces").clicked() {
            out.push(Command::ClearTraces);
        }
    });
    if let Some(import) = &traces.import {
        ui.horizontal(|ui| {
            ui.add(
                egui::ProgressBar::new(import.job.progress())
                    .show_percentage()
                    .desired_width(240.0),
            );
            ui.label(format!("importing {} file(s)…", import.files));
            if import.job.is_cancelled() {
                ui.label("stopping…");
            } else if ui.button("Cancel import").clicked() {
                out.push(Command::CancelImport);
            }
        });
    }
}

/// Files, ranks, clocks, order agreement and step times; ranks whose actions were inferred.
fn measurement_summary_ui(
    ui: &mut egui::Ui,
    m: &Measurement,
    alignment: &Alignment,
    comparison: &Comparison,
) {
    let clocks = match alignment.method {
        AlignMethod::SharedClock => "shared clock",
        AlignMethod::OneFile => "one timeline (one file)",
        AlignMethod::Causality => "clocks aligned from dependencies",
        AlignMethod::None => "clocks as recorded",
    };
    ui.label(format!(
        "{} file(s), {} rank(s), {clocks} · order agreement {:.1}% · step time measured {}, predicted {}",
        m.files.len(),
        m.ranks.len(),
        comparison.order_agreement * 100.0,
        secs(comparison.makespan_measured_s),
        secs(comparison.makespan_predicted_s),
    ));
    let inferred: Vec<String> = m
        .ranks
        .iter()
        .filter(|r| r.inferred)
        .map(|r| r.rank.to_string())
        .collect();
    if !inferred.is_empty() {
        ui.colored_label(
            Color32::from_rgb(0xF0, 0xA0, 0x30),
            RichText::new(format!(
                "⚠ rank(s) {}: no per-action annotations; the actions were inferred from the trace's structure (see Import warnings)",
                inferred.join(", ")
            ))
            .small(),
        );
    }
}

/// The step compared, and Calibrate (with a running calibration's progress and Cancel).
fn step_and_calibrate_ui(ui: &mut egui::Ui, studio: &Studio, out: &mut Vec<Command>) {
    let traces = &studio.traces;
    let steps = traces.steps();
    ui.horizontal(|ui| {
        let label = ui.label("step");
        let mut step = traces.step;
        if ui
            .add(egui::DragValue::new(&mut step).range(0..=steps.saturating_sub(1)))
            .labelled_by(label.id)
            .changed()
        {
            out.push(Command::TraceStep(step));
        }
        ui.label(format!("of {steps}"));
        let calibrating = traces.calibrating.is_some();
        let refusal = traces.measurement.as_ref().and_then(|m| m.refusal());
        if ui
            .add_enabled(
                !calibrating && studio.current().is_some() && refusal.is_none(),
                egui::Button::new("Calibrate"),
            )
            .on_hover_text(
                "Fit each region's forward/backward times and the link latency to this step, \
                 check on the next step, and make the result the scenario (undo takes it back)",
            )
            .on_disabled_hover_text(
                refusal
                    .as_deref()
                    .unwrap_or("a calibration is running, or the scenario on screen is not valid"),
            )
            .clicked()
        {
            out.push(Command::Calibrate);
        }
        let mut every = traces.every_step;
        if ui
            .checkbox(&mut every, "every step")
            .on_hover_text(
                "Fit the costs on every step of the run, not this step alone (memory stays this \
                 step's; the check is then in-sample): a step's noise averages out, and the cost \
                 of switching stages is fitted from enough actions to be applied",
            )
            .changed()
        {
            out.push(Command::TraceFitEveryStep(every));
        }
        if let Some(c) = &traces.calibrating {
            ui.add(egui::ProgressBar::new(c.job.progress()).desired_width(120.0));
            if c.job.is_cancelled() {
                ui.label("stopping…");
            } else if ui.button("Cancel calibration").clicked() {
                out.push(Command::CancelCalibration);
            }
        }
    });
}

/// An unannotated rank first (nothing on it can be compared or fitted), then what the schedule
/// cannot match (the scenario is the wrong model), then the import's warnings.
fn warnings_ui(ui: &mut egui::Ui, m: &Measurement, alignment: &Alignment, comparison: &Comparison) {
    if let Some(why) = m.refusal() {
        ui.colored_label(
            Color32::from_rgb(0xF0, 0x60, 0x40),
            RichText::new(format!("⚠ {why}")).small(),
        );
    }
    for w in &comparison.warnings {
        ui.colored_label(
            Color32::from_rgb(0xF0, 0xA0, 0x30),
            RichText::new(format!("⚠ {w}")).small(),
        );
    }
    if !m.warnings.is_empty() || !alignment.notes.is_empty() {
        egui::CollapsingHeader::new(format!(
            "Import warnings ({})",
            m.warnings.len() + alignment.notes.len()
        ))
        .show(ui, |ui| {
            for note in &alignment.notes {
                ui.label(RichText::new(note).small());
            }
            for w in &m.warnings {
                ui.colored_label(
                    Color32::from_rgb(0xF0, 0xA0, 0x30),
                    RichText::new(w.to_string()).small(),
                );
            }
        });
    }
}

/// What the last calibration fitted, as `mpipe compare-trace` prints it.
fn calibration_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    egui::CollapsingHeader::new("Calibration: fitted factors and residuals")
        .default_open(true)
        .show(ui, |ui| {
            calibration_summary_ui(ui, report);
            factors_ui(ui, report);
            memory_peaks_ui(ui, report);
            compute_split_ui(ui, report);
            residuals_ui(ui, report);
        });
}

/// The fit and check steps, the step times, the fit's residual, the validation on the other
/// steps.
fn calibration_summary_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    let checked = match report.check_step {
        Some(step) => format!("checked on step {step}"),
        None => "not checked (no other step; these are the fit step's figures)".to_string(),
    };
    ui.label(
        RichText::new(format!(
            "{}, {checked}: step time measured {}, predicted {} ({:+.1}%), calibrated {}{} ({:+.1}%){}",
            report.fitted_on(),
            secs(report.makespan_measured_s),
            secs(report.makespan_predicted_s),
            100.0 * report.predicted_error,
            secs(report.makespan_calibrated_s),
            if report.expected.is_some() { " simulated" } else { "" },
            100.0 * report.calibrated_error,
            report.expected.map_or(String::new(), |e| format!(
                ", {} expected under the run's measured jitter (10–90%: {} to {})",
                secs(e.median_s),
                secs(e.low_s),
                secs(e.high_s)
            )),
        ))
        .small(),
    );
    if !report.every_step {
        ui.label(
            RichText::new(format!(
                "against its own fit step: {:+.1}% (what the fit leaves unexplained)",
                100.0 * report.fit_residual
            ))
            .small(),
        );
    }
    if let Some(v) = &report.validation {
        let within = v.within_spread() && report.verdict_withheld.is_none();
        ui.colored_label(
            if within {
                ui.visuals().text_color()
            } else {
                Color32::from_rgb(0xF0, 0xA0, 0x30)
            },
            RichText::new(format!(
                "{}: their median {} (from {} to {}, the run's own spread ±{:.1}%), {} {:+.1}%{}",
                report.validated_against(),
                secs(v.median_s),
                secs(v.min_s),
                secs(v.max_s),
                100.0 * v.spread,
                if report.expected.is_some() {
                    "expected"
                } else {
                    "calibrated"
                },
                100.0 * v.error,
                match (&report.verdict_withheld, within) {
                    (Some(_), _) => ", no verdict",
                    (None, true) => ", within the spread",
                    (None, false) => ", outside the spread",
                }
            ))
            .small(),
        );
        if let Some(why) = &report.verdict_withheld {
            ui.colored_label(
                Color32::from_rgb(0xF0, 0xA0, 0x30),
                RichText::new(format!("no verdict: {why}")).small(),
            );
        }
    }
    if let Some(id) = &report.identification {
        let best: Vec<String> = id
            .ranked
            .iter()
            .take(3)
            .map(|c| format!("{} {:.1}%", c.schedule, 100.0 * c.order_agreement))
            .collect();
        ui.label(
            RichText::new(format!(
                "schedule identified from the orders of step {}: {} (the scenario's {} {:.1}%)",
                id.step,
                best.join(", "),
                id.scenario.schedule,
                100.0 * id.scenario.order_agreement
            ))
            .small(),
        );
    }
}

/// The fitted compute factors, then the fitted links, per-action overhead, posting and switch,
/// and on an accelerator's run its host's launches and the host model fitted from them.
fn factors_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    let factors: Vec<Vec<String>> = report
        .factors
        .iter()
        .map(|f| {
            vec![
                f.region.to_string(),
                f.stage.map_or("all".to_string(), |s| s.to_string()),
                f.phase.to_string(),
                if f.samples == 0 {
                    "–".to_string()
                } else if f.factor < 0.01 {
                    format!("×{:.3} computed nothing", f.factor)
                } else {
                    format!("×{:.3}", f.factor)
                },
                f.samples.to_string(),
            ]
        })
        .collect();
    table_ui(
        ui,
        "calibration factors",
        &[
            ("region", ""),
            (
                "stage",
                "the stage the factor was fitted on (all: the region's pooled factor)",
            ),
            ("phase", "F forward, B backward, I and W its halves"),
            (
                "factor",
                "measured compute over predicted compute, each summed over the actions; – not fitted: nothing was measured; computed nothing: a first stage's input half has no input gradient to compute",
            ),
            (
                "actions",
                "how many measured actions the factor was fitted on",
            ),
        ],
        &factors,
        |r, _| {
            report
                .factors
                .get(r)
                .is_some_and(|f| f.samples == 0 || f.factor < 0.01)
        },
    );
    ui.label(
        RichText::new(format!(
            "fitted links: {}",
            mpipe::trace::report::link_text(&report.link)
        ))
        .small(),
    );
    ui.label(
        RichText::new(format!(
            "fitted per-action overhead: {}",
            mpipe::trace::report::overhead_text(&report.overhead)
        ))
        .small(),
    );
    ui.label(
        RichText::new(format!(
            "fitted posting of transfers: {}",
            mpipe::trace::report::p2p_text(&report.p2p)
        ))
        .small(),
    );
    ui.label(
        RichText::new(format!(
            "fitted switch: {}",
            mpipe::trace::report::switch_text(&report.switch)
        ))
        .small(),
    );
    // An accelerator's run: how fast its host launched, and the host model fitted from it.
    if let Some(text) = mpipe::trace::report::host_launch_text(&report.host_launch) {
        ui.label(RichText::new(format!("host launch: {text}")).small());
    }
    if let Some(host) = &report.host {
        ui.label(
            RichText::new(format!(
                "fitted host: {}",
                mpipe::trace::report::host_text(host)
            ))
            .small(),
        );
    }
    // What the run's split backward cost beyond the whole one, or what it is priced at.
    if let Some(line) = report.split_line() {
        ui.label(RichText::new(line).small());
    }
}

/// Each rank's memory peak measured, predicted and calibrated, with what was fitted.
fn memory_peaks_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    if report.ranks.iter().any(|r| r.measured_peak_bytes.is_some()) {
        let rows: Vec<Vec<String>> = report
            .ranks
            .iter()
            .filter_map(|r| {
                let measured = r.measured_peak_bytes?;
                let fit = report.memory.iter().find(|m| m.rank == r.rank);
                Some(vec![
                    r.rank.to_string(),
                    kib(measured),
                    kib(r.predicted_peak_bytes),
                    kib(r.calibrated_peak_bytes),
                    format!(
                        "{:+.1}%",
                        100.0 * (r.calibrated_peak_bytes - measured) / measured.max(1.0)
                    ),
                    r.calibrated_memory_shape_error
                        .map_or("–".into(), |e| format!("{:.1}%", 100.0 * e)),
                    fit.and_then(|f| f.activation_bytes).map_or("–".into(), kib),
                    fit.and_then(|f| f.workspace_bytes).map_or("–".into(), kib),
                ])
            })
            .collect();
        table_ui(
            ui,
            "memory peaks",
            &[
                ("rank", ""),
                (
                    "measured",
                    "the check step's peak (a CPU trace counts from the profiler's start: the dynamic part)",
                ),
                ("predicted", "before calibration"),
                ("calibrated", "after calibration"),
                ("error", "calibrated against measured"),
                (
                    "shape",
                    "the calibrated curve against the measured one over the step: the mean distance over the measured peak",
                ),
                (
                    "held per F",
                    "fitted: what a forward holds until its backward",
                ),
                (
                    "workspace",
                    "fitted: what a backward allocates and frees while it runs",
                ),
            ],
            &rows,
            |_, _| false,
        );
    }
}

/// Each rank's measured compute, wait and idle.
fn compute_split_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    let split: Vec<Vec<String>> = report
        .ranks
        .iter()
        .map(|r| {
            vec![
                r.rank.to_string(),
                ms(r.measured_compute_s),
                ms(r.measured_wait_s),
                ms(r.measured_idle_s),
            ]
        })
        .collect();
    table_ui(
        ui,
        "measured compute, wait and idle",
        &[
            ("rank", ""),
            (
                "compute",
                "each action span's first compute op to its last, on the rank",
            ),
            ("wait", "the rest of those spans: waiting for inputs"),
            ("idle", "the step's time outside any action span"),
        ],
        &split,
        |_, _| false,
    );
}

/// Each rank's order agreement, bubbles and residuals before and after calibration.
fn residuals_ui(ui: &mut egui::Ui, report: &CompareTraceReport) {
    let rows: Vec<Vec<String>> = report
        .ranks
        .iter()
        .map(|r| {
            vec![
                r.rank.to_string(),
                format!("{:.1}%", r.order_agreement * 100.0),
                ms(r.measured_bubble_s),
                ms(r.predicted_bubble_s),
                ms(r.calibrated_bubble_s),
                format!(
                    "{} → {}",
                    ms(r.mean_abs_start_residual_s),
                    ms(r.calibrated_mean_abs_start_residual_s)
                ),
                format!(
                    "{} → {}",
                    ms(r.mean_abs_duration_residual_s),
                    ms(r.calibrated_mean_abs_duration_residual_s)
                ),
                r.missing.to_string(),
                r.unexpected.to_string(),
            ]
        })
        .collect();
    table_ui(
        ui,
        "calibration residuals",
        &[
            ("rank", ""),
            (
                "order",
                "share of the rank's order that agrees with the prediction",
            ),
            ("bubble meas", "measured wait + idle"),
            ("bubble pred", "predicted idle time before calibration"),
            ("bubble cal", "predicted idle time after calibration"),
            (
                "|start resid| pred → cal",
                "mean absolute start residual before → after",
            ),
            (
                "|dur resid| pred → cal",
                "mean absolute duration residual before → after",
            ),
            ("missing", "predicted actions the trace does not have"),
            (
                "unexpected",
                "measured actions the prediction does not have",
            ),
        ],
        &rows,
        |_, _| false,
    );
}

/// Each imported file with the rank it was given and where that came from; the user can set it.
fn files_and_ranks_ui(ui: &mut egui::Ui, studio: &Studio, out: &mut Vec<Command>) {
    let traces = &studio.traces;
    egui::CollapsingHeader::new("Files and ranks").show(ui, |ui| {
        egui::Grid::new("trace-files").striped(true).show(ui, |ui| {
            for (i, raw) in traces.raw.iter().enumerate() {
                let name = ui.label(&raw.file);
                ui.label(format!("{} events", raw.event_count));
                let Some(slot) = traces.user_ranks.get(i) else {
                    continue;
                };
                let mut set = slot.is_some();
                if ui.checkbox(&mut set, "set rank").changed() {
                    out.push(Command::TraceFileRank {
                        file: i,
                        rank: set.then(|| traces.found_rank(i).unwrap_or(0)),
                    });
                }
                if let Some(rank) = *slot {
                    let mut r = rank;
                    if ui
                        .add(egui::DragValue::new(&mut r).range(0..=65_535))
                        .labelled_by(name.id)
                        .changed()
                    {
                        out.push(Command::TraceFileRank {
                            file: i,
                            rank: Some(r),
                        });
                    }
                }
                ui.label(traces.file_rank(i).unwrap_or_else(|| "–".to_string()));
                ui.end_row();
            }
        });
    });
}

fn rules_ui(ui: &mut egui::Ui, studio: &Studio, out: &mut Vec<Command>) {
    let traces = &studio.traces;
    egui::CollapsingHeader::new("Schedule rules").show(ui, |ui| {
        ui.label(
            RichText::new(
                "Regular expressions over event names with groups `stage`, `phase`, `mb`; the first match wins.",
            )
            .small(),
        );
        let label = ui.label("Rules (JSON)");
        let mut text = traces.rules_text.clone();
        if ui
            .add(
                egui::TextEdit::multiline(&mut text)
                    .code_editor()
                    .desired_rows(12)
                    .desired_width(f32::INFINITY),
            )
            .labelled_by(label.id)
            .changed()
        {
            out.push(Command::RulesText(text));
        }
        ui.horizontal(|ui| {
            if ui.button("Apply rules").clicked() {
                out.push(Command::ApplyRules);
            }
            if ui.button("Built-in rules").clicked() {
                out.push(Command::BuiltInRules);
            }
        });
        if let Some(e) = &traces.rules_error {
            ui.label(error_text(e));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_with_a_caret_is_monospace_so_the_caret_points_right() {
        let regex =
            "rule 0 (x): bad pattern: regex parse error:\n    (\n    ^\nerror: unclosed group";
        let plain = "rule 0 (x): `phase` must be F, B, I or W";
        let font = |t: RichText| {
            let job = egui::WidgetText::from(t).into_layout_job(
                &egui::Style::default(),
                egui::FontSelection::Default,
                egui::Align::LEFT,
            );
            job.sections
                .first()
                .map(|s| s.format.font_id.family.clone())
        };
        assert_eq!(font(error_text(regex)), Some(egui::FontFamily::Monospace));
        assert_ne!(font(error_text(plain)), Some(egui::FontFamily::Monospace));
    }
}
