//! What users read off a timeline: makespan, bubble fraction, utilisation; per rank busy and idle
//! time, the bubble split into warmup / steady / cooldown / exposed communication, and for a
//! transposed encoder the paper's warmup window `w_r`, owned encoder work `E_r`, analytic spill
//! `max(0, E_r − w_r)` next to the simulated extra time.

use crate::event::Event;
use crate::order::Order;
use crate::plan::Plan;
use crate::simulate::Timeline;
use crate::skeleton::Layout;
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
}

/// Whether an event belongs to the wavefront (a Sharded region).
fn in_wavefront(plan: &Plan, event: &Event) -> bool {
    match *event {
        Event::Fwd { region, .. } | Event::Bwd { region, .. } => plan
            .region(region)
            .is_some_and(|r| r.layout() == Layout::Sharded),
        _ => false,
    }
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
            .is_some_and(|e| matches!(e, Event::Fwd { .. }) && in_wavefront(plan, e))
    })?;
    let last = nodes
        .iter()
        .rev()
        .find(|&&n| g.node_weight(n).is_some_and(|e| in_wavefront(plan, e)))?;
    Some((timeline.start_of(*first), timeline.end_of(*last)))
}

/// Busy time and the bubble split of one rank.
pub fn rank_time(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    rank: usize,
) -> (f64, BubbleSplit) {
    let g = &order.graph;
    let (w0, w1) = wavefront_span(plan, order, timeline, rank).unwrap_or((0.0, timeline.makespan));
    let mut split = BubbleSplit::default();
    let mut busy = 0.0;
    let mut prev_end = 0.0f64;
    let classify = |split: &mut BubbleSplit, from: f64, to: f64| {
        let gap = to - from;
        if gap <= 0.0 {
            return;
        }
        if to <= w0 {
            split.warmup_s += gap;
        } else if from >= w1 {
            split.cooldown_s += gap;
        } else {
            split.steady_s += gap;
        }
    };
    for &n in order.nodes.get(rank).map_or(&[][..], Vec::as_slice) {
        let (start, end) = (timeline.start_of(n), timeline.end_of(n));
        if start > prev_end {
            // The part of the wait during which a transfer into this event was in flight.
            let mut comm = 0.0;
            if let Some(b) = timeline.binder.get(n.index()).copied().flatten()
                && matches!(g.node_weight(b), Some(Event::Coll { .. }))
            {
                comm = (timeline.end_of(b) - timeline.start_of(b).max(prev_end))
                    .clamp(0.0, start - prev_end);
            }
            split.comm_s += comm;
            classify(&mut split, prev_end, start - comm);
        }
        match g.node_weight(n) {
            Some(Event::Fwd { .. } | Event::Bwd { .. }) => busy += end - start,
            Some(Event::DpReduce { .. }) => split.comm_s += end - start,
            _ => {}
        }
        prev_end = prev_end.max(end);
    }
    classify(&mut split, prev_end, timeline.makespan);
    (busy, split)
}
