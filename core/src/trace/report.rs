//! What `mpipe trace` prints: every rank's recovered actions in time order (aligned clock), its
//! steps, and the alignment — as JSON, or as a short table.

use super::align::Alignment;
use super::rank::RankSource;
use super::recover::{MeasuredEvent, Measurement};
use crate::vocab::units::{kib, ms, rate};
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
    /// How the steps were told apart.
    pub step_source: super::step::StepSource,
    pub device_side: bool,
    /// Whether compute actions are timed by the GPU kernels they launched.
    pub timed_by_kernels: bool,
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
    /// When the first compute op inside starts and the last ends (aligned clock).
    pub compute_start_ns: i64,
    pub compute_end_ns: i64,
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
                    compute_start_ns: e.compute_start_ns.saturating_add(offset),
                    compute_end_ns: e.compute_end_ns.saturating_add(offset),
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
                        step_source: r.step_source,
                        device_side: r.device_side,
                        timed_by_kernels: r.timed_by_kernels,
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
            match (self.alignment.method, self.alignment.constraints) {
                (super::align::AlignMethod::SharedClock, 0) =>
                    "shared epoch timestamps (no cross-rank dependency to check them against)"
                        .to_string(),
                (super::align::AlignMethod::SharedClock, n) =>
                    format!("shared (epoch timestamps; all {n} cross-rank dependencies hold)"),
                (super::align::AlignMethod::OneFile, 0) =>
                    "one timeline (every rank in one file; no cross-rank dependency to check it against)"
                        .to_string(),
                (super::align::AlignMethod::OneFile, n) =>
                    format!("one timeline (every rank in one file; all {n} cross-rank dependencies hold)"),
                (super::align::AlignMethod::Causality, 0) =>
                    "as recorded (no cross-rank dependency to align them with)".to_string(),
                (super::align::AlignMethod::Causality, n) =>
                    format!("aligned from {n} cross-rank dependencies"),
                (super::align::AlignMethod::None, _) => "as recorded".to_string(),
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
                "\nrank {}: {} (rank {}), {} events, {} step(s) {}, {} actions, {} transfers, offset {} ns{unc}{}",
                r.rank,
                r.file,
                r.rank_source.phrase(),
                r.events,
                r.steps,
                r.step_source.phrase(),
                r.actions.len(),
                r.transfers.len(),
                r.offset_ns,
                if r.device_side {
                    ", device-side annotations"
                } else if r.timed_by_kernels {
                    ", actions timed by their GPU kernels"
                } else {
                    ""
                }
            );
            for (step, order) in by_step(&r.actions) {
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

/// Every step from 0 to the last with its actions, each step's in their order (a step without
/// any, empty): sorted by step once (stably), not searched for each step (a run of thousands of
/// steps read as many times).
fn by_step(actions: &[EventReport]) -> Vec<(usize, Vec<&str>)> {
    let mut sorted: Vec<(usize, &str)> = actions
        .iter()
        .map(|a| (a.step, a.action.as_str()))
        .collect();
    sorted.sort_by_key(|&(step, _)| step);
    let mut out: Vec<(usize, Vec<&str>)> = Vec::new();
    for (step, action) in sorted {
        // The steps between the last one listed and this one have no action.
        let next = out.last().map_or(0, |&(last, _)| last + 1);
        out.extend((next..step).map(|empty| (empty, Vec::new())));
        match out.last_mut() {
            Some((last, list)) if *last == step => list.push(action),
            _ => out.push((step, vec![action])),
        }
    }
    out
}

/// What `mpipe compare-trace` prints.
#[derive(Debug, Clone, Serialize)]
pub struct CompareTraceReport {
    pub scenario: String,
    pub fit_step: usize,
    /// The costs were fitted on every step of the run (`--fit-step all`; memory on `fit_step`):
    /// the validation is in-sample.
    pub every_step: bool,
    /// The step the calibration is checked on; `null` when the traces have no other step than
    /// the fit step (the figures are then the fit step's: they say how well it fitted, not how
    /// well it predicts).
    pub check_step: Option<usize>,
    /// Over all ranks, on the check step.
    pub order_agreement: f64,
    pub makespan_measured_s: f64,
    pub makespan_predicted_s: f64,
    pub makespan_calibrated_s: f64,
    /// The calibrated scenario's expected step under the run's measured jitter (the median of
    /// seeded draws, with its 10 % and 90 % points): what the validation compares. `None` when
    /// nothing measured varies.
    pub expected: Option<crate::sim::jitter::Expected>,
    /// How the run's costs varied (quantiles: each action's compute over its stage's mean, the
    /// gaps before actions, transfers, stalls in the calls).
    pub jitter: crate::sim::jitter::Jitter,
    /// `|predicted − measured| / measured`.
    pub predicted_error: f64,
    pub calibrated_error: f64,
    pub factors: Vec<super::calibrate::Factor>,
    /// The link cost fitted to the measured transfers.
    pub link: super::calibrate::LinkFit,
    /// The runtime's per-action overhead fitted from the gaps between actions.
    pub overhead: super::calibrate::OverheadFit,
    /// What posting a send costs its rank, measured from the send spans (reported, not applied).
    pub p2p: super::calibrate::P2pFit,
    /// Of an accelerator's run, per stage and phase, the host's time launching an action against
    /// the device's running it (empty on a CPU run).
    pub host_launch: Vec<super::calibrate::HostLaunch>,
    /// The host model fitted from an accelerator's run and applied
    /// (`hardware.host_launch_per_layer_s`; `null` on a CPU run).
    pub host: Option<super::calibrate::HostFit>,
    /// What the run's split backward cost beyond the whole backward, fitted and applied
    /// (`hardware.input_half_factor`, `weight_half_factor`; `null` where the run cannot show
    /// it).
    pub split: Option<super::calibrate::SplitFit>,
    /// What the calibrated scenario prices a split backward's input and weight halves at, over
    /// their shares of the whole backward: `split`'s where fitted, else PyTorch's where the run
    /// split none and the scenario gives none, else the scenario's (1 where it gives none).
    pub half_factors: [f64; 2],
    /// Where `half_factors` come from: `fitted`, `pytorch_prior` (PyTorch's measured split, for
    /// a run that split none) or `scenario`.
    pub split_pricing: super::calibrate::SplitPricing,
    /// Whether the fitted steps split a backward (beyond the first stage's run whole in its
    /// weight half).
    pub run_split: bool,
    /// What an action costs after another stage or phase on its rank.
    pub switch: super::calibrate::SwitchFit,
    /// `(calibrated − measured) / measured` on the fit step: what the fit leaves unexplained.
    pub fit_residual: f64,
    /// The calibrated step time against every other step (`null` with one step).
    pub validation: Option<super::calibrate::Validation>,
    /// Every step's measured time against the calibrated prediction.
    pub steps: Vec<super::calibrate::StepCheck>,
    /// Per rank, the memory measured on the fit step (traces with `[memory]` events).
    pub memory: Vec<super::calibrate::MemoryFit>,
    /// Another schedule of the same model predicted with the fitted costs (`--what-if`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
    /// The trace's schedule identified among every registered one, by order agreement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identification: Option<super::whatif::Identification>,
    /// Why the validation gives no "within the spread" verdict: the scenario's schedule is not
    /// the one that ran, or a phase's factor was not fitted (`null`: a verdict is given).
    pub verdict_withheld: Option<String>,
    /// That the scenario's schedule is not the one that ran (its orders on the fit step agree
    /// less than fully), naming the best match once [`CompareTraceReport::identified`] ran.
    pub wrong_schedule: Option<String>,
    /// What the memory peaks (measured, predicted, what-if) are: `dynamic` or `total`.
    pub memory_basis: super::whatif::MemoryBasis,
    /// Every registered schedule that fits the model, predicted with the fitted costs, fastest
    /// first (`--what-if-all`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_if_all: Vec<super::whatif::Prediction>,
    pub alignment: Alignment,
    pub ranks: Vec<RankResiduals>,
    /// Every matched action of the check step, against the uncalibrated prediction.
    pub actions: Vec<super::compare::ActionResidual>,
    pub warnings: Vec<String>,
}

/// What-if: another schedule of the traced model, predicted with the fitted costs.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub file: String,
    /// The schedule, as `mpipe derive` writes it (`⟨1f1b, 1f1b⟩`).
    pub schedule: String,
    pub makespan_s: f64,
    pub bubble_fraction: f64,
    /// Per rank, the predicted peak memory (bytes) on `basis`, the measured peaks' basis.
    pub peak_bytes: Vec<f64>,
    pub basis: super::whatif::MemoryBasis,
    /// Its expected step under the run's measured jitter.
    pub expected: Option<crate::sim::jitter::Expected>,
    /// Where the run could not show its split's cost and this schedule splits its backward: its
    /// step with the split priced at the low and the high end of what recorded runs measured
    /// ([`super::whatif::Prediction::split_range_s`]).
    pub split_range_s: Option<[f64; 2]>,
}

impl WhatIf {
    pub fn new(
        file: &str,
        scenario: &crate::scenario::Scenario,
        sim: &crate::sim::run::Simulation,
        basis: super::whatif::MemoryBasis,
        expected: Option<crate::sim::jitter::Expected>,
    ) -> WhatIf {
        WhatIf {
            expected,
            file: file.to_string(),
            schedule: crate::schedules::skeleton::schedule_to_string(&scenario.schedule),
            makespan_s: sim.makespan_s,
            bubble_fraction: sim.bubble_fraction,
            peak_bytes: sim.memory.iter().map(|c| basis.peak(c)).collect(),
            basis,
            split_range_s: None,
        }
    }
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
    /// The check step's measured memory peak (`null` without `[memory]` events), and the
    /// predicted and calibrated ones (their dynamic part when the measurement counts from the
    /// profiler's start).
    pub measured_peak_bytes: Option<f64>,
    pub predicted_peak_bytes: f64,
    pub calibrated_peak_bytes: f64,
    /// The calibrated memory curve's shape against the measured one
    /// ([`super::compare::RankComparison::memory_shape_error`]).
    pub calibrated_memory_shape_error: Option<f64>,
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
        let mut report = Self::figures(scenario, c, alignment, m);
        let microbatches = super::whatif::measured_microbatches(m, c.fit_step);
        let wrong_count = microbatches
            .filter(|&n| n != c.scenario.microbatches)
            .map(|n| {
                format!(
                    "the trace runs {n} microbatches per step (forwards of a stage on step {}), the scenario {}: set `microbatches` to {n}",
                    c.fit_step, c.scenario.microbatches
                )
            });
        if let Some(why) = &wrong_count {
            report.warnings.insert(0, why.clone());
        }
        let order = c.fit.order_agreement;
        if order < 1.0 - 1e-9 {
            let why = format!(
                "the scenario's schedule {} over {} microbatches is not what ran: its order agreement on step {} is {:.1}%",
                crate::schedules::skeleton::schedule_to_string(&c.scenario.schedule),
                c.scenario.microbatches,
                c.fit_step,
                order * 100.0
            );
            let at = usize::from(wrong_count.is_some());
            report.warnings.insert(at, why.clone());
            report.wrong_schedule = Some(why);
        }
        let reasons: Vec<String> = wrong_count
            .into_iter()
            .chain(report.wrong_schedule.iter().cloned())
            .chain(unfitted_phases(&c.factors))
            .collect();
        report.verdict_withheld = (!reasons.is_empty()).then(|| reasons.join("; "));
        report
    }

    /// The report's figures, before any verdict is judged.
    fn figures(
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
                    measured_peak_bytes: b.measured_peak_bytes,
                    predicted_peak_bytes: b.predicted_peak_bytes,
                    calibrated_peak_bytes: a.map_or(0.0, |a| a.predicted_peak_bytes),
                    calibrated_memory_shape_error: a.and_then(|a| a.memory_shape_error),
                    missing: b.missing,
                    unexpected: b.unexpected,
                }
            })
            .collect();
        CompareTraceReport {
            scenario: scenario.to_string(),
            fit_step: c.fit_step,
            every_step: c.every_step,
            check_step: (c.check_step != c.fit_step).then_some(c.check_step),
            order_agreement: c.before.order_agreement,
            makespan_measured_s: c.before.makespan_measured_s,
            makespan_predicted_s: c.before.makespan_predicted_s,
            makespan_calibrated_s: c.after.makespan_predicted_s,
            expected: c.expected,
            jitter: c.jitter.clone(),
            predicted_error,
            calibrated_error,
            factors: c.factors.clone(),
            link: c.link.clone(),
            overhead: c.overhead.clone(),
            p2p: c.p2p.clone(),
            host_launch: c.host_launch.clone(),
            host: c.host.clone(),
            split: c.split.clone(),
            half_factors: c.scenario.hardware.as_ref().map_or([1.0, 1.0], |h| {
                [
                    h.half_factor(crate::vocab::phase::Phase::Input),
                    h.half_factor(crate::vocab::phase::Phase::Weight),
                ]
            }),
            split_pricing: c.split_pricing,
            run_split: c.run_split,
            switch: c.switch.clone(),
            fit_residual: c.fit_residual(),
            validation: c.validation(),
            steps: c.steps.clone(),
            memory: c.memory.clone(),
            what_if: None,
            identification: None,
            verdict_withheld: None,
            wrong_schedule: None,
            memory_basis: super::whatif::MemoryBasis::of(m),
            what_if_all: Vec::new(),
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

    /// Adds the identification of the trace's schedule: when the scenario's schedule is not the
    /// one that ran, the warning that says so (and the withheld verdict) name the best match.
    pub fn identified(&mut self, id: super::whatif::Identification) {
        if let Some(why) = self.wrong_schedule.clone() {
            let best = match id.better_than_scenario() {
                Some(b) => format!(
                    "; the best match among the registered schedules is {} ({} stage(s) per rank, {} microbatches: {:.1}%)",
                    b.schedule,
                    b.chunks,
                    b.microbatches,
                    b.order_agreement * 100.0
                ),
                None => "; no registered schedule matches it better".to_string(),
            };
            let named = format!("{why}{best}");
            for w in self.warnings.iter_mut().filter(|w| **w == why) {
                w.clone_from(&named);
            }
            if let Some(v) = &mut self.verdict_withheld {
                *v = v.replacen(&why, &named, 1);
            }
            self.wrong_schedule = Some(named);
        }
        self.identification = Some(id);
    }

    /// Which steps the costs were fitted on, in words: `fitted on step 0`, or `fitted on every
    /// step (10; memory on step 0)`.
    pub fn fitted_on(&self) -> String {
        if self.every_step {
            format!(
                "fitted on every step ({}; memory on step {})",
                self.steps.len(),
                self.fit_step
            )
        } else {
            format!("fitted on step {}", self.fit_step)
        }
    }

    /// What the validation compares with, in words: the other steps, or (fitted on every step)
    /// the steps it was fitted on, in-sample.
    pub fn validated_against(&self) -> String {
        if self.every_step {
            format!(
                "against the {} step(s) it was fitted on (in-sample)",
                self.steps.len()
            )
        } else {
            format!(
                "validated on the {} other step(s)",
                self.steps.len().saturating_sub(1)
            )
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let checked = match self.check_step {
            Some(step) => format!("checked on step {step}"),
            None => {
                "not checked: the traces have no other step (the figures below are the fit step's)"
                    .to_string()
            }
        };
        let fitted_on = self.fitted_on();
        let _ = writeln!(
            out,
            "{}: {fitted_on}, {checked}\n  step time: measured {}, predicted {} ({:+.1}%), calibrated {}{} ({:+.1}%){}\n  order agreement {:.1}%",
            self.scenario,
            ms(self.makespan_measured_s),
            ms(self.makespan_predicted_s),
            signed_error(self.makespan_predicted_s, self.makespan_measured_s),
            ms(self.makespan_calibrated_s),
            if self.expected.is_some() {
                " simulated"
            } else {
                ""
            },
            signed_error(self.makespan_calibrated_s, self.makespan_measured_s),
            self.expected.map_or(String::new(), |e| format!(
                ", {} expected ({:+.1}%)",
                ms(e.median_s),
                signed_error(e.median_s, self.makespan_measured_s)
            )),
            self.order_agreement * 100.0
        );
        if let Some(e) = &self.expected {
            let _ = writeln!(out, "  {}", e.sentence(self.makespan_calibrated_s, ms));
        }
        if !self.every_step {
            let _ = writeln!(
                out,
                "  calibrated against its own fit step {}: {} ({:+.1}%)",
                self.fit_step,
                ms(self
                    .expected
                    .map_or(self.makespan_calibrated_s, |e| e.median_s)),
                self.fit_residual * 100.0
            );
        }
        if let Some(v) = &self.validation {
            let against = self.validated_against();
            let _ = writeln!(
                out,
                "  {against}: measured median {} (from {} to {}: the run's own spread ±{:.1}%), {} {:+.1}%{}",
                ms(v.median_s),
                ms(v.min_s),
                ms(v.max_s),
                v.spread * 100.0,
                if self.expected.is_some() {
                    "expected"
                } else {
                    "calibrated"
                },
                v.error * 100.0,
                match (&self.verdict_withheld, v.within_spread()) {
                    (Some(_), _) => " (no verdict: see the warnings)",
                    (None, true) => " (within the spread)",
                    (None, false) => " (outside the spread)",
                }
            );
        }
        let factors: Vec<String> = self.factors.iter().map(factor_text).collect();
        let _ = writeln!(out, "  fitted compute: {}", factors.join(", "));
        let _ = writeln!(out, "  fitted links: {}", link_text(&self.link));
        let _ = writeln!(
            out,
            "  fitted per-action overhead: {}",
            overhead_text(&self.overhead)
        );
        let _ = writeln!(
            out,
            "  fitted posting of transfers: {}",
            p2p_text(&self.p2p)
        );
        let _ = writeln!(out, "  fitted switch: {}", switch_text(&self.switch));
        if let Some(text) = host_launch_text(&self.host_launch) {
            let _ = writeln!(out, "  host launch: {text}");
        }
        if let Some(host) = &self.host {
            let _ = writeln!(out, "  fitted host: {}", host_text(host));
        }
        if let Some(line) = self.split_line() {
            let _ = writeln!(out, "  {line}");
        }
        self.rank_tables(&mut out);
        out
    }

    /// The per-rank tables: order, bubbles and residuals; compute, wait and idle; memory peaks;
    /// then the what-if and the warnings.
    fn rank_tables(&self, out: &mut String) {
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
        if self.ranks.iter().any(|r| r.measured_peak_bytes.is_some()) {
            let _ = writeln!(
                out,
                "\n{:>width$}  memory peak measured / predicted / calibrated (error), the calibrated curve's shape error, in {}",
                "rank",
                self.memory_basis.label()
            );
            for r in &self.ranks {
                let Some(measured) = r.measured_peak_bytes else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "{:>width$}  {} / {} / {} ({:+.1}%), shape {}",
                    r.rank,
                    kib(measured),
                    kib(r.predicted_peak_bytes),
                    kib(r.calibrated_peak_bytes),
                    signed_error(r.calibrated_peak_bytes, measured),
                    r.calibrated_memory_shape_error
                        .map_or("–".to_string(), |e| format!("{:.1}%", 100.0 * e)),
                );
            }
        }
        if let Some(w) = &self.what_if {
            let peaks: Vec<String> = w.peak_bytes.iter().map(|&b| kib(b)).collect();
            let _ = writeln!(
                out,
                "\nwhat-if {} ({}), with the fitted costs: step time {}{}, bubble {:.1}%, memory peak per rank {} ({})",
                w.file,
                w.schedule,
                ms(w.makespan_s),
                w.expected.map_or(String::new(), |e| format!(
                    " (expected under the run's jitter: {}, 10–90%: {} to {})",
                    ms(e.median_s),
                    ms(e.low_s),
                    ms(e.high_s)
                )),
                w.bubble_fraction * 100.0,
                peaks.join(" / "),
                w.basis.short()
            );
            if let Some([low, high]) = w.split_range_s {
                let _ = writeln!(
                    out,
                    "  {} to {} {} (this run split no backward)",
                    ms(low),
                    ms(high),
                    super::whatif::SPLIT_RANGE_TEXT
                );
            }
        }
        if let Some(id) = &self.identification {
            let list: Vec<String> = id
                .ranked
                .iter()
                .take(3)
                .map(|c| format!("{} {:.1}%", c.schedule, c.order_agreement * 100.0))
                .collect();
            let _ = writeln!(
                out,
                "\nschedule identified from the orders of step {}: {} (the scenario's {} {:.1}%)",
                id.step,
                list.join(", "),
                id.scenario.schedule,
                id.scenario.order_agreement * 100.0
            );
        }
        self.what_if_all_table(out);
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
    }
}

impl CompareTraceReport {
    /// `--what-if-all`: every schedule ranked by predicted step time, with its peaks.
    fn what_if_all_table(&self, out: &mut String) {
        let Some(first) = self.what_if_all.first() else {
            return;
        };
        let _ = writeln!(
            out,
            "\nwhat-if over every schedule that fits the model, with the costs {}{} (memory in {}):\n rank  schedule                          v  step time     vs fastest  bubble  peak per rank",
            self.fitted_on(),
            if first.expected.is_some() {
                "; the step time is the expected one under the run's measured jitter"
            } else {
                ""
            },
            first.basis.label()
        );
        for (i, p) in self.what_if_all.iter().enumerate() {
            let peaks: Vec<String> = p.peak_bytes.iter().map(|&b| kib(b)).collect();
            let _ = writeln!(
                out,
                " {:>4}  {:<32}  {}  {:>12}  {:>+9.1}%  {:>5.1}%  {}{}{}",
                i + 1,
                p.schedule,
                p.chunks,
                ms(p.step_s),
                signed_error(p.step_s, first.step_s),
                p.bubble_fraction * 100.0,
                peaks.join(" / "),
                if p.over_capacity {
                    "  over capacity"
                } else {
                    ""
                },
                if p.ran { "  ← ran" } else { "" },
            );
            if let Some([low, high]) = p.split_range_s {
                let _ = writeln!(
                    out,
                    "{:44}({} to {} {})",
                    "",
                    ms(low),
                    ms(high),
                    super::whatif::SPLIT_RANGE_TEXT
                );
            }
        }
        // Said once: where the report's `split backward:` line said it above, a pointer to it.
        if self.split_unseen() {
            let [input, weight] = self.half_factors;
            let _ = writeln!(
                out,
                "the split schedules' halves are priced at ×{input:.3} (input) and ×{weight:.3} (weight), as `split backward:` above says"
            );
        } else if let Some(note) = self.unfitted_split_note() {
            let _ = writeln!(out, "{note}");
        }
    }

    /// Where the run could not show what its split backward costs (it split none) and the split
    /// is priced within what recorded PyTorch runs measured
    /// ([`super::calibrate::PYTORCH_HALF_FACTORS_MEASURED`]): the split's factors
    /// (`[input, weight]`) at the range's low and high end, for the what-if to price each split
    /// schedule at both; `None` where the run showed it or the scenario prices it outside.
    pub fn split_range(&self) -> Option<[[f64; 2]; 2]> {
        let [[input_low, input_high], [weight_low, weight_high]] =
            super::calibrate::PYTORCH_HALF_FACTORS_MEASURED;
        // Only where the split is priced within that range (PyTorch's prior, or a calibrated
        // scenario that carries it): a factor the scenario set outside it is the user's.
        let [input, weight] = self.half_factors;
        let inside = (input_low..=input_high).contains(&input)
            && (weight_low..=weight_high).contains(&weight);
        (self.split_unseen() && inside)
            .then_some([[input_low, weight_low], [input_high, weight_high]])
    }

    /// Whether the run could not show what its split backward costs because it split none (not
    /// fitted, no half measured).
    fn split_unseen(&self) -> bool {
        self.split.is_none() && !self.run_split
    }

    /// What the calibrated scenario prices a split backward at, where the run cannot show its
    /// own: `fitted split backward: …` from the run's halves, `split backward: …` for a run that
    /// split none ([`Self::unfitted_split_note`]); `None` for a run whose halves could not be
    /// fitted (the what-if says it).
    pub fn split_line(&self) -> Option<String> {
        match &self.split {
            Some(split) => Some(format!("fitted split backward: {}", split_text(split))),
            None if self.split_unseen() => self
                .unfitted_split_note()
                .map(|note| format!("split backward: {note}")),
            None => None,
        }
    }

    /// Where the run could not show what its split backward costs: what the what-if prices a
    /// split schedule's halves at instead (`None` where it was fitted).
    pub fn unfitted_split_note(&self) -> Option<String> {
        use super::calibrate::{PYTORCH_HALF_FACTORS_MEASURED, SplitPricing};
        let [input, weight] = self.half_factors;
        let [[input_low, input_high], [weight_low, weight_high]] = PYTORCH_HALF_FACTORS_MEASURED;
        let none_split =
            "this run split no backward, so it cannot show what its runtime's split costs";
        let whence = match (self.split_pricing, self.run_split) {
            (SplitPricing::Fitted, _) => return None,
            (SplitPricing::PytorchPrior, _) => format!(
                "PyTorch's split, the traces' runtime taken to be PyTorch's pipelining (recorded runs measured ×{input_low:.2}–{input_high:.2} for the input half, ×{weight_low:.2}–{weight_high:.2} for the weight half): {none_split}"
            ),
            (SplitPricing::Scenario, false) => format!("the scenario's: {none_split}"),
            (SplitPricing::Scenario, true) => format!(
                "the scenario's: this run's split backwards met too few whole ones (at least {} of each) to fit what its runtime's split costs",
                super::calibrate::MIN_PHASE_SAMPLES
            ),
        };
        Some(format!(
            "a split backward's halves are priced at ×{input:.3} (input) and ×{weight:.3} (weight) of their shares of the whole backward, {whence} (`hardware.input_half_factor`, `weight_half_factor`; calibrate on a run whose split backwards meet whole ones — PyTorch's zero-bubble runs, whose first stage runs its backward whole — or set them)"
        ))
    }
}

/// `stage 2 F`, or `region 1 B` for a region's pooled factor.
fn factor_name(f: &super::calibrate::Factor) -> String {
    match f.stage {
        Some(stage) => format!("stage {stage} {}", f.phase),
        None => format!("region {} {}", f.region, f.phase),
    }
}

/// Why no verdict may be given on a calibration whose factors are `factors`: the phases the
/// schedule runs that no measured action fitted (`None` when every one was fitted).
fn unfitted_phases(factors: &[super::calibrate::Factor]) -> Option<String> {
    let unfitted: Vec<String> = factors
        .iter()
        .filter(|f| f.samples == 0)
        .map(factor_name)
        .collect();
    (!unfitted.is_empty()).then(|| {
        format!(
            "not every phase was fitted ({}: no measured action, kept ×1)",
            unfitted.join(", ")
        )
    })
}

/// `stage 2 F ×1.234 (8 actions)`, or that it was not fitted, or that its actions computed
/// nothing (a first stage's input half: no input gradient to compute).
pub fn factor_text(f: &super::calibrate::Factor) -> String {
    let what = factor_name(f);
    match f.samples {
        0 => format!("{what} not fitted (no measured action; kept ×1)"),
        n if f.factor < 0.01 && f.phase == "I" => format!(
            "{what} ×{:.3} ({n} actions that computed next to nothing: a first stage's input half has no input gradient to compute)",
            f.factor
        ),
        n if f.factor < 0.01 => format!(
            "{what} ×{:.3} ({n} actions that computed next to nothing)",
            f.factor
        ),
        n => format!("{what} ×{:.3} ({n} actions)", f.factor),
    }
}

/// What the per-action overhead fit found, in words.
pub fn overhead_text(o: &super::calibrate::OverheadFit) -> String {
    match o.action_overhead_s {
        Some(s) => {
            let phases: Vec<String> = o
                .by_phase
                .iter()
                .map(|(phase, value, n)| match value {
                    Some(v) => format!("{phase} {} ({n})", ms(*v)),
                    None => format!("{phase} – ({n})"),
                })
                .collect();
            format!(
                "{} per action (mean of {} gaps before an action whose inputs were on its rank; by the phase after the gap, measured, not applied: {})",
                ms(s),
                o.samples,
                phases.join(", ")
            )
        }
        None => "not fitted (no two actions in a row with the second's inputs on its rank; the scenario's kept)".to_string(),
    }
}

/// What the posting fit found, in words.
pub fn p2p_text(p: &super::calibrate::P2pFit) -> String {
    match p.post_s {
        Some(s) => format!(
            "{} of the sender's own time per send (median of {} send spans; measured, not applied: see the README's Diagnosis)",
            ms(s),
            p.samples
        ),
        None => "not fitted (no transfer span; the scenario's kept)".to_string(),
    }
}

/// The host model fitted, in words: each phase's launch per layer and from how many actions.
pub fn host_text(host: &super::calibrate::HostFit) -> String {
    let each: Vec<String> = host
        .per_layer_s
        .entries()
        .iter()
        .filter_map(|&(code, s)| {
            let n = host.actions.iter().find(|(c, _)| *c == code)?.1;
            Some(format!("{code} {} ({n} action(s))", ms(s?)))
        })
        .collect();
    format!(
        "launching a layer's work takes {} (the mean host time per layer from one launch to the next, a rank's first action and a stage's first weight gradient left out; a half not measured takes the whole backward's); applied: the device starts an action no earlier than its host starts launching it and ends it no earlier than its host has launched it all",
        each.join(", ")
    )
}

/// What the run's split backward cost beyond the whole backward, in words.
pub fn split_text(split: &super::calibrate::SplitFit) -> String {
    format!(
        "an input half costs ×{:.3} and a weight half ×{:.3} of their shares of the whole backward ({} input and {} weight half(s) against {} whole backward(s){}); applied",
        split.input,
        split.weight,
        split.input_actions,
        split.weight_actions,
        split.whole_actions,
        if split.first_stage_whole {
            ", the first stage's, run whole in its weight half: they skip the model input's gradient, so the factors read a little high"
        } else {
            ""
        }
    )
}

/// The host's time over the device's beyond which an action is called host-bound: a quarter
/// more (a balanced run's actions measure 0.7–1.1 from one step to the next).
const HOST_BOUND: f64 = 1.25;

/// Of an accelerator's run, the host's time launching each stage and phase's actions against the
/// device's running them, in words (`None` on a run with no action timed by its kernels).
pub fn host_launch_text(launch: &[super::calibrate::HostLaunch]) -> Option<String> {
    if launch.is_empty() {
        return None;
    }
    let each: Vec<String> = launch
        .iter()
        .map(|h| {
            format!(
                "stage {} {} ×{:.2} ({} of CPU for {} on the device, {} action(s))",
                h.stage,
                h.phase,
                h.ratio(),
                ms(h.host_s),
                ms(h.device_s),
                h.actions
            )
        })
        .collect();
    let bound: Vec<String> = launch
        .iter()
        .filter(|h| h.ratio() > HOST_BOUND)
        .map(|h| format!("stage {} {}", h.stage, h.phase))
        .collect();
    let verdict = match bound.is_empty() {
        true => "the device bound every action (its host launched ahead of it)".to_string(),
        false => format!(
            "host-bound: {} (the device waits inside them for their kernels to be launched)",
            bound.join(", ")
        ),
    };
    Some(format!("{}; {verdict}", each.join(", ")))
}

/// What the switch fit found, in words: per phase measured.
pub fn switch_text(f: &super::calibrate::SwitchFit) -> String {
    if f.fitted.is_empty() {
        return "nothing measured".to_string();
    }
    let phases: Vec<String> = f
        .fitted
        .iter()
        .map(|p| match p.switch_s {
            Some(s) => format!(
                "{} {} (median over {} action(s) after another stage or phase, against {} after their own)",
                p.phase,
                ms(s),
                p.cold,
                p.warm
            ),
            None => format!(
                "{} not fitted ({} action(s) after another stage or phase beyond a rank's first and a stage's first weight gradient; at least {} needed)",
                p.phase,
                p.cold,
                super::calibrate::MIN_PHASE_SAMPLES
            ),
        })
        .zip(&f.fitted)
        .map(|(text, p)| match (p.switch_s, p.applied) {
            (Some(_), true) => format!("{text}, applied"),
            (Some(_), false) => format!(
                "{text}, measured, not applied (from fewer than {} actions: fit on every step, `--fit-step all`)",
                super::calibrate::MIN_APPLIED_SWITCH_SAMPLES
            ),
            (None, _) => text,
        })
        .collect();
    format!(
        "what an action costs more after another stage or phase on its rank: {}",
        phases.join("; ")
    )
}

/// What the link fit found, in words.
pub fn link_text(link: &super::calibrate::LinkFit) -> String {
    let fitted = match (link.alpha_s, link.bytes_per_s) {
        (None, _) => return "not fitted (no measured transfer between ranks whose consumer waited for it; the scenario's kept)".to_string(),
        (Some(a), Some(b)) => format!(
            "α {} and β {} from {} transfer(s) of {} sizes",
            ms(a),
            rate(b),
            link.samples,
            link.sizes
        ),
        (Some(a), None) => format!(
            "α {}, the mean of {} transfer(s) (their median {}; one size, so β is the scenario's)",
            ms(a),
            link.samples,
            ms(link.median_s.unwrap_or(0.0))
        ),
    };
    match link.stall_s {
        Some(s) if s > 0.0 => format!(
            "{fitted}, plus {} per transfer for its ends' stalls in the call (twice the transfer spans' mean over their median)",
            ms(s)
        ),
        _ => fitted,
    }
}

fn signed_error(value: f64, reference: f64) -> f64 {
    if reference > 0.0 {
        (value - reference) / reference * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(action: &str, step: usize) -> EventReport {
        EventReport {
            action: action.to_string(),
            step,
            start_ns: 0,
            end_ns: 0,
            compute_ns: 0,
            wait_ns: 0,
            compute_start_ns: 0,
            compute_end_ns: 0,
        }
    }

    #[test]
    fn each_step_lists_its_actions_in_their_order_and_a_step_without_any_is_empty() {
        let actions = [
            action("0F0", 1),
            action("0F1", 0),
            action("0B0", 1),
            action("0B1", 0),
            action("0F0", 3),
            action("0W0", 1),
        ];
        assert_eq!(
            by_step(&actions),
            [
                (0, vec!["0F1", "0B1"]),
                (1, vec!["0F0", "0B0", "0W0"]),
                (2, vec![]),
                (3, vec!["0F0"]),
            ]
        );
        assert!(by_step(&[]).is_empty());
    }
}
