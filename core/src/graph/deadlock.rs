//! The deadlock check: a topological order of data edges plus each rank's sequence, or the
//! wait-for cycle that prevents one, named event by event.

use crate::graph::event::Event;
use crate::graph::order::{Fix, Order, OrderError};
use petgraph::graph::NodeIndex;
use std::collections::HashMap;

/// Kahn's algorithm over data edges plus each rank's sequence, returning a topological order
/// (first in, first out: which of the orders is no promise, and nothing read off it depends on
/// it — a longest path or a slack is the same along any); on
/// failure, walks back through the unprocessed events to a repeated one and reports that cycle.
pub fn check_deadlock(order: &Order) -> Result<Vec<u32>, OrderError> {
    check_deadlock_proposing(order, true)
}

/// [`check_deadlock`], its error's proposed reordering searched for only where `propose` (a
/// caller with another order to stand in reports none: the search costs more than the check).
pub(crate) fn check_deadlock_proposing(
    order: &Order,
    propose: bool,
) -> Result<Vec<u32>, OrderError> {
    let fix = || {
        Box::new(if propose {
            repair(order)
        } else {
            Fix::default()
        })
    };
    let g = &order.graph;
    let n = g.node_count();
    let mut indegree = g.in_degrees();
    let (ends, succs) = g.successor_lists();
    // The order found so far is also the queue of what is ready: every node once.
    let mut topological: Vec<u32> = Vec::with_capacity(n);
    topological.extend(
        (0u32..)
            .zip(&indegree)
            .filter(|&(_, &d)| d == 0)
            .map(|(v, _)| v),
    );
    let mut next = 0;
    while let Some(&v) = topological.get(next) {
        next += 1;
        let v = v as usize;
        let (Some(&a), Some(&b)) = (ends.get(v), ends.get(v + 1)) else {
            continue;
        };
        let Some(list) = succs.get(a as usize..b as usize) else {
            continue;
        };
        // What this node's end makes ready joins the queue (room for every node was made).
        topological.extend(list.iter().copied().filter(|&s| {
            indegree.get_mut(s as usize).is_some_and(|d| {
                *d -= 1;
                *d == 0
            })
        }));
    }
    if topological.len() == n {
        return Ok(topological);
    }
    let mut done = vec![false; n];
    for &v in &topological {
        if let Some(d) = done.get_mut(v as usize) {
            *d = true;
        }
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
    while let Some(pred) = g
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
                fix: fix(),
                derived: None,
            });
        }
        position.insert(pred, path.len());
        path.push(pred);
        current = pred;
    }
    Err(OrderError::Deadlock {
        cycle: vec![label(start)],
        actions: Vec::new(),
        fix: fix(),
        derived: None,
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
    let mut r = Repair::new(order);
    let ranks = r.queues.len();
    let mut fix = Fix {
        orders: vec![Vec::new(); ranks],
        moves: Vec::new(),
    };
    let total: usize = r.queues.iter().map(Vec::len).sum();
    // Each rank's next position in its queue (steps moved earlier leave holes it skips).
    let mut next = vec![0usize; ranks];
    let mut placed = 0;
    while placed < total {
        let mut progress = false;
        for (rank, at) in next.iter_mut().enumerate() {
            while let Some(&v) = r.queues.get(rank).and_then(|q| q.get(*at)) {
                if r.taken.get(v.index()).copied().unwrap_or(true) {
                    *at += 1;
                    continue;
                }
                if !r.ready.get(rank).is_some_and(|set| set.contains(at)) {
                    break;
                }
                r.run(rank, *at, v, &mut fix);
                placed += 1;
                progress = true;
            }
        }
        if progress {
            continue;
        }
        // Every rank waits: the earliest ready step of the lowest rank that has one runs next,
        // before the step its rank is stuck at.
        let Some((rank, at)) = r
            .ready
            .iter()
            .enumerate()
            .find_map(|(rank, set)| set.iter().next().map(|&at| (rank, at)))
        else {
            break;
        };
        let Some(&v) = r.queues.get(rank).and_then(|q| q.get(at)) else {
            break;
        };
        let stuck = next
            .get(rank)
            .and_then(|&i| r.queues.get(rank)?.get(i))
            .map_or_else(String::new, |&h| r.step_text(h));
        fix.moves.push((rank, r.step_text(v), stuck));
        r.run(rank, at, v, &mut fix);
        placed += 1;
    }
    fix
}

/// The state of [`repair`]'s run: which events are done, which compute steps have their inputs
/// in (by rank and queue position), and which have been placed.
struct Repair<'a> {
    g: &'a crate::graph::order_graph::OrderGraph,
    /// Each overlapped pair's second half by its first.
    pair_of: HashMap<NodeIndex, NodeIndex>,
    /// The second halves, which run with their first.
    second: std::collections::HashSet<NodeIndex>,
    /// Each rank's compute steps (a pair by its first half), in the given order.
    queues: Vec<Vec<NodeIndex>>,
    /// Rank and queue position of every step's node.
    slot: Vec<Option<(usize, usize)>>,
    /// Data inputs not yet in, by node.
    waiting: Vec<usize>,
    done: Vec<bool>,
    taken: Vec<bool>,
    /// Queue positions of each rank's steps whose inputs are all in and that are not placed.
    ready: Vec<std::collections::BTreeSet<usize>>,
    /// Nodes whose inputs just came in.
    worklist: Vec<NodeIndex>,
}

impl<'a> Repair<'a> {
    fn new(order: &'a Order) -> Self {
        let g = &order.graph;
        let n = g.node_count();
        let pair_of: HashMap<NodeIndex, NodeIndex> =
            order.pairs.iter().map(|&[a, b]| (a, b)).collect();
        let second: std::collections::HashSet<NodeIndex> =
            order.pairs.iter().map(|&[_, b]| b).collect();
        let queues: Vec<Vec<NodeIndex>> = order
            .nodes
            .iter()
            .map(|list| {
                list.iter()
                    .copied()
                    .filter(|&v| {
                        !second.contains(&v) && g.node_weight(v).is_some_and(Event::is_compute)
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
        let waiting: Vec<usize> = (0..n)
            .map(|v| {
                g.neighbors_directed(NodeIndex::new(v), petgraph::Direction::Incoming)
                    .count()
            })
            .collect();
        let worklist = (0..n)
            .filter(|&v| waiting.get(v) == Some(&0))
            .map(NodeIndex::new)
            .collect();
        let mut r = Repair {
            g,
            ready: vec![Default::default(); queues.len()],
            pair_of,
            second,
            queues,
            slot,
            waiting,
            done: vec![false; n],
            taken: vec![false; n],
            worklist,
        };
        r.settle();
        r
    }

    /// Takes in the worklist: a compute step becomes ready on its rank; anything else (a
    /// transfer, a loss, a reduce, the barrier) is done at once. Seconds of pairs wait for
    /// their first half.
    fn settle(&mut self) {
        while let Some(v) = self.worklist.pop() {
            if let Some(Some((rank, i))) = self.slot.get(v.index()) {
                if let Some(set) = self.ready.get_mut(*rank) {
                    set.insert(*i);
                }
                continue;
            }
            if self.second.contains(&v) {
                continue;
            }
            self.finish(v);
        }
    }

    /// Marks `v` done and queues each successor whose inputs are now all in.
    fn finish(&mut self, v: NodeIndex) {
        match self.done.get_mut(v.index()) {
            Some(d) if !*d => *d = true,
            _ => return,
        }
        for s in self.g.neighbors_directed(v, petgraph::Direction::Outgoing) {
            if let Some(w) = self.waiting.get_mut(s.index()) {
                *w = w.saturating_sub(1);
                if *w == 0 {
                    self.worklist.push(s);
                }
            }
        }
    }

    /// Places step `v` (position `at` of `rank`) as the rank's next, and runs it (with the
    /// second half of its pair).
    fn run(&mut self, rank: usize, at: usize, v: NodeIndex, fix: &mut Fix) {
        if let Some(t) = self.taken.get_mut(v.index()) {
            *t = true;
        }
        if let Some(set) = self.ready.get_mut(rank) {
            set.remove(&at);
        }
        if let Some(list) = fix.orders.get_mut(rank) {
            list.push(self.step_text(v));
        }
        self.finish(v);
        if let Some(b) = self.pair_of.get(&v).copied() {
            self.finish(b);
        }
        self.settle();
    }

    /// Step `v` in action notation: its action, or its pair.
    fn step_text(&self, v: NodeIndex) -> String {
        let action = |n: NodeIndex| self.g.node_weight(n).and_then(Event::action);
        let step = match (action(v), self.pair_of.get(&v).and_then(|&b| action(b))) {
            (Some(a), Some(b)) => Some(crate::vocab::action::Step::Overlap(a, b)),
            (Some(a), None) => Some(crate::vocab::action::Step::One(a)),
            _ => None,
        };
        step.map(|s| s.to_string()).unwrap_or_default()
    }
}
