//! Owner maps that need the cost model: `greedy_slack` (the paper's greedy) and `optimized`
//! (deterministic local search on the simulated makespan). They run after the analytic
//! [`derive`], with the caller's simulation options.

use crate::algebra::derive::{Derivation, DeriveError, derive, derive_plan};
use crate::algebra::owner::OwnerSpec;
use crate::algebra::plan::Plan;
use crate::graph::build;
use crate::graph::event::Phase;
use crate::graph::order::{Order, OrderError};
use crate::scenario::Scenario;
use crate::sim::cost::{self, compute_time, unit_layers};
use crate::sim::encoder_free::{source_region, warmup_windows, without_source};
use crate::sim::engine::{SimOptions, simulate};

/// Microbatches by encode time, heaviest first (ties: lower microbatch).
fn heaviest_first(encode: &[f64]) -> Vec<usize> {
    let mut mbs: Vec<usize> = (0..encode.len()).collect();
    mbs.sort_by(|&a, &b| {
        encode
            .get(b)
            .unwrap_or(&0.0)
            .total_cmp(encode.get(a).unwrap_or(&0.0))
            .then(a.cmp(&b))
    });
    mbs
}

/// The paper's greedy: encodes heaviest first (ties: lower microbatch), each to the rank with the
/// most remaining slack `w_r − E_r` (ties: lower rank).
pub fn greedy_slack(windows: &[f64], encode: &[f64]) -> Vec<usize> {
    let mut slack: Vec<f64> = windows.to_vec();
    let mut owner = vec![0; encode.len()];
    for m in heaviest_first(encode) {
        let best = slack
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or(0, |(r, _)| r);
        if let (Some(o), Some(s)) = (owner.get_mut(m), slack.get_mut(best)) {
            *o = best;
            *s -= encode.get(m).copied().unwrap_or(0.0);
        }
    }
    owner
}

fn makespan(
    plan: &Plan,
    explicit: Option<&[Vec<String>]>,
    options: SimOptions,
) -> Result<f64, OrderError> {
    let order = build::build(
        plan,
        &crate::algebra::collectives::collectives(plan),
        explicit,
    )?;
    let durations = cost::durations(plan, &order);
    Ok(simulate(&order, &durations, options).makespan)
}

/// How many candidate owner maps `optimized` simulates by default (`owner_budget` sets it).
pub const SEARCH_BUDGET: usize = 400;

/// How many events `optimized` may simulate in all (about fifteen seconds on one core): a large
/// scenario gets fewer candidates, so the search is bounded in time as well as in count.
pub const WORK_BUDGET: usize = 50_000_000;

/// What the `optimized` search may spend, and how it simulates.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Candidate owner maps to simulate at most.
    pub simulations: usize,
    pub options: SimOptions,
}

/// [`derive`], then [`tune`]: the derivation with the owner map the scenario asks for, chosen by
/// simulating with `options` (the caller's: `--serialize-links` reaches the search). Progress
/// of the `optimized` search goes to `keep_going` (0 to 1); when it returns false the search
/// stops at the best map found so far.
pub fn derive_tuned(
    scenario: &Scenario,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Derivation, DeriveError> {
    tune(scenario, derive(scenario)?, options, keep_going)
}

/// Replaces the provisional owner map of a cost-based `owner` (`greedy_slack`, `optimized`) in
/// `derivation` by the one the cost model chooses, simulating with `options`, and re-derives
/// collectives and order for it; any other derivation is returned as it is. The `optimized`
/// search spends at most the scenario's `owner_budget` simulations (default [`SEARCH_BUDGET`]).
pub fn tune(
    scenario: &Scenario,
    derivation: Derivation,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Derivation, DeriveError> {
    if !scenario.owner.needs_costs() || source_region(&derivation.plan).is_none() {
        return Ok(derivation);
    }
    let Derivation {
        mut plan, order, ..
    } = derivation;
    let explicit = scenario.orders.as_deref();
    let budget = Budget {
        simulations: scenario.owner_budget.unwrap_or(SEARCH_BUDGET),
        options,
    };
    choose(
        &mut plan,
        &order,
        &scenario.owner,
        explicit,
        budget,
        keep_going,
    )?;
    derive_plan(plan, explicit)
}

/// Replaces `plan.owner` by the map `spec` asks for (only cost-based specs change anything);
/// `order` is the plan's order with its provisional map. The `optimized` search reports its
/// progress to `keep_going` and stops, keeping the best map so far, when that returns false.
fn choose(
    plan: &mut Plan,
    order: &Order,
    spec: &OwnerSpec,
    explicit: Option<&[Vec<String>]>,
    budget: Budget,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<(), OrderError> {
    let options = budget.options;
    if !spec.needs_costs() {
        return Ok(());
    }
    let Some(source) = source_region(plan) else {
        return Ok(());
    };
    let durations = cost::durations(plan, order);
    let encoder_free = simulate(order, &without_source(order, &durations, source), options);
    let windows = warmup_windows(plan, order, &encoder_free);
    let encode: Vec<f64> = (0..plan.microbatches)
        .map(|m| compute_time(plan, unit_layers(plan, source, 0), m, Phase::Forward))
        .collect();
    plan.owner = greedy_slack(&windows, &encode);
    if *spec != OwnerSpec::Optimized {
        return Ok(());
    }
    // Local search: move one microbatch at a time (heaviest first) to the rank that lowers the
    // simulated makespan most, then try swapping the owners of two microbatches; repeat until a
    // pass improves nothing or the budget is spent. Only strict improvements are taken, so the
    // result is deterministic and never worse than greedy_slack.
    // Bounded by count and by work: every candidate simulates the whole order.
    let by_work = WORK_BUDGET / order.graph.node_count().max(1);
    let simulations = budget.simulations.min(by_work);
    let mut search = Search {
        best: makespan(plan, explicit, options)?,
        budget: simulations,
        total: simulations.max(1),
        explicit,
        options,
        keep_going,
    };
    let mbs = heaviest_first(&encode);
    loop {
        let mut improved = false;
        for &m in &mbs {
            for rank in 0..plan.ranks {
                // A spent budget ends the search at once (no candidate is built for nothing).
                if search.budget == 0 {
                    return Ok(());
                }
                if rank == plan.owner_of(m) {
                    continue;
                }
                let mut candidate = plan.owner.clone();
                if let Some(o) = candidate.get_mut(m) {
                    *o = rank;
                }
                improved |= search.try_owner(plan, candidate)?;
            }
        }
        for (i, &a) in mbs.iter().enumerate() {
            for &b in mbs.iter().skip(i + 1) {
                if search.budget == 0 {
                    return Ok(());
                }
                if plan.owner_of(a) == plan.owner_of(b) {
                    continue;
                }
                let mut candidate = plan.owner.clone();
                candidate.swap(a, b);
                improved |= search.try_owner(plan, candidate)?;
            }
        }
        if !improved || search.budget == 0 {
            return Ok(());
        }
    }
}

/// The state of the `optimized` local search.
struct Search<'a> {
    best: f64,
    /// Simulations left, of `total`.
    budget: usize,
    total: usize,
    explicit: Option<&'a [Vec<String>]>,
    options: SimOptions,
    keep_going: &'a mut dyn FnMut(f32) -> bool,
}

impl Search<'_> {
    /// Keeps `candidate` as the owner map when it strictly lowers the makespan.
    fn try_owner(&mut self, plan: &mut Plan, candidate: Vec<usize>) -> Result<bool, OrderError> {
        if self.budget == 0 {
            return Ok(false);
        }
        let done = (self.total - self.budget) as f32 / self.total as f32;
        if !(self.keep_going)(done) {
            // Stopped: the best map so far stands.
            self.budget = 0;
            return Ok(false);
        }
        self.budget -= 1;
        let previous = std::mem::replace(&mut plan.owner, candidate);
        let t = makespan(plan, self.explicit, self.options)?;
        if t < self.best {
            self.best = t;
            Ok(true)
        } else {
            plan.owner = previous;
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_gives_heavy_encodes_to_long_windows() {
        // Windows 0, 1, 2, 3; encodes 3.0, 0.5, 2.0, 1.0: 3.0 → rank 3, 2.0 → rank 2, 1.0 →
        // rank 1 (each leaving slack 0), then 0.5 → rank 0 (every slack is 0; ties → lower rank).
        assert_eq!(
            greedy_slack(&[0.0, 1.0, 2.0, 3.0], &[3.0, 0.5, 2.0, 1.0]),
            [3, 0, 2, 1]
        );
        assert_eq!(greedy_slack(&[0.0, 10.0], &[1.0, 1.0, 1.0]), [1, 1, 1]);
    }
}
