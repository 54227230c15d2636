//! The same schedule with the transposed encoder removed: the Replicated first region's work
//! set to zero time, and the warmup window `w_r` each rank has in that run (the paper's
//! analytic spill compares the encoder's work against it).

use crate::algebra::plan::Plan;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::Timeline;
use crate::vocab::layout::{Composition, Layout};

/// The Replicated first region (the transposed encoder), if the schedule has one and a wavefront.
pub fn source_region(plan: &Plan) -> Option<usize> {
    plan.regions
        .first()
        .filter(|r| r.layout() == Layout::Replicated && plan.wavefront.is_some())
        .map(|r| r.index)
}

/// Whether the source region is transposed into the warmup bubble (Mpipe), the one composition
/// whose encoder work can *spill* past the warmup window: a nested encoder (BigMac) runs just in
/// time inside the backbone's own order, so the paper's `max(0, E_r − w_r)` says nothing about it
/// (it reported 6 s of "spill" on the MLLM samples' rank 0); how much it delays the backbone's
/// start is `sim.extra` under either.
pub fn spills(plan: &Plan) -> bool {
    source_region(plan).is_some()
        && plan
            .regions
            .first()
            .is_some_and(|r| r.skeleton.composition() == Some(Composition::Transpose))
}

/// Durations with the source region's work (its forwards, backwards, seam transfers and reduce)
/// set to zero: the same schedule "with the encoder removed".
pub fn without_source(order: &Order, durations: &[f64], source: usize) -> Vec<f64> {
    order
        .graph
        .node_indices()
        .map(|n| {
            let zero = match order.graph.node_weight(n) {
                Some(
                    Event::Fwd { region, .. }
                    | Event::Bwd { region, .. }
                    | Event::Recompute { region, .. }
                    | Event::Copy { region, .. }
                    | Event::DpReduce { region, .. },
                ) => *region == source.into(),
                Some(Event::Coll { seam, .. }) => seam.from == source.into(),
                _ => false,
            };
            if zero {
                0.0
            } else {
                durations.get(n.index()).copied().unwrap_or(0.0)
            }
        })
        .collect()
}

/// `w_r` per rank: when each rank's first wavefront forward starts in `encoder_free`, the
/// timeline of the same schedule with the encoder removed.
pub fn warmup_windows(plan: &Plan, order: &Order, encoder_free: &Timeline) -> Vec<f64> {
    (0..plan.ranks)
        .map(|r| {
            crate::sim::metrics::wavefront_span(plan, order, encoder_free, r)
                .map_or(0.0, |(start, _)| start)
        })
        .collect()
}
