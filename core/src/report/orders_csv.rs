//! PyTorch's pipeline CSV, written: the `compute_only` format on the schedule's logical time
//! steps (the operator table's), so that PyTorch's `_load_csv` reads it as it is. Reading is the
//! scenario's ([`crate::scenario::orders_csv`]).

use crate::graph::derive::Derivation;
use crate::graph::time::logical_time;
use std::io::Write;

/// Each rank's steps on the schedule's logical time steps (the operator table's: every compute
/// step takes one), `None` where the rank is idle — PyTorch's `pipeline_order`.
pub fn grid(d: &Derivation) -> Vec<Vec<Option<String>>> {
    let timeline = logical_time(&d.order);
    let slots = timeline.makespan.round().max(0.0) as usize;
    let node_of = d.order.nodes_by_action();
    (0..d.plan.ranks)
        .map(|rank| {
            let mut row: Vec<Option<String>> = vec![None; slots];
            for step in d.order.steps(rank) {
                let Some(&n) = step.actions().next().and_then(|a| node_of.get(&(rank, a))) else {
                    continue;
                };
                let Some(start) = timeline.start_of(n) else {
                    continue;
                };
                let slot = start.round().max(0.0) as usize;
                if let Some(cell) = row.get_mut(slot) {
                    *cell = Some(step.to_string());
                }
            }
            // PyTorch's rows end at the rank's last action.
            while row.last().is_some_and(Option::is_none) {
                row.pop();
            }
            row
        })
        .collect()
}

/// Writes `d`'s orders as a `compute_only` pipeline CSV ([`grid`]).
pub fn write(d: &Derivation, out: impl Write) -> std::io::Result<()> {
    let mut writer = csv::WriterBuilder::new().flexible(true).from_writer(out);
    for row in grid(d) {
        writer
            .write_record(row.iter().map(|c| c.as_deref().unwrap_or("")))
            .map_err(std::io::Error::other)?;
    }
    writer.flush()
}
