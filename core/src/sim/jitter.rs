//! The step a run spends on average when its costs vary (DESIGN.md §3.1): a simulation with
//! every cost at its mean is not the mean step. A step is a longest path, a maximum over the
//! paths that meet at every wait; a cost that varies lengthens that maximum on average however
//! its mean is kept (a rank that waits for two inputs waits for the later one). So the
//! expected step is estimated by simulating the same order many times, each cost drawn from
//! what a run measured ([`Jitter`]: each action's compute over its stage's mean, the gap before
//! an action, a transfer, the stalls at its two ends), and taking the median and the 10 % and
//! 90 % points of the steps. The draws come from a seeded generator: the same scenario and
//! jitter give the same figures.

use crate::graph::event::Event;
use crate::sim::cost::{action_overhead, durations_with_runtime, transfer_bytes};
use crate::sim::engine::{SimOptions, simulate};
use crate::sim::run::Simulation;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// An empirical distribution as its quantiles at evenly spaced probabilities, ascending (empty:
/// nothing measured, the cost stays at its mean). A draw reads the quantile function at a
/// uniform probability, between the stored points linearly.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Quantiles(pub Vec<f64>);

/// The fewest samples a distribution is kept from: with fewer, the cost stays at its mean (a
/// handful of transfers from one step — 5 to 9 on the seven-schedule runs — is not a
/// distribution).
pub const MIN_SAMPLES: usize = 32;

/// The points a distribution is kept at: 0 %, 1/32, …, 100 %.
pub const QUANTILE_POINTS: usize = 33;

impl Quantiles {
    /// The quantiles of `samples` (finite ones only) at [`QUANTILE_POINTS`] probabilities.
    pub fn of(mut samples: Vec<f64>) -> Quantiles {
        samples.retain(|x| x.is_finite());
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        if n < MIN_SAMPLES {
            return Quantiles::default();
        }
        let last = (QUANTILE_POINTS - 1) as f64;
        Quantiles(
            (0..QUANTILE_POINTS)
                .filter_map(|i| {
                    let at = i as f64 / last * (n - 1) as f64;
                    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
                    let (a, b) = (samples.get(lo)?, samples.get(hi)?);
                    Some(a + (b - a) * (at - lo as f64))
                })
                .collect(),
        )
    }

    /// The value at probability `u` (0 to 1); `None` when nothing was measured.
    pub fn at(&self, u: f64) -> Option<f64> {
        let n = self.0.len();
        let at = u.clamp(0.0, 1.0) * n.checked_sub(1)? as f64;
        let lo = at.floor() as usize;
        let (a, b) = (self.0.get(lo)?, self.0.get(lo + 1).or(self.0.get(lo))?);
        Some(a + (b - a) * (at - lo as f64))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How a run's costs varied, as `compare-trace` measured them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Jitter {
    /// Each compute action's compute over its stage and phase's mean (around 1): multiplies an
    /// action's compute.
    pub compute: Quantiles,
    /// The gap before an action whose input was on its rank (the runtime's own work): replaces
    /// the per-action overhead.
    pub gap_s: Quantiles,
    /// A transfer's time whose consumer waited for it: replaces `α` (the scenario's `β·n` stays).
    pub transfer_s: Quantiles,
    /// A send's or receive's thread time beyond the median one (a stall in the call): added to
    /// a transfer once per end.
    pub stall_s: Quantiles,
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

/// The most draws; fewer on a large order, so that the draws together simulate at most
/// [`EVENT_BUDGET`] events (a step of a million events takes 20 draws).
pub const MAX_DRAWS: usize = 200;
/// Events the draws of one expected step simulate at most, together.
pub const EVENT_BUDGET: usize = 20_000_000;
/// The fewest draws: below this a median is not worth giving.
pub const MIN_DRAWS: usize = 8;
/// The generator's seed: the same scenario and jitter give the same figures.
const SEED: u64 = 0x006d_7069_7065;

/// The expected step of `sim` under `jitter`, from seeded draws; `None` when nothing varies
/// (every distribution empty), or when `keep_going` says stop (it is called between draws with
/// the fraction done).
pub fn expected(
    sim: &Simulation,
    jitter: &Jitter,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Expected> {
    if jitter.compute.is_empty()
        && jitter.gap_s.is_empty()
        && jitter.transfer_s.is_empty()
        && jitter.stall_s.is_empty()
    {
        return None;
    }
    let order = &sim.derivation.order;
    let plan = &sim.derivation.plan;
    let graph = &order.graph;
    let nodes = graph.node_count().max(1);
    let draws = (EVENT_BUDGET / nodes).clamp(MIN_DRAWS, MAX_DRAWS);
    let (base, runtime) = durations_with_runtime(plan, order);
    let alpha = plan.hardware.link_alpha_s.unwrap_or(0.0);
    // What each node draws: a compute action its compute, overhead and the rest of its runtime
    // share; a cross-rank transfer its time beyond `α`.
    enum Kind {
        Compute {
            compute: f64,
            rest: f64,
            overhead: f64,
        },
        Transfer {
            beyond_alpha: f64,
        },
        Fixed,
    }
    let kinds: Vec<Kind> = graph
        .node_indices()
        .map(|n| {
            let i = n.index();
            let (d, r) = (
                base.get(i).copied().unwrap_or(0.0),
                runtime.get(i).copied().unwrap_or(0.0),
            );
            match graph.node_weight(n) {
                Some(e) if e.is_compute() => {
                    let overhead = Event::action(e).map_or(0.0, |a| action_overhead(plan, a.phase));
                    Kind::Compute {
                        compute: (d - r).max(0.0),
                        rest: (r - overhead).max(0.0),
                        overhead,
                    }
                }
                Some(_) if transfer_bytes(plan, graph, n).is_some() => Kind::Transfer {
                    beyond_alpha: (d - alpha).max(0.0),
                },
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
        let mut draw = |q: &Quantiles| q.at(rng.random::<f64>());
        for ((slot, kind), &fixed) in durations.iter_mut().zip(&kinds).zip(&base) {
            *slot = match *kind {
                Kind::Compute {
                    compute,
                    rest,
                    overhead,
                } => {
                    let factor = draw(&jitter.compute).unwrap_or(1.0).max(0.0);
                    compute * factor + rest + draw(&jitter.gap_s).unwrap_or(overhead).max(0.0)
                }
                Kind::Transfer { beyond_alpha } => match draw(&jitter.transfer_s) {
                    Some(t) => {
                        let stalls = draw(&jitter.stall_s).unwrap_or(0.0)
                            + draw(&jitter.stall_s).unwrap_or(0.0);
                        (beyond_alpha + t + stalls).max(0.0)
                    }
                    None => fixed,
                },
                Kind::Fixed => fixed,
            };
        }
        steps.push(simulate(order, &durations, options).makespan);
    }
    steps.sort_by(f64::total_cmp);
    let at = |p: f64| Quantiles(steps.clone()).at(p);
    Some(Expected {
        median_s: at(0.5)?,
        low_s: at(0.1)?,
        high_s: at(0.9)?,
        draws,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_read_back_what_they_were_made_of() {
        let q = Quantiles::of((0..=100).map(f64::from).collect());
        assert_eq!(q.0.len(), QUANTILE_POINTS);
        assert_eq!(q.at(0.0), Some(0.0));
        assert_eq!(q.at(0.5), Some(50.0));
        assert_eq!(q.at(1.0), Some(100.0));
        assert_eq!(q.at(0.25), Some(25.0));
        assert_eq!(Quantiles::of(vec![f64::NAN; 40]).at(0.5), None);
        assert_eq!(Quantiles::of(vec![3.0; 32]).at(0.7), Some(3.0));
        // From fewer than 32 samples, nothing.
        assert!(Quantiles::of(vec![3.0; 31]).is_empty());
    }
}
