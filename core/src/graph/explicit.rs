//! Hand-written per-rank orders: parsed from action notation and checked to hold exactly each
//! rank's compute events, every error at its `orders[r][i]`.

use crate::graph::build::Builder;
use crate::graph::event::{Action, Event};
use crate::graph::order::OrderError;
use petgraph::graph::NodeIndex;

/// Parses user-given per-rank orders and checks they hold exactly each rank's compute events.
pub(crate) fn explicit_orders(
    b: &Builder,
    lists: &[Vec<String>],
) -> Result<Vec<Vec<NodeIndex>>, OrderError> {
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
            let not_here = || {
                err(
                    path.clone(),
                    format!("`{text}` is not an event of this schedule"),
                )
            };
            let (region, on_rank) = plan
                .stage_to_region_rank(action.stage)
                .ok_or_else(not_here)?;
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
                .ok_or_else(not_here)?;
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
            let label = e.action().map(|a| a.to_string()).unwrap_or_default();
            return Err(err(format!("orders[{rank}]"), format!("misses `{label}`")));
        }
    }
    Ok(orders)
}
