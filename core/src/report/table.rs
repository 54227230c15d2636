//! The global operator table BigMac puts at the centre of its design: the schedule as a grid of
//! time slot × rank, every cell the operator a rank runs in that slot (`VF0` a vision-encoder
//! forward of microbatch 0, `F0` / `B0` the backbone's, `GF0` / `GB0` a generator's, `I0` / `W0`
//! the halves of a split backward, `F3;B1` an overlapped pair) or `IDLE`. Slots are the schedule's
//! logical time: every compute action takes one slot and nothing else takes any, so the table
//! shows the order and the dependencies (what must wait for what), not the durations — the
//! Gantt chart shows those.

use crate::graph::derive::Derivation;
use crate::graph::event::Event;
use crate::graph::time::logical_time;
use crate::vocab::phase::Phase;
use crate::vocab::role::Role;
use serde::Serialize;
use std::fmt::Write as _;

/// What an empty cell says.
pub const IDLE: &str = "IDLE";

/// The operator table of a derivation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperatorTable {
    /// Per rank, per slot: the operator's name, or [`IDLE`].
    pub ranks: Vec<Vec<String>>,
}

impl OperatorTable {
    /// Builds the table: the order simulated with one slot per compute action.
    pub fn new(d: &Derivation) -> OperatorTable {
        let graph = &d.order.graph;
        let timeline = logical_time(&d.order);
        let slots = timeline.makespan.round().max(0.0) as usize;
        let mut ranks = vec![vec![IDLE.to_string(); slots]; d.plan.ranks];
        for n in graph.node_indices() {
            let Some(event) = graph.node_weight(n) else {
                continue;
            };
            let (Some(rank), Some(name)) = (event.rank(), operator_name(d, event)) else {
                continue;
            };
            let Some(start) = timeline.start_of(n) else {
                continue;
            };
            let slot = start.round().max(0.0) as usize;
            if let Some(cell) = ranks.get_mut(rank).and_then(|r| r.get_mut(slot)) {
                // Two actions in one slot: an overlapped pair (its halves start together).
                if cell == IDLE {
                    *cell = name;
                } else {
                    cell.push(';');
                    cell.push_str(&name);
                }
            }
        }
        OperatorTable { ranks }
    }

    /// The table as text: a header of slot numbers, a row per rank, columns as wide as their
    /// widest cell.
    pub fn text(&self) -> String {
        let slots = self.ranks.iter().map(Vec::len).max().unwrap_or(0);
        let width = |slot: usize| {
            self.ranks
                .iter()
                .filter_map(|r| r.get(slot))
                .map(|c| c.chars().count())
                .chain([slot.to_string().len()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..slots).map(width).collect();
        let label = format!("rank {}", self.ranks.len().saturating_sub(1)).len();
        let mut out = String::new();
        let mut line = format!("{:<label$}", "slot");
        for (slot, w) in widths.iter().enumerate() {
            let _ = write!(line, "  {slot:<w$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for (rank, cells) in self.ranks.iter().enumerate() {
            let mut line = format!("{:<label$}", format!("rank {rank}"));
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(line, "  {cell:<w$}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `VF3`, `B0`, `GW2`: the module's letter (V a vision encoder or projector, G a generator, none
/// for the backbone and other layers), the phase and the microbatch.
fn operator_name(d: &Derivation, event: &Event) -> Option<String> {
    let (region, phase, mb) = match *event {
        Event::Fwd { region, mb, .. } => (region, Phase::Forward, mb),
        Event::Bwd {
            region, mb, half, ..
        } => (region, half.phase(), mb),
        Event::FourPhase {
            region, mb, phase, ..
        } => (region, phase, mb),
        _ => return None,
    };
    let role = d
        .plan
        .region(region.into())
        .and_then(|r| d.plan.layers.get(r.layers.start))
        .map(|l| l.role);
    let module = match role {
        Some(Role::Encoder | Role::Projector) => "V",
        Some(Role::Generator) => "G",
        _ => "",
    };
    Some(format!("{module}{}{}", phase.code(), usize::from(mb)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::layer::LayerSpec;

    fn derive(layers: Vec<LayerSpec>, cut: Vec<usize>, schedule: &str, m: usize) -> Derivation {
        let skeletons: Vec<&str> = schedule.split(',').collect();
        let json = format!(
            r#"{{"format":"mpipe-scenario/1","model":{{"layers":{}}},"cut":{:?},"schedule":{:?},"ranks":2,"microbatches":{m}}}"#,
            serde_json::to_string(&layers).unwrap_or_default(),
            cut,
            skeletons
        );
        let scenario = crate::Scenario::from_json_str(&json, "t.json").unwrap();
        crate::derive(&scenario).unwrap()
    }

    #[test]
    fn one_f_one_b_as_a_grid() {
        // P = 2, M = 3: rank 1 starts a slot late; its forward and backward alternate.
        let d = derive(
            vec![LayerSpec::timed("l", Role::Backbone, 2, 1.0)],
            vec![],
            "1f1b",
            3,
        );
        let t = OperatorTable::new(&d);
        // Worked by hand: rank 0 warms up with two forwards, rank 1 (the last stage) with one;
        // each backward of rank 0 waits for rank 1's of the same microbatch.
        assert_eq!(
            t.ranks,
            [
                ["F0", "F1", "IDLE", "B0", "F2", "B1", "IDLE", "B2"],
                ["IDLE", "F0", "B0", "F1", "B1", "F2", "B2", "IDLE"],
            ]
        );
        assert_eq!(
            t.text(),
            "slot    0     1   2     3   4   5   6     7\n\
             rank 0  F0    F1  IDLE  B0  F2  B1  IDLE  B2\n\
             rank 1  IDLE  F0  B0    F1  B1  F2  B2    IDLE\n"
        );
    }
}
