//! The deadlock check: a topological order of data edges plus each rank's sequence, or the
//! wait-for cycle that prevents one, named event by event.

use crate::graph::event::Event;
use crate::graph::order::{Fix, Order, OrderError};
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
            let actions = cycle
                .iter()
                .filter_map(|&v| {
                    let e = g.node_weight(NodeIndex::new(v))?;
                    Some((e.rank()?, e.action()?))
                })
                .collect();
            return Err(OrderError::Deadlock {
                cycle: labels,
                actions,
                fix: Box::new(repair(order)),
            });
        }
        position.insert(pred, path.len());
        path.push(pred);
        current = pred;
    }
    Err(OrderError::Deadlock {
        cycle: vec![label(start)],
        actions: Vec::new(),
        fix: Box::new(repair(order)),
    })
}

/// A deadlock-free reordering of `order`'s per-rank compute steps that keeps as much of them as
/// it can: the ranks run their steps in the given order while they can; whenever every rank
/// waits, the earliest step whose inputs are all in (on the lowest rank that has one) is moved
/// to run next, before the step its rank was stuck at. Losses and reduces go where `build`
/// puts them (after their forward, after the rank's last backward of their region), so they are
/// left to follow. The data edges alone never form a cycle, so this always ends, with every
/// step placed; it takes `O(N log N)` for `N` events.
pub fn repair(order: &Order) -> Fix {
    use std::collections::BTreeSet;
    let g = &order.graph;
    let n = g.node_count();
    let pair_of: HashMap<NodeIndex, NodeIndex> = order.pairs.iter().map(|&[a, b]| (a, b)).collect();
    let second: std::collections::HashSet<NodeIndex> =
        order.pairs.iter().map(|&[_, b]| b).collect();
    // Each rank's compute steps (a pair by its first half), by position.
    let queues: Vec<Vec<NodeIndex>> = order
        .nodes
        .iter()
        .map(|list| {
            list.iter()
                .copied()
                .filter(|&v| {
                    !second.contains(&v)
                        && matches!(
                            g.node_weight(v),
                            Some(Event::Fwd { .. } | Event::Bwd { .. })
                        )
                })
                .collect()
        })
        .collect();
    let mut slot: Vec<Option<(usize, usize)>> = vec![None; n];
    for (rank, queue) in queues.iter().enumerate() {
        for (i, &v) in queue.iter().enumerate() {
            if let Some(s) = slot.get_mut(v.index()) {
                *s = Some((rank, i));
            }
        }
    }
    let node_of: HashMap<(usize, crate::graph::event::Action), NodeIndex> = g
        .node_indices()
        .filter_map(|v| {
            let e = g.node_weight(v)?;
            Some(((e.rank()?, e.action()?), v))
        })
        .collect();
    let steps: HashMap<NodeIndex, String> = (0..order.nodes.len())
        .flat_map(|rank| {
            order
                .steps(rank)
                .into_iter()
                .filter_map(|step| {
                    let v = node_of.get(&(rank, step.actions().next()?))?;
                    Some((*v, step.to_string()))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Inputs not yet in, over the data edges only.
    let mut waiting: Vec<usize> = (0..n)
        .map(|v| {
            g.neighbors_directed(NodeIndex::new(v), petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    let mut ready: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); queues.len()];
    let mut done = vec![false; n];
    let mut next = vec![0usize; queues.len()];
    let mut taken = vec![false; n];
    let mut worklist: Vec<NodeIndex> = (0..n)
        .filter(|&v| waiting.get(v) == Some(&0))
        .map(NodeIndex::new)
        .collect();
    let mut fix = Fix {
        orders: vec![Vec::new(); queues.len()],
        moves: Vec::new(),
    };
    // Marks `v` ready: a compute step waits for its rank; anything else is done at once.
    let settle = |worklist: &mut Vec<NodeIndex>,
                  waiting: &mut Vec<usize>,
                  done: &mut Vec<bool>,
                  ready: &mut Vec<BTreeSet<usize>>| {
        while let Some(v) = worklist.pop() {
            if let Some(Some((rank, i))) = slot.get(v.index()) {
                if let Some(r) = ready.get_mut(*rank) {
                    r.insert(*i);
                }
                continue;
            }
            // A pair's second half runs with its first.
            if second.contains(&v) {
                continue;
            }
            finish(g, v, worklist, waiting, done);
        }
    };
    settle(&mut worklist, &mut waiting, &mut done, &mut ready);
    let total: usize = queues.iter().map(Vec::len).sum();
    let mut placed = 0;
    while placed < total {
        let mut progress = false;
        for rank in 0..queues.len() {
            while let (Some(queue), Some(&at)) = (queues.get(rank), next.get(rank)) {
                let Some(&v) = queue.get(at) else { break };
                if taken.get(v.index()).copied().unwrap_or(true) {
                    if let Some(x) = next.get_mut(rank) {
                        *x += 1;
                    }
                    continue;
                }
                if !ready.get(rank).is_some_and(|r| r.contains(&at)) {
                    break;
                }
                take(rank, at, v, &mut fix, &steps, &mut taken, &mut ready);
                run(
                    g,
                    v,
                    pair_of.get(&v).copied(),
                    &mut worklist,
                    &mut waiting,
                    &mut done,
                );
                settle(&mut worklist, &mut waiting, &mut done, &mut ready);
                placed += 1;
                progress = true;
            }
        }
        if progress {
            continue;
        }
        // Every rank waits: the earliest ready step of the lowest rank that has one runs next.
        let Some((rank, at)) = ready
            .iter()
            .enumerate()
            .find_map(|(rank, r)| r.iter().next().map(|&at| (rank, at)))
        else {
            break;
        };
        let Some(&v) = queues.get(rank).and_then(|q| q.get(at)) else {
            break;
        };
        let stuck = next
            .get(rank)
            .and_then(|&i| queues.get(rank)?.get(i))
            .and_then(|h| steps.get(h))
            .cloned()
            .unwrap_or_default();
        if let Some(moved) = steps.get(&v) {
            fix.moves.push((rank, moved.clone(), stuck));
        }
        take(rank, at, v, &mut fix, &steps, &mut taken, &mut ready);
        run(
            g,
            v,
            pair_of.get(&v).copied(),
            &mut worklist,
            &mut waiting,
            &mut done,
        );
        settle(&mut worklist, &mut waiting, &mut done, &mut ready);
        placed += 1;
    }
    fix
}

/// Records step `v` (position `at` of `rank`) as the rank's next.
fn take(
    rank: usize,
    at: usize,
    v: NodeIndex,
    fix: &mut Fix,
    steps: &HashMap<NodeIndex, String>,
    taken: &mut [bool],
    ready: &mut [std::collections::BTreeSet<usize>],
) {
    if let Some(t) = taken.get_mut(v.index()) {
        *t = true;
    }
    if let Some(r) = ready.get_mut(rank) {
        r.remove(&at);
    }
    if let (Some(list), Some(text)) = (fix.orders.get_mut(rank), steps.get(&v)) {
        list.push(text.clone());
    }
}

/// Runs step `v` (and the second half of its pair): each is done.
fn run(
    g: &petgraph::graph::DiGraph<Event, crate::graph::event::EdgeKind>,
    v: NodeIndex,
    pair: Option<NodeIndex>,
    worklist: &mut Vec<NodeIndex>,
    waiting: &mut [usize],
    done: &mut [bool],
) {
    finish(g, v, worklist, waiting, done);
    if let Some(b) = pair {
        finish(g, b, worklist, waiting, done);
    }
}

/// Marks `v` done and queues each successor whose inputs are now all in.
fn finish(
    g: &petgraph::graph::DiGraph<Event, crate::graph::event::EdgeKind>,
    v: NodeIndex,
    worklist: &mut Vec<NodeIndex>,
    waiting: &mut [usize],
    done: &mut [bool],
) {
    match done.get_mut(v.index()) {
        Some(d) if !*d => *d = true,
        _ => return,
    }
    for s in g.neighbors_directed(v, petgraph::Direction::Outgoing) {
        if let Some(w) = waiting.get_mut(s.index()) {
            *w = w.saturating_sub(1);
            if *w == 0 {
                worklist.push(s);
            }
        }
    }
}
