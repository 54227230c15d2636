//! Fitting a schedule under the device's capacity (DESIGN.md §3.1): for a scenario whose peak
//! memory is over the cap, the cheapest choice of activation offload and full recomputation per
//! stage that brings every rank under it, with the time it costs.
//!
//! The search is greedy and bounded: while a rank is over the cap, it tries every stronger
//! choice for each stage on the rank most over (offload a quarter, half, three quarters or all
//! of the stage's kept activations; recompute the stage fully), simulating each, and keeps the
//! one that brings the rank under the cap in the least step time — or, when none does, the one
//! that takes the most bytes off its peak per second of step time it adds. A stage's choice
//! replaces what its layers gave; the stages left alone keep theirs. When no choice lowers the
//! rank still over the cap, nothing fits and the smallest peak the search reached is named.

use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::scenario::layer::{LayerSpec, Recompute};
use crate::sim::engine::SimOptions;
use crate::sim::run::Simulation;
use crate::tune::Stepped;
use crate::tune::pipeline::{SimulationError, simulate_scenario_cancellable};
use serde::Serialize;
use std::ops::Range;

/// What a stage does with its activations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MemoryChoice {
    /// As the scenario gives it.
    Keep,
    /// `share` of the kept activations to the host after the forward, back before the backward.
    Offload { share: f64 },
    /// Only the stage's input kept; the backward runs the forward again first.
    Recompute,
}

impl MemoryChoice {
    /// The stronger choices the search tries, from the least to the most taken off the device.
    pub const LADDER: [MemoryChoice; 5] = [
        MemoryChoice::Offload { share: 0.25 },
        MemoryChoice::Offload { share: 0.5 },
        MemoryChoice::Offload { share: 0.75 },
        MemoryChoice::Offload { share: 1.0 },
        MemoryChoice::Recompute,
    ];

    /// How the choice reads: `keep`, `offload 50 %`, `recompute`.
    pub fn label(&self) -> String {
        match self {
            MemoryChoice::Keep => "keep".into(),
            MemoryChoice::Offload { share } => format!("offload {:.0} %", 100.0 * share),
            MemoryChoice::Recompute => "recompute".into(),
        }
    }

    /// The layer `spec` with this choice made (its other fields as they were).
    fn applied(self, spec: &LayerSpec) -> LayerSpec {
        let mut out = spec.clone();
        match self {
            MemoryChoice::Keep => {}
            MemoryChoice::Offload { share } => out.offload_share = Some(share),
            MemoryChoice::Recompute => {
                out.recompute = Some(Recompute::Full);
                out.recompute_activation_share = None;
                out.recompute_cost_share = None;
                out.offload_share = None;
            }
        }
        out
    }
}

/// Which choices the search may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Means {
    /// Offload or recompute, whichever is cheaper.
    #[default]
    Both,
    /// Offload only.
    Offload,
    /// Full recomputation only.
    Recompute,
}

impl Means {
    fn allows(self, choice: MemoryChoice) -> bool {
        match (self, choice) {
            (Means::Both, _) | (_, MemoryChoice::Keep) => true,
            (Means::Offload, c) => matches!(c, MemoryChoice::Offload { .. }),
            (Means::Recompute, c) => c == MemoryChoice::Recompute,
        }
    }
}

/// One stage the search may change: its layers (expanded indices) and the ranks it runs on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageChoice {
    /// The region (1-based) the stage belongs to.
    pub region: usize,
    pub ranks: Vec<usize>,
    pub layers: Range<usize>,
    pub choice: MemoryChoice,
}

/// A simulated point of the search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitPoint {
    pub makespan_s: f64,
    /// Each rank's peak memory.
    pub peaks_bytes: Vec<f64>,
}

impl FitPoint {
    fn of(sim: &Simulation) -> FitPoint {
        FitPoint {
            makespan_s: sim.makespan_s,
            peaks_bytes: sim.memory.iter().map(|c| c.peak_bytes).collect(),
        }
    }

    /// The rank most over `cap` and by how much, when one is.
    fn most_over(&self, cap: f64) -> Option<(usize, f64)> {
        self.peaks_bytes
            .iter()
            .enumerate()
            .map(|(r, &p)| (r, p - cap))
            .filter(|&(_, over)| over > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFit {
    pub cap_bytes: f64,
    /// The scenario as given.
    pub before: FitPoint,
    /// Every stage and the choice the search made for it (`keep` where it made none).
    pub stages: Vec<StageChoice>,
    /// The fitted scenario's point; `None` when nothing fits.
    pub after: Option<FitPoint>,
    /// When nothing fits: the rank still over the cap and the smallest peak the search reached
    /// for it.
    pub smallest_peak: Option<(usize, f64)>,
    /// The fitted scenario (the given one when it fits as is); `None` when nothing fits.
    pub scenario: Option<Scenario>,
    /// How many scenarios the search simulated (the given one included).
    pub simulations: usize,
    /// The search stopped at [`SIMULATION_BUDGET`]: a fit may exist that it did not reach.
    pub budget_reached: bool,
}

/// Why a scenario cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error(transparent)]
    Derive(#[from] DeriveError),
    #[error(
        "no capacity to fit under: give `hardware.memory_bytes` in the scenario or a cap (`--cap BYTES`)"
    )]
    NoCapacity,
    #[error("the cap must be a finite number of bytes > 0, got {0}")]
    BadCap(f64),
    #[error("cancelled")]
    Cancelled,
}

/// How many scenarios the search simulates at most (the given one included).
pub const SIMULATION_BUDGET: usize = 400;

/// Fits `scenario` under `cap` (default: its `hardware.memory_bytes`). `keep_going` is asked
/// before every simulation with the fraction of the budget spent, and stops the search when it
/// says no.
pub fn fit_memory(
    scenario: &Scenario,
    cap: Option<f64>,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<MemoryFit, FitError> {
    fit_memory_with(scenario, cap, Means::Both, options, keep_going)
}

/// [`fit_memory`] with only the choices `means` allows.
pub fn fit_memory_with(
    scenario: &Scenario,
    cap: Option<f64>,
    means: Means,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<MemoryFit, FitError> {
    let mut steps = FitSteps::new(scenario, cap, means, options)?;
    Stepped::run_to_end(|| steps.step(keep_going))?.ok_or(FitError::Cancelled)
}

/// The fit of a scenario its caller has simulated already (`given`, taken so that it is dropped
/// before the search simulates: one simulation held at a time), under its device's capacity:
/// BigMac's designs and the WaveK sweep fit their points over it without simulating them again.
pub fn fit_simulated(
    scenario: &Scenario,
    given: Simulation,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<FittedPoint, FitError> {
    let mut steps = FitSteps::new(scenario, None, Means::Both, options)?;
    steps.state = FitState::Searching(Box::new(Search::from(&given, Means::Both)));
    drop(given);
    let fit = Stepped::run_to_end(|| steps.step(keep_going))?.ok_or(FitError::Cancelled)?;
    Ok(FittedPoint::of(&fit))
}

/// The cap to fit under: `cap`, else the scenario's `hardware.memory_bytes`; finite and > 0.
fn cap_of(scenario: &Scenario, cap: Option<f64>) -> Result<f64, FitError> {
    let cap = cap
        .or_else(|| scenario.hardware.as_ref().and_then(|h| h.memory_bytes))
        .ok_or(FitError::NoCapacity)?;
    if !(cap.is_finite() && cap > 0.0) {
        return Err(FitError::BadCap(cap));
    }
    Ok(cap)
}

/// The search's `done`-th simulation (0: the given scenario), which hears a stop between its
/// passes, its progress within that simulation's share of the budget.
fn simulate(
    s: &Scenario,
    options: SimOptions,
    done: usize,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Simulation, FitError> {
    let (at, share) = (
        done as f32 / SIMULATION_BUDGET as f32,
        1.0 / SIMULATION_BUDGET as f32,
    );
    simulate_scenario_cancellable(s, options, &mut |f| keep_going(at + f * share)).map_err(|e| {
        match e {
            SimulationError::Cancelled => FitError::Cancelled,
            SimulationError::Derive(e) => FitError::Derive(e),
        }
    })
}

/// The fit under the capacity run a simulation a step (what [`fit_memory`] loops over), so a
/// caller without threads (the web build) draws its progress and hears Cancel between them.
#[derive(Debug)]
pub struct FitSteps {
    scenario: Scenario,
    cap: f64,
    means: Means,
    options: SimOptions,
    state: FitState,
}

#[derive(Debug)]
enum FitState {
    /// The given scenario is simulated first.
    Given,
    Searching(Box<Search>),
    /// The result was given.
    Ended,
}

/// The search under way: the given scenario's point and stages, the choices made so far and
/// the round trying stronger ones for the rank most over the cap.
#[derive(Debug)]
struct Search {
    before: FitPoint,
    stages: Vec<StageChoice>,
    /// What the search may choose (a second-order schedule's phases are not offloaded).
    means: Means,
    point: FitPoint,
    /// Simulations so far, the given scenario's included.
    simulations: usize,
    budget_reached: bool,
    round: Option<Round>,
}

/// One round: the stronger choices of the stages on the rank most over the cap, each tried in
/// turn, and the best so far.
#[derive(Debug)]
struct Round {
    rank: usize,
    over: f64,
    tries: Vec<(usize, MemoryChoice)>,
    next: usize,
    best: Option<Candidate>,
}

impl Search {
    /// The search from the given scenario's simulation (its first).
    fn from(given: &Simulation, means: Means) -> Search {
        let second_order = given
            .derivation
            .plan
            .regions
            .iter()
            .any(|r| r.skeleton.second_order());
        let before = FitPoint::of(given);
        Search {
            point: before.clone(),
            before,
            stages: stages_of(given),
            // A second-order schedule's phases are not offloaded: only recomputation can help.
            // (Asked for offload alone, it stays so: nothing it tries lowers a peak, and nothing
            // fits.)
            means: if second_order && means == Means::Both {
                Means::Recompute
            } else {
                means
            },
            simulations: 1,
            budget_reached: false,
            round: None,
        }
    }

    /// The round for the rank most over `cap`; `None` when every rank is under it.
    fn round(&self, cap: f64) -> Option<Round> {
        let (rank, over) = self.point.most_over(cap)?;
        let tries = self
            .stages
            .iter()
            .enumerate()
            .filter(|(_, stage)| stage.ranks.contains(&rank))
            .flat_map(|(i, stage)| {
                stronger(stage.choice)
                    .filter(|&c| self.means.allows(c))
                    .map(move |c| (i, c))
            })
            .collect();
        Some(Round {
            rank,
            over,
            tries,
            next: 0,
            best: None,
        })
    }

    fn peak(&self, rank: usize) -> f64 {
        self.point.peaks_bytes.get(rank).copied().unwrap_or(0.0)
    }

    /// What the search found: the stages' choices, fitted or not (`smallest_peak` when not).
    fn finish(
        self,
        scenario: &Scenario,
        cap: f64,
        smallest_peak: Option<(usize, f64)>,
    ) -> MemoryFit {
        let fits = smallest_peak.is_none();
        MemoryFit {
            cap_bytes: cap,
            before: self.before,
            after: fits.then_some(self.point),
            smallest_peak,
            scenario: fits.then(|| with_choices(scenario, &self.stages)),
            stages: self.stages,
            simulations: self.simulations,
            budget_reached: self.budget_reached,
        }
    }
}

impl FitSteps {
    /// The fit of `scenario` under `cap` (default: its `hardware.memory_bytes`) with the choices
    /// `means` allows; nothing simulated yet.
    pub fn new(
        scenario: &Scenario,
        cap: Option<f64>,
        means: Means,
        options: SimOptions,
    ) -> Result<FitSteps, FitError> {
        Ok(FitSteps {
            cap: cap_of(scenario, cap)?,
            scenario: scenario.clone(),
            means,
            options,
            state: FitState::Given,
        })
    }

    /// One simulation of the search (the given scenario's first, then one stronger choice of
    /// one stage), `keep_going` asked before it with the fraction of the budget spent; the fit
    /// once the search ends.
    pub fn step(
        &mut self,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Result<Stepped<MemoryFit>, FitError> {
        let cancelled = |e: FitError| match e {
            FitError::Cancelled => Ok(Stepped::Cancelled),
            e => Err(e),
        };
        match std::mem::replace(&mut self.state, FitState::Ended) {
            FitState::Ended => Ok(Stepped::Cancelled),
            FitState::Given => {
                // One simulation held at a time: the given one is read and dropped.
                match simulate(&self.scenario, self.options, 0, keep_going) {
                    Ok(given) => {
                        self.state =
                            FitState::Searching(Box::new(Search::from(&given, self.means)));
                        Ok(Stepped::Again)
                    }
                    Err(e) => cancelled(e),
                }
            }
            FitState::Searching(mut search) => {
                let Some(mut round) = search.round.take().or_else(|| search.round(self.cap)) else {
                    return Ok(Stepped::Done(search.finish(&self.scenario, self.cap, None)));
                };
                if round.next < round.tries.len() && search.simulations >= SIMULATION_BUDGET {
                    search.budget_reached = true;
                    round.next = round.tries.len();
                }
                let Some(&(i, choice)) = round.tries.get(round.next) else {
                    // The round is over: its best choice is made, or nothing lowers the rank.
                    let Some(best) = round.best else {
                        let smallest = Some((round.rank, search.peak(round.rank)));
                        return Ok(Stepped::Done(search.finish(
                            &self.scenario,
                            self.cap,
                            smallest,
                        )));
                    };
                    if let Some(s) = search.stages.get_mut(best.stage) {
                        s.choice = best.choice;
                    }
                    search.point = best.point;
                    self.state = FitState::Searching(search);
                    return Ok(Stepped::Again);
                };
                round.next += 1;
                let mut tried = search.stages.clone();
                if let Some(t) = tried.get_mut(i) {
                    t.choice = choice;
                }
                let tried = with_choices(&self.scenario, &tried);
                let point_of = match simulate(&tried, self.options, search.simulations, keep_going)
                {
                    Ok(sim) => FitPoint::of(&sim),
                    Err(e) => return cancelled(e),
                };
                search.simulations += 1;
                let gain = search.peak(round.rank)
                    - point_of.peaks_bytes.get(round.rank).copied().unwrap_or(0.0);
                if gain > 0.0 {
                    // Under the cap: the least step time; else the most bytes per second added.
                    let fits = gain >= round.over;
                    let added = (point_of.makespan_s - search.point.makespan_s).max(0.0);
                    let candidate = Candidate {
                        fits,
                        score: if fits {
                            point_of.makespan_s
                        } else {
                            added / gain
                        },
                        stage: i,
                        choice,
                        point: point_of,
                    };
                    if round.best.as_ref().is_none_or(|b| candidate.beats(b)) {
                        round.best = Some(candidate);
                    }
                }
                search.round = Some(round);
                self.state = FitState::Searching(search);
                Ok(Stepped::Again)
            }
        }
    }
}

/// One stronger choice tried for one stage.
#[derive(Debug)]
struct Candidate {
    /// It brings the rank under the cap.
    fits: bool,
    /// Lower is better: the step time when it fits, else seconds added per byte taken off.
    score: f64,
    stage: usize,
    choice: MemoryChoice,
    point: FitPoint,
}

impl Candidate {
    /// One that fits beats one that does not; then the lower score (the first tried on a tie).
    fn beats(&self, other: &Candidate) -> bool {
        (self.fits && !other.fits) || (self.fits == other.fits && self.score < other.score)
    }
}

/// The choices stronger than `current` on the ladder (all of them from `keep`).
fn stronger(current: MemoryChoice) -> impl Iterator<Item = MemoryChoice> {
    let from = MemoryChoice::LADDER
        .iter()
        .position(|&c| c == current)
        .map_or(0, |i| i + 1);
    MemoryChoice::LADDER.into_iter().skip(from)
}

/// Every distinct stage of a simulated scenario: each region's unit of layers per rank (a
/// Replicated region's whole region, on every rank), a bidirectional schedule's mirror folded
/// into the stage whose layers it shares.
fn stages_of(sim: &Simulation) -> Vec<StageChoice> {
    let plan = &sim.derivation.plan;
    let mut stages: Vec<StageChoice> = Vec::new();
    for region in &plan.regions {
        for rank in 0..plan.ranks {
            let layers = plan.unit_layers(region.index, rank);
            if layers.is_empty() {
                continue;
            }
            match stages.iter_mut().find(|s| s.layers == layers) {
                Some(s) => {
                    if !s.ranks.contains(&rank) {
                        s.ranks.push(rank);
                    }
                }
                None => stages.push(StageChoice {
                    region: region.mirror_of.unwrap_or(region.index),
                    ranks: vec![rank],
                    layers,
                    choice: MemoryChoice::Keep,
                }),
            }
        }
    }
    stages.sort_by_key(|s| (s.layers.start, s.layers.end));
    stages
}

/// `scenario` with each stage's choice made on its layers: a layer entry whose layers take
/// different choices is split into runs (named `name[a..b]` after the expanded layers they
/// hold), runs of one choice stay one entry.
pub fn with_choices(scenario: &Scenario, stages: &[StageChoice]) -> Scenario {
    let choice_of = |layer: usize| {
        stages
            .iter()
            .find(|s| s.layers.contains(&layer))
            .map_or(MemoryChoice::Keep, |s| s.choice)
    };
    let mut layers = Vec::with_capacity(scenario.model.layers.len());
    let mut at = 0usize;
    for spec in &scenario.model.layers {
        let end = at.saturating_add(spec.count);
        let mut start = at;
        while start < end {
            let choice = choice_of(start);
            let mut stop = start + 1;
            while stop < end && choice_of(stop) == choice {
                stop += 1;
            }
            let mut part = choice.applied(spec);
            if stop - start != spec.count {
                part.count = stop - start;
                part.name = format!("{}[{}..{}]", spec.name, start - at, stop - at);
            }
            layers.push(part);
            start = stop;
        }
        at = end;
    }
    let mut out = scenario.clone();
    out.model.layers = layers;
    out
}

/// An over-capacity point of a comparison (BigMac's designs, the WaveK sweep) fitted under the
/// capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FittedPoint {
    /// The fitted step time; `None` when nothing fits.
    pub makespan_s: Option<f64>,
    /// The highest rank's peak after the fit, or the smallest the search reached when nothing
    /// fits.
    pub peak_bytes: f64,
    /// What each changed stage does, as `layers 0..8: offload 50 %`.
    pub choices: Vec<String>,
    /// Nothing fitted because the search ran out of simulations (a fit may exist).
    pub budget_reached: bool,
}

impl FittedPoint {
    pub fn of(fit: &MemoryFit) -> FittedPoint {
        let top = |peaks: &[f64]| peaks.iter().copied().fold(0.0, f64::max);
        FittedPoint {
            makespan_s: fit.after.as_ref().map(|a| a.makespan_s),
            peak_bytes: match (&fit.after, fit.smallest_peak) {
                (Some(a), _) => top(&a.peaks_bytes),
                (None, Some((_, peak))) => peak,
                (None, None) => top(&fit.before.peaks_bytes),
            },
            choices: fit
                .stages
                .iter()
                .filter(|s| s.choice != MemoryChoice::Keep)
                .map(|s| {
                    format!(
                        "layers {}..{}: {}",
                        s.layers.start,
                        s.layers.end,
                        s.choice.label()
                    )
                })
                .collect(),
            budget_reached: fit.budget_reached,
        }
    }
}

/// A comparison row's note on capacity: nothing when it fits, what fitting it under costs when
/// it was fitted, `(over capacity)` otherwise.
pub fn capacity_note(over_capacity: bool, fitted: Option<&FittedPoint>, makespan_s: f64) -> String {
    let gb = crate::vocab::units::bytes;
    match (fitted, over_capacity) {
        (Some(f), _) => match f.makespan_s {
            Some(t) => format!(
                "  (over capacity; fitted under it: {} ({:+.1} %), peak {}: {})",
                crate::vocab::units::secs(t),
                100.0 * (t - makespan_s) / makespan_s.max(f64::MIN_POSITIVE),
                gb(f.peak_bytes),
                f.choices.join(", ")
            ),
            None if f.budget_reached => format!(
                "  (over capacity; not fitted within the search's budget: {} reached)",
                gb(f.peak_bytes)
            ),
            None => format!(
                "  (over capacity; nothing fits: no lower than {})",
                gb(f.peak_bytes)
            ),
        },
        (None, true) => "  (over capacity)".to_string(),
        (None, false) => String::new(),
    }
}
