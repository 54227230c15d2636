//! BigMac's nested pipeline as a composition policy: the first region (the modality encoder,
//! Replicated, each microbatch on its owner) is embedded in the backbone's order without moving
//! any backbone event. Time is the schedule's logical time, one slot per backbone compute action
//! (BigMac's global operator table, `report::table`): the backbone's slots come from its order
//! alone (the encoder taking none), and then on its owner rank
//! - each encoder forward runs in the slot before the one its output is consumed in (the
//!   backbone's first stage's forward of that microbatch) — as late as it can, just in time;
//! - each encoder backward runs in the slot its gradient is back in (after the first stage's
//!   backward of that microbatch) — as soon as it can.
//!
//! An encoder action goes before the backbone step of its slot: in an idle slot it costs the
//! backbone nothing; in a busy one, what follows on its rank runs one encoder action later. No
//! backbone action changes its place in its rank's order, and an encoder activation lives from
//! just before its microbatch enters the backbone until just after it leaves it, whatever the
//! number of microbatches. An encoder forward has no input and an encoder backward feeds no
//! backbone action, so the order is deadlock-free for every owner map.

use crate::algebra::plan::Plan;
use crate::graph::event::{Action, Event};
use crate::graph::order::Order;
use crate::sim::engine::{SimOptions, simulate};
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use rustc_hash::FxHashMap;

/// Each rank's order in action notation (overlapped pairs as one step), the first region's work
/// nested in the backbone's: the explicit orders the nested schedule is derived with.
pub(crate) fn orders(plan: &Plan, order: &Order) -> Vec<Vec<String>> {
    let g = &order.graph;
    let source = plan.regions.first().map(|r| r.index);
    let region_of = |n: NodeIndex| match g.node_weight(n) {
        Some(Event::Fwd { region, .. } | Event::Bwd { region, .. }) => Some(usize::from(*region)),
        _ => None,
    };
    let is_source = |n: NodeIndex| source.is_some() && region_of(n) == source;
    let is_compute = |n: NodeIndex| region_of(n).is_some();
    // The backbone's logical time: one slot per backbone action, none for the encoder's.
    let unit: Vec<f64> = g
        .node_indices()
        .map(|n| {
            if is_compute(n) && !is_source(n) {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let timeline = simulate(order, &unit, SimOptions::default());
    let slot = |n: NodeIndex| timeline.start_of(n).round() as i64;

    // The compute events next to `n` through collectives and losses, in `direction`.
    let neighbours = |n: NodeIndex, direction: Direction| {
        let mut out = Vec::new();
        let mut stack = vec![n];
        let mut seen = 0usize;
        while let Some(at) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            for next in g.neighbors_directed(at, direction) {
                if is_compute(next) {
                    out.push(next);
                } else if matches!(
                    g.node_weight(next),
                    Some(Event::Coll { .. } | Event::Loss { .. })
                ) {
                    stack.push(next);
                }
            }
        }
        out
    };

    let actions: FxHashMap<(usize, Action), NodeIndex> = g
        .node_indices()
        .filter_map(|n| {
            let e = g.node_weight(n)?;
            Some(((e.rank()?, e.action()?), n))
        })
        .collect();
    let mut out = Vec::with_capacity(plan.ranks);
    for rank in 0..plan.ranks {
        let steps = order.steps(rank);
        let node_of = |a: &Action| actions.get(&(rank, *a)).copied();
        // The backbone's steps keep their slots; the encoder's get theirs below.
        let mut placed: Vec<((i64, u8, i64), String)> = Vec::new();
        let mut forwards: Vec<(i64, NodeIndex, String)> = Vec::new();
        let mut backwards: Vec<(i64, NodeIndex, String)> = Vec::new();
        for step in &steps {
            let Some(first) = step.actions().next().as_ref().and_then(node_of) else {
                continue;
            };
            let text = step.to_string();
            if !is_source(first) {
                placed.push(((slot(first), 1, 0), text));
            } else if matches!(g.node_weight(first), Some(Event::Fwd { .. })) {
                // Consumed in the earliest slot of a backbone action it feeds.
                let deadline = neighbours(first, Direction::Outgoing)
                    .into_iter()
                    .filter(|&n| !is_source(n))
                    .map(slot)
                    .min()
                    .unwrap_or(i64::MAX);
                forwards.push((deadline, first, text));
            } else {
                // Back when the backbone actions it waits for have run.
                let back = neighbours(first, Direction::Incoming)
                    .into_iter()
                    .filter(|&n| !is_source(n))
                    .map(|n| slot(n) + 1)
                    .max()
                    .unwrap_or(0);
                backwards.push((back, first, text));
            }
        }
        // Each encoder forward right before the slot its output is consumed in, each backward
        // in the slot its gradient is back in: before the backbone step of that slot (which
        // runs one encoder action later when the slot was not idle).
        for (deadline, n, text) in forwards {
            placed.push(((deadline.saturating_sub(1), 0, n.index() as i64), text));
        }
        for (back, n, text) in backwards {
            placed.push(((back, 0, n.index() as i64), text));
        }
        placed.sort_by_key(|p| p.0);
        out.push(placed.into_iter().map(|p| p.1).collect());
    }
    out
}
