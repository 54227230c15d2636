//! The order graph's events and data edges, microbatch by microbatch: forwards through the
//! placed units, seam collectives, the loss, backwards as Lemma 1 gates them, the reduces — and
//! the lookups the orders are written with (a slot's event, the wavefront's sequence of a rank).

use crate::algebra::collectives::Collectives;
use crate::algebra::gates::Gates;
use crate::algebra::plan::{Plan, Wavefront};
use crate::graph::event::{EdgeKind, Event};
use crate::graph::order_graph::OrderGraph;
use crate::schedules::slot::Slot;
use crate::vocab::comm::{Comm, Seam};
use crate::vocab::ids::{Mb, Rank, RegionId, Stage};
use crate::vocab::layout::Layout;
use crate::vocab::phase::{Half, Phase};
use petgraph::graph::NodeIndex;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// One placed piece of a microbatch's forward: region `region` on rank `rank`, the pipeline stage
/// that places there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    pub(crate) region: usize,
    pub(crate) rank: usize,
    pub(crate) stage: Stage,
    /// `region` and `rank` as the events name them (converted once, not per event).
    ids: (RegionId, Rank),
}

/// The index of (region, rank, microbatch) in the builder's per-slot tables (regions 1-based).
pub(crate) fn key(plan: &Plan, region: usize, rank: usize, mb: usize) -> usize {
    ((region - 1) * plan.ranks + rank) * plan.microbatches + mb
}

/// A node or none in four bytes (an `Option<NodeIndex>` takes eight): the builder's tables
/// hold one per region, rank and microbatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MaybeNode(u32);

impl MaybeNode {
    /// No node (an index no node has: a graph's indices are below `u32::MAX`).
    pub(crate) const NONE: MaybeNode = MaybeNode(u32::MAX);

    pub(crate) fn get(self) -> Option<NodeIndex> {
        (self != MaybeNode::NONE).then(|| NodeIndex::new(self.0 as usize))
    }
}

impl From<NodeIndex> for MaybeNode {
    fn from(n: NodeIndex) -> MaybeNode {
        u32::try_from(n.index()).map_or(MaybeNode::NONE, MaybeNode)
    }
}

pub(crate) struct Builder<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) collectives: &'a Collectives,
    pub(crate) graph: OrderGraph,
    pub(crate) fwd: Vec<MaybeNode>,
    /// The whole backward, or its input half (`I`) where the region's schedule splits it.
    pub(crate) bwd: Vec<MaybeNode>,
    /// The weight half (`W`) of a split backward, where the region reduces weight gradients.
    pub(crate) weight: Vec<MaybeNode>,
    /// The four phases (FE, FF, BF, BE) of a second-order schedule's (region, rank, microbatch).
    pub(crate) four: Vec<[MaybeNode; 4]>,
    /// Whether the backward of each (region, rank, microbatch) is split into `I` and `W` (by
    /// [`Builder::key`]): the region's op set, or what the slots (or the hand-written order) say.
    pub(crate) split: Vec<bool>,
    /// The wavefront's slots of every rank (empty without a wavefront or with hand orders).
    pub(crate) slots: Vec<Vec<Slot>>,
    pub(crate) reduces: FxHashMap<(usize, usize), NodeIndex>,
    /// Of each microbatch, its last forward and the Loss that follows it (a table by
    /// microbatch: the orders ask it of every forward).
    pub(crate) loss_after: Vec<[MaybeNode; 2]>,
    pub(crate) barrier: NodeIndex,
    /// The wavefront runs a second-order (four-phase) schedule.
    pub(crate) four_phase: bool,
    /// The last microbatch's route (each model region's routed region and, for a Replicated
    /// one, its owner) and what it places: consecutive microbatches mostly share both.
    last_route: Option<(RouteKey, Rc<Route>)>,
}

/// What a microbatch's route depends on: each model region's routed region and, for a
/// Replicated one, its owner rank (0 for a Sharded one).
type RouteKey = Vec<(usize, usize)>;

/// A microbatch's placed units in model order, with what the graph joins them by: the seam
/// collective into each unit from the one before it (forward) and back (backward), each unit's
/// Lemma 1 gates and its reduce event.
pub(crate) struct Route {
    pub(crate) units: Vec<Unit>,
    /// Of unit `i > 0`, the collective from unit `i − 1` (unused at 0).
    forward: Vec<Comm>,
    /// Of unit `i`, the collective bringing the gradient from unit `i + 1` (unused at the last).
    backward: Vec<Comm>,
    gates: Vec<Gates>,
    reduce: Vec<Option<NodeIndex>>,
}

impl<'a> Builder<'a> {
    /// An empty builder for `plan`: its per-slot tables (`split`: which backwards are split,
    /// by [`key`]; `slots`: the wavefront's of every rank) and a graph sized for its events.
    pub(crate) fn new(
        plan: &'a Plan,
        collectives: &'a Collectives,
        slots: Vec<Vec<Slot>>,
        split: Vec<bool>,
    ) -> Builder<'a> {
        let size = plan.regions.len() * plan.ranks * plan.microbatches;
        let units: usize = plan
            .regions
            .iter()
            .map(|r| match r.layout() {
                Layout::Replicated => 1,
                Layout::Sharded => r.sharded_ranks().len(),
            })
            .sum();
        let four_phase = plan
            .wavefront
            .as_ref()
            .is_some_and(|w| w.skeleton.second_order());
        // Per unit and microbatch: two compute events and two transfers (eight for four phases).
        let per_unit = if four_phase { 8 } else { 4 };
        let per_mb = per_unit * units + 1;
        let mut graph = OrderGraph::with_capacity(
            per_mb * plan.microbatches + 1,
            (3 * per_unit / 2 * units + 2) * plan.microbatches,
        );
        let barrier = graph.add_node(Event::StepBarrier);
        Builder {
            plan,
            collectives,
            graph,
            fwd: vec![MaybeNode::NONE; size],
            bwd: vec![MaybeNode::NONE; size],
            // Only split backwards have weight halves to find.
            weight: if split.contains(&true) {
                vec![MaybeNode::NONE; size]
            } else {
                Vec::new()
            },
            split,
            slots,
            reduces: FxHashMap::default(),
            loss_after: vec![[MaybeNode::NONE; 2]; plan.microbatches],
            barrier,
            four_phase,
            last_route: None,
            four: if four_phase {
                vec![[MaybeNode::NONE; 4]; size]
            } else {
                Vec::new()
            },
        }
    }

    /// One reduce event per rank taking part in each of the collectives' reduces.
    pub(crate) fn add_reduces(&mut self) {
        for reduce in &self.collectives.reduces {
            let Some(region) = self.plan.region(reduce.region) else {
                continue;
            };
            let group = reduce.group;
            let ranks = match region.layout() {
                Layout::Replicated => (0..self.plan.ranks).collect(),
                Layout::Sharded => region.sharded_ranks(),
            };
            for rank in ranks {
                let n = self.graph.add_node(Event::DpReduce {
                    region: region.index.into(),
                    rank: rank.into(),
                    group,
                });
                self.graph.add_edge(n, self.barrier, EdgeKind::Sequence);
                self.reduces.insert((region.index, rank), n);
            }
        }
        // A route keeps its units' reduces: none kept from before these.
        self.last_route = None;
    }
}

impl Builder<'_> {
    pub(crate) fn key(&self, region: usize, rank: usize, mb: usize) -> usize {
        key(self.plan, region, rank, mb)
    }

    pub(crate) fn compute(
        &self,
        phase: Phase,
        region: usize,
        rank: usize,
        mb: usize,
    ) -> Option<NodeIndex> {
        if region == 0 || rank >= self.plan.ranks || mb >= self.plan.microbatches {
            return None;
        }
        self.at_key(phase, self.key(region, rank, mb))
    }

    /// The event of `phase` at `key` (a [`key`] of the builder's tables), when it exists.
    #[inline]
    fn at_key(&self, phase: Phase, key: usize) -> Option<NodeIndex> {
        let split = || self.split.get(key).copied().unwrap_or(false);
        match phase {
            Phase::Forward => self.fwd.get(key).and_then(|n| n.get()),
            Phase::Backward if !split() => self.bwd.get(key).and_then(|n| n.get()),
            Phase::Input if split() => self.bwd.get(key).and_then(|n| n.get()),
            Phase::Weight if split() => self.weight.get(key).and_then(|n| n.get()),
            Phase::Backward | Phase::Input | Phase::Weight | Phase::Recompute => None,
            Phase::EnergyForward
            | Phase::ForceForward
            | Phase::ForceBackward
            | Phase::EnergyBackward => self
                .four
                .get(key)
                .and_then(|nodes| nodes.get(phase.four_index()?)?.get()),
        }
    }

    pub(crate) fn gate(&self, region: usize) -> Gates {
        self.plan.gates_of(region)
    }

    /// The placed pieces of microbatch `mb`'s forward, in model order: through the model's
    /// regions, or their mirrors where `mb` runs a bidirectional schedule's second direction.
    pub(crate) fn units(&mut self, mb: usize) -> Vec<Unit> {
        self.route(mb).units.clone()
    }

    /// Microbatch `mb`'s [`Route`], the last one's again when `mb` takes the same.
    pub(crate) fn route(&mut self, mb: usize) -> Rc<Route> {
        let route_key: RouteKey = self
            .plan
            .model_regions()
            .map(|model| {
                let routed = self.plan.routed(model.index, mb);
                let owner = match self.plan.region(routed).map(|r| r.layout()) {
                    Some(Layout::Replicated) => self.plan.owner_of(mb),
                    _ => 0,
                };
                (routed, owner)
            })
            .collect();
        if let Some((last, route)) = &self.last_route
            && *last == route_key
        {
            return route.clone();
        }
        let mut units = Vec::new();
        for &(routed, owner) in &route_key {
            let Some(region) = self.plan.region(routed) else {
                continue;
            };
            match region.layout() {
                Layout::Replicated => units.extend(self.unit(region.index, owner)),
                Layout::Sharded => units.extend(
                    region
                        .sharded_ranks()
                        .into_iter()
                        .filter_map(|rank| self.unit(region.index, rank)),
                ),
            }
        }
        let seam = |a: &Unit, b: &Unit| self.collectives.on(a.region, b.region);
        let forward = std::iter::once(Comm::Send)
            .chain(units.windows(2).map(|w| match w {
                [a, b] => seam(a, b).map_or(Comm::Send, |c| c.forward),
                _ => Comm::Send,
            }))
            .collect();
        let backward = units
            .windows(2)
            .map(|w| match w {
                [a, b] => seam(a, b)
                    .and_then(|c| c.backward)
                    .unwrap_or(Comm::RecvGrad),
                _ => Comm::RecvGrad,
            })
            .chain(std::iter::once(Comm::RecvGrad))
            .collect();
        let gates = units.iter().map(|u| self.gate(u.region)).collect();
        let reduce = units
            .iter()
            .map(|u| self.reduces.get(&(u.region, u.rank)).copied())
            .collect();
        let route = Rc::new(Route {
            units,
            forward,
            backward,
            gates,
            reduce,
        });
        self.last_route = Some((route_key, route.clone()));
        route
    }

    /// Region `region` placed on `rank`, with its stage (`None`: no such region or rank).
    fn unit(&self, region: usize, rank: usize) -> Option<Unit> {
        Some(Unit {
            region,
            rank,
            stage: self.plan.stage_index(region, rank)?,
            ids: (region.into(), rank.into()),
        })
    }

    pub(crate) fn coll(
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
                from: upstream.into(),
                to: downstream.into(),
            },
            mb: mb.into(),
            from_rank: from.ids.1,
            to_rank: to.ids.1,
        })
    }

    /// Adds one of the four phases of `u` for microbatch `mb`.
    fn four_phase(&mut self, u: Unit, mb: usize, phase: Phase) -> NodeIndex {
        let n = self.graph.add_node(Event::FourPhase {
            region: u.ids.0,
            rank: u.ids.1,
            mb: mb.into(),
            stage: u.stage,
            phase,
        });
        let key = self.key(u.region, u.rank, mb);
        if let (Some(nodes), Some(i)) = (self.four.get_mut(key), phase.four_index())
            && let Some(slot) = nodes.get_mut(i)
        {
            *slot = n.into();
        }
        n
    }

    /// One pass of `phase` over `units` (given in the pass's direction): each unit's event
    /// waits for its own `before` (the phase it follows on the same stage) and for the previous
    /// unit's, through a transfer (`Send` for a pass down the stages, `RecvGrad` for one up).
    /// `entry` is what the pass's first unit waits for. Returns the events in pass order.
    fn pass(
        &mut self,
        units: &[Unit],
        mb: usize,
        phase: Phase,
        before: &[Option<NodeIndex>],
        entry: Option<(NodeIndex, EdgeKind)>,
    ) -> Vec<NodeIndex> {
        let (comm, kind) = if phase.flows_down() {
            (Comm::Send, EdgeKind::Activation)
        } else {
            (Comm::RecvGrad, EdgeKind::Gradient)
        };
        let mut out: Vec<NodeIndex> = Vec::with_capacity(units.len());
        let mut prev: Option<(Unit, NodeIndex)> = None;
        for (i, &u) in units.iter().enumerate() {
            let n = self.four_phase(u, mb, phase);
            match prev {
                None => {
                    if let Some((from, kind)) = entry {
                        self.graph.add_edge(from, n, kind);
                    }
                }
                Some((pu, pn)) => {
                    // Seams are named from the upstream region to the downstream one.
                    let c = self.coll(comm, pu, u, mb, u.region, u.region);
                    self.graph.add_edge(pn, c, kind);
                    self.graph.add_edge(c, n, kind);
                }
            }
            let entered_from = if i == 0 {
                entry.map(|(from, _)| from)
            } else {
                None
            };
            if let Some(&Some(b)) = before.get(i)
                && entered_from != Some(b)
            {
                self.graph.add_edge(b, n, EdgeKind::Activation);
            }
            out.push(n);
            prev = Some((u, n));
        }
        out
    }

    /// A second-order microbatch: per stage FE → FF → BF → BE; FE and BF pass from the first
    /// stage to the last, FF and BE from the last to the first. FF starts where FE ends (the
    /// energy's gradient), the loss follows the forces at the first stage, BF starts from the
    /// loss and BE where BF ends. Lemma 1: a region that is not trainable runs FE and FF only
    /// (the forces are the model's output) and reduces nothing; a trainable one accumulates both
    /// BF (the second-order term) and BE (every first-order term) into its reduce.
    fn four_phase_microbatch(&mut self, mb: usize) -> NodeIndex {
        let down = self.units(mb);
        let up: Vec<Unit> = down.iter().rev().copied().collect();
        let fe = self.pass(&down, mb, Phase::EnergyForward, &[], None);
        let fe_up: Vec<Option<NodeIndex>> = fe.iter().rev().map(|&n| Some(n)).collect();
        let ff = self.pass(
            &up,
            mb,
            Phase::ForceForward,
            &fe_up,
            fe.last().map(|&n| (n, EdgeKind::Turnaround)),
        );
        let first_rank = down.first().map_or(0, |u| u.rank);
        let loss = self.graph.add_node(Event::Loss {
            mb: mb.into(),
            rank: first_rank.into(),
        });
        if let Some(&last) = ff.last() {
            self.graph.add_edge(last, loss, EdgeKind::Activation);
            if let Some(slot) = self.loss_after.get_mut(mb) {
                *slot = [last.into(), loss.into()];
            }
        }
        let trains = down
            .first()
            .is_some_and(|u| self.gate(u.region).runs_backward);
        if !trains {
            self.graph.add_edge(loss, self.barrier, EdgeKind::Sequence);
            return loss;
        }
        let ff_down: Vec<Option<NodeIndex>> = ff.iter().rev().map(|&n| Some(n)).collect();
        let bf = self.pass(
            &down,
            mb,
            Phase::ForceBackward,
            &ff_down,
            Some((loss, EdgeKind::Turnaround)),
        );
        let bf_up: Vec<Option<NodeIndex>> = bf.iter().rev().map(|&n| Some(n)).collect();
        let be = self.pass(
            &up,
            mb,
            Phase::EnergyBackward,
            &bf_up,
            bf.last().map(|&n| (n, EdgeKind::Turnaround)),
        );
        for (&u, n) in down.iter().zip(bf).chain(up.iter().zip(be)) {
            if self.gate(u.region).reduces
                && let Some(&reduce) = self.reduces.get(&(u.region, u.rank))
            {
                self.graph.add_edge(n, reduce, EdgeKind::Accumulate);
            }
        }
        loss
    }

    /// Adds every event and data edge of microbatch `mb`; returns its Loss node.
    pub(crate) fn microbatch(&mut self, mb: usize) -> NodeIndex {
        if self.four_phase {
            return self.four_phase_microbatch(mb);
        }
        let route = self.route(mb);
        let units = &route.units;
        let mb_id = Mb::new(mb);
        let mut forwards = Vec::with_capacity(units.len());
        let mut prev: Option<(Unit, NodeIndex)> = None;
        for (&u, &comm) in units.iter().zip(&route.forward) {
            let f = self.graph.add_node(Event::Fwd {
                region: u.ids.0,
                rank: u.ids.1,
                mb: mb_id,
                stage: u.stage,
            });
            let key = self.key(u.region, u.rank, mb);
            if let Some(slot) = self.fwd.get_mut(key) {
                *slot = f.into();
            }
            if let Some((pu, pn)) = prev {
                // Seam collectives as `derive` computed them (Table 2; slab to slab: Send).
                let c = self.coll(comm, pu, u, mb, pu.region, u.region);
                self.graph.add_edge(pn, c, EdgeKind::Activation);
                self.graph.add_edge(c, f, EdgeKind::Activation);
            }
            forwards.push(f);
            prev = Some((u, f));
        }
        let last_rank = units.last().map_or(0, |u| u.rank);
        let loss = self.graph.add_node(Event::Loss {
            mb: mb.into(),
            rank: last_rank.into(),
        });
        if let Some((_, last)) = prev {
            self.graph.add_edge(last, loss, EdgeKind::Activation);
            if let Some(slot) = self.loss_after.get_mut(mb) {
                *slot = [last.into(), loss.into()];
            }
        }

        self.backwards(&route, &forwards, loss, mb);
        loss
    }

    /// The backwards of microbatch `mb` from the last unit to the first, as far as Lemma 1 has
    /// them run: each after its forward and the gradient from downstream (the loss, for the
    /// last), a split one's weight half after its input half, each accumulated into its reduce.
    fn backwards(&mut self, route: &Route, forwards: &[NodeIndex], loss: NodeIndex, mb: usize) {
        let mb_id = Mb::new(mb);
        let mut downstream: Option<(Unit, NodeIndex)> = None;
        let each = route
            .units
            .iter()
            .zip(forwards)
            .zip(route.backward.iter().zip(&route.gates).zip(&route.reduce));
        for ((&u, &f), ((&comm, &gate), &reduce)) in each.rev() {
            if !gate.runs_backward {
                break;
            }
            let key = self.key(u.region, u.rank, mb);
            let split = self.split.get(key).copied().unwrap_or(false);
            let stage = u.stage;
            let b = self.graph.add_node(Event::Bwd {
                region: u.ids.0,
                rank: u.ids.1,
                mb: mb_id,
                stage,
                half: if split { Half::Input } else { Half::Whole },
            });
            if let Some(slot) = self.bwd.get_mut(key) {
                *slot = b.into();
            }
            self.graph.add_edge(f, b, EdgeKind::Activation);
            match downstream {
                None => {
                    self.graph.add_edge(loss, b, EdgeKind::Turnaround);
                }
                Some((du, dn)) => {
                    // Present whenever this backward runs: Lemma 1 gates both the same way.
                    let c = self.coll(comm, du, u, mb, u.region, du.region);
                    self.graph.add_edge(dn, c, EdgeKind::Gradient);
                    self.graph.add_edge(c, b, EdgeKind::Gradient);
                }
            }
            // A split backward's weight half waits only for its own input half (no other stage
            // waits for it) and exists only where Lemma 1 has the region reduce.
            let accumulates = if split && gate.reduces {
                let w = self.graph.add_node(Event::Bwd {
                    region: u.ids.0,
                    rank: u.ids.1,
                    mb: mb_id,
                    stage,
                    half: Half::Weight,
                });
                if let Some(slot) = self.weight.get_mut(key) {
                    *slot = w.into();
                }
                self.graph.add_edge(b, w, EdgeKind::Gradient);
                w
            } else {
                b
            };
            if gate.reduces
                && let Some(reduce) = reduce
            {
                self.graph
                    .add_edge(accumulates, reduce, EdgeKind::Accumulate);
            }
            downstream = Some((u, b));
        }
        if downstream.is_none() {
            self.graph.add_edge(loss, self.barrier, EdgeKind::Sequence);
        }
    }
}

/// The events the wavefront's slots of one rank name: where each chunk's events of the rank start
/// in the builder's tables, in either direction (a slot's chunk routed to its region, or to the
/// region's mirror for a microbatch of a bidirectional schedule's second direction), looked up
/// once for the rank rather than once a slot.
pub(crate) struct RankSlots<'b, 'a> {
    b: &'b Builder<'a>,
    /// The first microbatch of the second direction (none: one direction).
    second: Option<usize>,
    /// Of each direction, each chunk's start ([`key`] at microbatch 0; none: no such event).
    starts: [Vec<Option<usize>>; 2],
}

impl<'b, 'a> RankSlots<'b, 'a> {
    pub(crate) fn new(b: &'b Builder<'a>, wavefront: &Wavefront, rank: usize) -> Self {
        let plan = b.plan;
        let second = plan.second_direction_from();
        let starts = [0, 1].map(|direction| {
            let mb = if direction == 0 {
                0
            } else {
                second.unwrap_or(0)
            };
            wavefront
                .regions
                .iter()
                .map(|&region| {
                    let region = plan.routed(region, mb);
                    (region > 0 && rank < plan.ranks).then(|| b.key(region, rank, 0))
                })
                .collect()
        });
        RankSlots { b, second, starts }
    }

    /// The event slot `s` names, when it exists.
    pub(crate) fn node(&self, s: &Slot) -> Option<NodeIndex> {
        let mb = s.mb.index();
        if mb >= self.b.plan.microbatches {
            return None;
        }
        let direction = usize::from(self.second.is_some_and(|from| mb >= from));
        let start = (*self.starts.get(direction)?.get(s.chunk.index())?)?;
        self.b.at_key(s.phase, start + mb)
    }
}

/// The fixed per-rank sequence of the wavefront, as nodes (absent events skipped).
pub(crate) fn wavefront_sequence(
    b: &Builder,
    wavefront: &Wavefront,
    rank: usize,
) -> Vec<NodeIndex> {
    let Some(slots) = b.slots.get(rank) else {
        return Vec::new();
    };
    let lookup = RankSlots::new(b, wavefront, rank);
    // Sized for every slot (a filter's collect would grow it from nothing).
    let mut sequence = Vec::with_capacity(slots.len());
    for s in slots {
        if let Some(n) = lookup.node(s) {
            sequence.push(n);
        }
    }
    sequence
}
