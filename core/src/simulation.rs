//! One call from a scenario to everything the simulator reports: the derivation, durations, the
//! timeline, per-rank metrics (with the transposed encoder's `w_r`, `E_r` and spill), memory
//! curves and the critical path.

use crate::cost;
use crate::derive::{Derivation, DeriveError, derive};
use crate::event::Event;
use crate::memory::{self, MemoryCurve};
use crate::metrics::{self, RankMetrics};
use crate::owner_policy::{source_region, warmup_windows, without_source};
use crate::scenario::Scenario;
use crate::simulate::{SimOptions, Timeline, critical_path, simulate};
use petgraph::graph::NodeIndex;

/// A simulated scenario.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub derivation: Derivation,
    /// Duration of every node, by node index.
    pub durations: Vec<f64>,
    pub timeline: Timeline,
    pub makespan_s: f64,
    /// `Σ bubble_r / (P · makespan)`.
    pub bubble_fraction: f64,
    /// `Σ busy_r / (P · makespan)`.
    pub utilisation: f64,
    /// With a transposed encoder: the makespan of the same schedule with the encoder removed.
    pub encoder_free_makespan_s: Option<f64>,
    pub ranks: Vec<RankMetrics>,
    pub memory: Vec<MemoryCurve>,
    pub critical_path: Vec<NodeIndex>,
    /// How long each event (by node index) could start later without delaying the step.
    pub slack: Vec<f64>,
}

/// Derives and simulates a scenario.
pub fn simulate_scenario(
    scenario: &Scenario,
    options: SimOptions,
) -> Result<Simulation, DeriveError> {
    Ok(run(derive(scenario)?, options))
}

/// Simulates a derivation.
pub fn run(derivation: Derivation, options: SimOptions) -> Simulation {
    let plan = &derivation.plan;
    let order = &derivation.order;
    let durations = cost::durations(plan, &order.graph);
    let timeline = simulate(order, &durations, options);
    let makespan = timeline.makespan;
    let memory = memory::memory(plan, order, &timeline);

    let source = source_region(plan);
    let (windows, encoder_free_makespan_s) = match source {
        Some(s) => {
            let free = simulate(order, &without_source(order, &durations, s), options);
            (
                Some(warmup_windows(plan, order, &free)),
                Some(free.makespan),
            )
        }
        None => (None, None),
    };

    let ranks: Vec<RankMetrics> = (0..plan.ranks)
        .map(|rank| {
            let (busy, bubble) = metrics::rank_time(plan, order, &timeline, rank);
            let idle = makespan - busy;
            let window = windows.as_ref().and_then(|w| w.get(rank).copied());
            let encoder_work = source.map(|s| {
                order.nodes.get(rank).map_or(0.0, |ns| {
                    ns.iter()
                        .filter(|&&n| matches!(order.graph.node_weight(n), Some(Event::Fwd { region, .. }) if *region == s))
                        .map(|&n| durations.get(n.index()).copied().unwrap_or(0.0))
                        .sum()
                })
            });
            let first_backbone = metrics::wavefront_span(plan, order, &timeline, rank).map(|(s, _)| s);
            let curve = memory.get(rank);
            RankMetrics {
                rank,
                busy_s: busy,
                idle_s: idle,
                bubble_s: idle,
                bubble,
                warmup_window_s: window,
                encoder_work_s: encoder_work,
                spill_s: window.zip(encoder_work).map(|(w, e)| (e - w).max(0.0)),
                simulated_extra_s: window.zip(first_backbone).map(|(w, s)| s - w),
                peak_memory_bytes: curve.map_or(0.0, |c| c.peak_bytes),
                over_capacity: curve.is_some_and(|c| c.over_capacity),
            }
        })
        .collect();
    let p = plan.ranks as f64;
    let total = p * makespan;
    let busy: f64 = ranks.iter().map(|r| r.busy_s).sum();
    let (bubble_fraction, utilisation) = if total > 0.0 {
        ((total - busy) / total, busy / total)
    } else {
        (0.0, 0.0)
    };
    let critical_path = critical_path(order, &timeline);
    let slack = crate::simulate::slack(order, &timeline);
    Simulation {
        durations,
        makespan_s: makespan,
        bubble_fraction,
        utilisation,
        encoder_free_makespan_s,
        ranks,
        memory,
        critical_path,
        slack,
        timeline,
        derivation,
    }
}
