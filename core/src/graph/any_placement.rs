//! An order for a plain wavefront (forwards and whole backwards, every region Sharded) on any
//! placement, list-scheduled ([`crate::schedules::listed`]). A schedule's slots assume its own
//! placement (interleaved 1F1B: chunk `c` of rank `r` is stage `c·P + r`); under another (the V
//! fold, Hanayo's waves of folds, an explicit one) they can deadlock, or run slower than this.

use crate::algebra::plan::Plan;
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::longest_path;
use crate::schedules::listed::{self, BACKWARD, FORWARD};
use crate::vocab::layout::Layout;

/// A list-scheduled order, the rule it was run with and how long its run took.
pub(crate) struct Listed {
    /// Each rank's order in action notation (`4F0`, `4B0`).
    pub orders: Vec<Vec<String>>,
    /// Which rule gave it, for the derivation's note.
    pub rule: String,
    /// The run's end, in units of time (a forward one, a backward two): what the order's own
    /// earliest-start replay takes at most.
    pub end: u64,
}

/// The shortest list-scheduled run over `plan`'s placement, or `None` where this does not apply:
/// a Replicated region, a bidirectional schedule's mirror (its microbatches do not run the one
/// chain of stages this schedules), a placement that leaves a stage without a rank, no stages.
pub(crate) fn orders(plan: &Plan) -> Option<Listed> {
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
    let run = listed::shortest(plan.ranks, plan.microbatches, rank_of)?;
    let orders = run
        .actions
        .iter()
        .map(|acts| {
            acts.iter()
                .map(|&(backward, s, mb)| format!("{s}{}{mb}", if backward { "B" } else { "F" }))
                .collect()
        })
        .collect();
    Some(Listed {
        orders,
        rule: run.rule,
        end: run.end,
    })
}

/// How long `order` (a plain wavefront's, laid out) takes in the units the runs use: a forward
/// one, a backward two, nothing else any time.
pub(crate) fn unit_end(order: &Order) -> f64 {
    let unit: Vec<f64> = order
        .graph
        .node_weights()
        .map(|e| match e {
            Event::Fwd { .. } => FORWARD as f64,
            Event::Bwd { .. } => BACKWARD as f64,
            _ => 0.0,
        })
        .collect();
    longest_path(order, unit).makespan
}
