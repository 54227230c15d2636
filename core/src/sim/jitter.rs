//! The step a run takes when its costs vary (DESIGN.md §3.1): a simulation with every cost at
//! its mean is not the typical step. A step is a longest path, a maximum over the
//! paths that meet at every wait; a cost that varies lengthens that maximum on average however
//! its mean is kept (a rank that waits for two inputs waits for the later one). So the
//! expected step is estimated by simulating the same order many times, each cost varied around
//! its mean by a deviation drawn from what a run measured ([`Jitter`]: each action's compute over its stage's mean, the gap before
//! an action, a transfer, the stalls at its two ends), and taking the median and the 10 % and
//! 90 % points of the steps. The draws come from a seeded generator: the same scenario and
//! jitter give the same figures.

use crate::sim::cost::{durations_with_runtime, transfer_bytes};
use crate::sim::engine::{SimOptions, simulate};
use crate::sim::run::Simulation;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// An empirical distribution as its quantiles at evenly spaced probabilities, ascending, and its
/// samples' mean (empty: nothing measured, the cost stays at its mean). A draw reads the
/// quantile function at a uniform probability, between the stored points linearly, shifted so
/// that the draws' mean is the samples' mean exactly (the stored curve gives its end points a
/// fixed weight, which would move the mean of a heavy tail): a draw varies a cost around the
/// mean the simulation already charges, never moves it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Quantiles {
    pub points: Vec<f64>,
    /// The mean of the samples the points were read from.
    pub mean: f64,
}

/// The fewest samples a distribution is kept from: with fewer, the cost stays at its mean (a
/// handful of transfers from one step — 5 to 9 on the seven-schedule runs — is not a
/// distribution).
pub const MIN_SAMPLES: usize = 32;

/// The points a distribution is kept at: 0 %, 1/32, …, 100 %.
pub const QUANTILE_POINTS: usize = 33;

impl Quantiles {
    /// The quantiles of `samples` (finite ones only) at [`QUANTILE_POINTS`] probabilities, and
    /// their mean; nothing from fewer than [`MIN_SAMPLES`].
    pub fn of(mut samples: Vec<f64>) -> Quantiles {
        samples.retain(|x| x.is_finite());
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        if n < MIN_SAMPLES {
            return Quantiles::default();
        }
        let last = (QUANTILE_POINTS - 1) as f64;
        let points: Vec<f64> = (0..QUANTILE_POINTS)
            .filter_map(|i| quantile(&samples, i as f64 / last))
            .collect();
        let mean = samples.iter().sum::<f64>() / n as f64;
        Quantiles { points, mean }
    }

    /// The mean of the stored curve (the mean of a draw before its shift): the trapezoids'.
    fn curve_mean(&self) -> f64 {
        let n = self.points.len();
        if n < 2 {
            return self.points.first().copied().unwrap_or(0.0);
        }
        let inner: f64 = self
            .points
            .windows(2)
            .map(|w| match w {
                [a, b] => (a + b) / 2.0,
                _ => 0.0,
            })
            .sum();
        inner / (n - 1) as f64
    }

    /// The value at probability `u` (0 to 1), shifted to keep the samples' mean; `None` when
    /// nothing was measured.
    pub fn at(&self, u: f64) -> Option<f64> {
        Some(quantile(&self.points, u)? + self.mean - self.curve_mean())
    }

    /// A draw less the mean: how far a cost is from the mean the simulation charges.
    pub fn deviation(&self, u: f64) -> Option<f64> {
        Some(self.at(u)? - self.mean)
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// How a run's costs varied, as `compare-trace` measured them; each is drawn as a deviation from
/// its own mean, added to what the simulation charges.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Jitter {
    /// Each compute action's compute over its stage and phase's mean (around 1): an action's
    /// compute is scaled by `1 +` its deviation.
    pub compute: Quantiles,
    /// The gap before an action whose input was on its rank (the runtime's own work): its
    /// deviation is added to the action's overhead.
    pub gap_s: Quantiles,
    /// A waited transfer's time beyond the `β·n` the calibrated scenario charges (around `α`):
    /// its deviation is added to the transfer.
    pub transfer_s: Quantiles,
    /// A send's or receive's thread time beyond the median one (a stall in the call, whose mean
    /// the calibrated `α` holds once per end): its deviation is added to a transfer once per end.
    pub stall_s: Quantiles,
    /// Per measured step, each rank's pace: its compute that step over what its stages' fitted
    /// costs make of it, over the rank's mean across the steps (around 1). The machine's state
    /// moves a rank's actions together — one rank a tenth slow for a whole step while the other
    /// is not — and a step waits for its slower rank, which independent per-action deviations
    /// average away. A draw takes one measured step's paces, every rank's together, and scales
    /// each rank's compute by its own (a rank beyond the list, or an empty list: 1).
    pub pace: Vec<Vec<f64>>,
}

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
/// drawn varies (compute, gaps and transfers all unmeasured: stalls are drawn only into
/// transfers), when the order is too large for [`MIN_DRAWS`] within [`EVENT_BUDGET`], or when
/// `keep_going` says stop (it is called between draws with the fraction done).
///
/// Each draw varies every cost around what the simulation charges for it: a compute action's
/// compute by `1 +` a compute deviation, its overhead by a gap deviation (a scenario's
/// per-phase overhead stays its mean), a cross-rank transfer by a transfer deviation and two
/// stall deviations (its two ends); the rest stays.
pub fn expected(
    sim: &Simulation,
    jitter: &Jitter,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Expected> {
    if jitter.compute.is_empty() && jitter.gap_s.is_empty() && jitter.transfer_s.is_empty() {
        return None;
    }
    let order = &sim.derivation.order;
    let plan = &sim.derivation.plan;
    let graph = &order.graph;
    let nodes = graph.node_count().max(1);
    let draws = (EVENT_BUDGET / nodes).min(MAX_DRAWS);
    if draws < MIN_DRAWS {
        return None;
    }
    let (base, runtime) = durations_with_runtime(plan, order);
    // What each node draws: a compute action its compute (the rest of its duration stays); a
    // cross-rank transfer its deviations.
    enum Kind {
        Compute { compute: f64, rank: usize },
        Transfer,
        Fixed,
    }
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
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut steps = Vec::with_capacity(draws);
    let mut durations = base.clone();
    for k in 0..draws {
        if !keep_going(k as f32 / draws as f32) {
            return None;
        }
        let paces: &[f64] = match jitter.pace.len() {
            0 => &[],
            n => jitter
                .pace
                .get(rng.random_range(0..n))
                .map_or(&[], Vec::as_slice),
        };
        let mut deviation = |q: &Quantiles| q.deviation(rng.random::<f64>()).unwrap_or(0.0);
        for ((slot, kind), &mean) in durations.iter_mut().zip(&kinds).zip(&base) {
            *slot = match *kind {
                Kind::Compute { compute, rank } => {
                    let pace = paces.get(rank).copied().unwrap_or(1.0);
                    let factor = (pace * (1.0 + deviation(&jitter.compute))).max(0.0);
                    (mean + compute * (factor - 1.0) + deviation(&jitter.gap_s)).max(0.0)
                }
                Kind::Transfer => (mean
                    + deviation(&jitter.transfer_s)
                    + deviation(&jitter.stall_s)
                    + deviation(&jitter.stall_s))
                .max(0.0),
                Kind::Fixed => mean,
            };
        }
        // The draw's timeline hands its durations back for the next draw.
        let timeline = simulate(order, durations, options);
        steps.push(timeline.makespan);
        durations = timeline.durations;
    }
    steps.sort_by(f64::total_cmp);
    Some(Expected {
        median_s: quantile(&steps, 0.5)?,
        low_s: quantile(&steps, 0.1)?,
        high_s: quantile(&steps, 0.9)?,
        draws,
    })
}

/// The value at probability `u` (clamped to 0–1) of ascending `sorted`, between its points
/// linearly; `None` when it is empty.
fn quantile(sorted: &[f64], u: f64) -> Option<f64> {
    let at = u.clamp(0.0, 1.0) * sorted.len().checked_sub(1)? as f64;
    let lo = at.floor() as usize;
    let (a, b) = (sorted.get(lo)?, sorted.get(lo + 1).or(sorted.get(lo))?);
    Some(a + (b - a) * (at - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_read_back_what_they_were_made_of() {
        let q = Quantiles::of((0..=100).map(f64::from).collect());
        assert_eq!(q.points.len(), QUANTILE_POINTS);
        assert_eq!(q.mean, 50.0);
        assert_eq!(q.at(0.0), Some(0.0));
        assert_eq!(q.at(0.5), Some(50.0));
        assert_eq!(q.at(1.0), Some(100.0));
        assert_eq!(q.at(0.25), Some(25.0));
        assert_eq!(q.deviation(0.5), Some(0.0));
        assert_eq!(Quantiles::of(vec![f64::NAN; 40]).at(0.5), None);
        assert_eq!(Quantiles::of(vec![3.0; 32]).at(0.7), Some(3.0));
        // From fewer than 32 samples, nothing.
        assert!(Quantiles::of(vec![3.0; 31]).is_empty());
    }

    #[test]
    fn draws_keep_the_samples_mean_whatever_their_tail() {
        // 39 samples of 0.25 and one of 6: the curve alone would give the largest sample a
        // weight of 1/64 (a mean of 0.340); the draws' mean is the samples' (0.394).
        let mut samples = vec![0.25; 39];
        samples.push(6.0);
        let q = Quantiles::of(samples);
        assert!((q.mean - 0.39375).abs() < 1e-12);
        let n = 100_000;
        let drawn: f64 = (0..n)
            .map(|i| q.at((f64::from(i) + 0.5) / f64::from(n)).unwrap())
            .sum();
        assert!(
            (drawn / f64::from(n) - q.mean).abs() < 1e-6,
            "{}",
            drawn / f64::from(n)
        );
    }
}
