//! Owner maps that need the cost model: `greedy_slack` (the paper's greedy) and `optimized`
//! (deterministic local search on the simulated makespan). They run after the analytic
//! [`derive`], with the caller's simulation options.

use crate::algebra::plan::Plan;
use crate::graph::derive::{Derivation, DeriveError, derive, derive_plan};
use crate::graph::event::Event;
use crate::graph::order::{Order, OrderError};
use crate::scenario::Scenario;
use crate::scenario::owner::OwnerSpec;
use crate::sim::cost::{self, compute_time, unit_layers};
use crate::sim::encoder_free::{source_region, warmup_windows, without_source};
use crate::sim::engine::{SimOptions, simulate_launched};
use crate::tune::nested;
use crate::vocab::layout::Composition;
use crate::vocab::phase::Phase;

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

/// The makespan of `plan` as [`tune`] would run it: derived, its nested actions (if any) placed.
fn makespan(
    plan: &Plan,
    explicit: Option<&[Vec<String>]>,
    options: SimOptions,
) -> Result<f64, OrderError> {
    let mut derivation = derive_plan(plan.clone(), explicit).map_err(|e| match e {
        DeriveError::Order(e) => e,
        // The plan was checked before its owners were searched; its order is what can fail.
        DeriveError::Invalid(e) => OrderError::Explicit {
            path: e.field(),
            message: e.to_string(),
        },
    })?;
    if explicit.is_none() && nested::has_nested(plan) {
        // As the chosen map will be placed: within the placement's own budget.
        let mut work = nested::WORK_BUDGET;
        derivation = placed(derivation, options, &mut work, &mut |_| true);
    }
    let timed = cost::timed(plan, &derivation.order);
    Ok(simulate_launched(&derivation.order, timed.durations, &timed.launches, options).makespan)
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

/// Chooses what the analytic [`derive`] leaves to the cost model, simulating with `options`: the
/// owner map of a cost-based `owner` (`greedy_slack`, `optimized`; collectives and order are
/// re-derived for it; with hand-written orders, which name every action's rank, the provisional
/// round robin stays), then, when the scenario has nested regions and no hand-written orders,
/// where their actions run in real time ([`crate::tune::nested`]). Any other derivation is
/// returned as it is. The `optimized` search spends at most the scenario's `owner_budget`
/// simulations (default [`SEARCH_BUDGET`]). Progress goes to `keep_going` (0 to 1); when it
/// returns false the search stops at the best map found so far and the nested actions not yet
/// placed keep their logical places.
pub fn tune(
    scenario: &Scenario,
    derivation: Derivation,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Derivation, DeriveError> {
    let explicit = scenario.explicit_orders();
    let nested = explicit.is_none() && nested::has_nested(&derivation.plan);
    // Hand-written orders name the rank of every action: they fix the owners (the provisional
    // round robin `derive` checked them against), so there is nothing to search.
    let searches = scenario.owner.needs_costs()
        && explicit.is_none()
        && source_region(&derivation.plan).is_some();
    let derivation = if searches {
        let Derivation {
            mut plan, order, ..
        } = derivation;
        let budget = Budget {
            simulations: scenario.owner_budget.unwrap_or(SEARCH_BUDGET),
            options,
        };
        let share = if nested { 0.5 } else { 1.0 };
        choose(
            &mut plan,
            &order,
            &scenario.owner,
            explicit,
            budget,
            &mut |f| keep_going(share * f),
        )?;
        derive_plan(plan, explicit)?
    } else {
        derivation
    };
    // A schedule that orders by the stages' costs (the automatic zero-bubble scheduler).
    let derivation = if explicit.is_none() {
        let ordered = crate::tune::costed::ordered(derivation)?;
        // A fold's order, list-scheduled in units by `derive`, again with the stages' times.
        crate::tune::costed::listed_by_times(ordered, options)
    } else {
        derivation
    };
    if !nested {
        return Ok(derivation);
    }
    let start = if searches { 0.5 } else { 0.0 };
    let mut work = nested::WORK_BUDGET;
    Ok(placed(derivation, options, &mut work, &mut |f| {
        keep_going(start + (1.0 - start) * f)
    }))
}

/// `derivation` with its nested actions placed in real time ([`nested::place`]), spending at
/// most `work` event visits.
fn placed(
    mut derivation: Derivation,
    options: SimOptions,
    work: &mut usize,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Derivation {
    let durations = cost::durations(&derivation.plan, &derivation.order);
    derivation.order = nested::place(
        &derivation.plan,
        derivation.order,
        &durations,
        options,
        work,
        keep_going,
    );
    derivation
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
    let free = without_source(order, &durations, source);
    let encoder_free = simulate_launched(
        order,
        free,
        &cost::launches_without(plan, order, Some(source)),
        options,
    );
    let free = &encoder_free.durations;
    let is_nested = plan
        .region(source)
        .is_some_and(|r| r.skeleton.composition() == Some(Composition::Nested));
    let (windows, encode) = if is_nested {
        nested_windows(plan, order, &durations, free, encoder_free.makespan, source)
    } else {
        let encode = (0..plan.microbatches)
            .map(|m| compute_time(plan, unit_layers(plan, source, 0), m, Phase::Forward))
            .collect();
        (warmup_windows(plan, order, &encoder_free), encode)
    };
    plan.owner = greedy_slack(&windows, &encode);
    if *spec != OwnerSpec::Optimized {
        return Ok(());
    }
    optimize(plan, order, &encode, explicit, budget, keep_going)
}

/// `optimized`'s local search from the greedy map: move one microbatch at a time (heaviest
/// first) to the rank that lowers the simulated makespan most, then try swapping the owners of
/// two microbatches; repeat until a pass improves nothing or the budget is spent. Only strict
/// improvements are taken, so the result is deterministic and never worse than greedy_slack.
/// Bounded by count and by work: every candidate simulates the whole order.
fn optimize(
    plan: &mut Plan,
    order: &Order,
    encode: &[f64],
    explicit: Option<&[Vec<String>]>,
    budget: Budget,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<(), OrderError> {
    let options = budget.options;
    // A candidate with nested actions places them too, within the placement's budget.
    let per_candidate = if explicit.is_none() {
        nested::work(plan, order).min(nested::WORK_BUDGET)
    } else {
        0
    };
    let by_work = WORK_BUDGET
        / order
            .graph
            .node_count()
            .saturating_add(per_candidate)
            .max(1);
    let simulations = budget.simulations.min(by_work);
    // Not one candidate fits the work budget: greedy_slack's map stays, and nothing (not even the
    // start's makespan) is computed for a search that cannot run.
    if simulations == 0 {
        return Ok(());
    }
    let mut search = Search {
        best: makespan(plan, explicit, options)?,
        budget: simulations,
        total: simulations.max(1),
        explicit,
        options,
        keep_going,
    };
    let mbs = heaviest_first(encode);
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

/// What `greedy_slack` weighs for a nested encoder, whose work may go into any idle time (not
/// only the warmup window, as a transposed one's): each rank's idle time in the run without the
/// encoder (`makespan_free` less the rank's busy time in it), and each microbatch's whole
/// encoder work (forward and backward).
fn nested_windows(
    plan: &Plan,
    order: &Order,
    durations: &[f64],
    free: &[f64],
    makespan_free: f64,
    source: usize,
) -> (Vec<f64>, Vec<f64>) {
    let windows = (0..plan.ranks)
        .map(|r| {
            let busy: f64 = order
                .nodes
                .get(r)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|n| free.get(n.index()).copied().unwrap_or(0.0))
                .sum();
            (makespan_free - busy).max(0.0)
        })
        .collect();
    let mut encode = vec![0.0; plan.microbatches];
    for n in order.graph.node_indices() {
        if let Some(Event::Fwd { region, mb, .. } | Event::Bwd { region, mb, .. }) =
            order.graph.node_weight(n)
            && usize::from(*region) == source
            && let Some(e) = encode.get_mut(usize::from(*mb))
        {
            *e += durations.get(n.index()).copied().unwrap_or(0.0);
        }
    }
    (windows, encode)
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
