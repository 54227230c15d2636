//! Time on the order graph before any cost model: the timeline of an order under given durations
//! when only its edges hold events back (the longest path), and the schedule's logical time, in
//! which every compute action takes one slot (BigMac's global operator table, PyTorch's pipeline
//! CSV's time steps, the nested composition's clock).

use crate::graph::order::Order;
use petgraph::graph::NodeIndex;

/// Start time and duration of every node (indexed by node index), seconds from the step's
/// start; a node ends at its start plus its duration (read through [`Timeline::end_of`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub start: Vec<f64>,
    /// The durations the timeline was computed with (indexed by node index).
    pub durations: Vec<f64>,
    pub makespan: f64,
    /// One more than the index of the event whose finish set each node's start ([`UNBOUND`]
    /// when it starts at 0 unbound; so a fresh list is zeroed memory), where something but the
    /// order's edges can bind a start (a busy link); empty for a longest path, whose binder is
    /// read off the order's edges when asked. Read it through [`Timeline::binder_of`].
    pub binder: Vec<u32>,
}

/// When each rank's host launches each event's device work (DESIGN.md §3.1, a host-bound
/// runtime), by node index: an event starts no earlier than its launch starts and ends no
/// earlier than its launch ends (the device waits inside it for work not yet launched). Empty
/// lists: the host binds nothing (a node they miss is launched at 0).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launches {
    pub start: Vec<f64>,
    pub end: Vec<f64>,
}

impl Launches {
    /// Whether the host binds nothing.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.end.is_empty()
    }

    /// Node `i`'s start and duration when its inputs are in at `ready` and its work takes
    /// `duration`, and whether its launch (not an input) set its start.
    pub fn bind(&self, i: usize, ready: f64, duration: f64) -> (f64, f64, bool) {
        let from = self.start.get(i).copied().unwrap_or(0.0);
        let until = self.end.get(i).copied().unwrap_or(0.0);
        let start = if from > ready { from } else { ready };
        // Long enough that the end, `start + stretched`, is no earlier than the launch's end
        // (the difference may round a float short of it).
        let mut stretched = until - start;
        if start + stretched < until {
            stretched = stretched.next_up();
        }
        (
            start,
            if stretched > duration {
                stretched
            } else {
                duration
            },
            from > ready,
        )
    }
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
        let i = n.index();
        Some(self.start.get(i)? + self.durations.get(i)?)
    }

    /// When each node ends, by node index.
    pub fn ends(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.start.iter().zip(&self.durations).map(|(s, d)| s + d)
    }

    /// When node `n` starts and ends.
    pub fn span_of(&self, n: NodeIndex) -> Option<(f64, f64)> {
        Some((self.start_of(n)?, self.end_of(n)?))
    }

    /// The event whose finish set node `n`'s start in `order` (the order the timeline was
    /// computed for; `None` when it starts at 0 unbound): the recorded one, or, with none
    /// recorded (a longest path), the first of its predecessors to end last.
    pub fn binder_of(&self, order: &Order, n: NodeIndex) -> Option<NodeIndex> {
        if self.binder.is_empty() {
            return latest_pred(order, |p| self.end_of(NodeIndex::new(p)), n.index())
                .map(|(p, _)| NodeIndex::new(p));
        }
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

/// Node `i`'s predecessor in `order` that binds its start on a longest path with these ends,
/// and the start: the first predecessor to end last (the first one at all, when every
/// predecessor ends at 0); `None` and 0 without one.
fn latest_pred(
    order: &Order,
    end: impl Fn(usize) -> Option<f64>,
    i: usize,
) -> Option<(usize, f64)> {
    let preds = order.graph.preds(i);
    let (&first, rest) = preds.split_first()?;
    let mut bound = (first as usize, end(first as usize).unwrap_or(0.0).max(0.0));
    for &p in rest {
        let e = end(p as usize).unwrap_or(0.0);
        if e > bound.1 {
            bound = (p as usize, e);
        }
    }
    Some(bound)
}

/// The timeline of `order` with the given durations (indexed by node index) when nothing but
/// its edges holds an event back: the longest path, one pass in topological order. Only for a
/// deadlock-free order, whose `topological` holds every node in an order of its edges and
/// streams (what the deadlock check leaves; [`crate::sim::engine`] simulates any other event by
/// event): a node missing from it would start when its pushed predecessors end, and one listed
/// before a predecessor would start before that predecessor ends. It records no binders:
/// [`Timeline::binder_of`] reads them off the edges.
pub fn longest_path(order: &Order, mut durations: Vec<f64>) -> Timeline {
    let n = order.graph.node_count();
    // A node the durations miss takes none.
    durations.resize(n, 0.0);
    // Each node's start is the latest end of its predecessors (0 without one), pushed to it by
    // each predecessor as it ends: in topological order every predecessor of a node has ended
    // before the node's own end is read. The same starts as [`latest_pred`]'s (`max` of the
    // same ends; a NaN end is passed over by both, and no end is −0: a start is at least +0),
    // one read of a node's successors rather than two of each predecessor.
    let mut start = vec![0.0f64; n];
    let mut makespan = 0.0f64;
    let (ends, succs) = order.graph.successor_lists();
    for &v in &order.topological {
        let i = v as usize;
        let (Some(&s), Some(&d)) = (start.get(i), durations.get(i)) else {
            continue;
        };
        let end = s + d;
        if end > makespan {
            makespan = end;
        }
        let (Some(&a), Some(&b)) = (ends.get(i), ends.get(i + 1)) else {
            continue;
        };
        for &w in succs.get(a as usize..b as usize).unwrap_or_default() {
            if let Some(sw) = start.get_mut(w as usize)
                && end > *sw
            {
                *sw = end;
            }
        }
    }
    Timeline {
        start,
        durations,
        makespan,
        binder: Vec::new(),
    }
}

/// [`longest_path`] with each event held to its host's launch ([`Launches::bind`]): an event
/// the host binds may start after its inputs and last longer than its work. It records every
/// binder (none for an event its launch started: the host, not an event, bound it).
pub fn longest_path_launched(
    order: &Order,
    mut durations: Vec<f64>,
    launches: &Launches,
) -> Timeline {
    if launches.is_empty() {
        return longest_path(order, durations);
    }
    let n = order.graph.node_count();
    durations.resize(n, 0.0);
    let mut start = vec![0.0f64; n];
    let mut binder = vec![UNBOUND; n];
    let mut makespan = 0.0f64;
    for &v in &order.topological {
        let i = v as usize;
        let end = |p: usize| Some(start.get(p)? + durations.get(p)?);
        let bound = latest_pred(order, end, i);
        let ready = bound.map_or(0.0, |(_, e)| e);
        let (Some(ss), Some(d), Some(b)) =
            (start.get_mut(i), durations.get_mut(i), binder.get_mut(i))
        else {
            continue;
        };
        let (s, stretched, hosted) = launches.bind(i, ready, *d);
        (*ss, *d) = (s, stretched);
        *b = match bound {
            Some((p, _)) if !hosted => bound_by(p),
            _ => UNBOUND,
        };
        if s + stretched > makespan {
            makespan = s + stretched;
        }
    }
    Timeline {
        start,
        durations,
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
    longest_path(order, unit)
}
