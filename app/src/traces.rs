//! Measured traces in the app: importing files on a worker thread (progress bar, Cancel), the
//! rules that recover the schedule (editable as JSON, applied without importing again), the
//! measurement's alignment, and calibration. All semantics come from `mpipe::trace`.

use mpipe::simulation::Simulation;
use mpipe::trace::align::Alignment;
use mpipe::trace::compare::{Comparison, compare};
use mpipe::trace::{Measurement, RawTrace, RuleSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

/// Where a trace's bytes come from.
#[derive(Debug, Clone)]
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

    fn import(&self, progress: &mut dyn FnMut(u64) -> bool) -> Result<RawTrace, String> {
        let name = self.name();
        let result = match self {
            TraceSource::Path(p) => {
                let file =
                    std::fs::File::open(p).map_err(|e| format!("{name}: cannot read: {e}"))?;
                mpipe::trace::import(file, &name, progress)
            }
            TraceSource::Bytes { bytes, .. } => mpipe::trace::import(&bytes[..], &name, progress),
        };
        result.map_err(|e| e.to_string())
    }
}

/// An import running on a worker thread.
#[derive(Debug)]
pub struct ImportJob {
    result: mpsc::Receiver<Result<Vec<RawTrace>, String>>,
    cancel: Arc<AtomicBool>,
    done_bytes: Arc<AtomicU64>,
    pub total_bytes: u64,
    pub files: usize,
}

impl ImportJob {
    /// Starts importing `sources` in order.
    pub fn start(sources: Vec<TraceSource>) -> ImportJob {
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let done_bytes = Arc::new(AtomicU64::new(0));
        let total_bytes = sources.iter().map(TraceSource::len).sum();
        let files = sources.len();
        let (stop, done) = (cancel.clone(), done_bytes.clone());
        std::thread::spawn(move || {
            let mut traces = Vec::with_capacity(sources.len());
            let mut before = 0;
            for source in &sources {
                let trace = source.import(&mut |n| {
                    done.store(before + n, Ordering::Relaxed);
                    !stop.load(Ordering::Relaxed)
                });
                match trace {
                    Ok(t) => traces.push(t),
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
                before += source.len();
                done.store(before, Ordering::Relaxed);
            }
            let _ = tx.send(Ok(traces));
        });
        ImportJob {
            result: rx,
            cancel,
            done_bytes,
            total_bytes,
            files,
        }
    }

    /// The fraction of bytes read so far.
    pub fn progress(&self) -> f32 {
        if self.total_bytes == 0 {
            return 0.0;
        }
        (self.done_bytes.load(Ordering::Relaxed) as f64 / self.total_bytes as f64).min(1.0) as f32
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// The finished import, if it is done.
    pub fn poll(&self) -> Option<Result<Vec<RawTrace>, String>> {
        match self.result.try_recv() {
            Ok(r) => Some(r),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => {
                Some(Err("the import stopped unexpectedly".into()))
            }
        }
    }
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
    pub import: Option<ImportJob>,
    /// What the last calibration found, for the notice line.
    pub calibrated: Option<String>,
    /// Bumped whenever the measurement changes (new files, rules, ranks).
    generation: u64,
    /// The comparison on screen, computed once per simulation, measurement and step.
    view: Option<(ViewKey, Arc<Comparison>)>,
}

/// What a comparison on screen depends on.
type ViewKey = (u64, usize, usize, u64);

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
            import: None,
            calibrated: None,
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
        let m = mpipe::trace::recover(&self.raw, &compiled, &self.user_ranks);
        self.alignment = Some(mpipe::trace::align(&m));
        let steps = self.steps_of(&m);
        self.step = self.step.min(steps.saturating_sub(1));
        self.measurement = Some(m);
    }

    fn steps_of(&self, m: &Measurement) -> usize {
        m.ranks
            .iter()
            .map(|r| r.steps.len())
            .min()
            .unwrap_or(0)
            .max(1)
    }

    /// The comparison of the current step with `sim`, recomputed only when either changes.
    pub fn view(&mut self, sim: &Simulation) -> Option<Arc<Comparison>> {
        let key = (
            sim.makespan_s.to_bits(),
            sim.derivation.order.graph.node_count(),
            self.step,
            self.generation,
        );
        if let Some((k, v)) = &self.view
            && *k == key
        {
            return Some(v.clone());
        }
        let (m, a) = (self.measurement.as_ref()?, self.alignment.as_ref()?);
        let view = Arc::new(compare(sim, m, a, self.step));
        self.view = Some((key, view.clone()));
        Some(view)
    }

    /// Steps every rank has.
    pub fn steps(&self) -> usize {
        self.measurement.as_ref().map_or(0, |m| self.steps_of(m))
    }

    /// Applies the rules in the editor; on error the old rules stay and the error is shown.
    pub fn apply_rules_text(&mut self) {
        match RuleSet::from_json_str(&self.rules_text, "rules") {
            Ok(rules) => {
                self.rules = rules;
                self.rules_error = None;
                self.analyse();
            }
            Err(e) => self.rules_error = Some(e.to_string()),
        }
    }

    /// Takes a finished import; returns a message for the notice line.
    pub fn poll(&mut self) -> Option<Result<String, String>> {
        let result = self.import.as_ref()?.poll()?;
        self.import = None;
        Some(result.map(|traces| {
            let names: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
            self.user_ranks = vec![None; traces.len()];
            self.raw = traces;
            self.analyse();
            format!("imported {}", names.join(", "))
        }))
    }

    /// Starts importing `sources` on a worker thread (a running import is cancelled).
    pub fn start_import(&mut self, sources: Vec<TraceSource>) {
        if sources.is_empty() {
            return;
        }
        if let Some(job) = self.import.take() {
            job.cancel();
        }
        self.import = Some(ImportJob::start(sources));
    }

    /// Drops every imported trace.
    pub fn clear(&mut self) {
        self.raw.clear();
        self.user_ranks.clear();
        self.measurement = None;
        self.alignment = None;
        self.calibrated = None;
        if let Some(job) = self.import.take() {
            job.cancel();
        }
    }
}
