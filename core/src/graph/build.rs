//! Builds the order graph of a plan: every event and data edge of each microbatch
//! ([`crate::graph::builder`]), then each rank's order — the wavefront's slots, with Replicated
//! work joined by its composition policy ([`crate::graph::compose`]) or the user's hand-written
//! orders ([`crate::graph::explicit`]) — and the deadlock check.

use crate::algebra::collectives::Collectives;
use crate::algebra::plan::{Plan, Wavefront};
use crate::graph::builder::{Builder, RankSlots, key};
use crate::graph::compose::transpose::merged_orders;
use crate::graph::deadlock::{check_deadlock, check_deadlock_proposing};
use crate::graph::event::{EdgeKind, Event};
use crate::graph::explicit::explicit_orders;
use crate::graph::order::{Order, OrderError};
use crate::vocab::layout::Layout;

use crate::schedules::slot::Slot;
use crate::vocab::action::{Step, StepParseError};
use crate::vocab::phase::Phase;
use petgraph::graph::NodeIndex;

/// Builds the order graph and the derived per-rank orders of a plan; with `explicit`, the
/// per-rank compute orders come from the user (action strings) instead.
pub fn build(
    plan: &Plan,
    collectives: &Collectives,
    explicit: Option<&[Vec<String>]>,
) -> Result<Order, OrderError> {
    build_with(plan, collectives, explicit, None)
}

/// [`build`], with the wavefront's slots given by position along its first chunk (a schedule
/// ordered by costs, [`crate::schedules::Schedule::costed_slots`]) instead of its own.
pub fn build_with(
    plan: &Plan,
    collectives: &Collectives,
    explicit: Option<&[Vec<String>]>,
    by_position: Option<Vec<Vec<Slot>>>,
) -> Result<Order, OrderError> {
    let parsed = explicit.map(parse);
    build_proposing(plan, collectives, parsed.as_deref(), by_position, true)
}

/// Per-rank orders with each entry parsed from its text (or the error it is reported with).
pub(crate) type Parsed = Vec<Vec<Result<Step, StepParseError>>>;

/// Hand-written orders parsed once: for which backwards they split, then for the order.
pub(crate) fn parse(lists: &[Vec<String>]) -> Parsed {
    lists
        .iter()
        .map(|list| list.iter().map(|text| text.parse()).collect())
        .collect()
}

/// [`build`] with per-rank orders already in steps (a list-scheduled run's): checked as
/// hand-written ones are, with no text to print or parse.
pub(crate) fn build_steps(
    plan: &Plan,
    collectives: &Collectives,
    steps: &[Vec<Step>],
) -> Result<Order, OrderError> {
    let parsed: Parsed = steps
        .iter()
        .map(|list| list.iter().map(|&step| Ok(step)).collect())
        .collect();
    build_proposing(plan, collectives, Some(&parsed), None, true)
}

/// [`build_with`], a deadlock's proposed reordering searched for only where `propose` (see
/// [`check_deadlock_proposing`]).
pub(crate) fn build_proposing(
    plan: &Plan,
    collectives: &Collectives,
    parsed: Option<&[Vec<Result<Step, StepParseError>>]>,
    by_position: Option<Vec<Vec<Slot>>>,
    propose: bool,
) -> Result<Order, OrderError> {
    let slots = match (parsed, &plan.wavefront) {
        (None, Some(w)) => {
            let slots = wavefront_slots(plan, w, by_position);
            every_forward(plan, w, &slots)?;
            slots
        }
        _ => Vec::new(),
    };
    let split = split_backwards(plan, &slots, parsed);
    let mut b = Builder::new(plan, collectives, slots, split);
    b.add_reduces();
    for mb in 0..plan.microbatches {
        b.microbatch(mb);
    }
    // Laid out flat for the questions the list schedule asks of the graph: it places Replicated
    // work after the first region (the first one's is a prologue and epilogue, asked nothing).
    if parsed.is_none()
        && plan
            .regions
            .iter()
            .skip(1)
            .any(|r| r.layout() == Layout::Replicated)
    {
        b.graph.freeze(&[]);
    }
    let (compute, pairs) = match parsed {
        Some(lists) => explicit_orders(&b, lists)?,
        None => (merged_orders(&b), slot_pairs(&b)),
    };
    if !pairs.is_empty() && !b.graph.is_frozen() {
        b.graph.freeze(&[]);
    }
    // An overlapped pair starts as one slot: its forward also waits for the backward's inputs.
    // Every pair's inputs are read before any edge is added (the edges go into forwards, the
    // questions are of backwards), so no question scans the pending edges.
    let overlap: Vec<(NodeIndex, NodeIndex)> = pairs
        .iter()
        .flat_map(|&[first, second]| {
            b.graph
                .neighbors_directed(second, petgraph::Direction::Incoming)
                .filter(move |&p| p != first)
                .map(move |p| (p, first))
        })
        .collect();
    for (p, first) in overlap {
        b.graph.add_edge(p, first, EdgeKind::Overlap);
    }
    let nodes: Vec<Vec<NodeIndex>> = compute
        .into_iter()
        .enumerate()
        .map(|(rank, order)| with_loss_and_reduces(&b, rank, order))
        .collect();
    // The overlap's edges and each rank's stream laid out flat, for the passes.
    b.graph.freeze(&nodes);
    let mut order = Order {
        barrier: b.barrier,
        graph: b.graph,
        nodes,
        pairs,
        topological: Vec::new(),
    };
    order.topological = check_deadlock_proposing(&order, propose)?;
    // Early recomputations and offload's copies are added to an order free of deadlock (a
    // deadlocking order's repair proposes PyTorch's actions only, and copies wait on positions
    // in it), and add no cycle to it.
    let early =
        crate::graph::recompute::add_early(plan, &mut order.graph, &mut order.nodes, &order.pairs);
    if early {
        // The copies ask for the recomputations' edges.
        order.graph.freeze(&order.nodes);
    }
    let copies =
        crate::graph::offload::add_copies(plan, &mut order.graph, &order.nodes, &order.pairs);
    if copies {
        order.graph.freeze(&order.nodes);
    }
    if early || copies {
        order.topological = check_deadlock(&order)?;
    }
    Ok(order)
}

/// The wavefront's slots of every rank, as its schedule writes them.
fn wavefront_slots(
    plan: &Plan,
    wavefront: &Wavefront,
    given: Option<Vec<Vec<Slot>>>,
) -> Vec<Vec<Slot>> {
    let ctx = plan.run_ctx(wavefront);
    let mut by_position = given.unwrap_or_else(|| wavefront.skeleton.schedule().slots(&ctx));
    // The schedule's slots are written for a rank's position along the first chunk (its rank
    // under the default placement and the V fold; under any other map, where its stage sits).
    let first = wavefront
        .regions
        .first()
        .map(|&first| plan.placement.region_ranks(first))
        .unwrap_or_default();
    (0..plan.ranks)
        .map(|rank| {
            // Each position is one rank's (the placement maps a region's stages to distinct
            // ranks), so its list is moved, not copied.
            let position = first.iter().position(|&r| r == rank).unwrap_or(rank);
            by_position
                .get_mut(position)
                .map(std::mem::take)
                .unwrap_or_default()
        })
        .collect()
}

/// Each rank's slots run every chunk's forward of every microbatch exactly once (a schedule
/// whose order left one out would derive a step without it).
fn every_forward(
    plan: &Plan,
    wavefront: &Wavefront,
    slots: &[Vec<Slot>],
) -> Result<(), OrderError> {
    let (chunks, m) = (wavefront.chunks(), plan.microbatches);
    let want = chunks * m;
    for (rank, list) in slots.iter().enumerate() {
        let mut seen = vec![false; want];
        let (mut distinct, mut forwards) = (0, 0);
        for s in list {
            if !matches!(s.phase, Phase::Forward | Phase::EnergyForward) {
                continue;
            }
            forwards += 1;
            let (c, mb) = (s.chunk.index(), s.mb.index());
            if let Some(slot) = (c < chunks && mb < m)
                .then(|| seen.get_mut(c * m + mb))
                .flatten()
                && !*slot
            {
                *slot = true;
                distinct += 1;
            }
        }
        if distinct != want || forwards != want {
            return Err(OrderError::Slots {
                skeleton: wavefront.skeleton.name(),
                rank,
                distinct,
                slots: forwards,
                want,
            });
        }
    }
    Ok(())
}

/// Whether each (region, rank, microbatch)'s backward is split: as the region's op set says,
/// unless the wavefront's slots or the hand-written order run it whole (`B`) or halved (`I`, `W`).
fn split_backwards(
    plan: &Plan,
    slots: &[Vec<Slot>],
    explicit: Option<&[Vec<Result<Step, StepParseError>>]>,
) -> Vec<bool> {
    let (p, m) = (plan.ranks, plan.microbatches);
    let mut split = Vec::with_capacity(plan.regions.len() * p * m);
    for region in &plan.regions {
        split.extend(std::iter::repeat_n(
            region.skeleton.splits_backward(),
            p * m,
        ));
    }
    // Nothing to mark where no region splits its backward and no step halves one: every
    // backward stays whole, as the table starts.
    let halves = |phase: Phase| matches!(phase, Phase::Input | Phase::Weight);
    let marks = plan.regions.iter().any(|r| r.skeleton.splits_backward())
        || match explicit {
            Some(lists) => lists
                .iter()
                .flatten()
                .flatten()
                .any(|step| step.actions().any(|a| halves(a.phase))),
            None => slots.iter().flatten().any(|s| halves(s.phase)),
        };
    if !marks {
        return split;
    }
    let mut mark = |region: usize, rank: usize, mb: usize, phase: Phase| {
        if region == 0 || rank >= p || mb >= m {
            return;
        }
        let halved = match phase {
            Phase::Forward
            | Phase::EnergyForward
            | Phase::ForceForward
            | Phase::ForceBackward
            | Phase::EnergyBackward
            | Phase::Recompute => return,
            Phase::Backward => false,
            Phase::Input | Phase::Weight => true,
        };
        if let Some(flag) = split.get_mut(key(plan, region, rank, mb)) {
            *flag = halved;
        }
    };
    if let Some(lists) = explicit {
        for (rank, list) in lists.iter().enumerate() {
            for step in list.iter().flatten() {
                for a in step.actions() {
                    if let Some((region, on_rank)) = plan.stage_to_region_rank(a.stage)
                        && on_rank == rank
                    {
                        mark(region, rank, a.mb.into(), a.phase);
                    }
                }
            }
        }
    } else if let Some(w) = &plan.wavefront {
        for (rank, list) in slots.iter().enumerate() {
            for s in list {
                if let Some(&region) = w.regions.get(s.chunk.index()) {
                    let mb = s.mb.into();
                    mark(plan.routed(region, mb), rank, mb, s.phase);
                }
            }
        }
    }
    split
}

/// The overlapped pairs of the wavefront's slots, as (forward, backward) nodes.
fn slot_pairs(b: &Builder) -> Vec<[NodeIndex; 2]> {
    let Some(w) = &b.plan.wavefront else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    for (rank, slots) in b.slots.iter().enumerate() {
        let lookup = RankSlots::new(b, w, rank);
        for two in slots.windows(2) {
            if let [first, second] = two
                && first.overlaps_next
                && let (Some(f), Some(s)) = (lookup.node(first), lookup.node(second))
            {
                pairs.push([f, s]);
            }
        }
    }
    pairs
}

/// Adds each Loss right after the forward that produces it, and each DpReduce right after the
/// rank's last backward of its region (at the end when the rank has none).
pub(crate) fn with_loss_and_reduces(
    b: &Builder,
    rank: usize,
    compute: Vec<NodeIndex>,
) -> Vec<NodeIndex> {
    let g = &b.graph;
    let regions = b.plan.regions.len();
    // A backward: any Bwd, or a four-phase BF or BE.
    let backward_region = |e: Option<&Event>| match e {
        Some(Event::Bwd { region, .. }) => Some(region.index()),
        Some(Event::FourPhase { region, phase, .. }) if phase.is_backward() => Some(region.index()),
        _ => None,
    };
    let reduces: Vec<(usize, NodeIndex)> = (1..=regions)
        .filter_map(|region| b.reduces.get(&(region, rank)).map(|&n| (region, n)))
        .collect();
    // Where each reduce's region last runs a backward on the rank: found from the end, only
    // for the regions that reduce here (each reduces once a rank).
    let mut reduces_here = vec![false; regions + 1];
    for &(region, _) in &reduces {
        if let Some(flag) = reduces_here.get_mut(region) {
            *flag = true;
        }
    }
    let mut last_bwd: Vec<Option<usize>> = vec![None; regions + 1];
    let mut left = reduces.len();
    for (i, &n) in compute.iter().enumerate().rev() {
        if left == 0 {
            break;
        }
        if let Some(region) = backward_region(g.node_weight(n))
            && reduces_here.get(region) == Some(&true)
            && let Some(slot @ None) = last_bwd.get_mut(region)
        {
            *slot = Some(i);
            left -= 1;
        }
    }
    // The reduces that follow a backward, by its place (the rest go at the end).
    let mut after: Vec<(usize, NodeIndex)> = reduces
        .iter()
        .filter_map(|&(region, n)| Some((last_bwd.get(region).copied().flatten()?, n)))
        .collect();
    after.sort_by_key(|&(i, _)| i);
    let mut after = after.into_iter().peekable();
    let mut out = Vec::with_capacity(compute.len() + reduces.len() + b.plan.microbatches);
    for (i, &n) in compute.iter().enumerate() {
        out.push(n);
        // Only a forward (or a four-phase FF) hands on to a loss: its microbatch's last one.
        if let Some(Event::Fwd { mb, .. } | Event::FourPhase { mb, .. }) = g.node_weight(n)
            && let Some(&[last, loss]) = b.loss_after.get(mb.index())
            && last.get() == Some(n)
            && let Some(loss) = loss.get()
        {
            out.push(loss);
        }
        while let Some((_, reduce)) = after.next_if(|&(at, _)| at == i) {
            out.push(reduce);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// Each rank's order: every loss right after its microbatch's last forward, every reduce
    /// right after the rank's last backward of its region (at the end where it has none), on a
    /// replicated encoder, two interleaved backbone regions and two data-parallel replicas.
    #[test]
    fn losses_and_reduces_follow_what_they_wait_for() {
        let text = r#"{"format": "mpipe-scenario/1", "name": "t",
            "model": {"layers": [
                {"name": "vit", "role": "encoder", "count": 2, "fwd_s": 0.5},
                {"name": "llm", "role": "backbone", "count": 8, "fwd_s": 1.0}]},
            "cut": [2, 6], "schedule": ["transpose", "1f1b", "1f1b"],
            "ranks": 4, "microbatches": 8, "data_parallel": 2}"#;
        let s = Scenario::from_json_str(text, "t.json").unwrap();
        let plan = crate::algebra::validity::plan(&s).unwrap();
        let collectives = crate::algebra::collectives::collectives(&plan);
        let order = build(&plan, &collectives, None).unwrap();
        let g = &order.graph;
        let mut reduces_seen = 0;
        for (rank, nodes) in order.nodes.iter().enumerate() {
            let events: Vec<Event> = nodes.iter().map(|&n| *g.node_weight(n).unwrap()).collect();
            for (i, e) in events.iter().enumerate() {
                match *e {
                    Event::Loss { mb, .. } => {
                        let [last, loss] = last_forward_and_loss(&order, mb.index());
                        assert_eq!(loss, nodes[i], "rank {rank}: {e:?}");
                        assert_eq!(Some(last), i.checked_sub(1).map(|j| nodes[j]));
                    }
                    Event::DpReduce { region, .. } => {
                        reduces_seen += 1;
                        let is_bwd =
                            |e: &Event| matches!(e, Event::Bwd { region: r, .. } if *r == region);
                        match events.iter().rposition(is_bwd) {
                            Some(last) => assert_eq!(i, last + 1, "rank {rank}: {e:?}"),
                            None => assert!(
                                events[i..]
                                    .iter()
                                    .all(|e| matches!(e, Event::DpReduce { .. })),
                                "rank {rank}: {e:?} not in the trailing reduces"
                            ),
                        }
                    }
                    _ => {}
                }
            }
        }
        // One reduce a rank for each region it holds: the encoder's on every rank, each
        // backbone region's on every rank.
        assert_eq!(reduces_seen, 3 * 4);
    }

    /// Microbatch `mb`'s last forward and its loss, as the graph joins them.
    fn last_forward_and_loss(order: &Order, mb: usize) -> [NodeIndex; 2] {
        let g = &order.graph;
        let loss = g
            .node_indices()
            .find(
                |&n| matches!(g.node_weight(n), Some(Event::Loss { mb: m, .. }) if m.index() == mb),
            )
            .unwrap();
        let last = g
            .neighbors_directed(loss, petgraph::Direction::Incoming)
            .next()
            .unwrap();
        [last, loss]
    }

    #[test]
    fn slots_that_leave_a_forward_out_are_a_named_defect() {
        let text = r#"{"format": "mpipe-scenario/1", "name": "t",
            "model": {"layers": [{"name": "l", "count": 2, "fwd_s": 1.0}]},
            "schedule": ["1f1b"], "ranks": 2, "microbatches": 2}"#;
        let s = Scenario::from_json_str(text, "t.json").unwrap();
        let plan = crate::algebra::validity::plan(&s).unwrap();
        let w = plan.wavefront.clone().unwrap();
        let whole = wavefront_slots(&plan, &w, None);
        assert!(every_forward(&plan, &w, &whole).is_ok());
        // Rank 1's second forward dropped; then a forward twice in its place.
        let mut short = whole.clone();
        short[1].retain(|s| !(s.phase == Phase::Forward && s.mb.index() == 1));
        let err = every_forward(&plan, &w, &short).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rule `schedule-slots`: 1f1b's order for rank 1 runs 1 of its 2 forwards in 1 forward slots (a defect of the schedule's order, not of the scenario)"
        );
        assert_eq!(err.field(), "schedule");
        // Every forward, one of them twice: refused too.
        let mut twice = whole;
        twice[0].push(Slot::forward(0, 0));
        assert_eq!(
            every_forward(&plan, &w, &twice).unwrap_err().to_string(),
            "rule `schedule-slots`: 1f1b's order for rank 0 runs 2 of its 2 forwards in 3 forward slots (a defect of the schedule's order, not of the scenario)"
        );
    }
}
