//! One call from a derivation to everything the simulator reports: durations, the timeline,
//! per-rank metrics (with the transposed encoder's `w_r`, `E_r` and spill), memory curves and the
//! critical path. From a scenario (with its owner map tuned first): [`crate::tune::pipeline`].

use crate::graph::derive::Derivation;
use crate::graph::event::Event;
use crate::graph::time::Launches;
use crate::graph::time::Timeline;
use crate::sim::cost;
use crate::sim::encoder_free::{source_region, spills, warmup_windows, without_source};
use crate::sim::engine::{SimOptions, critical_path, simulate_launched};
use crate::sim::memory::{self, MemoryCurve};
use crate::sim::metrics::{self, RankMetrics};
use petgraph::graph::NodeIndex;
use std::convert::Infallible;

/// A simulated scenario.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub derivation: Derivation,
    /// Of each node's duration, the runtime's own share (per-action overhead, posting, a
    /// switch): what a measured action's compute does not hold. Empty when the runtime adds to
    /// no node (every node reads 0).
    pub runtime_s: Vec<f64>,
    /// When each rank's host launched each action ([`cost::launches`]; empty without a host
    /// model), and of each node's duration the time its device waited inside it for the launch
    /// to end (empty when the host held no node back): the host's share, which a measured
    /// action's compute does not hold either.
    pub launches: Launches,
    pub host_wait_s: Vec<f64>,
    /// Of each node, its stage's collectives (tensor-, expert-, context-parallel) and the part
    /// exposed, which its duration holds.
    pub stage_comm: crate::sim::stage_comm::StageComm,
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
}

impl Simulation {
    /// Duration of every node, by node index (the timeline's).
    pub fn durations(&self) -> &[f64] {
        &self.timeline.durations
    }

    /// How long each event (by node index) could start later without delaying the step (0 on
    /// the critical path): a backward pass over the order, computed when a view asks for it.
    pub fn slack(&self) -> Vec<f64> {
        crate::sim::engine::slack_held(&self.derivation.order, &self.timeline, &self.host_wait_s)
    }

    /// Of node `n`'s duration (by node index), what is not its work: the runtime's own share
    /// ([`Simulation::runtime_s`]) and its wait for its host's launch
    /// ([`Simulation::host_wait_s`]).
    pub fn not_work_s(&self, n: usize) -> f64 {
        self.runtime_s.get(n).copied().unwrap_or(0.0)
            + self.host_wait_s.get(n).copied().unwrap_or(0.0)
    }

    /// The highest rank's peak memory.
    pub fn peak_memory_bytes(&self) -> f64 {
        self.memory.iter().map(|c| c.peak_bytes).fold(0.0, f64::max)
    }
}

/// Simulates a derivation.
pub fn run(derivation: Derivation, options: SimOptions) -> Simulation {
    let Ok(sim) = run_passes(derivation, options, |_| Ok::<(), Infallible>(()));
    sim
}

/// [`run`], asking `keep_going` between passes; `None` when it said stop.
pub fn run_cancellable(
    derivation: Derivation,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Simulation> {
    run_passes(derivation, options, |f| {
        if keep_going(f) { Ok(()) } else { Err(()) }
    })
    .ok()
}

/// The simulation, calling `pass` with the fraction done between its passes and stopping with
/// the error `pass` returns.
fn run_passes<E>(
    derivation: Derivation,
    options: SimOptions,
    mut pass: impl FnMut(f32) -> Result<(), E>,
) -> Result<Simulation, E> {
    let plan = &derivation.plan;
    let order = &derivation.order;
    pass(0.3)?;
    let cost::Timed {
        durations,
        runtime_s,
        comm: stage_comm,
        launches,
    } = cost::timed(plan, order);
    let source = source_region(plan);
    // The durations as the cost model gives them, kept only where the host may stretch some.
    let work = (!launches.is_empty()).then(|| durations.clone());
    let timeline = simulate_launched(order, durations, &launches, options);
    let host_wait_s: Vec<f64> = match &work {
        Some(work) if timeline.durations.iter().zip(work).any(|(d, w)| d > w) => timeline
            .durations
            .iter()
            .zip(work)
            .map(|(d, w)| (d - w).max(0.0))
            .collect(),
        _ => Vec::new(),
    };
    let durations = &timeline.durations;
    let makespan = timeline.makespan;
    pass(0.5)?;
    let memory = memory::memory(plan, order, &timeline);
    pass(0.6)?;

    let spills = spills(plan);
    let (windows, encoder_free_makespan_s) = match source {
        Some(s) => {
            let free = simulate_launched(
                order,
                without_source(order, work.as_deref().unwrap_or(durations), s),
                &cost::launches_without(plan, order, Some(s)),
                options,
            );
            (
                Some(warmup_windows(plan, order, &free)),
                Some(free.makespan),
            )
        }
        None => (None, None),
    };

    pass(0.75)?;
    let ranks: Vec<RankMetrics> = (0..plan.ranks)
        .map(|rank| {
            let (busy, bubble) = metrics::rank_time(plan, order, &timeline, &host_wait_s, rank);
            let idle = makespan - busy;
            let window = windows.as_ref().and_then(|w| w.get(rank).copied());
            let encoder_work = source.map(|s| {
                order.nodes.get(rank).map_or(0.0, |ns| {
                    ns.iter()
                        .filter(|&&n| matches!(order.graph.node_weight(n), Some(Event::Fwd { region, .. }) if *region == s.into()))
                        .map(|&n| durations.get(n.index()).copied().unwrap_or(0.0))
                        // `+ 0.0`: an empty sum of f64 is −0.0, which printed as `-0.000 s`
                        // for a rank that owns no encodes.
                        .sum::<f64>()
                        + 0.0
                })
            });
            let first_backbone = metrics::wavefront_span(plan, order, &timeline, rank).map(|(s, _)| s);
            let curve = memory.get(rank);
            let (comm, exposed) = order.nodes.get(rank).map_or((0.0, 0.0), |ns| {
                ns.iter().map(|n| stage_comm.of(n.index())).fold((0.0, 0.0), |(c, e), (dc, de)| (c + dc, e + de))
            });
            RankMetrics {
                stage_comm_s: comm,
                hidden_comm_s: comm - exposed,
                overlap_rate: metrics::overlap_rate(comm, comm - exposed),
                rank,
                busy_s: busy,
                idle_s: idle,
                bubble_s: idle,
                bubble,
                warmup_window_s: window,
                encoder_work_s: encoder_work,
                spill_s: window
                    .zip(encoder_work)
                    .filter(|_| spills)
                    .map(|(w, e)| (e - w).max(0.0)),
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
    pass(0.85)?;
    let critical_path = critical_path(order, &timeline);
    pass(1.0)?;
    Ok(Simulation {
        runtime_s,
        launches,
        host_wait_s,
        stage_comm,
        makespan_s: makespan,
        bubble_fraction,
        utilisation,
        encoder_free_makespan_s,
        ranks,
        memory,
        critical_path,
        timeline,
        derivation,
    })
}
