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

use crate::algebra::plan::Plan;
use crate::graph::event::{EdgeKind, Event};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

/// Adds the copies of every offloading forward to `graph`, given each rank's order (`nodes`) and
/// the overlapped pairs.
pub fn add_copies(
    plan: &Plan,
    graph: &mut DiGraph<Event, EdgeKind>,
    nodes: &[Vec<NodeIndex>],
    pairs: &[[NodeIndex; 2]],
) {
    if !plan
        .layers
        .iter()
        .any(|l| l.offload_share > 0.0 && l.activation_bytes > 0.0)
    {
        return;
    }
    // The forward of an overlapped pair, by its backward: the slot both start in.
    let pair_first: rustc_hash::FxHashMap<NodeIndex, NodeIndex> = pairs
        .iter()
        .map(|&[first, second]| (second, first))
        .collect();
    for order in nodes {
        let compute: Vec<NodeIndex> = order
            .iter()
            .copied()
            .filter(|&n| graph.node_weight(n).is_some_and(Event::is_compute))
            .collect();
        let position: rustc_hash::FxHashMap<NodeIndex, usize> =
            compute.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        // (issuing position, copy back after copy out, node)
        let mut stream: Vec<(usize, bool, NodeIndex)> = Vec::new();
        for (at, &forward) in compute.iter().enumerate() {
            let Some(&Event::Fwd {
                region,
                rank,
                mb,
                stage,
            }) = graph.node_weight(forward)
            else {
                continue;
            };
            if !plan.offloads(region.into(), rank.into()) {
                continue;
            }
            let Some(backward) = graph
                .edges_directed(forward, Direction::Outgoing)
                .find(|e| {
                    *e.weight() == EdgeKind::Activation
                        && matches!(graph.node_weight(e.target()), Some(Event::Bwd { .. }))
                })
                .map(|e| e.target())
            else {
                continue;
            };
            // The backward's slot starts with its early recomputation (which reads the
            // activations too), else with its overlapped pair's forward, else with itself.
            let first = crate::graph::recompute::early_of(graph, backward)
                .or_else(|| pair_first.get(&backward).copied());
            let Some(slot) = position.get(&first.unwrap_or(backward)).copied() else {
                continue;
            };
            if slot <= at {
                continue;
            }
            let issuer = slot.checked_sub(2).and_then(|i| compute.get(i)).copied();
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
            stream.push((at, false, out));
            stream.push((at.max(slot.saturating_sub(2)), true, back));
        }
        stream.sort_unstable_by_key(|&(at, back, n)| (at, back, n.index()));
        for pair in stream.windows(2) {
            if let [(_, _, a), (_, _, b)] = *pair {
                graph.add_edge(a, b, EdgeKind::CopyStream);
            }
        }
    }
}

/// The copies of a forward: its copy to the host and back, where it offloads.
pub fn copies_of(graph: &DiGraph<Event, EdgeKind>, forward: NodeIndex) -> Option<[NodeIndex; 2]> {
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
