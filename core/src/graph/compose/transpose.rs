//! Mpipe's transpose as a composition policy: how a Replicated region's work joins each rank's
//! stream of wavefront events. A Replicated first region (the transposed encoder) runs its owned
//! forwards before the rank's wavefront (in its warmup window) and its backwards after it (in the
//! cooldown); Replicated regions later in the model join by a unit-time list schedule.

use crate::graph::builder::Builder;
use crate::graph::builder::wavefront_sequence;
use crate::graph::event::Event;
use crate::vocab::layout::Layout;
use crate::vocab::phase::Phase;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use std::collections::BTreeSet;

/// Per-rank compute orders (Fwd/Bwd only) of the derived schedule.
///
/// The wavefront (all Sharded regions) fixes each rank's sequence of Sharded work. A Replicated
/// first region (the transposed encoder) runs its owned forwards before anything else on the rank
/// and its backwards after the rank's last wavefront event. Replicated regions later in the model
/// (between Sharded regions, or a sink) are placed by a unit-time list schedule: each rank runs
/// its next wavefront event when it is ready, and any ready Replicated event first. Such events
/// only delay the wavefront, never reorder it, so the order stays deadlock-free.
pub(crate) fn merged_orders(b: &Builder) -> Vec<Vec<NodeIndex>> {
    let plan = b.plan;
    let p = plan.ranks;
    let source = plan
        .regions
        .first()
        .filter(|r| r.layout() == Layout::Replicated)
        .map(|r| r.index);
    let mut prologue: Vec<Vec<NodeIndex>> = vec![Vec::new(); p];
    let mut epilogue: Vec<Vec<NodeIndex>> = vec![Vec::new(); p];
    let mut floating = vec![false; b.graph.node_count()];
    for region in &plan.regions {
        if region.layout() != Layout::Replicated {
            continue;
        }
        for mb in 0..plan.microbatches {
            let rank = plan.owner_of(mb);
            for phase in [Phase::Forward, Phase::Backward] {
                let Some(n) = b.compute(phase, region.index, rank, mb) else {
                    continue;
                };
                match (
                    Some(region.index) == source,
                    phase,
                    prologue.get_mut(rank),
                    epilogue.get_mut(rank),
                ) {
                    (true, Phase::Forward, Some(list), _) => list.push(n),
                    (true, Phase::Backward, _, Some(list)) => list.push(n),
                    _ => {
                        if let Some(flag) = floating.get_mut(n.index()) {
                            *flag = true;
                        }
                    }
                }
            }
        }
    }
    let queues: Vec<Vec<NodeIndex>> = (0..p)
        .map(|rank| {
            plan.wavefront
                .as_ref()
                .map(|w| wavefront_sequence(b, w, rank))
                .unwrap_or_default()
        })
        .collect();

    // Fast path: Replicated work only at the source: concatenate (each rank's queue, the bulk of
    // its events, kept where it is when there is no prologue to put before it).
    if !floating.iter().any(|&f| f) {
        return queues
            .into_iter()
            .enumerate()
            .map(|(r, queue)| {
                let mut order = match prologue.get_mut(r).map(std::mem::take) {
                    Some(mut before) if !before.is_empty() => {
                        before.extend(queue);
                        before
                    }
                    _ => queue,
                };
                order.extend(epilogue.get(r).into_iter().flatten().copied());
                order
            })
            .collect();
    }
    list_schedule(b, &prologue, &epilogue, &queues, &floating)
}

/// A rank's progress through its sequences during the list schedule.
pub(crate) struct Cursor<'a> {
    pub(crate) prologue: &'a [NodeIndex],
    pub(crate) epilogue: &'a [NodeIndex],
    pub(crate) queue: &'a [NodeIndex],
    pub(crate) pro_at: usize,
    pub(crate) epi_at: usize,
    pub(crate) queue_at: usize,
    /// Ready floating (non-source Replicated) events: (ready tick, region, mb, node).
    pub(crate) floats: BTreeSet<(u64, usize, usize, NodeIndex)>,
    pub(crate) running: Option<NodeIndex>,
    pub(crate) order: Vec<NodeIndex>,
}

impl Cursor<'_> {
    /// Takes the next event this rank may run now, if any.
    pub(crate) fn take_next(
        &mut self,
        ready: impl Fn(NodeIndex) -> Option<u64>,
    ) -> Option<NodeIndex> {
        if let Some(&n) = self.prologue.get(self.pro_at) {
            ready(n)?;
            self.pro_at += 1;
            return Some(n);
        }
        if let Some(key) = self.floats.pop_first() {
            return Some(key.3);
        }
        if let Some(&n) = self.queue.get(self.queue_at) {
            ready(n)?;
            self.queue_at += 1;
            return Some(n);
        }
        if let Some(&n) = self.epilogue.get(self.epi_at) {
            ready(n)?;
            self.epi_at += 1;
            return Some(n);
        }
        None
    }

    /// Everything not yet run, in sequence order (used only when the schedule is stuck).
    pub(crate) fn leftovers(&self) -> Vec<NodeIndex> {
        let pro = self.prologue.get(self.pro_at..).unwrap_or_default();
        let queued = self.queue.get(self.queue_at..).unwrap_or_default();
        let epi = self.epilogue.get(self.epi_at..).unwrap_or_default();
        pro.iter().chain(queued).chain(epi).copied().collect()
    }
}

pub(crate) fn list_schedule(
    b: &Builder,
    prologue: &[Vec<NodeIndex>],
    epilogue: &[Vec<NodeIndex>],
    queues: &[Vec<NodeIndex>],
    floating: &[bool],
) -> Vec<Vec<NodeIndex>> {
    let g = &b.graph;
    let empty: &[NodeIndex] = &[];
    let mut run = ListRun {
        g,
        floating,
        remaining: g
            .node_indices()
            .map(|n| g.neighbors_directed(n, Direction::Incoming).count())
            .collect(),
        ready_at: vec![None; g.node_count()],
        cursors: (0..b.plan.ranks)
            .map(|r| Cursor {
                prologue: prologue.get(r).map_or(empty, Vec::as_slice),
                epilogue: epilogue.get(r).map_or(empty, Vec::as_slice),
                queue: queues.get(r).map_or(empty, Vec::as_slice),
                pro_at: 0,
                epi_at: 0,
                queue_at: 0,
                floats: BTreeSet::new(),
                running: None,
                order: Vec::new(),
            })
            .collect(),
    };
    let is_compute = |n: NodeIndex| g.node_weight(n).is_some_and(Event::is_compute);
    let total = g.node_indices().filter(|&n| is_compute(n)).count();
    for n in g.node_indices() {
        if run.remaining.get(n.index()) == Some(&0) && is_compute(n) {
            run.mark_ready(n, 0);
        }
    }
    let mut scheduled = 0usize;
    let mut t: u64 = 0;
    loop {
        run.complete(t);
        if scheduled >= total {
            break;
        }
        let started = run.start();
        scheduled += started;
        if started == 0 {
            // Nothing can run: the remaining events wait on each other. Append the leftovers so
            // the deadlock check sees them and names the cycle.
            for cursor in &mut run.cursors {
                let rest = cursor.leftovers();
                cursor.order.extend(rest);
            }
            break;
        }
        t += 1;
    }
    run.cursors.into_iter().map(|c| c.order).collect()
}

/// The list schedule under way: what each event still waits for, when each became ready, and
/// each rank's cursor.
struct ListRun<'a> {
    g: &'a crate::graph::order_graph::OrderGraph,
    floating: &'a [bool],
    remaining: Vec<usize>,
    ready_at: Vec<Option<u64>>,
    cursors: Vec<Cursor<'a>>,
}

impl ListRun<'_> {
    /// Compute event `n` is ready at tick `t` (a floating one joins its rank's floats).
    fn mark_ready(&mut self, n: NodeIndex, t: u64) {
        if let Some(slot) = self.ready_at.get_mut(n.index()) {
            *slot = Some(t);
        }
        if self.floating.get(n.index()).copied().unwrap_or(false)
            && let Some(
                Event::Fwd {
                    region, rank, mb, ..
                }
                | Event::Bwd {
                    region, rank, mb, ..
                },
            ) = self.g.node_weight(n)
            && let Some(cursor) = self.cursors.get_mut(rank.index())
        {
            cursor.floats.insert((t, region.index(), mb.index(), n));
        }
    }

    /// Completes what ran during the last tick (collectives and losses complete instantly),
    /// marking what that makes ready at `t`.
    fn complete(&mut self, t: u64) {
        let mut work: Vec<NodeIndex> = self
            .cursors
            .iter_mut()
            .filter_map(|c| c.running.take())
            .collect();
        while let Some(done) = work.pop() {
            for succ in self.g.neighbors_directed(done, Direction::Outgoing) {
                let Some(left) = self.remaining.get_mut(succ.index()) else {
                    continue;
                };
                *left = left.saturating_sub(1);
                if *left > 0 {
                    continue;
                }
                match self.g.node_weight(succ) {
                    Some(Event::Coll { .. } | Event::Loss { .. }) => work.push(succ),
                    Some(e) if e.is_compute() => self.mark_ready(succ, t),
                    _ => {}
                }
            }
        }
    }

    /// Starts on each rank the next event it may run; how many started.
    fn start(&mut self) -> usize {
        let mut started = 0;
        let ready_at = &self.ready_at;
        for cursor in &mut self.cursors {
            let ready = |n: NodeIndex| ready_at.get(n.index()).copied().flatten();
            if let Some(node) = cursor.take_next(ready) {
                cursor.order.push(node);
                cursor.running = Some(node);
                started += 1;
            }
        }
        started
    }
}
