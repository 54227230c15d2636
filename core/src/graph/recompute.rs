//! Recomputation placed early (Mario, DESIGN.md §3.1): for a backward whose stage recomputes
//! layers with `recompute_early`, their forward runs again as its own action `R` on the rank's
//! compute stream, just before the backward's slot (before an overlapped pair's forward, or a
//! split backward's input half). `R` waits only for its forward and the rank, so where the rank
//! would idle waiting for the backward's gradient it runs in that bubble, and the backward is
//! shorter by it. First-order schedules only (a second-order schedule reruns in its force
//! backward).

use crate::algebra::plan::Plan;
use crate::graph::event::{EdgeKind, Event};
use crate::graph::order_graph::OrderGraph;
use petgraph::Direction;
use petgraph::graph::NodeIndex;

/// Whether some layer a rank runs for a region recomputes early (the plan keeps
/// `recompute_early` only where it applies: Sharded regions of first-order schedules).
fn recomputes_early(plan: &Plan, region: usize, rank: usize) -> bool {
    plan.layers
        .get(plan.unit_layers(region, rank))
        .is_some_and(|ls| ls.iter().any(|l| l.recompute_early && l.rerun_share > 0.0))
}

/// Adds an `R` before every first backward phase (`B`, or `I` of a split one) of a Sharded
/// region whose stage recomputes early, to the graph and to each rank's order (free of
/// deadlock); whether it added any. A Replicated region (an encoder placed by its owner map or
/// nested in real time) reruns in its backward.
pub fn add_early(
    plan: &Plan,
    graph: &mut OrderGraph,
    nodes: &mut [Vec<NodeIndex>],
    pairs: &[[NodeIndex; 2]],
) -> bool {
    if !plan.layers.iter().any(|l| l.recompute_early) {
        return false;
    }
    // The forward of every backward that recomputes early, asked before any edge is added.
    let forwards: rustc_hash::FxHashMap<NodeIndex, NodeIndex> = nodes
        .iter()
        .flatten()
        .filter_map(|&n| {
            let &Event::Bwd {
                region, rank, half, ..
            } = graph.node_weight(n)?
            else {
                return None;
            };
            if half == crate::vocab::phase::Half::Weight
                || !recomputes_early(plan, region.into(), rank.into())
            {
                return None;
            }
            Some((n, graph.forward_of(n)?))
        })
        .collect();
    let mut added = false;
    let pair_first = crate::graph::order::pair_forwards(pairs);
    for list in nodes.iter_mut() {
        let mut out = Vec::with_capacity(list.len() * 3 / 2);
        // The backward each `R` goes before, by the node it is inserted in front of.
        let mut before: rustc_hash::FxHashMap<NodeIndex, NodeIndex> =
            rustc_hash::FxHashMap::default();
        for &n in list.iter() {
            let (
                Some(&forward),
                Some(&Event::Bwd {
                    region,
                    rank,
                    mb,
                    stage,
                    ..
                }),
            ) = (forwards.get(&n), graph.node_weight(n))
            else {
                continue;
            };
            added = true;
            let r = graph.add_node(Event::Recompute {
                region,
                rank,
                mb,
                stage,
            });
            graph.add_edge(forward, r, EdgeKind::Recompute);
            graph.add_edge(r, n, EdgeKind::Recompute);
            let slot = pair_first.get(&n).copied().unwrap_or(n);
            if slot != n {
                graph.add_edge(r, slot, EdgeKind::Recompute);
            }
            before.insert(slot, r);
        }
        if before.is_empty() {
            continue;
        }
        for &n in list.iter() {
            if let Some(&r) = before.get(&n) {
                out.push(r);
            }
            out.push(n);
        }
        *list = out;
    }
    added
}

/// The early recomputation of a backward, where it has one.
pub fn early_of(graph: &OrderGraph, backward: NodeIndex) -> Option<NodeIndex> {
    graph
        .edges_directed(backward, Direction::Incoming)
        .filter(|e| *e.weight() == EdgeKind::Recompute)
        .map(|e| e.source())
        .find(|&s| matches!(graph.node_weight(s), Some(Event::Recompute { .. })))
}
