//! The step a run takes when its costs vary (DESIGN.md §3.1): a simulation with every cost at
//! its mean is not the typical step. A step is a longest path, a maximum over the
//! paths that meet at every wait; a cost that varies lengthens that maximum on average however
//! its mean is kept (a rank that waits for two inputs waits for the later one). So the
//! expected step is estimated by simulating the same order many times, each cost varied around
//! its mean by a deviation drawn from what a run measured ([`Jitter`]: each action's compute over its stage's mean, the gap before
//! an action, a transfer, the stalls at its two ends), and taking the median and the 10 % and
//! 90 % points of the steps. The draws come from a seeded generator: the same scenario and
//! jitter give the same figures.

use crate::graph::time::Launches;
use crate::scenario::jitter::quantile;
pub use crate::scenario::jitter::{Jitter, MIN_SAMPLES, QUANTILE_POINTS, Quantiles};
use crate::sim::cost::{Timed, timed, transfer_bytes};
use crate::sim::engine::{SimOptions, simulate_launched};
use crate::sim::run::Simulation;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The expected step under a [`Jitter`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Expected {
    /// The median of the simulated steps.
    pub median_s: f64,
    /// Their 10 % and 90 % points.
    pub low_s: f64,
    pub high_s: f64,
    pub draws: usize,
}

impl Expected {
    /// `expected under the run's measured jitter: 136.184 ms (the median of 200 draws; 10–90%:
    /// 113.331 ms to 151.782 ms), +8.5% against the simulated step`, times written by `unit`.
    pub fn sentence(&self, simulated_s: f64, unit: fn(f64) -> String) -> String {
        let against = if simulated_s > 0.0 {
            (self.median_s - simulated_s) / simulated_s * 100.0
        } else {
            0.0
        };
        format!(
            "expected under the run's measured jitter: {} (the median of {} draws; 10–90%: {} to {}), {against:+.1}% against the simulated step",
            unit(self.median_s),
            self.draws,
            unit(self.low_s),
            unit(self.high_s),
        )
    }
}

/// The most draws; fewer on a large order, so that the draws of one expected step together
/// simulate at most [`EVENT_BUDGET`] events (a step of a million events takes 20 draws).
pub const MAX_DRAWS: usize = 200;
/// Events the draws of one expected step simulate at most, together: an order too large for
/// [`MIN_DRAWS`] within it gets no expected step.
pub const EVENT_BUDGET: usize = 20_000_000;
/// The fewest draws: below this a median is not worth giving.
pub const MIN_DRAWS: usize = 8;
/// The generator's seed: the same scenario and jitter give the same figures.
const SEED: u64 = 0x006d_7069_7065;

/// The expected step of `sim` under `jitter`, from seeded draws; `None` when nothing that is
/// drawn varies (compute, gaps and transfers all unmeasured and no rank's pace given: stalls are
/// drawn only into transfers), when the order is too large for [`MIN_DRAWS`] within [`EVENT_BUDGET`], or when
/// `keep_going` says stop (it is called between draws with the fraction done).
///
/// Each draw varies every cost around what the simulation charges for it: a compute action's
/// compute by its rank's pace (one measured step's, drawn per draw) times `1 +` a compute
/// deviation, its overhead by a gap deviation (a scenario's
/// per-phase overhead stays its mean), a cross-rank transfer by a transfer deviation and two
/// stall deviations (its two ends); the rest stays.
pub fn expected(
    sim: &Simulation,
    jitter: &Jitter,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Expected> {
    let mut draws = Draws::new(sim, jitter.clone(), options)?;
    while !draws.is_done() {
        if !keep_going(draws.fraction()) {
            return None;
        }
        draws.draw(sim);
    }
    draws.finish()
}

/// What one draw varies each node by: a compute action its compute (the rest of its duration
/// stays), a cross-rank transfer its deviations.
#[derive(Debug)]
enum Kind {
    Compute { compute: f64, rank: usize },
    Transfer,
    Fixed,
}

/// The draws of one expected step, one at a time ([`expected`] takes them all; the app takes
/// as many a step as fit its frame): each [`Draws::draw`] simulates `sim`'s order once more.
#[derive(Debug)]
pub struct Draws {
    jitter: Jitter,
    options: SimOptions,
    /// Each node's duration as the simulation charges it, and what each draw varies.
    base: Vec<f64>,
    /// When the host launches each node (the draws vary the device's work, not the host's).
    launches: Launches,
    kinds: Vec<Kind>,
    rng: ChaCha8Rng,
    /// The draws' steps so far, and how many there will be.
    steps: Vec<f64>,
    total: usize,
    /// The last draw's durations, handed on to the next (no list made a draw).
    durations: Vec<f64>,
    /// Each distribution's stored curve's mean (compute, gap, transfer, stall), read once: a
    /// draw is a point less it.
    shifts: [f64; 4],
}

impl Draws {
    /// The draws of `sim`'s expected step under `jitter`; `None` as [`expected`] says.
    pub fn new(sim: &Simulation, jitter: Jitter, options: SimOptions) -> Option<Draws> {
        if jitter.is_empty() {
            return None;
        }
        let order = &sim.derivation.order;
        let plan = &sim.derivation.plan;
        let graph = &order.graph;
        let nodes = graph.node_count().max(1);
        let total = (EVENT_BUDGET / nodes).min(MAX_DRAWS);
        if total < MIN_DRAWS {
            return None;
        }
        let Timed {
            durations: base,
            runtime_s: runtime,
            launches,
            ..
        } = timed(plan, order);
        let kinds: Vec<Kind> = graph
            .node_indices()
            .map(|n| {
                let i = n.index();
                match graph.node_weight(n) {
                    Some(e) if e.is_compute() => Kind::Compute {
                        compute: (base.get(i).copied().unwrap_or(0.0)
                            - runtime.get(i).copied().unwrap_or(0.0))
                        .max(0.0),
                        rank: e.rank().unwrap_or(usize::MAX),
                    },
                    Some(_) if transfer_bytes(plan, graph, n).is_some() => Kind::Transfer,
                    _ => Kind::Fixed,
                }
            })
            .collect();
        let shifts = [
            jitter.compute.curve_mean(),
            jitter.gap_s.curve_mean(),
            jitter.transfer_s.curve_mean(),
            jitter.stall_s.curve_mean(),
        ];
        Some(Draws {
            shifts,
            jitter,
            options,
            durations: base.clone(),
            base,
            launches,
            kinds,
            rng: ChaCha8Rng::seed_from_u64(SEED),
            steps: Vec::with_capacity(total),
            total,
        })
    }

    /// The share of the draws made (0 to 1).
    pub fn fraction(&self) -> f32 {
        self.steps.len() as f32 / self.total.max(1) as f32
    }

    /// Whether every draw is made.
    pub fn is_done(&self) -> bool {
        self.steps.len() >= self.total
    }

    /// Events one draw simulates (the order's nodes).
    pub fn events_per_draw(&self) -> usize {
        self.base.len()
    }

    /// Makes the next draw (on `sim`, the simulation the draws were made for); nothing once
    /// every draw is made ([`Draws::is_done`]).
    pub fn draw(&mut self, sim: &Simulation) {
        if self.is_done() {
            return;
        }
        let jitter = &self.jitter;
        let rng = &mut self.rng;
        let paces: &[f64] = match jitter.pace.len() {
            0 => &[],
            n => jitter
                .pace
                .get(rng.random_range(0..n))
                .map_or(&[], Vec::as_slice),
        };
        // Each curve's mean read once: a deviation is O(1) whatever the number of points.
        let [compute_shift, gap_shift, transfer_shift, stall_shift] = self.shifts;
        let mut deviation =
            |q: &Quantiles, shift: f64| q.deviation_from(rng.random::<f64>(), shift).unwrap_or(0.0);
        let mut durations = std::mem::take(&mut self.durations);
        for ((slot, kind), &mean) in durations.iter_mut().zip(&self.kinds).zip(&self.base) {
            *slot = match *kind {
                Kind::Compute { compute, rank } => {
                    let pace = paces.get(rank).copied().unwrap_or(1.0);
                    let factor =
                        (pace * (1.0 + deviation(&jitter.compute, compute_shift))).max(0.0);
                    (mean + compute * (factor - 1.0) + deviation(&jitter.gap_s, gap_shift)).max(0.0)
                }
                Kind::Transfer => (mean
                    + deviation(&jitter.transfer_s, transfer_shift)
                    + deviation(&jitter.stall_s, stall_shift)
                    + deviation(&jitter.stall_s, stall_shift))
                .max(0.0),
                Kind::Fixed => mean,
            };
        }
        // The draw's timeline hands its durations back for the next draw.
        let timeline = simulate_launched(
            &sim.derivation.order,
            durations,
            &self.launches,
            self.options,
        );
        self.steps.push(timeline.makespan);
        self.durations = timeline.durations;
    }

    /// The expected step from the draws made (every one, once [`Draws::is_done`]).
    pub fn finish(mut self) -> Option<Expected> {
        let draws = self.steps.len();
        self.steps.sort_by(f64::total_cmp);
        Some(Expected {
            median_s: quantile(&self.steps, 0.5)?,
            low_s: quantile(&self.steps, 0.1)?,
            high_s: quantile(&self.steps, 0.9)?,
            draws,
        })
    }
}
