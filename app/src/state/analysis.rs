//! Analyses of the document on screen, each computed on a worker on request (BigMac's designs,
//! OctoPipe's tuner, JanusPipe's WaveK sweep, GARS before and after, the fit under the device's
//! capacity): progress and Cancel while
//! one runs, and its result shown only while the document is the one it was computed from.

use super::Notice;
use super::jobs::{Control, Job, Poll, Step};
use mpipe::Scenario;
use mpipe::tune::Stepped;
use mpipe::tune::designs::{DesignComparison, DesignSteps};
use mpipe::tune::fit_memory::{FitSteps, Means, MemoryFit};
use mpipe::tune::octopipe::{TuneOptions, TuneSteps};
use mpipe::tune::packing::{PackingComparison, PackingSteps};
use mpipe::tune::wave_sweep::{SweepSteps, WaveSweep};
use mpipe::vocab::units::secs;
use std::sync::{Arc, Mutex};

/// What a finished analysis says.
#[derive(Debug, PartialEq)]
pub enum Finished {
    Done,
    Cancelled,
    Failed(String),
}

/// A computation running, and the document generation it started from.
#[derive(Debug)]
pub struct Running<T> {
    pub job: Job<Option<Result<T, String>>>,
    pub generation: u64,
}

/// One analysis's state: what runs, and the last result with the generation it belongs to.
#[derive(Debug)]
pub struct Analysis<T> {
    pub running: Option<Running<T>>,
    pub result: Option<(u64, T)>,
}

impl<T> Default for Analysis<T> {
    fn default() -> Self {
        Analysis {
            running: None,
            result: None,
        }
    }
}

impl<T: Send + 'static> Analysis<T> {
    /// The result for the document at `generation`, if that is the one computed.
    pub fn current(&self, generation: u64) -> Option<&T> {
        self.result
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .map(|(_, r)| r)
    }

    /// Starts `work` (`None` from it: cancelled) for the document at `generation`, unless one
    /// runs already.
    pub fn start(
        &mut self,
        name: &str,
        generation: u64,
        work: impl FnOnce(&Control) -> Option<Result<T, String>> + Send + 'static,
    ) -> Result<(), String> {
        if self.running.is_none() {
            let job = Job::spawn(name, work)?;
            self.running = Some(Running { job, generation });
        }
        Ok(())
    }

    /// [`Analysis::start`] in steps: `step` runs a part of the work each call (a design point, a
    /// unit size), so the web build draws its progress and hears Cancel between parts.
    pub fn start_steps(
        &mut self,
        name: &str,
        generation: u64,
        step: impl FnMut(&Control) -> Step<Option<Result<T, String>>> + Send + 'static,
    ) -> Result<(), String> {
        if self.running.is_none() {
            let job = Job::spawn_steps(name, step)?;
            self.running = Some(Running { job, generation });
        }
        Ok(())
    }

    /// Asks the running computation to stop.
    pub fn cancel(&self) {
        if let Some(r) = &self.running {
            r.job.cancel();
        }
    }

    /// The fraction done of what runs.
    pub fn progress(&self) -> Option<f32> {
        self.running.as_ref().map(|r| r.job.progress())
    }

    /// Takes a finished computation: `None` while it runs or when nothing does.
    pub fn poll(&mut self) -> Option<Finished> {
        let running = self.running.as_ref()?;
        let result = match running.job.poll() {
            Poll::Running => return None,
            Poll::Done(result) => result,
            Poll::Lost => Some(Err("the worker stopped unexpectedly".into())),
        };
        let generation = running.generation;
        self.running = None;
        Some(match result {
            None => Finished::Cancelled,
            Some(Ok(r)) => {
                self.result = Some((generation, r));
                Finished::Done
            }
            Some(Err(e)) => Finished::Failed(e),
        })
    }
}

/// A core search's step as a job's: `Done(None)` when cancelled, its error as text.
fn as_step<T, E: std::fmt::Display>(
    stepped: Result<Stepped<T>, E>,
) -> Step<Option<Result<T, String>>> {
    match stepped {
        Ok(Stepped::Again) => Step::Again,
        Ok(Stepped::Done(t)) => Step::Done(Some(Ok(t))),
        Ok(Stepped::Cancelled) => Step::Done(None),
        Err(e) => Step::Done(Some(Err(e.to_string()))),
    }
}

/// A core search's steps as a stepped job's (`steps`: the search, or why it could not be set
/// up, said at the first step): each call takes one of the search's steps, with the job's
/// progress and Cancel.
fn job_steps<S, T, E, F>(
    mut steps: Result<S, E>,
    mut step: impl FnMut(&mut S, &mut dyn FnMut(f32) -> bool) -> Result<Stepped<T>, F> + Send + 'static,
) -> impl FnMut(&Control) -> Step<Option<Result<T, String>>> + Send + 'static
where
    S: Send + 'static,
    T: 'static,
    E: std::fmt::Display + Send + 'static,
    F: std::fmt::Display + 'static,
{
    move |control| match &mut steps {
        Ok(steps) => as_step(step(steps, &mut |f| control.keep_going(f))),
        Err(e) => Step::Done(Some(Err(e.to_string()))),
    }
}

/// The numbers of microbatches the app compares BigMac's designs at.
pub const DESIGN_MICROBATCHES: [usize; 4] = [8, 16, 32, 64];

/// The largest unit size the app's WaveK sweep tries (`mpipe sweep` takes any range).
pub const WAVE_SWEEP_MAX_K: usize = 16;

/// Every analysis of the document the user can ask for, each on its own worker: BigMac's three
/// designs, OctoPipe's tuner, JanusPipe's WaveK sweep, GARS before and after.
#[derive(Debug, Default)]
pub struct Analyses {
    pub designs: Analysis<DesignComparison>,
    pub tuner: super::tuner::Tuner,
    pub wave_sweep: Analysis<WaveSweep>,
    pub packing: Analysis<PackingComparison>,
    /// The scenario fitted under the device's capacity by offload and recomputation.
    pub fit: Analysis<MemoryFit>,
}

impl Analyses {
    /// Starts comparing BigMac's three designs of `scenario` (the document at `generation`), a
    /// design point a step.
    pub fn start_designs(&mut self, scenario: &Scenario, generation: u64) -> Result<(), String> {
        let steps = DesignSteps::new(scenario, &DESIGN_MICROBATCHES, Default::default());
        self.designs.start_steps(
            "mpipe designs",
            generation,
            job_steps(steps, |s, keep_going| s.step(keep_going)),
        )
    }

    /// Starts JanusPipe's WaveK sweep of `scenario` over `k` = 1..=min(M, 16), a unit size a
    /// step.
    pub fn start_wave_sweep(&mut self, scenario: &Scenario, generation: u64) -> Result<(), String> {
        let last = scenario.microbatches.min(WAVE_SWEEP_MAX_K);
        let steps = SweepSteps::new(scenario, 1..=last, Default::default());
        self.wave_sweep.start_steps(
            "mpipe sweep",
            generation,
            job_steps(steps, |s, keep_going| s.step(keep_going)),
        )
    }

    /// Starts fitting `scenario` under its device's capacity (`hardware.memory_bytes`), a
    /// simulation a step.
    pub fn start_fit(&mut self, scenario: &Scenario, generation: u64) -> Result<(), String> {
        let steps = FitSteps::new(scenario, None, Means::Both, Default::default());
        self.fit.start_steps(
            "mpipe fit-memory",
            generation,
            job_steps(steps, |s, keep_going| s.step(keep_going)),
        )
    }

    /// Starts simulating `scenario`'s graphs packed sequentially and by GARS.
    pub fn start_packing(&mut self, scenario: &Scenario, generation: u64) -> Result<(), String> {
        // A packing a step: the sequential one, then GARS. Without graphs to pack there is
        // nothing to compare (and nothing is said).
        let mut steps = PackingSteps::new(scenario, Default::default());
        self.packing.start_steps(
            "mpipe packing",
            generation,
            move |control| match &mut steps {
                Some(steps) => as_step(steps.step(&mut |f| control.keep_going(f))),
                None => Step::Done(None),
            },
        )
    }

    /// Starts OctoPipe's tuner on `scenario` (its iterations shown as they end; Stop keeps the
    /// best so far), unless it runs already. The device's capacity, when the hardware gives one,
    /// caps every rank's peak memory.
    pub fn start_tuner(&mut self, scenario: &Scenario, generation: u64) -> Result<(), String> {
        if self.tuner.running.is_some() {
            return Ok(());
        }
        // The tuner holds three simulations at once: refused before anything runs when they
        // would not fit (rule `memory` for the tuner's own peak).
        mpipe::algebra::budget::check_use(
            scenario,
            mpipe::algebra::budget::Use::Tune,
            mpipe::algebra::budget::MEMORY_LIMIT_BYTES,
            0.0,
        )
        .map_err(|e| format!("the tuner: field `{}`: {e}", e.field()))?;
        let options = TuneOptions {
            memory_cap: scenario.hardware.as_ref().and_then(|h| h.memory_bytes),
            every_schedule: !self.tuner.own_moves_only,
            ..Default::default()
        };
        let budget = options.budget.max(1);
        let live = Arc::new(Mutex::new(Vec::new()));
        let sink = live.clone();
        // A candidate a step: the web build draws each iteration as it ends and hears Stop
        // between candidates.
        let mut steps = TuneSteps::new(scenario, options);
        let job = Job::spawn_steps("mpipe tune", move |control| {
            let heard = control.clone();
            let step = steps.step(
                &mut |it| {
                    if let Ok(mut l) = sink.lock() {
                        l.push(it.clone());
                    }
                    control.keep_going((it.index + 1) as f32 / budget as f32)
                },
                // Stop is heard between candidates, inside an iteration.
                &mut || !heard.is_cancelled(),
            );
            match step {
                Ok(None) => Step::Again,
                Ok(Some(tuned)) => Step::Done(Ok(tuned)),
                Err(e) => Step::Done(Err(e.to_string())),
            }
        })?;
        self.tuner.running = Some(super::tuner::Running {
            job,
            generation,
            live,
            budget,
        });
        Ok(())
    }

    /// Takes finished analyses: whether one still runs, and what to tell the user.
    pub fn poll(&mut self) -> (bool, Vec<Notice>) {
        let mut said = Vec::new();
        let finished = [
            ("design comparison", self.designs.poll()),
            ("WaveK sweep", self.wave_sweep.poll()),
            ("packing comparison", self.packing.poll()),
            ("fit under the capacity", self.fit.poll()),
        ];
        for (what, f) in finished {
            match f {
                Some(Finished::Cancelled) => said.push(Notice::info(format!("{what} cancelled"))),
                Some(Finished::Failed(e)) => said.push(Notice::error(format!("{what}: {e}"))),
                Some(Finished::Done) | None => {}
            }
        }
        let tuning = self.poll_tuner(&mut said);
        let running = tuning
            || self.designs.running.is_some()
            || self.wave_sweep.running.is_some()
            || self.packing.running.is_some()
            || self.fit.running.is_some();
        (running, said)
    }

    /// Takes a finished search; true while one runs.
    fn poll_tuner(&mut self, said: &mut Vec<Notice>) -> bool {
        let Some(running) = &self.tuner.running else {
            return false;
        };
        let result = match running.job.poll() {
            Poll::Running => return true,
            Poll::Done(result) => result,
            Poll::Lost => Err("the tuner stopped unexpectedly".into()),
        };
        let generation = running.generation;
        self.tuner.running = None;
        match result {
            Ok(t) => {
                said.push(Notice::info(format!(
                    "tuned{}: {} → {} in {} iterations",
                    if t.stopped { " (stopped)" } else { "" },
                    secs(t.start_makespan_s),
                    secs(t.makespan_s),
                    t.iterations.len()
                )));
                self.tuner.result = Some((generation, t));
            }
            Err(e) => said.push(Notice::error(format!("tune: {e}"))),
        }
        false
    }
}
