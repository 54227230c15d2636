//! The order graph: typed events joined by typed edges (a `petgraph` DAG), and `nodes(r)`, each
//! rank's events in execution order; with the deadlock check that names the cycle.

use crate::algebra::collectives::{Gates, gates, seam_comms};
use crate::algebra::plan::{Plan, Region, Wavefront};
use crate::algebra::skeleton::{Layout, Skeleton};
use crate::graph::adjacency::Adjacency;
use crate::graph::event::{Action, Comm, EdgeKind, Event, Group, Phase, Seam};
use crate::schedules::wavefront::{self, Slot};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap};

/// Why an order cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("rule `orders`: `{path}`: {message}")]
    Explicit { path: String, message: String },
    #[error("rule `deadlock-free`: the per-rank order deadlocks; each event waits for the next: {}", cycle.join(" → "))]
    Deadlock { cycle: Vec<String> },
}

impl OrderError {
    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            OrderError::Explicit { path, .. } => path.clone(),
            OrderError::Deadlock { .. } => "orders".to_string(),
        }
    }
}

/// The `order` output of `derive`.
#[derive(Debug, Clone)]
pub struct Order {
    /// Data dependencies only: Activation, Gradient, Turnaround, Accumulate and Sequence edges.
    pub graph: DiGraph<Event, EdgeKind>,
    /// `nodes(r)`: the compute-stream events of rank `r` (Fwd, Bwd, Loss, DpReduce) in execution order.
    pub nodes: Vec<Vec<NodeIndex>>,
    pub barrier: NodeIndex,
    /// Data edges plus each rank's sequence, flat, for the passes over large graphs.
    pub adjacency: Adjacency,
    /// A topological order of `adjacency` (filled by the deadlock check).
    pub topological: Vec<u32>,
}

impl Order {
    /// Rank `r`'s Fwd/Bwd events as actions, in execution order.
    pub fn actions(&self, rank: usize, ranks: usize) -> Vec<Action> {
        self.nodes
            .get(rank)
            .map(|ns| {
                ns.iter()
                    .filter_map(|&n| self.graph.node_weight(n).and_then(|e| e.action(ranks)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One placed piece of a microbatch's forward: region `region` on rank `rank`.
#[derive(Debug, Clone, Copy)]
struct Unit {
    region: usize,
    rank: usize,
}

struct Builder<'a> {
    plan: &'a Plan,
    gates: Vec<Gates>,
    graph: DiGraph<Event, EdgeKind>,
    fwd: Vec<Option<NodeIndex>>,
    bwd: Vec<Option<NodeIndex>>,
    reduces: HashMap<(usize, usize), NodeIndex>,
    /// The Loss that follows each microbatch's last forward.
    loss_after: HashMap<NodeIndex, NodeIndex>,
    barrier: NodeIndex,
}

impl Builder<'_> {
    fn key(&self, region: usize, rank: usize, mb: usize) -> usize {
        ((region - 1) * self.plan.ranks + rank) * self.plan.microbatches + mb
    }

    fn compute(&self, phase: Phase, region: usize, rank: usize, mb: usize) -> Option<NodeIndex> {
        if region == 0 || rank >= self.plan.ranks || mb >= self.plan.microbatches {
            return None;
        }
        let key = self.key(region, rank, mb);
        match phase {
            Phase::Forward => self.fwd.get(key).copied().flatten(),
            Phase::Backward => self.bwd.get(key).copied().flatten(),
        }
    }

    fn gate(&self, region: usize) -> Gates {
        self.gates.get(region - 1).copied().unwrap_or(Gates {
            runs_backward: false,
            sends_upstream: false,
            reduces: false,
        })
    }

    fn layout(&self, region: usize) -> Layout {
        self.plan
            .region(region)
            .map_or(Layout::Sharded, Region::layout)
    }

    fn units(&self, mb: usize) -> Vec<Unit> {
        let mut units = Vec::new();
        for region in &self.plan.regions {
            match region.layout() {
                Layout::Replicated => units.push(Unit {
                    region: region.index,
                    rank: self.plan.owner_of(mb),
                }),
                Layout::Sharded => {
                    units.extend(region.sharded_ranks().into_iter().map(|rank| Unit {
                        region: region.index,
                        rank,
                    }))
                }
            }
        }
        units
    }

    fn coll(
        &mut self,
        comm: Comm,
        from: Unit,
        to: Unit,
        mb: usize,
        upstream: usize,
        downstream: usize,
    ) -> NodeIndex {
        self.graph.add_node(Event::Coll {
            comm,
            seam: Seam {
                from: upstream,
                to: downstream,
            },
            mb,
            from_rank: from.rank,
            to_rank: to.rank,
        })
    }

    /// Adds every event and data edge of microbatch `mb`; returns its Loss node.
    fn microbatch(&mut self, mb: usize) -> NodeIndex {
        let units = self.units(mb);
        let mut forwards = Vec::with_capacity(units.len());
        let mut prev: Option<(Unit, NodeIndex)> = None;
        for &u in &units {
            let f = self.graph.add_node(Event::Fwd {
                region: u.region,
                rank: u.rank,
                mb,
            });
            let key = self.key(u.region, u.rank, mb);
            if let Some(slot) = self.fwd.get_mut(key) {
                *slot = Some(f);
            }
            if let Some((pu, pn)) = prev {
                let comm = if pu.region == u.region {
                    Comm::Send
                } else {
                    seam_comms(self.layout(pu.region), self.layout(u.region))
                        .map_or(Comm::Send, |c| c.0)
                };
                let c = self.coll(comm, pu, u, mb, pu.region, u.region);
                self.graph.add_edge(pn, c, EdgeKind::Activation);
                self.graph.add_edge(c, f, EdgeKind::Activation);
            }
            forwards.push(f);
            prev = Some((u, f));
        }
        let last_rank = units.last().map_or(0, |u| u.rank);
        let loss = self.graph.add_node(Event::Loss {
            mb,
            rank: last_rank,
        });
        if let Some((_, last)) = prev {
            self.graph.add_edge(last, loss, EdgeKind::Activation);
            self.loss_after.insert(last, loss);
        }

        let mut downstream: Option<(Unit, NodeIndex)> = None;
        for (&u, &f) in units.iter().zip(&forwards).rev() {
            let gate = self.gate(u.region);
            if !gate.runs_backward {
                break;
            }
            let b = self.graph.add_node(Event::Bwd {
                region: u.region,
                rank: u.rank,
                mb,
            });
            let key = self.key(u.region, u.rank, mb);
            if let Some(slot) = self.bwd.get_mut(key) {
                *slot = Some(b);
            }
            self.graph.add_edge(f, b, EdgeKind::Activation);
            match downstream {
                None => {
                    self.graph.add_edge(loss, b, EdgeKind::Turnaround);
                }
                Some((du, dn)) => {
                    let comm = if du.region == u.region {
                        Comm::RecvGrad
                    } else {
                        seam_comms(self.layout(u.region), self.layout(du.region))
                            .map_or(Comm::RecvGrad, |c| c.1)
                    };
                    let c = self.coll(comm, du, u, mb, u.region, du.region);
                    self.graph.add_edge(dn, c, EdgeKind::Gradient);
                    self.graph.add_edge(c, b, EdgeKind::Gradient);
                }
            }
            if gate.reduces
                && let Some(&reduce) = self.reduces.get(&(u.region, u.rank))
            {
                self.graph.add_edge(b, reduce, EdgeKind::Accumulate);
            }
            downstream = Some((u, b));
        }
        if downstream.is_none() {
            self.graph.add_edge(loss, self.barrier, EdgeKind::Sequence);
        }
        loss
    }
}

/// Builds the order graph and the derived per-rank orders of a plan; with `explicit`, the
/// per-rank compute orders come from the user (action strings) instead.
pub fn build(plan: &Plan, explicit: Option<&[Vec<String>]>) -> Result<Order, OrderError> {
    let trainable: Vec<bool> = plan.regions.iter().map(|r| r.trainable).collect();
    let size = plan.regions.len() * plan.ranks * plan.microbatches;
    let units: usize = plan
        .regions
        .iter()
        .map(|r| match r.layout() {
            Layout::Replicated => 1,
            Layout::Sharded => r.sharded_ranks().len(),
        })
        .sum();
    let per_mb = 4 * units + 1;
    let mut graph = DiGraph::with_capacity(
        per_mb * plan.microbatches + 1,
        (6 * units + 2) * plan.microbatches,
    );
    let barrier = graph.add_node(Event::StepBarrier);
    let mut b = Builder {
        plan,
        gates: gates(&trainable),
        graph,
        fwd: vec![None; size],
        bwd: vec![None; size],
        reduces: HashMap::new(),
        loss_after: HashMap::new(),
        barrier,
    };
    for region in &plan.regions {
        if !b.gate(region.index).reduces {
            continue;
        }
        let (group, ranks) = match region.layout() {
            Layout::Replicated => (Group::ReplicaGroup, (0..plan.ranks).collect()),
            Layout::Sharded => (Group::DataGroup, region.sharded_ranks()),
        };
        for rank in ranks {
            let n = b.graph.add_node(Event::DpReduce {
                region: region.index,
                rank,
                group,
            });
            b.graph.add_edge(n, barrier, EdgeKind::Sequence);
            b.reduces.insert((region.index, rank), n);
        }
    }
    for mb in 0..plan.microbatches {
        b.microbatch(mb);
    }
    let compute = match explicit {
        Some(lists) => explicit_orders(&b, lists)?,
        None => merged_orders(&b),
    };
    let nodes: Vec<Vec<NodeIndex>> = compute
        .into_iter()
        .enumerate()
        .map(|(rank, order)| with_loss_and_reduces(&b, rank, order))
        .collect();
    let adjacency = Adjacency::new(&b.graph, &nodes);
    let mut order = Order {
        graph: b.graph,
        nodes,
        barrier,
        adjacency,
        topological: Vec::new(),
    };
    order.topological = check_deadlock(&order, plan.ranks)?;
    Ok(order)
}

/// The fixed per-rank sequence of the wavefront, as nodes (absent events skipped).
fn wavefront_sequence(b: &Builder, wavefront: &Wavefront, rank: usize) -> Vec<NodeIndex> {
    let plan = b.plan;
    let chunks = wavefront.chunks();
    let skeleton = wavefront.skeleton;
    let slots: Vec<Slot> = match skeleton {
        Skeleton::GPipe => wavefront::gpipe(plan.microbatches, chunks),
        _ if chunks > 1 => wavefront::interleaved(plan.ranks, plan.microbatches, chunks, rank),
        _ => wavefront::one_f_one_b(plan.ranks, plan.microbatches, rank),
    };
    slots
        .into_iter()
        .filter_map(|s| {
            let region = *wavefront.regions.get(s.chunk)?;
            b.compute(s.phase, region, rank, s.mb)
        })
        .collect()
}

/// Per-rank compute orders (Fwd/Bwd only) of the derived schedule.
///
/// The wavefront (all Sharded regions) fixes each rank's sequence of Sharded work. A Replicated
/// first region (the transposed encoder) runs its owned forwards before anything else on the rank
/// and its backwards after the rank's last wavefront event. Replicated regions later in the model
/// (between Sharded regions, or a sink) are placed by a unit-time list schedule: each rank runs
/// its next wavefront event when it is ready, and any ready Replicated event first. Such events
/// only delay the wavefront, never reorder it, so the order stays deadlock-free.
fn merged_orders(b: &Builder) -> Vec<Vec<NodeIndex>> {
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

    // Fast path: Replicated work only at the source: concatenate.
    if !floating.iter().any(|&f| f) {
        return (0..p)
            .map(|r| {
                let mut order = prologue.get(r).cloned().unwrap_or_default();
                order.extend(queues.get(r).cloned().unwrap_or_default());
                order.extend(epilogue.get(r).cloned().unwrap_or_default());
                order
            })
            .collect();
    }
    list_schedule(b, &prologue, &epilogue, &queues, &floating)
}

/// A rank's progress through its sequences during the list schedule.
struct Cursor<'a> {
    prologue: &'a [NodeIndex],
    epilogue: &'a [NodeIndex],
    queue: &'a [NodeIndex],
    pro_at: usize,
    epi_at: usize,
    queue_at: usize,
    /// Ready floating (non-source Replicated) events: (ready tick, region, mb, node).
    floats: BTreeSet<(u64, usize, usize, NodeIndex)>,
    running: Option<NodeIndex>,
    order: Vec<NodeIndex>,
}

impl Cursor<'_> {
    /// Takes the next event this rank may run now, if any.
    fn take_next(&mut self, ready: impl Fn(NodeIndex) -> Option<u64>) -> Option<NodeIndex> {
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
    fn leftovers(&self) -> Vec<NodeIndex> {
        let pro = self.prologue.get(self.pro_at..).unwrap_or_default();
        let queued = self.queue.get(self.queue_at..).unwrap_or_default();
        let epi = self.epilogue.get(self.epi_at..).unwrap_or_default();
        pro.iter().chain(queued).chain(epi).copied().collect()
    }
}

fn list_schedule(
    b: &Builder,
    prologue: &[Vec<NodeIndex>],
    epilogue: &[Vec<NodeIndex>],
    queues: &[Vec<NodeIndex>],
    floating: &[bool],
) -> Vec<Vec<NodeIndex>> {
    let g = &b.graph;
    let mut remaining: Vec<usize> = g
        .node_indices()
        .map(|n| g.neighbors_directed(n, Direction::Incoming).count())
        .collect();
    let mut ready_at: Vec<Option<u64>> = vec![None; g.node_count()];
    let is_compute = |n: NodeIndex| {
        matches!(
            g.node_weight(n),
            Some(Event::Fwd { .. } | Event::Bwd { .. })
        )
    };
    let total = g.node_indices().filter(|&n| is_compute(n)).count();
    let empty: &[NodeIndex] = &[];
    let mut cursors: Vec<Cursor> = (0..b.plan.ranks)
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
        .collect();

    let mark_ready =
        |n: NodeIndex, t: u64, ready_at: &mut Vec<Option<u64>>, cursors: &mut Vec<Cursor>| {
            if let Some(slot) = ready_at.get_mut(n.index()) {
                *slot = Some(t);
            }
            if floating.get(n.index()).copied().unwrap_or(false)
                && let Some(Event::Fwd { region, rank, mb } | Event::Bwd { region, rank, mb }) =
                    g.node_weight(n)
                && let Some(cursor) = cursors.get_mut(*rank)
            {
                cursor.floats.insert((t, *region, *mb, n));
            }
        };
    for n in g.node_indices() {
        if remaining.get(n.index()) == Some(&0) && is_compute(n) {
            mark_ready(n, 0, &mut ready_at, &mut cursors);
        }
    }

    let mut scheduled = 0usize;
    let mut t: u64 = 0;
    loop {
        // Complete what ran during the last tick; collectives and losses complete instantly.
        let mut work: Vec<NodeIndex> = cursors
            .iter_mut()
            .filter_map(|c| c.running.take())
            .collect();
        while let Some(done) = work.pop() {
            for succ in g.neighbors_directed(done, Direction::Outgoing) {
                let Some(left) = remaining.get_mut(succ.index()) else {
                    continue;
                };
                *left = left.saturating_sub(1);
                if *left > 0 {
                    continue;
                }
                match g.node_weight(succ) {
                    Some(Event::Coll { .. } | Event::Loss { .. }) => work.push(succ),
                    Some(Event::Fwd { .. } | Event::Bwd { .. }) => {
                        mark_ready(succ, t, &mut ready_at, &mut cursors)
                    }
                    _ => {}
                }
            }
        }
        if scheduled >= total {
            break;
        }
        for cursor in &mut cursors {
            let ready = |n: NodeIndex| ready_at.get(n.index()).copied().flatten();
            if let Some(node) = cursor.take_next(ready) {
                cursor.order.push(node);
                cursor.running = Some(node);
                scheduled += 1;
            }
        }
        if cursors.iter().all(|c| c.running.is_none()) {
            // Nothing can run: the remaining events wait on each other. Append the leftovers so
            // the deadlock check sees them and names the cycle.
            for cursor in &mut cursors {
                let rest = cursor.leftovers();
                cursor.order.extend(rest);
            }
            break;
        }
        t += 1;
    }
    cursors.into_iter().map(|c| c.order).collect()
}

/// Parses user-given per-rank orders and checks they hold exactly each rank's compute events.
fn explicit_orders(b: &Builder, lists: &[Vec<String>]) -> Result<Vec<Vec<NodeIndex>>, OrderError> {
    let plan = b.plan;
    let err = |path: String, message: String| OrderError::Explicit { path, message };
    if lists.len() != plan.ranks {
        return Err(err(
            "orders".into(),
            format!("gives {} rank orders for {} ranks", lists.len(), plan.ranks),
        ));
    }
    let mut orders = Vec::with_capacity(plan.ranks);
    let mut seen = vec![false; b.graph.node_count()];
    for (rank, list) in lists.iter().enumerate() {
        let mut order = Vec::with_capacity(list.len());
        for (i, text) in list.iter().enumerate() {
            let path = format!("orders[{rank}][{i}]");
            let action: Action =
                text.parse()
                    .map_err(|e: crate::graph::event::ActionParseError| {
                        err(path.clone(), e.to_string())
                    })?;
            let (region, on_rank) = plan.stage_to_region_rank(action.stage);
            if on_rank != rank {
                return Err(err(
                    path,
                    format!(
                        "`{text}` is stage {} of rank {on_rank}, not of rank {rank}",
                        action.stage
                    ),
                ));
            }
            let node = b
                .compute(action.phase, region, rank, action.mb)
                .ok_or_else(|| {
                    err(
                        path.clone(),
                        format!("`{text}` is not an event of this schedule"),
                    )
                })?;
            let flag = seen
                .get_mut(node.index())
                .ok_or_else(|| err(path.clone(), "internal index".into()))?;
            if *flag {
                return Err(err(path, format!("`{text}` appears twice")));
            }
            *flag = true;
            order.push(node);
        }
        orders.push(order);
    }
    for n in b.graph.node_indices() {
        if let Some(e @ (Event::Fwd { rank, .. } | Event::Bwd { rank, .. })) =
            b.graph.node_weight(n)
            && !seen.get(n.index()).copied().unwrap_or(true)
        {
            let label = e
                .action(plan.ranks)
                .map(|a| a.to_string())
                .unwrap_or_default();
            return Err(err(format!("orders[{rank}]"), format!("misses `{label}`")));
        }
    }
    Ok(orders)
}

/// Adds each Loss right after the forward that produces it, and each DpReduce right after the
/// rank's last backward of its region (at the end when the rank has none).
fn with_loss_and_reduces(b: &Builder, rank: usize, compute: Vec<NodeIndex>) -> Vec<NodeIndex> {
    let g = &b.graph;
    let regions = b.plan.regions.len();
    let mut last_bwd: Vec<Option<usize>> = vec![None; regions + 1];
    for (i, &n) in compute.iter().enumerate() {
        if let Some(Event::Bwd { region, .. }) = g.node_weight(n)
            && let Some(slot) = last_bwd.get_mut(*region)
        {
            *slot = Some(i);
        }
    }
    let reduces: Vec<(usize, NodeIndex)> = (1..=regions)
        .filter_map(|region| b.reduces.get(&(region, rank)).map(|&n| (region, n)))
        .collect();
    let mut out = Vec::with_capacity(compute.len() + reduces.len() + b.plan.microbatches);
    for (i, &n) in compute.iter().enumerate() {
        out.push(n);
        if let Some(&loss) = b.loss_after.get(&n) {
            out.push(loss);
        }
        if let Some(Event::Bwd { region, .. }) = g.node_weight(n)
            && last_bwd.get(*region).copied().flatten() == Some(i)
        {
            out.extend(reduces.iter().filter(|(r, _)| r == region).map(|&(_, n)| n));
        }
    }
    out.extend(
        reduces
            .iter()
            .filter(|(region, _)| last_bwd.get(*region).copied().flatten().is_none())
            .map(|&(_, n)| n),
    );
    out
}

/// Kahn's algorithm over data edges plus each rank's sequence, returning a topological order; on
/// failure, walks back through the unprocessed events to a repeated one and reports that cycle.
pub fn check_deadlock(order: &Order, ranks: usize) -> Result<Vec<u32>, OrderError> {
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
            .map(|e| e.label(ranks))
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
