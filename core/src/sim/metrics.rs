//! What users read off a timeline: makespan, bubble fraction, utilisation; per rank busy and idle
//! time, the bubble split into warmup / steady / cooldown / exposed communication, and for a
//! transposed encoder the paper's warmup window `w_r`, owned encoder work `E_r`, analytic spill
//! `max(0, E_r − w_r)` next to the simulated extra time.

use crate::algebra::plan::Plan;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::Timeline;
use crate::vocab::layout::Layout;
use petgraph::graph::NodeIndex;
use serde::Serialize;

/// Idle time of one rank by where it falls.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct BubbleSplit {
    /// Idle before the rank's first wavefront (backbone) forward.
    pub warmup_s: f64,
    /// Idle between the first wavefront forward and the last wavefront backward.
    pub steady_s: f64,
    /// Idle after the last wavefront backward.
    pub cooldown_s: f64,
    /// Time spent waiting on a transfer that is still in flight, plus the rank's own reduces.
    pub comm_s: f64,
    /// Time the device waited inside its actions for its host to launch their work
    /// ([`crate::sim::run::Simulation::host_wait_s`]; written only where there is some).
    #[serde(skip_serializing_if = "crate::vocab::units::is_zero")]
    pub host_s: f64,
}

/// Metrics of one rank.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RankMetrics {
    pub rank: usize,
    /// Forward and backward compute.
    pub busy_s: f64,
    /// `makespan − busy`.
    pub idle_s: f64,
    /// The paper's `bub(r) = T − Σ cost(e)` over the rank's compute: equal to `idle_s`.
    pub bubble_s: f64,
    pub bubble: BubbleSplit,
    /// Transposed encoder only: `w_r`, the idle time before the first backbone forward of the
    /// same schedule with the encoder removed.
    pub warmup_window_s: Option<f64>,
    /// `E_r`: forward work of the encoder microbatches this rank owns.
    pub encoder_work_s: Option<f64>,
    /// `spill_r = max(0, E_r − w_r)`, the paper's analytic spill.
    pub spill_s: Option<f64>,
    /// How much later this rank's first backbone forward starts than without the encoder.
    pub simulated_extra_s: Option<f64>,
    pub peak_memory_bytes: f64,
    pub over_capacity: bool,
    /// Seconds of the collectives inside its stage (tensor-, expert-, context-parallel), over
    /// its compute actions.
    pub stage_comm_s: f64,
    /// Of those, the seconds hidden under compute.
    pub hidden_comm_s: f64,
    /// Hidden over all of its stage's collectives (OctoPipe's overlap rate); `None` without
    /// any.
    pub overlap_rate: Option<f64>,
}

/// Hidden over all (0 to 1), `None` when there is nothing to hide.
pub fn overlap_rate(all_s: f64, hidden_s: f64) -> Option<f64> {
    (all_s > 0.0).then(|| (hidden_s / all_s).clamp(0.0, 1.0))
}

/// Whether an event belongs to the wavefront (a Sharded region).
fn in_wavefront(plan: &Plan, event: &Event) -> bool {
    match event.region() {
        Some(region) if event.is_compute() => plan
            .region(region.into())
            .is_some_and(|r| r.layout() == Layout::Sharded),
        _ => false,
    }
}

/// A forward: `F`, or a second-order energy forward `FE` (what starts a microbatch).
pub fn is_forward(event: &Event) -> bool {
    matches!(
        event,
        Event::Fwd { .. }
            | Event::FourPhase {
                phase: crate::vocab::phase::Phase::EnergyForward,
                ..
            }
    )
}

/// `[first wavefront forward start, last wavefront event end]` of a rank, if it runs any.
pub fn wavefront_span(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    rank: usize,
) -> Option<(f64, f64)> {
    let g = &order.graph;
    let nodes = order.nodes.get(rank)?;
    let first = nodes.iter().find(|&&n| {
        g.node_weight(n)
            .is_some_and(|e| is_forward(e) && in_wavefront(plan, e))
    })?;
    let last = nodes
        .iter()
        .rev()
        .find(|&&n| g.node_weight(n).is_some_and(|e| in_wavefront(plan, e)))?;
    Some((timeline.start_of(*first)?, timeline.end_of(*last)?))
}

/// Where an idle gap of a rank's compute stream falls.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GapKind {
    /// Before the rank's first wavefront (backbone) forward.
    Warmup,
    /// Between the first wavefront forward and the last wavefront event.
    Steady,
    /// After the last wavefront event.
    Cooldown,
    /// Waiting on a transfer into the next event that is still in flight.
    Transfer,
}

/// One idle stretch of a rank's compute stream.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    pub start_s: f64,
    pub end_s: f64,
    pub kind: GapKind,
}

/// The idle stretch `[from, to)` classified by where it falls against the wavefront span
/// `[w0, w1]`; `None` when it is empty.
fn classify(from: f64, to: f64, (w0, w1): (f64, f64)) -> Option<Gap> {
    if to - from <= 0.0 {
        return None;
    }
    let kind = if to <= w0 {
        GapKind::Warmup
    } else if from >= w1 {
        GapKind::Cooldown
    } else {
        GapKind::Steady
    };
    Some(Gap {
        start_s: from,
        end_s: to,
        kind,
    })
}

/// One step of a walk along a rank's compute stream.
enum Stretch {
    /// An idle stretch, with its length (computed once, so that sums over it are exact).
    Idle(Gap, f64),
    /// An event running from `start` to `end`.
    Event(NodeIndex, f64, f64),
}

/// Walks one rank's compute stream in order, calling `visit` for every idle stretch and every
/// event. The wait before an event whose start a transfer (or an offload's copy back) bound is
/// split: the part while it is in flight is [`GapKind::Transfer`], the rest is classified by where it falls.
fn walk(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    rank: usize,
    mut visit: impl FnMut(Stretch),
) {
    let g = &order.graph;
    let span = wavefront_span(plan, order, timeline, rank).unwrap_or((0.0, timeline.makespan));
    let mut prev_end = 0.0f64;
    for &n in order.nodes.get(rank).map_or(&[][..], Vec::as_slice) {
        let Some((start, end)) = timeline.span_of(n) else {
            continue;
        };
        if start > prev_end {
            // The part of the wait during which a transfer into this event was in flight.
            let mut comm = 0.0;
            if let Some(b) = timeline.binder_of(order, n)
                && matches!(
                    g.node_weight(b),
                    Some(Event::Coll { .. } | Event::Copy { .. })
                )
                && let Some((b_start, b_end)) = timeline.span_of(b)
            {
                comm = (b_end - b_start.max(prev_end)).clamp(0.0, start - prev_end);
            }
            if comm > 0.0 {
                let wait = Gap {
                    start_s: start - comm,
                    end_s: start,
                    kind: GapKind::Transfer,
                };
                visit(Stretch::Idle(wait, comm));
            }
            if let Some(gap) = classify(prev_end, start - comm, span) {
                visit(Stretch::Idle(gap, gap.end_s - gap.start_s));
            }
        }
        visit(Stretch::Event(n, start, end));
        prev_end = prev_end.max(end);
    }
    if let Some(gap) = classify(prev_end, timeline.makespan, span) {
        visit(Stretch::Idle(gap, gap.end_s - gap.start_s));
    }
}

/// The idle stretches of one rank's compute stream, in time order.
pub fn idle_gaps(plan: &Plan, order: &Order, timeline: &Timeline, rank: usize) -> Vec<Gap> {
    let mut gaps = Vec::new();
    walk(plan, order, timeline, rank, |s| {
        if let Stretch::Idle(gap, _) = s {
            gaps.push(gap);
        }
    });
    gaps.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    gaps
}

/// Busy time and the bubble split of one rank; of each compute event's span, what the device
/// waited for its host (`host_wait`, by node index; empty: none) is not busy but the host's.
pub fn rank_time(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    host_wait: &[f64],
    rank: usize,
) -> (f64, BubbleSplit) {
    let g = &order.graph;
    let mut split = BubbleSplit::default();
    let mut busy = 0.0;
    walk(plan, order, timeline, rank, |s| match s {
        Stretch::Idle(gap, length) => match gap.kind {
            GapKind::Warmup => split.warmup_s += length,
            GapKind::Steady => split.steady_s += length,
            GapKind::Cooldown => split.cooldown_s += length,
            GapKind::Transfer => split.comm_s += length,
        },
        Stretch::Event(n, start, end) => match g.node_weight(n) {
            Some(e) if e.is_compute() => {
                let wait = host_wait.get(n.index()).copied().unwrap_or(0.0);
                busy += end - start - wait;
                split.host_s += wait;
            }
            Some(Event::DpReduce { .. }) => split.comm_s += end - start,
            _ => {}
        },
    });
    (busy, split)
}
