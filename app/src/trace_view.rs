//! The "Predicted vs measured" part of the window: importing traces (progress bar, Cancel), the
//! comparison summary and chart, calibration (an undoable edit of the scenario), the warnings,
//! and the rules editor.

use crate::gantt::GanttState;
use crate::gantt::measured::measured_chart;
use crate::studio::Studio;
use crate::traces::{TraceSource, Traces};
use egui::{Color32, RichText};
use mpipe::sim_report::secs;
use mpipe::simulation::Simulation;
use mpipe::trace::align::AlignMethod;

impl Studio {
    /// Starts importing trace files on a worker thread (replacing the traces on screen when done).
    pub fn open_traces(&mut self, sources: Vec<TraceSource>) {
        self.traces.start_import(sources);
    }

    /// Takes a finished import or calibration; true while one is still running.
    pub fn poll_traces(&mut self) -> bool {
        match self.traces.poll() {
            Some(Ok(message)) => self.inform(message),
            Some(Err(message)) => self.fail(message),
            None => {}
        }
        if let Some(rx) = &self.calibrating {
            match rx.try_recv() {
                Ok(result) => {
                    self.calibrating = None;
                    self.apply_calibration(result);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.calibrating = None;
                    self.fail("the calibration stopped unexpectedly".into());
                }
            }
        }
        self.traces.import.is_some() || self.calibrating.is_some()
    }

    /// Fits the scenario to the measured step on a worker thread; the result arrives as an edit.
    pub fn start_calibration(&mut self) {
        let (Some(scenario), Ok(sim)) = (self.scenario.clone(), self.result.as_ref()) else {
            return;
        };
        let (Some(m), Some(a)) = (
            self.traces.measurement.clone(),
            self.traces.alignment.clone(),
        ) else {
            return;
        };
        let sim = sim.clone();
        let step = self.traces.step;
        let check = if step + 1 < self.traces.steps() {
            step + 1
        } else {
            step
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let result = mpipe::trace::calibrate::calibrate(
                &scenario,
                &sim,
                &m,
                &a,
                step,
                check,
                Default::default(),
            )
            .map_err(|e| e.to_string());
            let _ = tx.send(result);
        });
        self.calibrating = Some(rx);
    }

    /// Replaces the scenario with the calibrated one (one undo takes it back).
    pub fn apply_calibration(
        &mut self,
        result: Result<mpipe::trace::calibrate::Calibration, String>,
    ) {
        match result {
            Ok(c) => {
                let (before, after) = c.errors();
                let message = format!(
                    "calibrated on step {}, checked on step {}: step-time error {:.1}% → {:.1}%",
                    c.fit_step,
                    c.check_step,
                    before * 100.0,
                    after * 100.0
                );
                self.edit(|s| *s = c.scenario);
                self.traces.calibrated = Some(message.clone());
                self.inform(message);
            }
            Err(e) => self.fail(format!("calibration: {e}")),
        }
    }
}

/// The traces section of the central panel, drawn under the main chart with its own borrows of
/// the window's state. Returns whether Calibrate was clicked.
pub(crate) fn trace_panel(
    ui: &mut egui::Ui,
    sim: &Simulation,
    traces: &mut Traces,
    gantt: &mut GanttState,
    calibrating: bool,
    can_calibrate: bool,
) -> bool {
    let mut calibrate = false;
    ui.horizontal(|ui| {
        ui.label(RichText::new("Predicted vs measured").strong());
        if ui.button("Open traces…").clicked()
            && let Some(paths) = rfd::FileDialog::new()
                .add_filter("Chrome trace", &["json", "gz"])
                .pick_files()
        {
            traces.start_import(paths.into_iter().map(TraceSource::Path).collect());
        }
        if !traces.raw.is_empty() && ui.button("Clear traces").clicked() {
            traces.clear();
        }
    });
    if let Some(job) = &traces.import {
        let mut cancel = false;
        ui.horizontal(|ui| {
            ui.add(
                egui::ProgressBar::new(job.progress())
                    .show_percentage()
                    .desired_width(240.0),
            );
            ui.label(format!("importing {} file(s)…", job.files));
            cancel = ui.button("Cancel import").clicked();
        });
        if cancel {
            job.cancel();
        }
    }
    if traces.raw.is_empty() {
        ui.label(
            RichText::new(
                "Open or drop profiler traces (Chrome trace JSON or .json.gz, one per rank) to \
                 see what the run did under each rank's prediction.",
            )
            .small(),
        );
        return false;
    }
    let steps = traces.steps();
    if let Some(comparison) = traces.view(sim)
        && let (Some(m), Some(alignment)) = (&traces.measurement, &traces.alignment)
    {
        let clocks = match alignment.method {
            AlignMethod::SharedClock => "shared clock",
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
        let mut step = traces.step;
        ui.horizontal(|ui| {
            let label = ui.label("step");
            ui.add(egui::DragValue::new(&mut step).range(0..=steps.saturating_sub(1)))
                .labelled_by(label.id);
            ui.label(format!("of {steps}"));
            calibrate = ui
                .add_enabled(
                    !calibrating && can_calibrate,
                    egui::Button::new("Calibrate"),
                )
                .on_hover_text(
                    "Fit each region's forward/backward times and the link latency to this step, \
                     check on the next step, and make the result the scenario (undo takes it back)",
                )
                .clicked();
            if calibrating {
                ui.spinner();
            }
        });
        if let Some(message) = &traces.calibrated {
            ui.label(RichText::new(message).small());
        }
        let span = sim.makespan_s.max(comparison.makespan_measured_s);
        let data = gantt.data(sim);
        let mut range = gantt.range;
        measured_chart(
            ui,
            &data.events,
            &comparison.blocks,
            sim.derivation.plan.ranks,
            span,
            &mut range,
        );
        gantt.range = range;
        ui.label(
            RichText::new(
                "Measured start vs predicted: green within 2% of the step, amber within 10%, red beyond; grey: not predicted.",
            )
            .small(),
        );
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
        traces.step = step;
    }
    files_and_ranks(ui, traces);
    rules_editor(ui, traces);
    calibrate
}

/// Each imported file with the rank it was given and where that came from; the user can set it.
fn files_and_ranks(ui: &mut egui::Ui, traces: &mut Traces) {
    let mut changed = false;
    egui::CollapsingHeader::new("Files and ranks").show(ui, |ui| {
        egui::Grid::new("trace-files").striped(true).show(ui, |ui| {
            for (i, raw) in traces.raw.iter().enumerate() {
                let found = traces.measurement.as_ref().and_then(|m| {
                    m.ranks
                        .iter()
                        .find(|r| r.files.contains(&i))
                        .map(|r| (r.rank, r.rank_source))
                });
                let name = ui.label(&raw.file);
                ui.label(format!("{} events", raw.event_count));
                let Some(slot) = traces.user_ranks.get_mut(i) else {
                    continue;
                };
                let mut set = slot.is_some();
                if ui.checkbox(&mut set, "set rank").changed() {
                    *slot = set.then(|| found.map_or(0, |f| f.0));
                    changed = true;
                }
                if let Some(rank) = slot.as_mut() {
                    changed |= ui
                        .add(egui::DragValue::new(rank).range(0..=65_535))
                        .labelled_by(name.id)
                        .changed();
                } else {
                    ui.label(found.map_or("–".to_string(), |(rank, source)| {
                        format!("rank {rank} (from {source})")
                    }));
                }
                ui.end_row();
            }
        });
    });
    if changed {
        traces.analyse();
    }
}

fn rules_editor(ui: &mut egui::Ui, traces: &mut Traces) {
    egui::CollapsingHeader::new("Schedule rules").show(ui, |ui| {
        ui.label(
            RichText::new(
                "Regular expressions over event names with groups `stage`, `phase`, `mb`; the first match wins.",
            )
            .small(),
        );
        let label = ui.label("Rules (JSON)");
        ui.add(
            egui::TextEdit::multiline(&mut traces.rules_text)
                .code_editor()
                .desired_rows(12)
                .desired_width(f32::INFINITY),
        )
        .labelled_by(label.id);
        ui.horizontal(|ui| {
            if ui.button("Apply rules").clicked() {
                traces.apply_rules_text();
            }
            if ui.button("Built-in rules").clicked() {
                traces.rules_text =
                    serde_json::to_string_pretty(&mpipe::trace::RuleSet::default()).unwrap_or_default();
                traces.apply_rules_text();
            }
        });
        if let Some(e) = &traces.rules_error {
            ui.colored_label(Color32::from_rgb(0xE0, 0x50, 0x50), e);
        }
    });
}
