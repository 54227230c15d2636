//! BigMac's nested pipeline as a composition policy: a nested first region (the modality
//! encoder) and a nested last region (the generator, a sink), Replicated with each microbatch on
//! its owner, are embedded in the backbone's order without moving any backbone event in it. Time
//! is the schedule's logical time, one slot per backbone compute action (the slots BigMac's
//! global operator table lists; `report::table` prints it): the backbone's slots come from its
//! order alone (the encoder taking none), and then on its owner rank
//! - each encoder forward runs in the slot before the one its output is consumed in (the
//!   backbone's first stage's forward of that microbatch) — as late as it can, just in time;
//! - each encoder backward runs in the slot its gradient is back in (after the first stage's
//!   backward of that microbatch) — as soon as it can;
//! - each generator forward runs in the slot after the last stage's forward of its microbatch,
//!   and its backward right after it, before the last stage's backward it feeds.
//!
//! An encoder action goes before the backbone step of its slot: in an idle slot it costs the
//! backbone nothing; in a busy one, what follows on its rank runs one encoder action later. No
//! backbone action changes its place in its rank's order, and an encoder activation lives from
//! just before its microbatch enters the backbone until just after it leaves it, whatever the
//! number of microbatches. An encoder forward has no input and an encoder backward feeds no
//! backbone action, so the order is deadlock-free for every owner map.

use crate::algebra::plan::Plan;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::{Timeline, longest_path};
use crate::vocab::action::{Action, Step};
use crate::vocab::layout::Composition;
use petgraph::Direction;
use petgraph::graph::NodeIndex;

/// The nested regions of `plan`: an encoder (the first region) and a generator (the last).
pub(crate) fn regions(plan: &Plan) -> (Option<usize>, Option<usize>) {
    let nested = |index: Option<usize>| {
        index.filter(|&i| {
            plan.region(i)
                .is_some_and(|r| r.skeleton.composition() == Some(Composition::Nested))
        })
    };
    let encoder = nested(plan.regions.first().map(|r| r.index));
    let generator = nested(plan.regions.last().map(|r| r.index)).filter(|_| plan.regions.len() > 1);
    (encoder, generator)
}

/// Each rank's order in action notation (overlapped pairs as one step), the nested regions'
/// work (a first region: the encoder; a last one: the generator) embedded in the backbone's: the
/// explicit orders the nested schedule is derived with.
pub(crate) fn orders(plan: &Plan, order: &Order) -> Vec<Vec<String>> {
    let (encoder, generator) = regions(plan);
    let nesting = Nesting {
        order,
        encoder,
        generator,
    };
    // The backbone's logical time: one slot per backbone action, none for the nested ones'.
    let unit: Vec<f64> = order
        .graph
        .node_indices()
        .map(|n| if nesting.backbone(n) { 1.0 } else { 0.0 })
        .collect();
    let clock = Clock {
        timeline: longest_path(order, unit),
        nesting,
    };
    let actions = order.nodes_by_action();
    (0..plan.ranks)
        .map(|rank| {
            let node_of = |a: &Action| actions.get(&(rank, *a)).copied();
            // `(slot, before the backbone step of the slot, forward before backward, node)`.
            let mut placed: Vec<((i64, u8, u8, usize), String)> = order
                .steps(rank)
                .iter()
                .filter_map(|step| {
                    let first = step.actions().next().as_ref().and_then(node_of)?;
                    let key = clock.key(step, first, &node_of)?;
                    Some(((key.0, key.1, key.2, first.index()), step.to_string()))
                })
                .collect();
            placed.sort_by_key(|p| p.0);
            placed.into_iter().map(|p| p.1).collect()
        })
        .collect()
}

/// Which of an order's actions are nested (an encoder's, a generator's) and which the
/// backbone's.
struct Nesting<'a> {
    order: &'a Order,
    encoder: Option<usize>,
    generator: Option<usize>,
}

/// The backbone's logical time, and where each nested action goes in it.
struct Clock<'a> {
    nesting: Nesting<'a>,
    /// One slot per backbone action.
    timeline: Timeline,
}

impl Nesting<'_> {
    fn region_of(&self, n: NodeIndex) -> Option<usize> {
        match self.order.graph.node_weight(n) {
            Some(Event::Fwd { region, .. } | Event::Bwd { region, .. }) => {
                Some(usize::from(*region))
            }
            _ => None,
        }
    }

    /// A nested region's compute action.
    fn embedded(&self, n: NodeIndex) -> bool {
        let r = self.region_of(n);
        r.is_some() && (r == self.encoder || r == self.generator)
    }

    /// A backbone compute action.
    fn backbone(&self, n: NodeIndex) -> bool {
        self.region_of(n).is_some() && !self.embedded(n)
    }
}

impl Clock<'_> {
    fn slot(&self, n: NodeIndex) -> Option<i64> {
        let t = self.timeline.start_of(n)?;
        Some(t.round() as i64)
    }

    /// The backbone actions next to `n` through collectives, losses and nested actions, in
    /// `direction`.
    fn neighbours(&self, n: NodeIndex, direction: Direction) -> Vec<NodeIndex> {
        let g = &self.nesting.order.graph;
        let mut out = Vec::new();
        let mut stack = vec![n];
        let mut seen = 0usize;
        while let Some(at) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            for next in g.neighbors_directed(at, direction) {
                if self.nesting.backbone(next) {
                    out.push(next);
                } else if self.nesting.region_of(next).is_none()
                    && matches!(
                        g.node_weight(next),
                        Some(Event::Coll { .. } | Event::Loss { .. })
                    )
                {
                    stack.push(next);
                }
            }
        }
        out
    }

    /// The slot just after the backbone actions `n` waits for.
    fn after(&self, n: NodeIndex) -> i64 {
        self.neighbours(n, Direction::Incoming)
            .into_iter()
            .filter_map(|m| self.slot(m).map(|s| s + 1))
            .max()
            .unwrap_or(0)
    }

    /// The slot of the first backbone action `n` feeds.
    fn before(&self, n: NodeIndex) -> Option<i64> {
        self.neighbours(n, Direction::Outgoing)
            .into_iter()
            .filter_map(|m| self.slot(m))
            .min()
    }

    /// Where `step` (its first action at `first`) goes: `(slot, before the backbone step of the
    /// slot, forward before backward)`.
    fn key(
        &self,
        step: &Step,
        first: NodeIndex,
        node_of: &dyn Fn(&Action) -> Option<NodeIndex>,
    ) -> Option<(i64, u8, u8)> {
        let forward = matches!(
            self.nesting.order.graph.node_weight(first),
            Some(Event::Fwd { .. })
        );
        if !self.nesting.embedded(first) {
            return Some((self.slot(first)?, 1, 0));
        }
        Some(if self.nesting.region_of(first) == self.nesting.encoder {
            if forward {
                // Just in time: the slot before its output's first use.
                let deadline = self.before(first).unwrap_or(i64::MAX);
                (deadline.saturating_sub(1), 0, 0)
            } else {
                // As soon as its gradient is back.
                (self.after(first), 0, 1)
            }
        } else if forward {
            // The generator's forward as soon as the backbone's output arrives.
            (self.after(first), 0, 0)
        } else {
            // Its backward right after its forward (the same stage and microbatch), before the
            // backbone's backward it feeds.
            let own_forward = step
                .actions()
                .next()
                .map(|a| Action {
                    phase: crate::vocab::phase::Phase::Forward,
                    ..a
                })
                .as_ref()
                .and_then(node_of)
                .map_or(0, |n| self.after(n));
            (
                self.before(first)
                    .map_or(own_forward, |b| b.max(own_forward)),
                0,
                1,
            )
        })
    }
}
