//! Measured traces in the app: importing files on a background job (progress, a real Cancel),
//! the rules that recover the schedule (editable as JSON, applied without importing again), the
//! user's ranks, the measurement's alignment, the comparison on screen and the last calibration.
//! All semantics come from `mpipe::trace`.

use super::Studio;
use super::derived::Shown;
use super::jobs::{Control, Job, Poll, Step};
use mpipe::Scenario;
use mpipe::scenario::edit::Edit;
use mpipe::trace::align::Alignment;
use mpipe::trace::calibrate::{Calibration, Fit, calibrate_cancellable, check_step};
use mpipe::trace::compare::{Comparison, compare};
use mpipe::trace::report::CompareTraceReport;
use mpipe::trace::whatif::{
    Identification, IdentifySteps, MemoryBasis, Prediction, RunShape, WhatIfSteps, measured_chunks,
    measured_microbatches,
};
use mpipe::trace::{Limits, Measurement, RawTrace, RuleSet};
use mpipe::tune::Stepped;
use mpipe::tune::pipeline::SimulationError;
use std::sync::Arc;

/// Where a trace's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceSource {
    Path(std::path::PathBuf),
    Bytes { name: String, bytes: Arc<[u8]> },
}

impl TraceSource {
    pub fn name(&self) -> String {
        match self {
            TraceSource::Path(p) => p.display().to_string(),
            TraceSource::Bytes { name, .. } => name.clone(),
        }
    }

    fn len(&self) -> u64 {
        match self {
            TraceSource::Path(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
            TraceSource::Bytes { bytes, .. } => bytes.len() as u64,
        }
    }

    /// Imports the file within `limits`.
    fn import(
        &self,
        limits: Limits,
        progress: &mut dyn FnMut(u64) -> bool,
    ) -> Result<RawTrace, String> {
        let name = self.name();
        let result = match self {
            TraceSource::Path(p) => {
                let file =
                    std::fs::File::open(p).map_err(|e| format!("{name}: cannot read: {e}"))?;
                let limits = file_limits(&file, limits);
                mpipe::trace::import_with(file, &name, limits, progress)
            }
            TraceSource::Bytes { bytes, .. } => {
                mpipe::trace::import_slice_with(bytes, &name, limits, progress)
            }
        };
        result.map_err(|e| e.to_string())
    }
}

/// The limits to import the opened trace `file` within: `limits`, with the file's length for the
/// import to size its lists by.
#[cfg(not(target_arch = "wasm32"))]
fn file_limits(file: &std::fs::File, limits: Limits) -> Limits {
    mpipe::files::trace_limits(file, limits)
}

/// In the browser no file is opened by its path (and a 32-bit target sizes nothing): the limits
/// as they are.
#[cfg(target_arch = "wasm32")]
fn file_limits(_file: &std::fs::File, limits: Limits) -> Limits {
    limits
}

/// An import of one or more files.
#[derive(Debug)]
pub struct Import {
    pub job: Job<Result<Vec<RawTrace>, String>>,
    pub files: usize,
}

/// Reads `sources` on a background job: on the available cores at once where there are
/// several ([`mpipe::trace::parallel`]: the traces of reading them in order), else — and where
/// that reading gives up, for the first error of the reading in order — in order, a file a step
/// (in the browser, the page draws between files).
fn start_import(sources: Vec<TraceSource>, threads: Option<usize>) -> Result<Import, String> {
    let files = sources.len();
    let sizes: Vec<u64> = sources.iter().map(TraceSource::len).collect();
    let total: u64 = sizes.iter().sum::<u64>().max(1);
    let mut traces: Vec<RawTrace> = Vec::with_capacity(files);
    let mut before = 0u64;
    let mut tried_parallel = false;
    let mut at = 0;
    let job = Job::spawn_steps("mpipe trace import", move |control| {
        if !tried_parallel {
            tried_parallel = true;
            let threads = threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
            if let Some(all) = import_in_parallel(&sources, &sizes, total, threads, control) {
                return Step::Done(Ok(all));
            }
        }
        let Some(source) = sources.get(at) else {
            return Step::Done(Ok(std::mem::take(&mut traces)));
        };
        let held = traces.iter().map(RawTrace::held_events).sum();
        let read = source.import(Limits::default().after(held), &mut |n| {
            control.keep_going((before.saturating_add(n)) as f32 / total as f32)
        });
        match read {
            Ok(trace) => traces.push(trace),
            Err(e) => return Step::Done(Err(e)),
        }
        before = before.saturating_add(source.len());
        at += 1;
        Step::Again
    })?;
    Ok(Import { job, files })
}

/// `sources` read on `threads` threads, the progress the bytes read of all of them (`sizes`:
/// each file's, `total` their sum); `None` where the reading in order should run (one thread,
/// an error, a limit, Cancel).
fn import_in_parallel(
    sources: &[TraceSource],
    sizes: &[u64],
    total: u64,
    threads: usize,
    control: &Control,
) -> Option<Vec<RawTrace>> {
    use std::sync::atomic::{AtomicU64, Ordering};
    // Each file's bytes read so far, and their sum (which only grows, so the bar never steps
    // back when threads report out of turn).
    let read: Vec<AtomicU64> = sources.iter().map(|_| AtomicU64::new(0)).collect();
    let done = AtomicU64::new(0);
    mpipe::trace::parallel::import_in_parallel(
        sources.len(),
        Limits::default(),
        threads,
        |i, limits, others_ok| {
            let (source, mine) = (sources.get(i)?, read.get(i)?);
            let size = sizes.get(i).copied().unwrap_or(0);
            let mut progress = |n: u64| {
                let n = n.min(size);
                let before = mine.swap(n, Ordering::Relaxed);
                let now = done.fetch_add(n.saturating_sub(before), Ordering::Relaxed)
                    + n.saturating_sub(before);
                others_ok() && control.keep_going(now as f32 / total as f32)
            };
            source.import(limits, &mut progress).ok()
        },
    )
}

/// What a calibration job finds: the fit, and the trace's schedule identified among every
/// registered one.
pub type Calibrated = (Calibration, Identification);

/// A calibration running on a background job, for the document generation it fits.
#[derive(Debug)]
pub struct Calibrating {
    pub job: Job<Option<Result<Calibrated, String>>>,
    pub generation: u64,
}

/// The what-if over every schedule running on a background job, for the document generation
/// (the calibrated scenario) and the measurement generation it predicts from.
#[derive(Debug)]
pub struct Ranking {
    pub job: Job<Option<Vec<Prediction>>>,
    pub generation: u64,
    pub measured: u64,
}

/// Everything the app holds about measured traces.
#[derive(Debug)]
pub struct Traces {
    pub raw: Vec<RawTrace>,
    /// The rank the user gave each file (`None`: from the file, its name or its processes).
    pub user_ranks: Vec<Option<usize>>,
    pub rules: RuleSet,
    /// The rules as the editor shows them (JSON), and why the last edit could not be applied.
    pub rules_text: String,
    pub rules_error: Option<String>,
    pub measurement: Option<Measurement>,
    pub alignment: Option<Alignment>,
    /// The step compared with the prediction.
    pub step: usize,
    /// Calibrate on every step of the run, not the step shown alone (`--fit-step all`).
    pub every_step: bool,
    pub import: Option<Import>,
    pub calibrating: Option<Calibrating>,
    /// What the last calibration found: the report `mpipe compare-trace` prints (with
    /// `--what-if-all`'s ranking once the user asked for it).
    pub calibration: Option<CompareTraceReport>,
    /// The document generation the last calibration made (its scenario is the calibrated one).
    pub calibrated_generation: Option<u64>,
    pub ranking: Option<Ranking>,
    /// Bumped whenever the measurement changes (new files, rules, ranks).
    generation: u64,
    /// The comparison on screen, keyed by what it was computed from.
    view: Option<(ViewKey, Arc<Comparison>)>,
}

/// What a comparison on screen is derived from: the simulation's document generation, the
/// measurement's generation and the step.
type ViewKey = (u64, u64, usize);

impl Default for Traces {
    fn default() -> Self {
        let rules = RuleSet::default();
        Traces {
            raw: Vec::new(),
            user_ranks: Vec::new(),
            rules_text: serde_json::to_string_pretty(&rules).unwrap_or_default(),
            rules,
            rules_error: None,
            measurement: None,
            alignment: None,
            step: 0,
            every_step: false,
            import: None,
            calibrating: None,
            calibration: None,
            calibrated_generation: None,
            ranking: None,
            generation: 0,
            view: None,
        }
    }
}

impl Traces {
    /// Recovers and aligns the schedule of the imported files with the current rules.
    pub fn analyse(&mut self) {
        let Ok(compiled) = self.rules.compile() else {
            return;
        };
        self.generation += 1;
        self.stop_ranking();
        let m = mpipe::trace::recover(&self.raw, &compiled, &self.user_ranks);
        self.alignment = Some(mpipe::trace::align(&m));
        let steps = steps_of(&m);
        self.step = self.step.min(steps.saturating_sub(1));
        self.measurement = Some(m);
    }

    /// The comparison of the current step with `shown`, recomputed only when either changes.
    pub fn view(&mut self, shown: &Shown) -> Option<Arc<Comparison>> {
        let key = (shown.generation, self.generation, self.step);
        if let Some((k, v)) = &self.view
            && *k == key
        {
            return Some(v.clone());
        }
        let (m, a) = (self.measurement.as_ref()?, self.alignment.as_ref()?);
        let view = Arc::new(compare(&shown.sim, m, a, self.step));
        self.view = Some((key, view.clone()));
        Some(view)
    }

    /// The comparison of the current step with `shown`, if it is the one cached (drawing reads
    /// it without recomputing; [`Traces::view`] computes it).
    pub fn cached_view(&self, shown: &Shown) -> Option<Arc<Comparison>> {
        let key = (shown.generation, self.generation, self.step);
        self.view
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
    }

    /// Steps every rank has.
    pub fn steps(&self) -> usize {
        self.measurement.as_ref().map_or(0, steps_of)
    }

    /// Applies the rules in the editor; on error the old rules stay and the error is shown.
    pub fn apply_rules_text(&mut self) {
        match RuleSet::from_json_str(&self.rules_text, "rules") {
            Ok(rules) => {
                self.rules = rules;
                self.rules_error = None;
                self.analyse();
            }
            Err(e) => {
                self.rules_error =
                    Some(mpipe::vocab::units::escape_controls(&e.to_string()).into_owned())
            }
        }
    }

    /// Takes a finished import; returns a message for the notice line.
    pub fn poll_import(&mut self) -> Option<Result<String, String>> {
        let import = self.import.as_ref()?;
        let result = match import.job.poll() {
            Poll::Running => return None,
            Poll::Done(result) => result,
            Poll::Lost => Err("the import stopped unexpectedly".into()),
        };
        self.import = None;
        Some(result.map(|traces| {
            let names: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
            self.user_ranks = vec![None; traces.len()];
            self.raw = traces;
            self.calibration = None;
            self.analyse();
            format!("imported {}", names.join(", "))
        }))
    }

    /// Starts importing `sources` on a background job (a running import is cancelled).
    pub fn start_import(&mut self, sources: Vec<TraceSource>) -> Result<(), String> {
        self.start_import_on(sources, None)
    }

    /// [`Traces::start_import`] on `threads` threads at once (`None`: the available cores).
    pub fn start_import_on(
        &mut self,
        sources: Vec<TraceSource>,
        threads: Option<usize>,
    ) -> Result<(), String> {
        if sources.is_empty() {
            return Ok(());
        }
        self.cancel_import();
        self.import = Some(start_import(sources, threads)?);
        Ok(())
    }

    /// Stops the import in flight (its thread ends at its next read).
    pub fn cancel_import(&mut self) {
        if let Some(import) = &self.import {
            import.job.cancel();
        }
    }

    /// Sets (or clears) the rank of file `file` and recovers again.
    pub fn set_rank(&mut self, file: usize, rank: Option<usize>) {
        if let Some(slot) = self.user_ranks.get_mut(file) {
            *slot = rank;
            self.analyse();
        }
    }

    /// The rank of each file and where it came from, as the files-and-ranks table says it.
    pub fn file_rank(&self, file: usize) -> Option<String> {
        let m = self.measurement.as_ref()?;
        let found: Vec<String> = m
            .ranks
            .iter()
            .filter_map(|r| {
                r.sources
                    .iter()
                    .find(|(f, _)| *f == file)
                    .map(|(_, source)| format!("rank {} ({})", r.rank, source.phrase()))
            })
            .collect();
        (!found.is_empty()).then(|| found.join(", "))
    }

    /// The rank file `file` was given, if any, for the "set rank" box to start from.
    pub fn found_rank(&self, file: usize) -> Option<usize> {
        self.measurement
            .as_ref()?
            .ranks
            .iter()
            .find(|r| r.files.contains(&file))
            .map(|r| r.rank)
    }

    /// Drops every imported trace.
    pub fn clear(&mut self) {
        self.cancel_import();
        self.import = None;
        self.raw.clear();
        self.user_ranks.clear();
        self.measurement = None;
        self.alignment = None;
        self.calibration = None;
        self.stop_ranking();
        self.generation += 1;
    }

    /// Bumped whenever the measurement changes: what derived results are keyed by.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Cancels a running what-if and forgets it (its thread stops at its next check).
    pub fn stop_ranking(&mut self) {
        if let Some(r) = self.ranking.take() {
            r.job.cancel();
        }
    }
}

fn steps_of(m: &Measurement) -> usize {
    m.common_steps().max(1)
}

/// How a calibration ended.
#[derive(Debug)]
pub enum CalibrationEnd {
    Cancelled,
    Failed(String),
    /// Fitted to the document at `generation`.
    Fitted {
        generation: u64,
        calibration: Box<Calibrated>,
    },
}

impl Traces {
    /// Starts fitting `scenario` (the document at `generation`, simulated as `shown`) to the
    /// measured step on a worker, unless there is nothing to fit. It is checked on another step
    /// than the fit step; with one step only, the report says it is not checked.
    pub fn start_calibration(
        &mut self,
        scenario: &Scenario,
        shown: &Arc<Shown>,
        generation: u64,
    ) -> Result<(), String> {
        let (Some(m), Some(a)) = (self.measurement.clone(), self.alignment.clone()) else {
            return Ok(());
        };
        if m.refusal().is_some() {
            return Ok(());
        }
        let (step, every_step) = (self.step, self.every_step);
        let check = check_step(step, self.steps()).unwrap_or(step);
        let (scenario, shown) = (scenario.clone(), shown.clone());
        // In steps (in the browser the page draws between them): the fit, then the
        // identification of the trace's schedule, a registered schedule a step.
        let mut fitted: Option<(Calibration, IdentifySteps)> = None;
        let job = Job::spawn_steps("mpipe calibration", move |control| {
            let Some((_, identifying)) = fitted.as_mut() else {
                let fit = Fit {
                    scenario: &scenario,
                    predicted: &shown.sim,
                    measurement: &m,
                    alignment: &a,
                    fit_step: step,
                    check_step: check,
                    every_step,
                    options: Default::default(),
                };
                return match calibrate_cancellable(&fit, &mut |f| control.keep_going(0.7 * f)) {
                    Ok(c) => {
                        let steps =
                            IdentifySteps::new(&scenario, &shown.sim, (&m, &a, step), fit.options);
                        fitted = Some((c, steps));
                        Step::Again
                    }
                    Err(SimulationError::Cancelled) => Step::Done(None),
                    Err(SimulationError::Derive(e)) => Step::Done(Some(Err(format!(
                        "the calibrated scenario: field `{}`: {e}",
                        e.field()
                    )))),
                };
            };
            match identifying.step((&m, &a), &mut |f| control.keep_going(0.7 + 0.3 * f)) {
                Stepped::Again => Step::Again,
                Stepped::Cancelled => Step::Done(None),
                Stepped::Done(id) => match fitted.take() {
                    Some((c, _)) => Step::Done(Some(Ok((c, id)))),
                    None => Step::Done(None),
                },
            }
        })?;
        self.calibrating = Some(Calibrating { job, generation });
        Ok(())
    }

    /// Takes a finished calibration: `None` while one runs or when none does.
    pub fn poll_calibration(&mut self) -> Option<CalibrationEnd> {
        let c = self.calibrating.as_ref()?;
        let end = match c.job.poll() {
            Poll::Running => return None,
            Poll::Done(None) => CalibrationEnd::Cancelled,
            Poll::Done(Some(Ok(calibration))) => CalibrationEnd::Fitted {
                generation: c.generation,
                calibration: Box::new(calibration),
            },
            Poll::Done(Some(Err(e))) => CalibrationEnd::Failed(e),
            Poll::Lost => CalibrationEnd::Failed("the calibration stopped unexpectedly".into()),
        };
        self.calibrating = None;
        Some(end)
    }

    /// Predicts every registered schedule that fits the model with the costs `calibrated` (the
    /// document at `generation`, made by the last calibration) holds, on a worker.
    pub fn start_ranking(&mut self, calibrated: &Scenario, generation: u64) -> Result<(), String> {
        let (Some(m), Some(report)) = (&self.measurement, &self.calibration) else {
            return Ok(());
        };
        let chunks = measured_chunks(m);
        let microbatches = measured_microbatches(m, report.fit_step);
        let ran = report
            .identification
            .as_ref()
            .and_then(|id| id.ranked.first())
            .filter(|b| b.order_agreement >= 1.0 - 1e-9)
            .map(|b| b.schedule.clone());
        let basis: MemoryBasis = report.memory_basis;
        let jitter = report.jitter.clone();
        let run = RunShape {
            chunks,
            microbatches,
            ran: ran.as_deref(),
            basis,
            jitter: Some(&jitter),
            split_range: report.split_range(),
        };
        // A candidate a step: the web build draws its progress and hears Cancel between them.
        let mut steps = WhatIfSteps::new(calibrated, calibrated, &run, Default::default());
        let job = Job::spawn_steps("mpipe what-if", move |control| {
            match steps.step(&mut |f| control.keep_going(f)) {
                Stepped::Again => Step::Again,
                Stepped::Done(predictions) => Step::Done(Some(predictions)),
                Stepped::Cancelled => Step::Done(None),
            }
        })?;
        self.stop_ranking();
        self.ranking = Some(Ranking {
            job,
            generation,
            measured: self.generation,
        });
        Ok(())
    }
}

impl Studio {
    /// Fits the scenario to the measured step on a background job; the result arrives as an
    /// edit (one undo takes it back).
    pub fn start_calibration(&mut self) {
        let (Some(scenario), Some(shown)) = (self.doc.scenario(), self.current()) else {
            return;
        };
        let (scenario, shown) = (scenario.clone(), shown.clone());
        let generation = self.doc.generation();
        if let Err(e) = self.traces.start_calibration(&scenario, &shown, generation) {
            self.fail(e);
        }
    }

    /// Takes a finished calibration (its scenario becomes the document's, one undoable edit);
    /// true while one runs.
    pub(crate) fn poll_calibration(&mut self) -> bool {
        let Some(end) = self.traces.poll_calibration() else {
            return self.traces.calibrating.is_some();
        };
        let c = match end {
            CalibrationEnd::Cancelled => {
                self.inform("calibration cancelled".into());
                return false;
            }
            CalibrationEnd::Failed(e) => {
                self.fail(format!("calibration: {e}"));
                return false;
            }
            CalibrationEnd::Fitted {
                generation,
                calibration,
            } if generation == self.doc.generation() => *calibration,
            CalibrationEnd::Fitted { .. } => {
                self.fail("calibration: the scenario changed while it ran; calibrate again".into());
                return false;
            }
        };
        let (c, identification) = c;
        let message = match c.validation() {
            Some(v) if c.every_step => format!(
                "calibrated on every step ({}): {:+.1}% against their median (in-sample; their spread ±{:.1}%)",
                c.steps.len(),
                v.error * 100.0,
                v.spread * 100.0
            ),
            Some(v) => format!(
                "calibrated on step {}: {:+.1}% on it, {:+.1}% against the median of the other steps (their spread ±{:.1}%)",
                c.fit_step,
                c.fit_residual() * 100.0,
                v.error * 100.0,
                v.spread * 100.0
            ),
            None => format!(
                "calibrated on step {}: {:+.1}% on it (no other step to validate on)",
                c.fit_step,
                c.fit_residual() * 100.0
            ),
        };
        if let (Some(m), Some(a)) = (&self.traces.measurement, &self.traces.alignment) {
            let name = self.scenario().map_or(String::new(), |s| s.name.clone());
            let mut report = CompareTraceReport::new(&name, &c, a, m);
            report.identified(identification);
            self.traces.calibration = Some(report);
        }
        self.edit(&Edit::Replace(Box::new(c.scenario)), None);
        self.traces.calibrated_generation = Some(self.doc.generation());
        self.traces.stop_ranking();
        self.inform(message);
        false
    }

    /// Ranks every schedule with the last calibration's costs (the document must still be the
    /// calibrated scenario).
    pub fn start_ranking(&mut self) {
        let Some(scenario) = self.doc.scenario().cloned() else {
            return;
        };
        let generation = self.doc.generation();
        if self.traces.calibrated_generation != Some(generation) {
            self.fail(
                "what-if: the scenario changed since it was calibrated; calibrate again".into(),
            );
            return;
        }
        if let Err(e) = self.traces.start_ranking(&scenario, generation) {
            self.fail(e);
        }
    }

    /// Takes a finished ranking into the calibration's report; true while one runs.
    pub(crate) fn poll_ranking(&mut self) -> bool {
        let Some(r) = &self.traces.ranking else {
            return false;
        };
        let poll = r.job.poll();
        if matches!(poll, Poll::Running) {
            return true;
        }
        let (generation, measured) = (r.generation, r.measured);
        self.traces.ranking = None;
        let predictions = match poll {
            Poll::Running => return true,
            Poll::Done(None) => {
                self.inform("what-if cancelled".into());
                return false;
            }
            Poll::Done(Some(p)) => p,
            Poll::Lost => {
                self.fail("what-if: it stopped unexpectedly".into());
                return false;
            }
        };
        if generation != self.doc.generation() || measured != self.traces.generation() {
            self.fail(
                "what-if: the scenario or the traces changed while it ran; run it again".into(),
            );
            return false;
        }
        let count = predictions.len();
        if let Some(report) = &mut self.traces.calibration {
            report.what_if_all = predictions;
        }
        self.inform(format!(
            "what-if: {count} schedules ranked with the fitted costs"
        ));
        false
    }
}
