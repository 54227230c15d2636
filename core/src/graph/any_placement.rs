//! An order for a plain wavefront (forwards and whole backwards, or backwards split into their
//! input and weight halves; every region Sharded) on any placement, list-scheduled
//! ([`crate::schedules::listed`]). A schedule's slots assume its own placement (interleaved 1F1B:
//! chunk `c` of rank `r` is stage `c·P + r`; ZB-V its V); under another (the V fold, Hanayo's
//! waves of folds, an explicit one) they can deadlock, or run slower than this.

use crate::algebra::plan::Plan;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::longest_path;
use crate::schedules::listed::{self, BACKWARD, FORWARD, HALF, Op, Times};
use crate::vocab::action::{Action, Step};
use crate::vocab::ids::{Mb, Stage};
use crate::vocab::layout::Layout;
use crate::vocab::phase::{Half, OpSet};

/// A list-scheduled order, the rule it was run with and how long its run took.
pub(crate) struct Listed {
    /// Each rank's order (`4F0`, `4B0`; `4I0`, `4W0` split).
    pub orders: Vec<Vec<Step>>,
    /// Which rule gave it, for the derivation's note.
    pub rule: String,
    /// The bound on held activations it ran under, in words, and its value.
    pub bound: String,
    pub limit: usize,
    /// The most stages' activations a rank held in the run (counting any action left out of the
    /// orders).
    pub held: usize,
    /// How many bounds on held activations runs were made under.
    pub bounds: usize,
    /// How many rules runs were made with under each bound, counting any a shape makes the same
    /// as an earlier one (run once): the note's "up to".
    pub rules: usize,
    /// Whether each run was made again with its microbatches due when it finished them.
    pub fed_back: bool,
    /// The run's end, in units of time (a forward one, a backward two, each half one; in the
    /// given ticks from [`orders_timed`]): what the order's own earliest-start replay takes at
    /// most; `None` where the run scheduled actions the plan does not have (left out of the
    /// orders: read the order's [`unit_end`]).
    pub end: Option<u64>,
}

/// The shortest list-scheduled run over `plan`'s placement, or `None` where this does not apply:
/// a Replicated region, a bidirectional schedule's mirror (its microbatches do not run the one
/// chain of stages this schedules), a placement that leaves a stage without a rank, no stages.
pub(crate) fn orders(plan: &Plan) -> Option<Listed> {
    orders_timed(plan, None)
}

/// [`orders`], the runs made with each stage's own times and the transfers between them where
/// `times` gives them (in stage order; `end` is then in their ticks).
pub(crate) fn orders_timed(plan: &Plan, times: Option<Times>) -> Option<Listed> {
    if plan
        .regions
        .iter()
        .any(|r| r.layout() != Layout::Sharded || r.mirror_of.is_some())
    {
        return None;
    }
    let rank_of = plan.placement.ranks_of_stages();
    if rank_of.len() != plan.regions.len().checked_mul(plan.ranks)? {
        return None;
    }
    let schedule = plan.wavefront.as_ref().map(|w| (w.skeleton.schedule(), w));
    let split = schedule.is_some_and(|(s, _)| s.ops() == OpSet::SplitBackward);
    let own = schedule.and_then(|(s, w)| s.listed_bound(&plan.run_ctx(w)));
    let run = listed::shortest(plan.ranks, plan.microbatches, rank_of, split, own, times)?;
    // The run schedules every stage's backward and weight half; a region Lemma 1 runs no
    // backward in (nothing trainable at or before it) has none, an untrained one no weight half.
    // Leaving them out keeps the orders deadlock-free: nothing left waits for them.
    let exists = |op: Op, stage: usize| {
        let gates = plan.gates_of(stage / plan.ranks.max(1) + 1);
        match op {
            Op::Forward => true,
            Op::Backward | Op::Input => gates.runs_backward,
            Op::Weight => gates.runs_backward && gates.reduces,
        }
    };
    let mut complete = true;
    let orders = run
        .actions
        .iter()
        .map(|acts| {
            acts.iter()
                .filter(|&&(op, s, _)| {
                    let keep = exists(op, s);
                    complete &= keep;
                    keep
                })
                .map(|&(op, s, mb)| {
                    Step::One(Action {
                        stage: Stage::new(s),
                        phase: op.phase(),
                        mb: Mb::new(mb),
                    })
                })
                .collect()
        })
        .collect();
    Some(Listed {
        orders,
        rule: run.rule,
        bound: run.bound,
        limit: run.limit,
        held: run.held,
        bounds: run.bounds,
        rules: run.rules,
        fed_back: run.fed_back,
        end: complete.then_some(run.end),
    })
}

/// How long `order` (a plain wavefront's, laid out) takes in the units the runs use: a forward
/// one, a backward two, each half of one one, nothing else any time.
pub(crate) fn unit_end(order: &Order) -> f64 {
    let unit: Vec<f64> = order
        .graph
        .node_weights()
        .map(|e| match e {
            Event::Fwd { .. } => FORWARD as f64,
            Event::Bwd {
                half: Half::Whole, ..
            } => BACKWARD as f64,
            Event::Bwd { .. } => HALF as f64,
            _ => 0.0,
        })
        .collect();
    longest_path(order, unit).makespan
}
