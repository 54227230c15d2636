//! BigMac's nested regions placed in real time. `derive` nests the encoder's and the generator's
//! work in the backbone's logical time (one slot per backbone action,
//! [`crate::graph::compose::nested`]); in a busy slot that costs the backbone behind it an encoder
//! action, and the delays cascade from rank to rank. Here, with the cost model, each nested
//! action is moved, one at a time and in the order they run, to the place in its owner's stream
//! that delays the backbone least:
//!
//! 1. the action is taken out of its rank's stream and the order simulated without it, with each
//!    event's slack (how much later it could start without delaying the step);
//! 2. every place in its owner's stream is priced by what the action would do there: start when
//!    the event before it ends and its inputs are in, push the event after it, and deliver its
//!    output (through its seam transfer) to the backbone action that consumes it — first by how
//!    much that lengthens the step (a push or lateness beyond the slack), then by how much it
//!    moves any backbone event at all;
//! 3. among equally good places an encoder forward takes the latest (just in time) and every other
//!    nested action the earliest (as soon as its inputs are in);
//! 4. the move is kept only if the order stays deadlock-free, the step no longer and the backbone
//!    as a whole (the sum of its actions' ends) no later; otherwise the action stays put.
//!
//! The nested regions' gradient reduces start at the end of their streams (so no backward has
//! to move past one) and are placed last, the same way. So an action goes into a real idle gap
//! whenever one is reachable, and when none is, where its delay costs the step least; the
//! result is never slower than the logical placement (if it were, the logical one is kept).
//! Memory stays bounded in the number of microbatches: microbatch `m`'s encoder forward starts
//! no earlier than the backbone takes in microbatch `m − L`, and the other nested actions of `m`
//! start no later than the backbone's matching action of `m + L` (`L` = the number of ranks),
//! so at most about `2L` microbatches' modality activations are alive at once, whatever `M`.
//! No backbone action changes its place in its rank's order.

use crate::algebra::plan::Plan;
use crate::graph::deadlock::check_deadlock;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::Timeline;
use crate::sim::engine::{SimOptions, simulate, slack};
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use rustc_hash::{FxHashMap, FxHashSet};

/// What a nested action is, which decides where it prefers to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    EncoderForward,
    EncoderBackward,
    GeneratorForward,
    GeneratorBackward,
    /// A nested region's gradient reduce.
    Reduce,
}

impl Kind {
    /// Whether the backbone action it answers to consumes its output (else: produces its input).
    fn feeds_backbone(self) -> bool {
        matches!(self, Kind::EncoderForward | Kind::GeneratorBackward)
    }
}

/// What node `n` is to the nested regions `encoder` and `generator`, if it is theirs.
fn kind_of(
    g: &crate::graph::order_graph::OrderGraph,
    n: NodeIndex,
    encoder: Option<usize>,
    generator: Option<usize>,
) -> Option<Kind> {
    let of = |region: crate::vocab::ids::RegionId| Some(usize::from(region));
    match *g.node_weight(n)? {
        Event::Fwd { region, .. } if of(region) == encoder => Some(Kind::EncoderForward),
        Event::Bwd { region, .. } if of(region) == encoder => Some(Kind::EncoderBackward),
        Event::Fwd { region, .. } if of(region) == generator => Some(Kind::GeneratorForward),
        Event::Bwd { region, .. } if of(region) == generator => Some(Kind::GeneratorBackward),
        Event::DpReduce { region, .. } if of(region) == encoder || of(region) == generator => {
            Some(Kind::Reduce)
        }
        _ => None,
    }
}

/// One nested action as it sits in its rank's stream: the action, and the loss that follows a
/// generator's forward.
#[derive(Debug, Clone)]
struct Item {
    nodes: Vec<NodeIndex>,
    kind: Kind,
    mb: usize,
    rank: usize,
}

/// How many event visits the placement may spend in all (a few seconds on one core); the
/// actions left when it is spent keep their logical places.
pub const WORK_BUDGET: usize = 60_000_000;

/// Event visits per action placed: the graph laid out, topological order, simulation and slack
/// without it; the graph laid out, deadlock check and simulation with it.
const PASSES: usize = 7;

/// Whether `plan` has a nested region, which [`place`] moves.
pub fn has_nested(plan: &Plan) -> bool {
    let (encoder, generator) = crate::graph::compose::nested::regions(plan);
    encoder.is_some() || generator.is_some()
}

/// The event visits [`place`] spends on `order` when nothing stops it.
pub fn work(plan: &Plan, order: &Order) -> usize {
    let (encoder, generator) = crate::graph::compose::nested::regions(plan);
    let nested = order
        .graph
        .node_indices()
        .filter(|&n| {
            kind_of(&order.graph, n, encoder, generator).is_some_and(|k| k != Kind::Reduce)
        })
        .count();
    nested
        .saturating_mul(PASSES)
        .saturating_mul(order.graph.node_count())
}

/// The nested actions of `order` (derived in logical time) moved to the places in their owners'
/// streams that delay the backbone least under `durations` (see the module). The backbone's
/// per-rank order is unchanged. `work` is the budget of event visits left, spent as the
/// placement goes; progress goes to `keep_going` (0 to 1), and when it returns false the actions
/// not yet placed keep their logical places. Without nested regions, `order` comes back as it is.
pub fn place(
    plan: &Plan,
    mut order: Order,
    durations: &[f64],
    options: SimOptions,
    work: &mut usize,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Order {
    let (encoder, generator) = crate::graph::compose::nested::regions(plan);
    if encoder.is_none() && generator.is_none() {
        return order;
    }
    let original = order.nodes.clone();
    let logical = simulate(&order, durations.to_vec(), options);
    let (mut items, streams) = split(&order, encoder, generator);
    let anchors = anchors(&order, &items);
    let pairs: FxHashMap<NodeIndex, NodeIndex> = order.pairs.iter().map(|&[a, b]| (a, b)).collect();
    let nested: FxHashSet<NodeIndex> = items.iter().flat_map(|i| i.nodes.iter().copied()).collect();
    let backbone: Vec<usize> = order
        .graph
        .node_indices()
        .filter(|n| {
            !nested.contains(n) && order.graph.node_weight(*n).is_some_and(Event::is_compute)
        })
        .map(|n| n.index())
        .collect();

    // The actions in the order they run in logical time, then the reduces, which start at the
    // end of their streams (where no backward can move past them) and go where they cost least.
    let at = |i: &Item| i.nodes.first().and_then(|&n| logical.start_of(n));
    items.sort_by(|a, b| {
        (a.kind == Kind::Reduce)
            .cmp(&(b.kind == Kind::Reduce))
            .then(earliest_first(at(a), at(b)))
            .then(a.nodes.cmp(&b.nodes))
    });
    order.nodes.clone_from(&streams);
    let Some(current) = with_order(&mut order)
        .map(|()| Measure::of(&simulate(&order, durations.to_vec(), options), &backbone))
    else {
        return restored(order, original);
    };
    let cost = order.graph.node_count().max(1).saturating_mul(PASSES);
    let mut search = Search {
        order,
        streams,
        durations,
        zeroed: durations.to_vec(),
        options,
        pairs,
        backbone,
        window: Window {
            lead: plan.ranks.max(1),
            anchors: &anchors,
        },
        current,
    };
    let total = items.len().max(1) as f32;
    for (done, item) in items.iter().enumerate() {
        if *work < cost || !keep_going(done as f32 / total) {
            break;
        }
        *work -= cost;
        search.try_item(item);
    }
    let Search {
        mut order, streams, ..
    } = search;
    order.nodes = streams;
    // Each move is checked, but the reduces moved to the ends first: the whole is kept only if
    // it is no slower than the logical placement.
    let kept = with_order(&mut order).is_some_and(|()| {
        simulate(&order, durations.to_vec(), options).makespan <= logical.makespan
    });
    if kept {
        order
    } else {
        restored(order, original)
    }
}

/// The placement under way: the order with its streams, and how the step and the backbone
/// measure with the moves kept so far.
struct Search<'a> {
    order: Order,
    streams: Vec<Vec<NodeIndex>>,
    durations: &'a [f64],
    /// `durations` with the action being placed taking none.
    zeroed: Vec<f64>,
    options: SimOptions,
    pairs: FxHashMap<NodeIndex, NodeIndex>,
    /// The backbone's compute actions, by node index.
    backbone: Vec<usize>,
    window: Window<'a>,
    current: Measure,
}

impl Search<'_> {
    /// Moves `item` to its best place in its owner's stream, kept only if it deadlocks nothing,
    /// the step is no longer for it and the backbone as a whole no later.
    fn try_item(&mut self, item: &Item) {
        let Some(stream) = self.streams.get_mut(item.rank) else {
            return;
        };
        let saved = stream.clone();
        // The order without the action, which takes no time.
        stream.retain(|n| !item.nodes.contains(n));
        set(&mut self.zeroed, &item.nodes, |_| 0.0);
        self.order.nodes.clone_from(&self.streams);
        let timed = with_timing(&mut self.order, &self.zeroed, self.options);
        let durations = self.durations;
        set(&mut self.zeroed, &item.nodes, |n| {
            durations.get(n.index()).copied().unwrap_or(0.0)
        });
        let Some(stream) = self.streams.get_mut(item.rank) else {
            return;
        };
        let place = timed.as_ref().and_then(|(timeline, slack)| {
            Context {
                order: &self.order,
                timeline,
                slack,
                durations,
                pairs: &self.pairs,
            }
            .best_place(item, stream, &self.window)
        });
        if let Some(at) = place {
            insert(stream, at, &item.nodes);
        }
        let moved = place.is_some() && *stream != saved;
        self.order.nodes.clone_from(&self.streams);
        let measured = Some(())
            .filter(|()| moved)
            .and_then(|()| with_order(&mut self.order))
            .map(|()| {
                Measure::of(
                    &simulate(&self.order, durations.to_vec(), self.options),
                    &self.backbone,
                )
            })
            .filter(|m| m.no_worse_than(&self.current));
        match measured {
            Some(m) => self.current = m,
            None => {
                if let Some(stream) = self.streams.get_mut(item.rank) {
                    *stream = saved;
                }
            }
        }
    }
}

/// `order` with its streams set back to `original` (its logical placement, which was checked
/// when it was built).
fn restored(mut order: Order, original: Vec<Vec<NodeIndex>>) -> Order {
    order.nodes = original;
    let _ = with_order(&mut order);
    order
}

/// The nested actions of `order` (with the nested regions' reduces), and each rank's stream
/// with those reduces moved to its end.
fn split(
    order: &Order,
    encoder: Option<usize>,
    generator: Option<usize>,
) -> (Vec<Item>, Vec<Vec<NodeIndex>>) {
    let g = &order.graph;
    let kind_of = |n: NodeIndex| kind_of(g, n, encoder, generator);
    let mut items = Vec::new();
    let mut streams = Vec::with_capacity(order.nodes.len());
    for (rank, list) in order.nodes.iter().enumerate() {
        let mut stream = Vec::with_capacity(list.len());
        let mut reduces = Vec::new();
        for (i, &n) in list.iter().enumerate() {
            let kind = kind_of(n);
            if kind == Some(Kind::Reduce) {
                reduces.push(n);
            } else {
                stream.push(n);
            }
            let Some(kind) = kind else { continue };
            let mut nodes = vec![n];
            // A generator's forward carries the loss that follows it.
            if let Some(&next) = list.get(i + 1)
                && matches!(g.node_weight(next), Some(Event::Loss { .. }))
                && g.contains_edge(n, next)
            {
                nodes.push(next);
            }
            let mb = g.node_weight(n).and_then(Event::mb).unwrap_or(0);
            items.push(Item {
                nodes,
                kind,
                mb,
                rank,
            });
        }
        stream.extend(reduces);
        streams.push(stream);
    }
    (items, streams)
}

/// What a move must not make worse: the step, and the backbone as a whole (the sum of its
/// actions' ends).
#[derive(Debug, Clone, Copy)]
struct Measure {
    makespan: f64,
    backbone: f64,
}

impl Measure {
    fn of(timeline: &Timeline, backbone: &[usize]) -> Self {
        Measure {
            makespan: timeline.makespan,
            backbone: backbone
                .iter()
                .map(|&i| timeline.end_of(NodeIndex::new(i)).unwrap_or(0.0))
                .sum(),
        }
    }

    /// A shorter step, or as long a one with the backbone no later (the sum's tolerance grows
    /// with the number of actions in it).
    fn no_worse_than(&self, other: &Measure) -> bool {
        let eps = 1e-9 * other.makespan.max(f64::MIN_POSITIVE);
        let sum_eps = eps * (other.backbone / other.makespan.max(f64::MIN_POSITIVE)).max(1.0);
        self.makespan < other.makespan - eps
            || (self.makespan <= other.makespan + eps && self.backbone <= other.backbone + sum_eps)
    }
}

fn insert(stream: &mut Vec<NodeIndex>, at: usize, nodes: &[NodeIndex]) {
    let at = at.min(stream.len());
    stream.splice(at..at, nodes.iter().copied());
}

fn set(durations: &mut [f64], nodes: &[NodeIndex], value: impl Fn(NodeIndex) -> f64) {
    for &n in nodes {
        if let Some(d) = durations.get_mut(n.index()) {
            *d = value(n);
        }
    }
}

/// Lays `order`'s graph out again with its streams, and its topological order; `None` when they
/// deadlock.
fn with_order(order: &mut Order) -> Option<()> {
    order.graph.freeze(&order.nodes);
    order.topological = check_deadlock(order).ok()?;
    Some(())
}

/// [`with_order`], then the timeline and every event's slack under `durations`.
fn with_timing(
    order: &mut Order,
    durations: &[f64],
    options: SimOptions,
) -> Option<(Timeline, Vec<f64>)> {
    with_order(order)?;
    let timeline = simulate(order, durations.to_vec(), options);
    let slack = slack(order, &timeline);
    Some((timeline, slack))
}

/// Whether `n` runs on a rank's stream (or is the step's end), rather than between them.
fn on_stream(order: &Order, n: NodeIndex) -> bool {
    order
        .graph
        .node_weight(n)
        .is_some_and(|e| e.rank().is_some() || matches!(e, Event::StepBarrier))
}

/// The backbone actions next to `nodes` in `direction`, through the transfers between them.
fn backbone_neighbours(
    order: &Order,
    nodes: &[NodeIndex],
    direction: Direction,
    mut visit: impl FnMut(NodeIndex, NodeIndex),
) {
    let mut stack: Vec<(NodeIndex, usize)> = nodes.iter().map(|&n| (n, 0)).collect();
    while let Some((at, depth)) = stack.pop() {
        for next in order.graph.neighbors_directed(at, direction) {
            if nodes.contains(&next) {
                continue;
            }
            if on_stream(order, next) {
                visit(at, next);
            } else if depth < 8 {
                stack.push((next, depth + 1));
            }
        }
    }
}

/// The backbone action each nested action answers to, by kind and microbatch (what an encoder
/// forward feeds, what sends an encoder backward its gradient, what a generator's forward takes
/// its input from, what its backward feeds).
fn anchors(order: &Order, items: &[Item]) -> FxHashMap<(Kind, usize), NodeIndex> {
    let backbone = |n: NodeIndex| {
        order.graph.node_weight(n).is_some_and(Event::is_compute)
            && !items.iter().any(|i| i.nodes.contains(&n))
    };
    let mut out = FxHashMap::default();
    for item in items {
        let direction = if item.kind.feeds_backbone() {
            Direction::Outgoing
        } else {
            Direction::Incoming
        };
        let mut found = None;
        backbone_neighbours(order, &item.nodes, direction, |_, n| {
            if found.is_none() && backbone(n) {
                found = Some(n);
            }
        });
        if let Some(n) = found {
            out.insert((item.kind, item.mb), n);
        }
    }
    out
}

/// Where microbatch `m`'s nested actions may start: an encoder forward no earlier than the
/// backbone takes in microbatch `m − lead`, any other no later than the backbone's matching
/// action of `m + lead` starts.
struct Window<'a> {
    lead: usize,
    anchors: &'a FxHashMap<(Kind, usize), NodeIndex>,
}

impl Window<'_> {
    /// `(earliest, latest)` start of `item` in `timeline`.
    fn bounds(&self, item: &Item, timeline: &Timeline) -> (f64, f64) {
        if item.kind == Kind::EncoderForward {
            let earliest = item
                .mb
                .checked_sub(self.lead)
                .and_then(|m| self.anchors.get(&(item.kind, m)))
                .and_then(|&n| timeline.start_of(n))
                .unwrap_or(0.0);
            (earliest, f64::INFINITY)
        } else {
            let latest = self
                .anchors
                .get(&(item.kind, item.mb + self.lead))
                .and_then(|&n| timeline.start_of(n))
                .unwrap_or(f64::INFINITY);
            (0.0, latest)
        }
    }
}

/// Times in order, an unknown one first.
fn earliest_first(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(&b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// The order without the action being placed, timed.
struct Context<'a> {
    order: &'a Order,
    timeline: &'a Timeline,
    slack: &'a [f64],
    durations: &'a [f64],
    /// Each overlapped pair's second event by its first.
    pairs: &'a FxHashMap<NodeIndex, NodeIndex>,
}

/// What a place costs: how much it lengthens the step, then how much it moves the backbone.
#[derive(Debug, Clone, Copy)]
struct Price {
    longer: f64,
    moved: f64,
}

impl Context<'_> {
    fn slack_of(&self, n: NodeIndex) -> f64 {
        self.slack.get(n.index()).copied().unwrap_or(0.0)
    }

    /// The best place for `item` in `stream` (its rank's stream without it), as an index to
    /// insert at; `None` when there is no place to put it.
    fn best_place(&self, item: &Item, stream: &[NodeIndex], window: &Window) -> Option<usize> {
        let t = self.timeline;
        let duration: f64 = item
            .nodes
            .iter()
            .map(|n| self.durations.get(n.index()).copied().unwrap_or(0.0))
            .sum();
        // Its inputs are in once every producer outside it is done.
        let mut ready = 0.0f64;
        for &n in &item.nodes {
            for p in self.order.graph.neighbors_directed(n, Direction::Incoming) {
                if !item.nodes.contains(&p)
                    && let Some(end) = t.end_of(p)
                {
                    ready = ready.max(end);
                }
            }
        }
        // Its output must be out by `strict` for no consumer to move, by `loose` for the step
        // not to lengthen.
        let (mut strict, mut loose) = (f64::INFINITY, f64::INFINITY);
        for &n in &item.nodes {
            for next in self.order.graph.neighbors_directed(n, Direction::Outgoing) {
                if !item.nodes.contains(&next) {
                    self.deadline(next, 0.0, 0, &mut strict, &mut loose);
                }
            }
        }
        let (earliest, latest) = window.bounds(item, t);
        let eps = 1e-9 * t.makespan.max(f64::MIN_POSITIVE);
        let late_preferred = item.kind == Kind::EncoderForward;
        let mut best: Option<(usize, Price)> = None;
        let mut best_outside: Option<(usize, Price)> = None;
        for at in 0..=stream.len() {
            let before = at.checked_sub(1).and_then(|i| stream.get(i)).copied();
            let after = stream.get(at).copied();
            if !self.may_insert(before, after) {
                continue;
            }
            // Nothing before it: it may start at 0; nothing after: nothing to push.
            let start = before.and_then(|n| t.end_of(n)).unwrap_or(0.0).max(ready);
            let end = start + duration;
            let (next_start, next_slack) = after
                .and_then(|n| Some((t.start_of(n)?, self.slack_of(n))))
                .unwrap_or((f64::INFINITY, f64::INFINITY));
            let push = (end - next_start).max(0.0);
            let price = Price {
                longer: (push - next_slack).max(end - loose).max(0.0),
                moved: push.max(end - strict).max(0.0),
            };
            let inside = start + eps >= earliest && start <= latest + eps;
            let slot = if inside { &mut best } else { &mut best_outside };
            let better = match slot {
                None => true,
                Some((_, b)) => {
                    price.longer < b.longer - eps
                        || (price.longer <= b.longer + eps
                            && (price.moved < b.moved - eps
                                || (late_preferred && price.moved <= b.moved + eps)))
                }
            };
            if better {
                *slot = Some((at, price));
            }
        }
        best.or(best_outside).map(|(at, _)| at)
    }

    /// Lowers `strict` and `loose` to when an output reaching `n` after `chain` seconds of
    /// transfers must be out.
    fn deadline(&self, n: NodeIndex, chain: f64, depth: usize, strict: &mut f64, loose: &mut f64) {
        let t = self.timeline;
        if on_stream(self.order, n) {
            if let Some(start) = t.start_of(n) {
                *strict = strict.min(start - chain);
                *loose = loose.min(start + self.slack_of(n) - chain);
            }
            return;
        }
        if depth >= 8 {
            return;
        }
        let chain = chain + self.durations.get(n.index()).copied().unwrap_or(0.0);
        for next in self.order.graph.neighbors_directed(n, Direction::Outgoing) {
            self.deadline(next, chain, depth + 1, strict, loose);
        }
    }

    /// Whether a nested action may go between `before` and `after`: not inside an overlapped
    /// pair, and not between a forward and the loss that follows it.
    fn may_insert(&self, before: Option<NodeIndex>, after: Option<NodeIndex>) -> bool {
        let Some(after) = after else { return true };
        if matches!(
            self.order.graph.node_weight(after),
            Some(Event::Loss { .. })
        ) {
            return false;
        }
        before.is_none_or(|b| self.pairs.get(&b) != Some(&after))
    }
}
