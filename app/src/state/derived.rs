//! What is derived from the document: its simulation and the timeline scene laid out from it,
//! each stamped with the document generation it came from — so a view can never show the
//! schedule of a previous edit as the current one. Large scenarios simulate on a background job
//! that a newer edit or Cancel really stops.

use super::jobs::{Job, Poll, Step};
use crate::geometry::Lane;
use mpipe::Scenario;
use mpipe::scenario::edit::Remedy;
use mpipe::sim::engine::SimOptions;
use mpipe::sim::run::Simulation;
use mpipe::sim::run::run_cancellable;
use mpipe::tune::owners::derive_tuned;
use mpipe::view::scene::Scene;
use mpipe::view::timings::EventTiming;
use std::sync::Arc;

/// Scenarios with more than this many rank × microbatch pairs simulate on a worker thread, so
/// the window never waits on them (P ≤ 16, M ≤ 128 stay within a frame); so does every scenario
/// with a `jitter`, whose expected step is some 200 simulations.
pub const FOREGROUND_LIMIT: usize = 16 * 128;

/// Bytes per event the app keeps beside the simulation, an upper bound: the scene (events,
/// transfers, bubbles, the node-to-event map) and each event's slack (about 130 were measured
/// when the chart also kept a per-lane copy of the compute events, which it no longer does).
pub const SCENE_BYTES_PER_EVENT: f64 = 200.0;

/// A simulation with everything the views draw from it, and the generation it belongs to.
#[derive(Debug)]
pub struct Shown {
    /// The document generation this was derived from.
    pub generation: u64,
    /// What the chart shows: the schedule and the document it came from
    /// ([`mpipe::scenario::Scenario::chart_title`]).
    pub title: String,
    pub sim: Simulation,
    pub scene: Scene,
    /// Whether each event (by index into the scene's events) is on the critical path.
    critical: Vec<bool>,
    /// How long each event (by node index) could start later without delaying the step.
    slack: Vec<f64>,
    /// The schedule's textbook formula beside the simulated figures, and why they differ (or why
    /// no formula applies), in lines ([`mpipe::report::formula`]).
    pub formula: Vec<String>,
    /// The global operator table (time slot × rank), for schedules of at most
    /// [`TABLE_ACTIONS`] compute actions.
    pub table: Option<mpipe::report::table::OperatorTable>,
    /// The expected step under the scenario's `jitter` (a calibrated scenario carries the run's),
    /// as `mpipe simulate` gives it.
    pub expected: Option<mpipe::sim::jitter::Expected>,
}

/// The most compute actions the app lays out as an operator table (`mpipe derive --table`
/// prints any).
pub const TABLE_ACTIONS: usize = 4_000;

impl Shown {
    /// Each rank's compute events as the chart's geometry reads them: the scene's own, by
    /// start (nothing laid out a second time).
    pub fn lanes(&self) -> Vec<Lane<'_, EventTiming>> {
        self.scene
            .lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| Lane {
                first: lane.events.start,
                spans: self.lane(index),
            })
            .collect()
    }

    /// The compute events of the scene's `index`-th lane (its rank's), by start.
    pub fn lane(&self, index: usize) -> &[EventTiming] {
        self.scene
            .lanes
            .get(index)
            .and_then(|lane| self.scene.events.get(lane.events.clone()))
            .unwrap_or_default()
    }

    /// Lays out `sim` (this is the linear work a large simulation does on its worker too).
    pub fn new(generation: u64, title: &str, sim: Simulation) -> Shown {
        let scene = Scene::new(&sim);
        let mut critical = vec![false; scene.events.len()];
        for n in &sim.critical_path {
            if let Some(slot) = scene
                .event_at_node(n.index())
                .and_then(|i| critical.get_mut(i))
            {
                *slot = true;
            }
        }
        let slack = sim.slack();
        let formula = match mpipe::report::formula::read(&sim) {
            Ok(reading) => reading.lines(),
            Err(why) => vec![why],
        };
        let table = (scene.events.len() <= TABLE_ACTIONS)
            .then(|| mpipe::report::table::OperatorTable::new(&sim.derivation));
        Shown {
            generation,
            title: title.to_string(),
            sim,
            scene,
            critical,
            slack,
            formula,
            table,
            expected: None,
        }
    }

    /// Event `index` in words, three lines: what it is (`4F0 forward of microbatch 0`), where
    /// it runs (`rank 0 · region 2 · backbone · 1f1b`), and when (`2.001 s → 4.001 s (2.000 s)
    /// · slack 0 s`, and whether it is on the critical path).
    pub fn describe(&self, index: usize) -> Option<[String; 3]> {
        let e = self.scene.events.get(index)?;
        let secs = mpipe::vocab::units::secs;
        // A slack the simulation did not give is shown as unknown, not as none.
        let slack = self
            .slack
            .get(e.node as usize)
            .map_or_else(|| "–".to_string(), |s| secs(*s));
        let region = self
            .scene
            .region(e.region.index())
            .map_or(String::new(), |r| r.label());
        Some([
            format!(
                "{} {} of microbatch {}",
                e.action,
                e.action.phase.describe(),
                e.mb()
            ),
            format!("rank {} · {region}", e.rank),
            format!(
                "{} → {} ({}{}) · slack {}{}",
                secs(e.start_s),
                secs(e.end_s),
                secs(e.end_s - e.start_s),
                match self.host_wait(index) {
                    w if w > 0.0 => format!(", of which {} waiting for its host's launch", secs(w)),
                    _ => String::new(),
                },
                slack,
                if self.on_critical_path(index) {
                    " · on the critical path"
                } else {
                    ""
                }
            ),
        ])
    }

    /// Of event `index`'s span, the seconds its device waited for its host to launch the work
    /// (0 without a host model).
    pub fn host_wait(&self, index: usize) -> f64 {
        self.scene.events.get(index).map_or(0.0, |e| {
            self.sim
                .host_wait_s
                .get(e.node as usize)
                .copied()
                .unwrap_or(0.0)
        })
    }

    /// Whether event `index` is on the critical path.
    pub fn on_critical_path(&self, index: usize) -> bool {
        self.critical.get(index).copied().unwrap_or(false)
    }

    /// Rank `r`'s compute actions in order (`0F5`, `4F0`, …).
    pub fn rank_actions(&self, rank: usize) -> Vec<String> {
        self.scene
            .lane_events(rank)
            .iter()
            .map(|e| e.action.to_string())
            .collect()
    }
}

/// Derives and simulates `scenario` and lays out what the views draw, in steps: the derivation
/// (with its tuned owners), the simulation's passes, the scene. `None` when `keep_going` said
/// stop. On a thread the steps run one after another; in the browser a step ends a slice when
/// the frame's time is spent, so the page draws the progress and hears Cancel between them.
struct Simulating {
    scenario: Scenario,
    generation: u64,
    source: String,
    text: Option<String>,
    stage: Stage,
}

/// How far a [`Simulating`] has come.
enum Stage {
    Start,
    Derived(Box<mpipe::Derivation>),
    Simulated(Box<Simulation>),
    /// The expected step's draws, under the scenario's jitter, a share of them a step.
    Expecting(Box<Simulation>, Box<mpipe::sim::jitter::Draws>),
    Finished,
}

impl Simulating {
    fn new(scenario: Scenario, generation: u64, source: &str, text: Option<&str>) -> Self {
        Simulating {
            scenario,
            generation,
            source: source.to_string(),
            text: text.map(str::to_string),
            stage: Stage::Start,
        }
    }

    /// Takes the next step; progress goes to `keep_going` (0 to 1) as in
    /// [`mpipe::tune::pipeline::simulate_scenario_cancellable`].
    fn step(
        &mut self,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Step<Option<Result<Shown, Failed>>> {
        let options = SimOptions::default();
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Start => {
                if !keep_going(0.0) {
                    return Step::Done(None);
                }
                // The derivation and the `optimized` owner search are the first 30 %.
                match derive_tuned(&self.scenario, options, &mut |f| keep_going(0.3 * f)) {
                    Ok(derivation) => self.stage = Stage::Derived(Box::new(derivation)),
                    Err(e) => return Step::Done(Some(Err(self.failed(e)))),
                }
            }
            Stage::Derived(derivation) => {
                // The run reports from 30 % to 100 %; with a jitter it ends at 70 % and the
                // draws take the rest.
                let end = if self.draws_expected() { 0.7 } else { 1.0 };
                let mut scaled = |f: f32| keep_going(0.3 + (f - 0.3).max(0.0) * (end - 0.3) / 0.7);
                match run_cancellable(*derivation, options, &mut scaled) {
                    Some(sim) => self.stage = Stage::Simulated(Box::new(sim)),
                    None => return Step::Done(None),
                }
            }
            Stage::Simulated(sim) => {
                let draws = self
                    .scenario
                    .jitter
                    .clone()
                    .and_then(|j| mpipe::sim::jitter::Draws::new(&sim, j, options));
                match draws {
                    Some(draws) => self.stage = Stage::Expecting(sim, Box::new(draws)),
                    None => return self.shown(*sim, None, keep_going),
                }
            }
            Stage::Expecting(sim, mut draws) => {
                // About a million events simulated a step (one draw at least, of at most
                // `EVENT_BUDGET / MIN_DRAWS` events): a frame's worth in the browser, a Cancel
                // heard between draws on a thread.
                let per_step = (1_000_000 / draws.events_per_draw().max(1)).max(1);
                for _ in 0..per_step {
                    if draws.is_done() {
                        return self.shown(*sim, draws.finish(), keep_going);
                    }
                    if !keep_going(0.7 + 0.3 * draws.fraction()) {
                        return Step::Done(None);
                    }
                    draws.draw(&sim);
                }
                self.stage = Stage::Expecting(sim, draws);
            }
            Stage::Finished => return Step::Done(None),
        }
        Step::Again
    }

    /// Whether the scenario's jitter gives the expected step draws to make.
    fn draws_expected(&self) -> bool {
        self.scenario.jitter.as_ref().is_some_and(|j| !j.is_empty())
    }

    /// The last step: what the views draw.
    fn shown(
        &self,
        sim: Simulation,
        expected: Option<mpipe::sim::jitter::Expected>,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Step<Option<Result<Shown, Failed>>> {
        if !keep_going(1.0) {
            return Step::Done(None);
        }
        let title = self.scenario.chart_title();
        let mut shown = Shown::new(self.generation, &title, sim);
        shown.expected = expected;
        Step::Done(Some(Ok(shown)))
    }

    /// Every step, here (a scenario small enough for the frame).
    fn run_to_end(mut self) -> Option<Result<Shown, Failed>> {
        loop {
            if let Step::Done(result) = self.step(&mut |_| true) {
                return result;
            }
        }
    }

    /// Why the derivation failed: the field and rule; with the file's text (a scenario just
    /// opened) also the line and column there. An edited scenario has no file text of its own,
    /// so its errors name the field only.
    fn failed(&self, e: mpipe::DeriveError) -> Failed {
        let message = match &self.text {
            Some(text) => e.locate(text, &self.source).to_string(),
            None => format!("{}: field `{}`: {e}", self.source, e.field()),
        };
        let remedy = e.remedy();
        let deadlock = match e {
            mpipe::DeriveError::Order(mpipe::graph::order::OrderError::Deadlock {
                actions,
                fix,
                ..
            }) => Some(Arc::new(Deadlock {
                cycle: actions,
                fix: *fix,
            })),
            _ => None,
        };
        Failed {
            message: mpipe::vocab::units::escape_controls(&message).into_owned(),
            deadlock,
            remedy,
        }
    }
}

/// A deadlocking order's wait-for cycle (its compute actions with their ranks, each waiting for
/// the next) and the reordering proposed to remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct Deadlock {
    pub cycle: Vec<(usize, mpipe::vocab::action::Action)>,
    pub fix: mpipe::graph::order::Fix,
}

/// Why a derivation failed: its message, the deadlock when that is why, and the change that
/// makes it valid when one is known (it travels with the error: nothing re-checks to find it).
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub message: String,
    pub deadlock: Option<Arc<Deadlock>>,
    pub remedy: Option<Remedy>,
}

impl From<String> for Failed {
    fn from(message: String) -> Self {
        Failed {
            message,
            deadlock: None,
            remedy: None,
        }
    }
}

/// An invalid scenario: the message that names why, and the generation it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    pub generation: u64,
    pub message: String,
    /// The wait-for cycle and its proposed fix, when the order deadlocks.
    pub deadlock: Option<Arc<Deadlock>>,
    /// The change that makes the scenario valid, when one is known.
    pub remedy: Option<Remedy>,
}

impl Invalid {
    fn new(generation: u64, failed: Failed) -> Self {
        Invalid {
            generation,
            message: failed.message,
            deadlock: failed.deadlock,
            remedy: failed.remedy,
        }
    }
}

/// A simulation running in the background for one generation.
type Running = (u64, Job<Option<Result<Shown, Failed>>>);

/// The derived state of the document.
#[derive(Debug)]
pub struct Derived {
    /// The latest finished result (its generation is older than the document's while a
    /// background run is still going).
    result: Result<Arc<Shown>, Invalid>,
    /// The last valid result of a finished edit: shown, dimmed, while the document is invalid.
    last_good: Option<Arc<Shown>>,
    running: Option<Running>,
    /// Cancelled runs whose threads have not ended yet (they stop at their next check).
    stopping: Vec<Job<Option<Result<Shown, Failed>>>>,
}

impl Default for Derived {
    fn default() -> Self {
        Derived {
            result: Err(Invalid::new(0, "no scenario".to_string().into())),
            last_good: None,
            running: None,
            stopping: Vec::new(),
        }
    }
}

impl Derived {
    /// Derives `scenario` (generation `generation`): at once when it is small, else on a
    /// background job (a run still going for an older generation is cancelled). `committed`:
    /// the edit is finished (no drag is extending it), so a valid result becomes the last good.
    pub fn request(
        &mut self,
        scenario: &Scenario,
        generation: u64,
        source: &str,
        text: Option<&str>,
        committed: bool,
    ) {
        self.cancel();
        // Undo and redo bring back states whose results may still be here.
        let held = [self.result.as_ref().ok(), self.last_good.as_ref()]
            .into_iter()
            .flatten()
            .find(|s| s.generation == generation)
            .cloned();
        if let Some(shown) = held {
            self.finish(Ok(shown), committed);
            return;
        }
        // The app keeps the timeline beside the simulation: it must fit as well.
        if let Err(e) = mpipe::algebra::budget::check(
            scenario,
            mpipe::algebra::budget::MEMORY_LIMIT_BYTES,
            SCENE_BYTES_PER_EVENT,
        ) {
            let message = format!(
                "{source}: field `{}`: {e} (with the app's timeline)",
                e.field()
            );
            self.finish(Err(Invalid::new(generation, message.into())), committed);
            return;
        }
        let mut simulating = Simulating::new(scenario.clone(), generation, source, text);
        // A scenario with a jitter (a calibrated one) draws its expected step, some 200
        // simulations: always on the worker, with its progress and Cancel.
        if simulating.draws_expected()
            || scenario.ranks.saturating_mul(scenario.microbatches) > FOREGROUND_LIMIT
        {
            let spawned = Job::spawn_steps("mpipe simulation", move |control| {
                simulating.step(&mut |f| control.keep_going(f))
            });
            match spawned {
                Ok(job) => self.running = Some((generation, job)),
                Err(message) => {
                    self.finish(Err(Invalid::new(generation, message.into())), committed)
                }
            }
        } else if let Some(result) = simulating.run_to_end() {
            self.finish(
                result
                    .map(Arc::new)
                    .map_err(|failed| Invalid::new(generation, failed)),
                committed,
            );
        }
    }

    fn finish(&mut self, result: Result<Arc<Shown>, Invalid>, committed: bool) {
        self.result = result;
        if committed {
            self.commit();
        }
    }

    /// The edit is finished: a valid current result becomes the last good one.
    pub fn commit(&mut self) {
        if let Ok(shown) = &self.result {
            self.last_good = Some(shown.clone());
        }
    }

    /// Another document is open: its last good state is its own, not the previous document's.
    pub fn forget_last_good(&mut self) {
        self.last_good = None;
    }

    /// Takes a finished background run for `generation`; true while one is still running.
    pub fn poll(&mut self, committed: bool) -> bool {
        self.stopping.retain(|job| !job.is_finished());
        let Some((generation, job)) = &self.running else {
            return false;
        };
        let generation = *generation;
        match job.poll() {
            Poll::Running => return true,
            Poll::Done(Some(result)) => {
                self.running = None;
                let result = result
                    .map(Arc::new)
                    .map_err(|failed| Invalid::new(generation, failed));
                self.finish(result, committed);
            }
            Poll::Done(None) => self.running = None,
            Poll::Lost => {
                self.running = None;
                self.finish(
                    Err(Invalid::new(
                        generation,
                        "the simulation stopped unexpectedly".to_string().into(),
                    )),
                    committed,
                );
            }
        }
        false
    }

    /// Stops the background run, if any (its thread ends at its next check); true when one was
    /// running.
    pub fn cancel(&mut self) -> bool {
        match self.running.take() {
            Some((_, job)) => {
                job.cancel();
                self.stopping.push(job);
                true
            }
            None => false,
        }
    }

    /// How many cancelled runs are still winding down.
    pub fn stopping(&self) -> usize {
        self.stopping
            .iter()
            .filter(|job| !job.is_finished())
            .count()
    }

    /// The background run, if one is going.
    pub fn running(&self) -> Option<&Job<Option<Result<Shown, Failed>>>> {
        self.running.as_ref().map(|(_, job)| job)
    }

    /// The latest result: the simulation, or why there is none.
    pub fn result(&self) -> Result<&Arc<Shown>, &Invalid> {
        self.result.as_ref()
    }

    pub fn last_good(&self) -> Option<&Arc<Shown>> {
        self.last_good.as_ref()
    }

    /// The simulation on screen: the current one, or the last valid one while the edit is
    /// invalid.
    pub fn shown(&self) -> Option<&Arc<Shown>> {
        self.result.as_ref().ok().or(self.last_good.as_ref())
    }

    /// Whether what is on screen is not the current document's (invalid, or still computing).
    pub fn is_stale(&self, generation: u64) -> bool {
        self.shown().is_none_or(|s| s.generation != generation)
    }
}
