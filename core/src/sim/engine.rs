//! The timed order graph: each rank's compute stream runs `nodes(r)` strictly in order; a
//! collective starts when its inputs are ready (optionally one at a time per directed link); an
//! event starts when its rank is free and every predecessor has finished. The makespan is the
//! longest path; the critical path is the chain of events that bound each start.

use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::{Launches, Timeline, UNBOUND, bound_by, longest_path_launched};
use crate::vocab::ids::Rank;
use petgraph::graph::NodeIndex;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// Simulation switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimOptions {
    /// Transfers on the same directed rank pair run one at a time, in the order they become ready.
    pub serialize_links: bool,
}

#[derive(PartialEq)]
struct Finish(f64, usize);

impl Eq for Finish {}

impl Ord for Finish {
    // Reversed: BinaryHeap is a max-heap, we want the earliest finish (then lowest index) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Finish {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Runs the order with the given durations (indexed by node index), which the timeline keeps.
pub fn simulate(order: &Order, durations: Vec<f64>, options: SimOptions) -> Timeline {
    simulate_launched(order, durations, &Launches::default(), options)
}

/// [`simulate`] with each event held to its host's launch ([`Launches::bind`]); the timeline
/// keeps the durations as they ran (an event the host binds lasts until its launch ends).
pub fn simulate_launched(
    order: &Order,
    durations: Vec<f64>,
    launches: &Launches,
    options: SimOptions,
) -> Timeline {
    if options.serialize_links || order.topological.len() != order.graph.node_count() {
        return simulate_events_launched(order, durations, launches, options);
    }
    // Without link contention the timeline is the longest path.
    longest_path_launched(order, durations, launches)
}

/// The event-driven simulation (a heap of finish times), needed when transfers queue on links;
/// without link contention it gives the same timeline as [`simulate`].
pub fn simulate_events(order: &Order, durations: Vec<f64>, options: SimOptions) -> Timeline {
    simulate_events_launched(order, durations, &Launches::default(), options)
}

/// [`simulate_events`] with each event held to its host's launch ([`Launches::bind`]); it gives
/// the same timeline as [`simulate_launched`] without link contention.
pub fn simulate_events_launched(
    order: &Order,
    mut durations: Vec<f64>,
    launches: &Launches,
    options: SimOptions,
) -> Timeline {
    let g = &order.graph;
    let n = g.node_count();
    // A node the durations miss takes none.
    durations.resize(n, 0.0);
    let mut remaining = g.in_degrees();
    let mut run = Running {
        order,
        launches,
        hosted: !launches.is_empty(),
        serialize_links: options.serialize_links,
        durations,
        ready: vec![0.0f64; n],
        binder: vec![UNBOUND; n],
        start: vec![0.0f64; n],
        link_free: HashMap::new(),
        heap: BinaryHeap::with_capacity(1024),
    };
    for i in 0..n {
        if remaining.get(i) == Some(&0) {
            run.launch(i);
        }
    }
    let mut makespan = 0.0f64;
    while let Some(Finish(t, i)) = run.heap.pop() {
        makespan = makespan.max(t);
        for &succ in g.succs(i) {
            let j = succ as usize;
            // The latest-finishing input binds the start (the first one on ties).
            if let (Some(r), Some(b)) = (run.ready.get_mut(j), run.binder.get_mut(j))
                && (t > *r || *b == UNBOUND)
            {
                *r = r.max(t);
                *b = bound_by(i);
            }
            if let Some(left) = remaining.get_mut(j) {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    run.launch(j);
                }
            }
        }
    }
    let Running {
        mut durations,
        start,
        binder,
        ..
    } = run;
    // A node that never started (an order that deadlocks) takes no time: it starts and ends
    // at 0.
    for (d, &left) in durations.iter_mut().zip(&remaining) {
        if left > 0 {
            *d = 0.0;
        }
    }
    Timeline {
        start,
        durations,
        makespan,
        binder,
    }
}

/// The event engine's state while it runs an order: each node's ready time, binder, start and
/// duration, the links' next free time, and the nodes running by their end.
struct Running<'a> {
    order: &'a Order,
    launches: &'a Launches,
    hosted: bool,
    serialize_links: bool,
    durations: Vec<f64>,
    ready: Vec<f64>,
    binder: Vec<u32>,
    start: Vec<f64>,
    link_free: HashMap<(Rank, Rank), (f64, NodeIndex)>,
    heap: BinaryHeap<Finish>,
}

impl Running<'_> {
    /// Starts node `i` once every input is in: at its ready time, or later on a busy link or
    /// held to its host's launch.
    fn launch(&mut self, i: usize) {
        let mut s = self.ready.get(i).copied().unwrap_or(0.0);
        if self.hosted
            && let Some(d) = self.durations.get_mut(i)
        {
            let (held, stretched, by_host) = self.launches.bind(i, s, *d);
            (s, *d) = (held, stretched);
            if by_host && let Some(b) = self.binder.get_mut(i) {
                *b = UNBOUND;
            }
        }
        let duration = self.durations.get(i).copied().unwrap_or(0.0);
        if self.serialize_links
            && let Some(Event::Coll {
                from_rank, to_rank, ..
            }) = self.order.graph.node_weight(NodeIndex::new(i))
            && from_rank != to_rank
        {
            let key = (*from_rank, *to_rank);
            if let Some(&(free, last)) = self.link_free.get(&key)
                && free > s
            {
                s = free;
                if let Some(b) = self.binder.get_mut(i) {
                    *b = bound_by(last.index());
                }
            }
            self.link_free
                .insert(key, (s + duration, NodeIndex::new(i)));
        }
        if let Some(ss) = self.start.get_mut(i) {
            *ss = s;
        }
        self.heap.push(Finish(s + duration, i));
    }
}

/// The chain of events that bound the step's end, from the first to the last.
pub fn critical_path(order: &Order, timeline: &Timeline) -> Vec<NodeIndex> {
    // The node that ends last (the lowest on a tie), by `f64::total_cmp`'s order: its key, an
    // integer compared as the floats are.
    let key = crate::sim::memory::total_order_key;
    let mut ends = timeline.ends().take(order.graph.node_count());
    let last = ends.next().map(|first| {
        let (mut latest, mut at) = (key(first), 0);
        for (i, end) in ends.enumerate() {
            let k = key(end);
            if k > latest {
                (latest, at) = (k, i + 1);
            }
        }
        NodeIndex::new(at)
    });
    let mut path = Vec::new();
    let mut at = last;
    let mut guard = order.graph.node_count() + 1;
    while let Some(v) = at {
        path.push(v);
        at = timeline.binder_of(order, v);
        guard -= 1;
        if guard == 0 {
            break;
        }
    }
    path.reverse();
    path
}

/// How long each event could start later without delaying the step: latest start minus start,
/// from a backward pass over the topological order (0 on the critical path).
pub fn slack(order: &Order, timeline: &Timeline) -> Vec<f64> {
    slack_held(order, timeline, &[])
}

/// [`slack`] where the device waited `host_wait` (by node index) inside events for their host's
/// launch: such an event could start that much later and still end where it does, so its latest
/// start is its latest end less its work.
pub fn slack_held(order: &Order, timeline: &Timeline, host_wait: &[f64]) -> Vec<f64> {
    let n = order.graph.node_count();
    let mut latest_end = vec![timeline.makespan; n];
    let mut slack = vec![0.0; n];
    for &v in order.topological.iter().rev() {
        let i = v as usize;
        let duration = timeline.duration_of(NodeIndex::new(i)).unwrap_or(0.0)
            - host_wait.get(i).copied().unwrap_or(0.0);
        let latest_start = latest_end.get(i).copied().unwrap_or(timeline.makespan) - duration;
        if let Some(s) = slack.get_mut(i) {
            *s = (latest_start - timeline.start.get(i).copied().unwrap_or(0.0)).max(0.0);
        }
        for &p in order.graph.preds(i) {
            if let Some(le) = latest_end.get_mut(p as usize) {
                *le = le.min(latest_start);
            }
        }
    }
    slack
}
