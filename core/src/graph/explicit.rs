//! Hand-written per-rank orders: parsed from action notation (`4F0`, `3I1`, `2W1`, an overlapped
//! pair `(0F3;3B1)OVERLAP_F_B`) and checked to hold exactly each rank's compute events, every
//! error at its `orders[r][i]`. Any backward may be written whole (`B`) or as its two halves.

use crate::graph::builder::Builder;
use crate::graph::order::OrderError;
use crate::vocab::action::{Action, Step, StepParseError};
use petgraph::graph::NodeIndex;

/// Per-rank compute orders and the overlapped pairs among them.
pub(crate) type Orders = (Vec<Vec<NodeIndex>>, Vec<[NodeIndex; 2]>);

/// Checks user-given per-rank orders (each entry parsed from its text) hold exactly each rank's
/// compute events; a parse error is reported at its entry.
pub(crate) fn explicit_orders(
    b: &Builder,
    lists: &[Vec<Result<Step, StepParseError>>],
) -> Result<Orders, OrderError> {
    let plan = b.plan;
    let err = |path: String, message: String| OrderError::Explicit { path, message };
    if lists.len() != plan.ranks {
        return Err(err(
            "orders".into(),
            format!("gives {} rank orders for {} ranks", lists.len(), plan.ranks),
        ));
    }
    let mut orders = Vec::with_capacity(plan.ranks);
    let mut pairs = Vec::new();
    let mut seen = vec![false; b.graph.node_count()];
    for (rank, list) in lists.iter().enumerate() {
        let mut order = Vec::with_capacity(list.len());
        for (i, parsed) in list.iter().enumerate() {
            // Written only for an error: a long order checks without printing a thing.
            let path = || format!("orders[{rank}][{i}]");
            let step = parsed.as_ref().map_err(|e| err(path(), e.to_string()))?;
            let mut nodes = step
                .actions()
                .map(|action| node_of(b, &mut seen, path, rank, action));
            let first = nodes.next().transpose()?;
            let second = nodes.next().transpose()?;
            order.extend(first);
            order.extend(second);
            if let (Some(f), Some(s)) = (first, second) {
                pairs.push([f, s]);
            }
        }
        orders.push(order);
    }
    for n in b.graph.node_indices() {
        if let Some(e) = b.graph.node_weight(n)
            && e.is_compute()
            && let Some(rank) = e.rank()
            && !seen.get(n.index()).copied().unwrap_or(true)
        {
            let label = e.action().map(|a| a.to_string()).unwrap_or_default();
            return Err(err(format!("orders[{rank}]"), format!("misses `{label}`")));
        }
    }
    Ok((orders, pairs))
}

/// The compute event `action` names on `rank`, marked seen (each at most once).
fn node_of(
    b: &Builder,
    seen: &mut [bool],
    path: impl Fn() -> String,
    rank: usize,
    action: Action,
) -> Result<NodeIndex, OrderError> {
    let plan = b.plan;
    let err = |message: String| OrderError::Explicit {
        path: path(),
        message,
    };
    let not_here = || err(format!("`{action}` is not an event of this schedule"));
    let (region, on_rank) = plan
        .stage_to_region_rank(action.stage)
        .ok_or_else(not_here)?;
    if on_rank != rank {
        return Err(err(format!(
            "`{action}` is stage {} of rank {on_rank}, not of rank {rank}",
            action.stage
        )));
    }
    let node = b
        .compute(action.phase, region, rank, action.mb.into())
        .ok_or_else(not_here)?;
    let flag = seen
        .get_mut(node.index())
        .ok_or_else(|| err("internal index".into()))?;
    if *flag {
        return Err(err(format!("`{action}` appears twice")));
    }
    *flag = true;
    Ok(node)
}
