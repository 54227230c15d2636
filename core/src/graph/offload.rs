//! Activation offload's copies (DESIGN.md §3.1): a forward whose layers offload
//! (`offload_share > 0`) copies that share of its kept activations to the host when it ends, and
//! back before its backward, which waits for the copy. Each rank has one copy stream beside its
//! compute stream, one copy at a time. A copy back is issued when the action two before its
//! backward's slot ends, so that it runs while the action just before it computes (a prefetch of
//! one action); copies run in the order of the actions that issue them, a copy out before a copy
//! back issued by the same action.
//!
//! Every copy waits only for actions of its own rank that come before the backward it feeds, so
//! the copies add no cycle to an order that had none.

use crate::algebra::model::Layer;
use crate::algebra::plan::Plan;
use crate::graph::event::{EdgeKind, Event};
use crate::graph::order_graph::OrderGraph;
use petgraph::Direction;
use petgraph::graph::NodeIndex;

/// Adds the copies of every offloading forward to `graph`, given each rank's order (`nodes`,
/// free of deadlock) and the overlapped pairs; whether it added any.
pub fn add_copies(
    plan: &Plan,
    graph: &mut OrderGraph,
    nodes: &[Vec<NodeIndex>],
    pairs: &[[NodeIndex; 2]],
) -> bool {
    if !plan.layers.iter().any(Layer::offloads) {
        return false;
    }
    let mut added = false;
    let pair_first = crate::graph::order::pair_forwards(pairs);
    // Every offloading forward's backward, and the node the backward's slot starts with: its
    // early recomputation (which reads the activations too), else its overlapped pair's
    // forward (`None`: itself). Asked before any copy is added.
    let feeds: rustc_hash::FxHashMap<NodeIndex, (NodeIndex, Option<NodeIndex>)> = nodes
        .iter()
        .flatten()
        .filter_map(|&forward| {
            let &Event::Fwd { region, rank, .. } = graph.node_weight(forward)? else {
                return None;
            };
            if !plan.offloads(region.into(), rank.into()) {
                return None;
            }
            let backward = graph.backward_of(forward)?;
            let first = crate::graph::recompute::early_of(graph, backward)
                .or_else(|| pair_first.get(&backward).copied());
            Some((forward, (backward, first)))
        })
        .collect();
    for order in nodes {
        let compute: Vec<NodeIndex> = order
            .iter()
            .copied()
            .filter(|&n| graph.node_weight(n).is_some_and(Event::is_compute))
            .collect();
        // Positions count slots: an overlapped pair is one (its halves share it), and a slot
        // ends with its last node.
        let mut position: rustc_hash::FxHashMap<NodeIndex, usize> =
            rustc_hash::FxHashMap::default();
        let mut slot_end: Vec<NodeIndex> = Vec::with_capacity(compute.len());
        for &n in &compute {
            match pair_first.get(&n).and_then(|f| position.get(f)).copied() {
                Some(slot) => {
                    position.insert(n, slot);
                    if let Some(end) = slot_end.get_mut(slot) {
                        *end = n;
                    }
                }
                None => {
                    position.insert(n, slot_end.len());
                    slot_end.push(n);
                }
            }
        }
        // (issuing slot, copy back after copy out, the slot it feeds, node)
        let mut stream: Vec<(usize, bool, usize, NodeIndex)> = Vec::new();
        for &forward in &compute {
            let Some(&at) = position.get(&forward) else {
                continue;
            };
            let Some(&Event::Fwd {
                region,
                rank,
                mb,
                stage,
            }) = graph.node_weight(forward)
            else {
                continue;
            };
            let Some(&(backward, first)) = feeds.get(&forward) else {
                continue;
            };
            let Some(slot) = position.get(&first.unwrap_or(backward)).copied() else {
                continue;
            };
            if slot <= at {
                continue;
            }
            let issuer = slot.checked_sub(2).and_then(|i| slot_end.get(i)).copied();
            let copy = |to_host| Event::Copy {
                region,
                rank,
                mb,
                stage,
                to_host,
            };
            let out = graph.add_node(copy(true));
            let back = graph.add_node(copy(false));
            graph.add_edge(forward, out, EdgeKind::Offload);
            graph.add_edge(out, back, EdgeKind::Offload);
            if let Some(issuer) = issuer {
                graph.add_edge(issuer, back, EdgeKind::Offload);
            }
            graph.add_edge(back, backward, EdgeKind::Offload);
            if let Some(first) = first {
                graph.add_edge(back, first, EdgeKind::Offload);
            }
            added = true;
            stream.push((at, false, at, out));
            stream.push((at.max(slot.saturating_sub(2)), true, slot, back));
        }
        // In issuing order; a copy out before a copy back issued by the same slot; copies back
        // issued together in the order their backwards need them.
        stream.sort_unstable_by_key(|&(at, back, feeds, n)| (at, back, feeds, n.index()));
        for pair in stream.windows(2) {
            if let [(_, _, _, a), (_, _, _, b)] = *pair {
                graph.add_edge(a, b, EdgeKind::CopyStream);
            }
        }
    }
    added
}

/// The copies of a forward: its copy to the host and back, where it offloads.
pub fn copies_of(graph: &OrderGraph, forward: NodeIndex) -> Option<[NodeIndex; 2]> {
    let out = graph
        .edges_directed(forward, Direction::Outgoing)
        .filter(|e| *e.weight() == EdgeKind::Offload)
        .map(|e| e.target())
        .find(|&t| {
            matches!(
                graph.node_weight(t),
                Some(Event::Copy { to_host: true, .. })
            )
        })?;
    let back = graph
        .edges_directed(out, Direction::Outgoing)
        .filter(|e| *e.weight() == EdgeKind::Offload)
        .map(|e| e.target())
        .find(|&t| {
            matches!(
                graph.node_weight(t),
                Some(Event::Copy { to_host: false, .. })
            )
        })?;
    Some([out, back])
}
