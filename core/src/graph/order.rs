//! The order graph: typed events joined by typed edges (a DAG stored flat, [`OrderGraph`]), and
//! `nodes(r)`, each rank's events in execution order. [`crate::graph::build`] makes it;
//! [`crate::graph::deadlock`] checks it.

use crate::graph::order_graph::OrderGraph;
use crate::vocab::action::{Action, Step};
use petgraph::graph::NodeIndex;

/// Why an order cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("rule `orders`: `{path}`: {message}")]
    Explicit { path: String, message: String },
    /// A schedule's own slots leave work unrun: a defect of the schedule, never of the file.
    #[error(
        "rule `schedule-slots`: {skeleton}'s order for rank {rank} runs {distinct} of its {want} forwards in {slots} forward slots (a defect of the schedule's order, not of the scenario)"
    )]
    Slots {
        skeleton: &'static str,
        rank: usize,
        /// Distinct forwards of the rank's chunks and microbatches.
        distinct: usize,
        /// Forward slots, duplicates and strays included.
        slots: usize,
        want: usize,
    },
    #[error("rule `deadlock-free`: {} deadlocks; each event waits for the next: {}", Derived::words(derived.as_ref()), cycle.join(" → "))]
    Deadlock {
        cycle: Vec<String>,
        /// The cycle's compute actions with their ranks, in the cycle's order (for drawing it).
        actions: Vec<(usize, Action)>,
        /// A deadlock-free reordering close to the given one ([`crate::graph::deadlock::repair`]).
        fix: Box<Fix>,
        /// Where the order came from when the scenario gave none by hand (`None`: its
        /// `orders`).
        derived: Option<Derived>,
    },
}

/// Where a deadlocking order came from when the scenario gave none by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// The schedule's own order, under its own placement.
    Schedule,
    /// The schedule's order under a `placement` the scenario gives (named): the schedule's slots
    /// assume its own (`v_fold` under interleaved `1f1b`).
    Placement(&'static str),
}

impl Derived {
    /// What deadlocks, in words.
    fn words(derived: Option<&Derived>) -> String {
        match derived {
            None => "the per-rank order".to_string(),
            Some(Derived::Schedule) => "the order the schedule derives".to_string(),
            Some(Derived::Placement(name)) => format!(
                "the order the schedule derives under `placement` {name} (its slots assume its own placement)"
            ),
        }
    }
}

impl OrderError {
    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            OrderError::Explicit { path, .. } => path.clone(),
            OrderError::Slots { .. } => "schedule".into(),
            OrderError::Deadlock { derived, .. } => match derived {
                None => "orders",
                Some(Derived::Schedule) => "schedule",
                Some(Derived::Placement(_)) => "placement",
            }
            .to_string(),
        }
    }
}

/// A deadlock-free reordering of per-rank orders that deadlock: as few steps as possible moved
/// earlier, each to run as soon as its inputs are in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fix {
    /// Every rank's compute steps, in action notation (what `orders` takes).
    pub orders: Vec<Vec<String>>,
    /// The steps moved, each with the step it now runs before: `(rank, moved, before)`.
    pub moves: Vec<(usize, String, String)>,
}

impl Fix {
    /// `rank 1: 1F0 before 1F1; …`.
    pub fn summary(&self) -> String {
        self.moves
            .iter()
            .map(|(rank, moved, before)| format!("rank {rank}: {moved} before {before}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The `order` output of `derive`.
#[derive(Debug, Clone)]
pub struct Order {
    /// Data dependencies: Activation, Gradient, Turnaround, Accumulate, Sequence, Overlap,
    /// Recompute, Offload and CopyStream edges; once laid out, its flat lists also link each
    /// rank's stream (`nodes`).
    pub graph: OrderGraph,
    /// `nodes(r)`: the compute-stream events of rank `r` (Fwd, Bwd, Loss, DpReduce) in execution
    /// order.
    pub nodes: Vec<Vec<NodeIndex>>,
    /// The overlapped pairs (forward, backward), each run as one compute slot of its rank.
    pub pairs: Vec<[NodeIndex; 2]>,
    pub barrier: NodeIndex,
    /// A topological order of the data edges and the streams' links (filled by the deadlock
    /// check).
    pub topological: Vec<u32>,
}

/// The forward of each overlapped pair, by its backward: the slot both start in.
pub fn pair_forwards(pairs: &[[NodeIndex; 2]]) -> rustc_hash::FxHashMap<NodeIndex, NodeIndex> {
    pairs
        .iter()
        .map(|&[first, second]| (second, first))
        .collect()
}

impl Order {
    /// Rank `r`'s Fwd/Bwd events as actions, in execution order (an early recomputation is not
    /// one of PyTorch's actions, and is left out).
    pub fn actions(&self, rank: usize) -> Vec<Action> {
        self.nodes
            .get(rank)
            .map(|ns| {
                ns.iter()
                    .filter_map(|&n| self.graph.node_weight(n).and_then(|e| e.action()))
                    .filter(|a| a.phase != crate::vocab::phase::Phase::Recompute)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every compute event's node, by its rank and action.
    pub fn nodes_by_action(&self) -> rustc_hash::FxHashMap<(usize, Action), NodeIndex> {
        self.graph
            .node_indices()
            .filter_map(|n| {
                let e = self.graph.node_weight(n)?;
                Some(((e.rank()?, e.action()?), n))
            })
            .collect()
    }

    /// Each of the first `ranks` ranks' steps ([`Order::steps`]) in action notation, as a
    /// scenario's hand-written `orders` take them: what an edit that moves a step starts from.
    pub fn written(&self, ranks: usize) -> Vec<Vec<String>> {
        (0..ranks)
            .map(|r| self.steps(r).iter().map(Step::to_string).collect())
            .collect()
    }

    /// Rank `r`'s compute slots in execution order: its actions, an overlapped pair as one.
    /// (Early recomputations are left out, as in [`Order::actions`].)
    pub fn steps(&self, rank: usize) -> Vec<Step> {
        // This rank's pairs only: the report asks for every rank in turn.
        let on_rank = |n: NodeIndex| self.graph.node_weight(n).and_then(|e| e.rank()) == Some(rank);
        let mine: Vec<[NodeIndex; 2]> = self
            .pairs
            .iter()
            .copied()
            .filter(|&[f, _]| on_rank(f))
            .collect();
        let paired: rustc_hash::FxHashMap<NodeIndex, NodeIndex> =
            mine.iter().map(|&[f, b]| (f, b)).collect();
        let second: rustc_hash::FxHashSet<NodeIndex> = mine.iter().map(|p| p[1]).collect();
        let action = |n: NodeIndex| {
            self.graph
                .node_weight(n)
                .and_then(|e| e.action())
                .filter(|a| a.phase != crate::vocab::phase::Phase::Recompute)
        };
        let mut steps = Vec::new();
        for &n in self.nodes.get(rank).map(Vec::as_slice).unwrap_or_default() {
            if second.contains(&n) {
                continue;
            }
            let Some(a) = action(n) else {
                continue;
            };
            match paired.get(&n).and_then(|&b| action(b)) {
                Some(b) => steps.push(Step::Overlap(a, b)),
                None => steps.push(Step::One(a)),
            }
        }
        steps
    }
}
