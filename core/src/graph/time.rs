//! Time on the order graph before any cost model: the timeline of an order under given durations
//! when only its edges hold events back (the longest path), and the schedule's logical time, in
//! which every compute action takes one slot (BigMac's global operator table, PyTorch's pipeline
//! CSV's time steps, the nested composition's clock).

use crate::graph::order::Order;
use petgraph::graph::NodeIndex;

/// Start and end time of every node (indexed by node index), seconds from the step's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub makespan: f64,
    /// One more than the index of the event whose finish set each node's start ([`UNBOUND`]
    /// when it starts at 0 unbound; so a fresh list is zeroed memory): read it through
    /// [`Timeline::binder_of`].
    pub binder: Vec<u32>,
}

/// A [`Timeline::binder`] entry of a node nothing binds.
pub const UNBOUND: u32 = 0;

/// The [`Timeline::binder`] entry of a node bound by node `index`.
pub fn bound_by(index: usize) -> u32 {
    u32::try_from(index)
        .ok()
        .and_then(|i| i.checked_add(1))
        .unwrap_or(UNBOUND)
}

/// Lookups by node: `None` for a node that is not in the order the timeline was computed for
/// (a bug to surface, never a time to make up).
impl Timeline {
    /// When node `n` starts.
    pub fn start_of(&self, n: NodeIndex) -> Option<f64> {
        self.start.get(n.index()).copied()
    }

    /// When node `n` ends.
    pub fn end_of(&self, n: NodeIndex) -> Option<f64> {
        self.end.get(n.index()).copied()
    }

    /// When node `n` starts and ends.
    pub fn span_of(&self, n: NodeIndex) -> Option<(f64, f64)> {
        Some((self.start_of(n)?, self.end_of(n)?))
    }

    /// The event whose finish set node `n`'s start (`None` when it starts at 0 unbound).
    pub fn binder_of(&self, n: NodeIndex) -> Option<NodeIndex> {
        match self.binder.get(n.index()) {
            Some(&b) if b != UNBOUND => Some(NodeIndex::new(b as usize - 1)),
            _ => None,
        }
    }

    /// How long node `n` takes.
    pub fn duration_of(&self, n: NodeIndex) -> Option<f64> {
        self.span_of(n).map(|(s, e)| e - s)
    }
}

/// The timeline of `order` with the given durations (indexed by node index) when nothing but
/// its edges holds an event back: the longest path, one pass in topological order.
pub fn longest_path(order: &Order, durations: &[f64]) -> Timeline {
    let n = order.graph.node_count();
    let mut start = vec![0.0f64; n];
    let mut end = vec![0.0f64; n];
    let mut binder: Vec<u32> = vec![UNBOUND; n];
    let mut makespan = 0.0f64;
    for &v in &order.topological {
        let i = v as usize;
        // The first predecessor to end last binds the start (the first one at all, when every
        // predecessor ends at 0).
        let preds = order.graph.preds(i);
        let (mut s, mut bound) = match preds.first() {
            Some(&p) => (
                end.get(p as usize).copied().unwrap_or(0.0).max(0.0),
                Some(p),
            ),
            None => (0.0, None),
        };
        for &p in preds.get(1..).unwrap_or_default() {
            let e = end.get(p as usize).copied().unwrap_or(0.0);
            if e > s {
                s = e;
                bound = Some(p);
            }
        }
        let e = s + durations.get(i).copied().unwrap_or(0.0);
        if let (Some(ss), Some(ee), Some(b)) = (start.get_mut(i), end.get_mut(i), binder.get_mut(i))
        {
            *ss = s;
            *ee = e;
            *b = bound.map_or(UNBOUND, |p| bound_by(p as usize));
        }
        makespan = makespan.max(e);
    }
    Timeline {
        start,
        end,
        makespan,
        binder,
    }
}

/// The schedule's logical time: the order simulated with every compute action taking one slot
/// (an overlapped pair, run as one, two) and nothing else any time (a start is the action's
/// slot).
pub fn logical_time(order: &Order) -> Timeline {
    let graph = &order.graph;
    let unit: Vec<f64> = graph
        .node_indices()
        .map(|n| match graph.node_weight(n) {
            // An early recomputation takes no slot of its own (it is no PyTorch action).
            Some(crate::graph::event::Event::Recompute { .. }) => 0.0,
            Some(e) if e.is_compute() => 1.0,
            _ => 0.0,
        })
        .collect();
    longest_path(order, &unit)
}
