//! The deadlock check: a topological order of data edges plus each rank's sequence, or the
//! wait-for cycle that prevents one, named event by event.

use crate::graph::event::Event;
use crate::graph::order::{Order, OrderError};
use petgraph::graph::NodeIndex;
use std::collections::HashMap;

/// Kahn's algorithm over data edges plus each rank's sequence, returning a topological order; on
/// failure, walks back through the unprocessed events to a repeated one and reports that cycle.
pub fn check_deadlock(order: &Order) -> Result<Vec<u32>, OrderError> {
    let g = &order.graph;
    let adj = &order.adjacency;
    let n = adj.node_count();
    let mut indegree = adj.in_degrees();
    let mut stack: Vec<u32> = (0..n as u32)
        .filter(|&v| indegree.get(v as usize) == Some(&0))
        .collect();
    let mut done = vec![false; n];
    let mut topological = Vec::with_capacity(n);
    while let Some(v) = stack.pop() {
        topological.push(v);
        if let Some(d) = done.get_mut(v as usize) {
            *d = true;
        }
        for &s in adj.succs(v as usize) {
            if let Some(d) = indegree.get_mut(s as usize) {
                *d -= 1;
                if *d == 0 {
                    stack.push(s);
                }
            }
        }
    }
    if topological.len() == n {
        return Ok(topological);
    }
    // Every unprocessed node has an unprocessed predecessor: walk back until a node repeats.
    let pending = |v: usize| !done.get(v).copied().unwrap_or(true);
    let Some(start) = (0..n).find(|&v| pending(v)) else {
        return Ok(topological);
    };
    let label = |v: usize| {
        g.node_weight(NodeIndex::new(v))
            .map(|e| e.label())
            .unwrap_or_default()
    };
    let mut path = vec![start];
    let mut position: HashMap<usize, usize> = HashMap::from([(start, 0)]);
    let mut current = start;
    while let Some(pred) = adj
        .preds(current)
        .iter()
        .map(|&p| p as usize)
        .find(|&p| pending(p))
    {
        if let Some(&at) = position.get(&pred) {
            // Walking back through predecessors, each event in `cycle` waits for the next.
            let cycle: Vec<usize> = path.split_off(at);
            let mut labels: Vec<String> = cycle
                .iter()
                .filter(|&&v| !matches!(g.node_weight(NodeIndex::new(v)), Some(Event::Coll { .. })))
                .map(|&v| label(v))
                .collect();
            if let Some(first) = labels.first().cloned() {
                labels.push(first);
            }
            return Err(OrderError::Deadlock { cycle: labels });
        }
        position.insert(pred, path.len());
        path.push(pred);
        current = pred;
    }
    Err(OrderError::Deadlock {
        cycle: vec![label(start)],
    })
}
