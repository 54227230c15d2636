//! What `mpipe trace` prints: every rank's recovered actions in time order (aligned clock), its
//! steps, and the alignment — as JSON, or as a short table.

use super::align::Alignment;
use super::rank::RankSource;
use super::recover::{MeasuredEvent, Measurement};
use serde::Serialize;
use std::fmt::Write;

#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    pub files: Vec<String>,
    pub ranks: Vec<RankReport>,
    pub alignment: Alignment,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RankReport {
    pub rank: usize,
    /// The file(s) of the rank, comma-separated.
    pub file: String,
    pub rank_source: RankSource,
    /// Trace events in the rank's files.
    pub events: usize,
    pub steps: usize,
    pub device_side: bool,
    pub offset_ns: i64,
    pub actions: Vec<EventReport>,
    pub transfers: Vec<EventReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventReport {
    /// PyTorch's notation, as in `mpipe derive`: `0F0`, `2B1`, `1SEND_F0`.
    pub action: String,
    pub step: usize,
    /// On the aligned clock.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Of the span, the time its compute ops cover, and the rest: waiting.
    pub compute_ns: i64,
    pub wait_ns: i64,
}

impl TraceReport {
    pub fn new(m: &Measurement, alignment: &Alignment) -> TraceReport {
        let events = |list: &[MeasuredEvent], offset: i64| {
            list.iter()
                .map(|e| EventReport {
                    action: e.label(),
                    step: e.step,
                    start_ns: e.start_ns.saturating_add(offset),
                    end_ns: e.end_ns.saturating_add(offset),
                    compute_ns: e.compute_ns,
                    wait_ns: e.wait_ns(),
                })
                .collect()
        };
        TraceReport {
            files: m.files.clone(),
            ranks: m
                .ranks
                .iter()
                .map(|r| {
                    let offset = alignment.offset(r.rank);
                    RankReport {
                        rank: r.rank,
                        file: r
                            .files
                            .iter()
                            .filter_map(|&f| m.files.get(f))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                        rank_source: r.rank_source,
                        events: r.event_count,
                        steps: r.steps.len(),
                        device_side: r.device_side,
                        offset_ns: offset,
                        actions: events(&r.actions, offset),
                        transfers: events(&r.transfers, offset),
                    }
                })
                .collect(),
            alignment: alignment.clone(),
            warnings: m.warnings.iter().map(ToString::to_string).collect(),
        }
    }

    /// A short human summary: one block per rank with each step's action order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} file(s), {} rank(s); clocks: {}",
            self.files.len(),
            self.ranks.len(),
            match self.alignment.method {
                super::align::AlignMethod::SharedClock =>
                    "shared (epoch timestamps agree with the schedule)",
                super::align::AlignMethod::Causality => "aligned from cross-rank dependencies",
                super::align::AlignMethod::None => "as recorded",
            }
        );
        for r in &self.ranks {
            let reference = self.alignment.ranks.first().map(|o| o.rank) == Some(r.rank);
            let unc = match self.alignment.ranks.iter().find(|o| o.rank == r.rank) {
                _ if reference && self.ranks.len() > 1 => " (the reference clock)".to_string(),
                Some(o) => o
                    .uncertainty_ns
                    .map_or(String::new(), |u| format!(" ± {u} ns")),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "\nrank {}: {} (rank {}), {} events, {} step(s), {} actions, {} transfers, offset {} ns{unc}{}",
                r.rank,
                r.file,
                r.rank_source.phrase(),
                r.events,
                r.steps,
                r.actions.len(),
                r.transfers.len(),
                r.offset_ns,
                if r.device_side {
                    ", device-side annotations"
                } else {
                    ""
                }
            );
            let steps = r.actions.iter().map(|a| a.step).max().map_or(0, |s| s + 1);
            for step in 0..steps {
                let order: Vec<&str> = r
                    .actions
                    .iter()
                    .filter(|a| a.step == step)
                    .map(|a| a.action.as_str())
                    .collect();
                let _ = writeln!(out, "  step {step}: {}", order.join(" "));
            }
        }
        for note in &self.alignment.notes {
            let _ = writeln!(out, "note: {note}");
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}

/// What `mpipe compare-trace` prints.
#[derive(Debug, Clone, Serialize)]
pub struct CompareTraceReport {
    pub scenario: String,
    pub fit_step: usize,
    /// The step the calibration is checked on; `null` when the traces have no other step than
    /// the fit step (the figures are then the fit step's: they say how well it fitted, not how
    /// well it predicts).
    pub check_step: Option<usize>,
    /// Over all ranks, on the check step.
    pub order_agreement: f64,
    pub makespan_measured_s: f64,
    pub makespan_predicted_s: f64,
    pub makespan_calibrated_s: f64,
    /// `|predicted − measured| / measured`.
    pub predicted_error: f64,
    pub calibrated_error: f64,
    pub factors: Vec<super::calibrate::Factor>,
    pub transfer_s: Option<f64>,
    pub alignment: Alignment,
    pub ranks: Vec<RankResiduals>,
    /// Every matched action of the check step, against the uncalibrated prediction.
    pub actions: Vec<super::compare::ActionResidual>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RankResiduals {
    pub rank: usize,
    pub order_agreement: f64,
    /// Measured compute, wait inside the action spans, idle outside them.
    pub measured_compute_s: f64,
    pub measured_wait_s: f64,
    pub measured_idle_s: f64,
    pub measured_bubble_s: f64,
    pub predicted_bubble_s: f64,
    pub calibrated_bubble_s: f64,
    pub mean_abs_start_residual_s: f64,
    pub mean_abs_duration_residual_s: f64,
    pub calibrated_mean_abs_start_residual_s: f64,
    pub calibrated_mean_abs_duration_residual_s: f64,
    pub missing: usize,
    pub unexpected: usize,
}

impl CompareTraceReport {
    pub fn new(
        scenario: &str,
        c: &super::calibrate::Calibration,
        alignment: &Alignment,
        m: &Measurement,
    ) -> CompareTraceReport {
        let (predicted_error, calibrated_error) = c.errors();
        let ranks = c
            .before
            .ranks
            .iter()
            .map(|b| {
                let a = c.after.ranks.iter().find(|a| a.rank == b.rank);
                RankResiduals {
                    rank: b.rank,
                    order_agreement: b.order_agreement,
                    measured_compute_s: b.measured_compute_s,
                    measured_wait_s: b.measured_wait_s,
                    measured_idle_s: b.measured_idle_s,
                    measured_bubble_s: b.measured_bubble_s,
                    predicted_bubble_s: b.predicted_bubble_s,
                    calibrated_bubble_s: a.map_or(0.0, |a| a.predicted_bubble_s),
                    mean_abs_start_residual_s: b.mean_abs_start_residual_s,
                    mean_abs_duration_residual_s: b.mean_abs_duration_residual_s,
                    calibrated_mean_abs_start_residual_s: a
                        .map_or(0.0, |a| a.mean_abs_start_residual_s),
                    calibrated_mean_abs_duration_residual_s: a
                        .map_or(0.0, |a| a.mean_abs_duration_residual_s),
                    missing: b.missing,
                    unexpected: b.unexpected,
                }
            })
            .collect();
        CompareTraceReport {
            scenario: scenario.to_string(),
            fit_step: c.fit_step,
            check_step: (c.check_step != c.fit_step).then_some(c.check_step),
            order_agreement: c.before.order_agreement,
            makespan_measured_s: c.before.makespan_measured_s,
            makespan_predicted_s: c.before.makespan_predicted_s,
            makespan_calibrated_s: c.after.makespan_predicted_s,
            predicted_error,
            calibrated_error,
            factors: c.factors.clone(),
            transfer_s: c.transfer_s,
            alignment: alignment.clone(),
            ranks,
            actions: c.before.actions.clone(),
            warnings: m
                .warnings
                .iter()
                .map(ToString::to_string)
                .chain(c.before.warnings.iter().cloned())
                .collect(),
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let ms = |s: f64| format!("{:.3} ms", s * 1e3);
        let checked = match self.check_step {
            Some(step) => format!("checked on step {step}"),
            None => {
                "not checked: the traces have no other step (the figures below are the fit step's)"
                    .to_string()
            }
        };
        let _ = writeln!(
            out,
            "{}: fitted on step {}, {checked}\n  step time: measured {}, predicted {} ({:+.1}%), calibrated {} ({:+.1}%)\n  order agreement {:.1}%",
            self.scenario,
            self.fit_step,
            ms(self.makespan_measured_s),
            ms(self.makespan_predicted_s),
            signed_error(self.makespan_predicted_s, self.makespan_measured_s),
            ms(self.makespan_calibrated_s),
            signed_error(self.makespan_calibrated_s, self.makespan_measured_s),
            self.order_agreement * 100.0
        );
        let factors: Vec<String> = self
            .factors
            .iter()
            .map(|f| match f.samples {
                0 => format!(
                    "region {} {} not fitted (no measured action; kept ×1)",
                    f.region, f.phase
                ),
                n => format!(
                    "region {} {} ×{:.3} ({n} actions)",
                    f.region, f.phase, f.factor
                ),
            })
            .collect();
        let _ = writeln!(out, "  fitted: {}", factors.join(", "));
        if let Some(t) = self.transfer_s {
            let _ = writeln!(out, "  fitted transfer latency: {}", ms(t));
        }
        // Rank numbers are sparse and may be long (`--rank f=4000000000`): the column fits them.
        let width = self
            .ranks
            .iter()
            .map(|r| r.rank.to_string().len())
            .max()
            .unwrap_or(0)
            .max(4);
        let _ = writeln!(
            out,
            "\n{:>width$}  order   bubble meas/pred/cal          |start resid| pred → cal     |dur resid| pred → cal",
            "rank"
        );
        for r in &self.ranks {
            let _ = writeln!(
                out,
                "{:>width$}  {:>5.1}%  {} / {} / {}   {} → {}   {} → {}",
                r.rank,
                r.order_agreement * 100.0,
                ms(r.measured_bubble_s),
                ms(r.predicted_bubble_s),
                ms(r.calibrated_bubble_s),
                ms(r.mean_abs_start_residual_s),
                ms(r.calibrated_mean_abs_start_residual_s),
                ms(r.mean_abs_duration_residual_s),
                ms(r.calibrated_mean_abs_duration_residual_s),
            );
        }
        let _ = writeln!(
            out,
            "\n{:>width$}  measured compute / wait in spans / idle outside spans",
            "rank"
        );
        for r in &self.ranks {
            let _ = writeln!(
                out,
                "{:>width$}  {} / {} / {}",
                r.rank,
                ms(r.measured_compute_s),
                ms(r.measured_wait_s),
                ms(r.measured_idle_s),
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}

fn signed_error(value: f64, reference: f64) -> f64 {
    if reference > 0.0 {
        (value - reference) / reference * 100.0
    } else {
        0.0
    }
}
