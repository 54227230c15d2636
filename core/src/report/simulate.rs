//! What `mpipe simulate` and `mpipe compare` print: the JSON object (keys fixed by the README) and
//! readable tables.

use crate::schedules::skeleton::{Skeleton, schedule_to_string};
use crate::sim::jitter::Expected;
use crate::sim::memory::MemoryCurve;
use crate::sim::metrics::RankMetrics;
use crate::sim::run::Simulation;
use crate::view::timings::{CommTiming, EventTiming, comm_timings, event_timings};
use crate::vocab::units::{bytes, bytes_in, bytes_unit, secs, secs_in, secs_unit};
use serde::Serialize;
use std::fmt::Write as _;

/// The `--json` output of `mpipe simulate` (the memory curves read from the simulation, not
/// copied).
#[derive(Serialize, Debug)]
pub struct SimulateReport<'a> {
    pub name: String,
    pub schedule: Vec<Skeleton>,
    pub num_ranks: usize,
    pub num_microbatches: usize,
    pub makespan_s: f64,
    pub bubble_fraction: f64,
    pub utilisation: f64,
    /// The makespan with the transposed encoder removed (`null` without one).
    pub encoder_free_makespan_s: Option<f64>,
    /// The `ByMicrobatch` owner map used (after `greedy_slack` / `optimized`).
    pub owner: Vec<usize>,
    pub ranks: Vec<RankMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventTiming>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comms: Option<Vec<CommTiming>>,
    pub memory: &'a [MemoryCurve],
    pub critical_path: Vec<String>,
    /// Every rank's idle stretches (the bubbles the timeline labels), with the events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bubbles: Option<Vec<RankBubble>>,
    /// What every rank does at one instant (`mpipe simulate --at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<AtReport>,
    /// With `workload.graphs`: the batch packed sequentially and by GARS, both simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packing: Option<crate::tune::packing::PackingComparison>,
    /// With a `jitter` (a calibrated scenario): the expected step under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
    /// The schedule's textbook formula read against the simulation (`null` where none applies,
    /// `no_formula` then says why).
    pub formula: Option<crate::report::formula::ReadingJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_formula: Option<String>,
}

/// One idle stretch of a rank.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RankBubble {
    pub rank: usize,
    #[serde(flatten)]
    pub gap: crate::sim::metrics::Gap,
}

/// Every rank's state at `t_s`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct AtReport {
    pub t_s: f64,
    pub ranks: Vec<crate::view::explain::RankAt>,
}

impl<'a> SimulateReport<'a> {
    pub fn new(name: &str, sim: &'a Simulation, with_events: bool) -> Self {
        let d = &sim.derivation;
        let ranks = d.plan.ranks;
        let (formula, no_formula) = match crate::report::formula::read(sim) {
            Ok(reading) => (Some(reading.json()), None),
            Err(why) => (None, Some(why)),
        };
        SimulateReport {
            formula,
            no_formula,
            name: name.to_string(),
            schedule: d.plan.schedule(),
            num_ranks: ranks,
            num_microbatches: d.plan.microbatches,
            makespan_s: sim.makespan_s,
            bubble_fraction: sim.bubble_fraction,
            utilisation: sim.utilisation,
            encoder_free_makespan_s: sim.encoder_free_makespan_s,
            owner: d.plan.owner.clone(),
            ranks: sim.ranks.clone(),
            events: with_events.then(|| event_timings(sim)),
            comms: with_events.then(|| comm_timings(sim)),
            bubbles: with_events.then(|| {
                (0..ranks)
                    .flat_map(|rank| {
                        crate::sim::metrics::idle_gaps(&d.plan, &d.order, &sim.timeline, rank)
                            .into_iter()
                            .map(move |gap| RankBubble { rank, gap })
                    })
                    .collect()
            }),
            at: None,
            packing: None,
            expected: None,
            memory: &sim.memory,
            critical_path: critical_path(sim),
        }
    }
}

/// Column heads of the per-rank table (the CLI and the app show the same table).
pub const RANK_COLUMNS: [&str; 12] = [
    "rank",
    "busy",
    "bubble",
    "warmup",
    "steady",
    "cooldown",
    "comm",
    "w_r",
    "E_r",
    "spill",
    "sim.extra",
    "peak mem",
];

/// What each column of the per-rank table means (the app shows it on hover).
pub const RANK_COLUMN_HELP: [&str; 12] = [
    "the pipeline rank",
    "time spent computing forwards and backwards",
    "idle time: the step's makespan minus busy",
    "idle before the rank's first backbone forward",
    "idle between its first backbone forward and its last backbone event",
    "idle after its last backbone event",
    "waiting on transfers still in flight, plus its own gradient reduces",
    "w_r: the warmup window — idle time before the first backbone forward of the same schedule with the encoder removed (the room Mpipe's transposed encoder fills)",
    "E_r: the encoder forward work of the microbatches this rank owns",
    "spill: the paper's analytic spill max(0, E_r − w_r), encoder work that does not fit the warmup window",
    "sim.extra: how much later the first backbone forward starts than without the encoder, in the simulation (compare with spill: the analytic figure ignores when each microbatch is needed)",
    "the highest memory the rank holds during the step",
];

/// Column heads the per-rank table adds after [`RANK_COLUMNS`] when some stage runs collectives
/// inside it (a width with `tp`, `ep` or `cp` above 1).
pub const STAGE_COLUMNS: [&str; 2] = ["coll.", "overlap"];

/// What each of [`STAGE_COLUMNS`] means.
pub const STAGE_COLUMN_HELP: [&str; 2] = [
    "coll.: the collectives inside the rank's stage (tensor-parallel all-reduces, expert-parallel all-to-alls, context-parallel ring exchanges) over the step; their exposed part is in busy",
    "overlap: the overlap rate, hidden over all of the stage's collectives (hidden under the action's own compute, or under the other half of an overlapped pair)",
];

/// Whether the per-rank table shows [`STAGE_COLUMNS`].
fn has_stage_comm(ranks: &[RankMetrics]) -> bool {
    ranks.iter().any(|r| r.stage_comm_s > 0.0)
}

/// Every head of the per-rank table of `ranks` ([`RANK_COLUMNS`], then [`STAGE_COLUMNS`] where
/// some stage runs collectives), with what each means.
pub fn rank_columns(ranks: &[RankMetrics]) -> Vec<(&'static str, &'static str)> {
    let stage = if has_stage_comm(ranks) { 2 } else { 0 };
    RANK_COLUMNS
        .into_iter()
        .zip(RANK_COLUMN_HELP)
        .chain(STAGE_COLUMNS.into_iter().zip(STAGE_COLUMN_HELP).take(stage))
        .collect()
}

/// The per-rank table's rows, formatted column by column: each column of times in one unit, so
/// figures line up (`105.000 s` above `48.000 s`, never `105.0` above `48.000`).
pub fn rank_rows(ranks: &[RankMetrics]) -> Vec<Vec<String>> {
    rank_cells(ranks, true).1
}

/// The per-rank table with each column's unit in its head (`busy (s)`, `peak mem (GB)`) and bare
/// figures in its cells: the same table, narrower (the app's, which a 1280-pixel window cut);
/// with the stage columns ([`STAGE_COLUMNS`]), the transposed encoder's columns are left out
/// where no rank has a figure in them, so the table still fits. Each head comes with what it
/// means.
pub fn rank_table(ranks: &[RankMetrics]) -> (Vec<(String, &'static str)>, Vec<Vec<String>>) {
    let (units, rows) = rank_cells(ranks, false);
    // A column without a figure (`w_r` without an encoder: dashes) has no unit; with the stage
    // columns, an encoder column without one is left out.
    let columns = rows.first().map_or(0, Vec::len);
    let figures: Vec<bool> = (0..columns)
        .map(|c| rows.iter().any(|r| r.get(c).is_some_and(|x| x != "–")))
        .collect();
    let has_figures = |c: usize| figures.get(c).copied().unwrap_or(false);
    let kept = |c: usize| !(has_stage_comm(ranks) && (7..=10).contains(&c) && !has_figures(c));
    let heads = rank_columns(ranks)
        .iter()
        .enumerate()
        .filter(|&(c, _)| kept(c))
        .map(|(c, &(head, help))| {
            let head = match c.checked_sub(1).and_then(|i| units.get(i)) {
                Some(unit) if has_figures(c) => format!("{head} ({unit})"),
                _ => head.to_string(),
            };
            (head, help)
        })
        .collect();
    let rows = rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .enumerate()
                .filter(|&(c, _)| kept(c))
                .map(|(_, cell)| cell)
                .collect()
        })
        .collect();
    (heads, rows)
}

/// The unit of each column after `rank` and the rows, each cell with its unit or without.
fn rank_cells(ranks: &[RankMetrics], with_units: bool) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let times: [fn(&RankMetrics) -> Option<f64>; 10] = [
        |r| Some(r.busy_s),
        |r| Some(r.bubble_s),
        |r| Some(r.bubble.warmup_s),
        |r| Some(r.bubble.steady_s),
        |r| Some(r.bubble.cooldown_s),
        |r| Some(r.bubble.comm_s),
        |r| r.warmup_window_s,
        |r| r.encoder_work_s,
        |r| r.spill_s,
        |r| r.simulated_extra_s,
    ];
    let units: Vec<(f64, &'static str)> = times
        .iter()
        .map(|get| secs_unit(ranks.iter().filter_map(get)))
        .collect();
    let mem_unit = bytes_unit(ranks.iter().map(|r| r.peak_memory_bytes));
    let stage = has_stage_comm(ranks);
    let comm_unit = secs_unit(ranks.iter().map(|r| r.stage_comm_s));
    let bare = |cell: String, suffix: &str| match cell.strip_suffix(suffix) {
        Some(figure) if !with_units => figure.trim_end().to_string(),
        _ => cell,
    };
    let rows = ranks
        .iter()
        .map(|r| {
            let mut cells = vec![r.rank.to_string()];
            cells.extend(
                times
                    .iter()
                    .zip(&units)
                    .map(|(get, &unit)| bare(secs_in(get(r), unit), unit.1)),
            );
            cells.push(bare(bytes_in(r.peak_memory_bytes, mem_unit), mem_unit.1));
            if stage {
                cells.push(bare(secs_in(Some(r.stage_comm_s), comm_unit), comm_unit.1));
                cells.push(bare(
                    r.overlap_rate
                        .map_or("–".into(), |o| format!("{:.1} %", 100.0 * o)),
                    "%",
                ));
            }
            cells
        })
        .collect();
    let names = units
        .iter()
        .map(|u| u.1)
        .chain(std::iter::once(mem_unit.1))
        .chain(stage.then_some([comm_unit.1, "%"]).into_iter().flatten())
        .collect();
    (names, rows)
}

/// The readable form of `mpipe simulate`; with the expected step under the scenario's jitter, a
/// line for it beside the makespan.
pub fn text(name: &str, sim: &Simulation, expected: Option<&Expected>) -> String {
    let d = &sim.derivation;
    let schedule: Vec<Skeleton> = d.plan.schedule();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}{} — {}",
        if name.is_empty() {
            String::new()
        } else {
            format!("{name}: ")
        },
        schedule_to_string(&schedule),
        d.plan.shape()
    );
    let _ = writeln!(
        out,
        "makespan {}, bubble {:.1} %, utilisation {:.1} %{}",
        secs(sim.makespan_s),
        100.0 * sim.bubble_fraction,
        100.0 * sim.utilisation,
        sim.encoder_free_makespan_s
            .map_or(String::new(), |f| format!(
                ", without the encoder {}",
                secs(f)
            ))
    );
    // A calibrated scenario's expected step under its run's jitter, beside the makespan.
    if let Some(e) = expected {
        let _ = writeln!(out, "{}", e.sentence(sim.makespan_s, secs));
    }
    if let Some(note) = &d.order_note {
        let _ = writeln!(out, "order: {note}");
    }
    // A host that launches slower than its device runs: where the device waited for it.
    let held: Vec<String> = sim
        .ranks
        .iter()
        .filter(|r| r.bubble.host_s > 0.0)
        .map(|r| format!("rank {} {}", r.rank, secs(r.bubble.host_s)))
        .collect();
    if !held.is_empty() {
        let _ = writeln!(
            out,
            "host-bound: the device waited inside its actions for its host's launches ({}; in the bubble, not busy)",
            held.join(", ")
        );
    }
    // The schedule's textbook formula beside the simulated figures, or why there is none.
    match crate::report::formula::read(sim) {
        Ok(reading) => {
            for line in reading.lines() {
                let _ = writeln!(out, "{line}");
            }
        }
        Err(why) => {
            let _ = writeln!(out, "{why}");
        }
    }
    let _ = writeln!(out);
    let widths = [4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 11, 9, 8];
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let heads: Vec<String> = rank_columns(&sim.ranks)
        .iter()
        .map(|(h, _)| h.to_string())
        .collect();
    let _ = writeln!(out, "{}", line(&heads));
    for (r, cells) in sim.ranks.iter().zip(rank_rows(&sim.ranks)) {
        let flag = if r.over_capacity {
            "  over capacity!"
        } else {
            ""
        };
        let _ = writeln!(out, "{}{flag}", line(&cells));
    }
    let _ = writeln!(out, "\ncritical path: {}", critical_path(sim).join(" → "));
    out
}

/// The critical path's events that take time, by label.
fn critical_path(sim: &Simulation) -> Vec<String> {
    let order = &sim.derivation.order;
    sim.critical_path
        .iter()
        .filter(|&&n| sim.timeline.duration_of(n).is_some_and(|d| d > 0.0))
        .filter_map(|&n| order.graph.node_weight(n).map(|e| e.label()))
        .collect()
}

/// `mpipe compare A B`: the speedup of B over A and the per-rank differences.
pub fn compare_text(a_name: &str, a: &Simulation, b_name: &str, b: &Simulation) -> String {
    let mut out = String::new();
    let speedup = if b.makespan_s > 0.0 {
        a.makespan_s / b.makespan_s
    } else {
        f64::NAN
    };
    let _ = writeln!(
        out,
        "A: {a_name}: makespan {}, bubble {:.1} %",
        secs(a.makespan_s),
        100.0 * a.bubble_fraction
    );
    let _ = writeln!(
        out,
        "B: {b_name}: makespan {}, bubble {:.1} %",
        secs(b.makespan_s),
        100.0 * b.bubble_fraction
    );
    let _ = writeln!(out, "speedup of B over A: {speedup:.3}×");
    let _ = writeln!(
        out,
        "\n{:>4} {:>12} {:>12} {:>12} {:>12} {:>13}",
        COMPARE_COLUMNS[0],
        COMPARE_COLUMNS[1],
        COMPARE_COLUMNS[2],
        COMPARE_COLUMNS[3],
        COMPARE_COLUMNS[4],
        COMPARE_COLUMNS[5]
    );
    for row in compare_rows(a, b) {
        if let [rank, busy_a, busy_b, bubble_a, bubble_b, dmem] = row.as_slice() {
            let _ = writeln!(
                out,
                "{rank:>4} {busy_a:>12} {busy_b:>12} {bubble_a:>12} {bubble_b:>12} {dmem:>13}"
            );
        }
    }
    out
}

/// Column heads of the per-rank difference table of `mpipe compare` (and the app's).
pub const COMPARE_COLUMNS: [&str; 6] = [
    "rank",
    "busy A",
    "busy B",
    "bubble A",
    "bubble B",
    "Δ peak mem",
];

/// The per-rank difference table of B against A, formatted: busy and bubble of each, and the
/// change in peak memory (B − A); `–` where one side has no such rank.
pub fn compare_rows(a: &Simulation, b: &Simulation) -> Vec<Vec<String>> {
    let n = a.ranks.len().max(b.ranks.len());
    (0..n)
        .map(|rank| {
            let (ra, rb) = (a.ranks.get(rank), b.ranks.get(rank));
            let f = |r: Option<&RankMetrics>, get: fn(&RankMetrics) -> f64| {
                r.map_or("–".to_string(), |r| secs(get(r)))
            };
            let dmem = match (ra, rb) {
                (Some(x), Some(y)) => {
                    let d = y.peak_memory_bytes - x.peak_memory_bytes;
                    format!("{}{}", if d < 0.0 { "−" } else { "+" }, bytes(d.abs()))
                }
                _ => "–".into(),
            };
            vec![
                rank.to_string(),
                f(ra, |r| r.busy_s),
                f(rb, |r| r.busy_s),
                f(ra, |r| r.bubble_s),
                f(rb, |r| r.bubble_s),
                dmem,
            ]
        })
        .collect()
}

/// `mpipe compare --json`.
#[derive(Serialize, Debug)]
pub struct CompareReport {
    pub a: String,
    pub b: String,
    pub makespan_a_s: f64,
    pub makespan_b_s: f64,
    /// `makespan_a / makespan_b`: above 1 when B is faster.
    pub speedup: f64,
    pub ranks: Vec<RankDelta>,
}

/// Per-rank differences, B minus A.
#[derive(Serialize, Debug)]
pub struct RankDelta {
    pub rank: usize,
    pub busy_delta_s: f64,
    pub bubble_delta_s: f64,
    pub peak_memory_delta_bytes: f64,
}

impl CompareReport {
    pub fn new(a_name: &str, a: &Simulation, b_name: &str, b: &Simulation) -> Self {
        CompareReport {
            a: a_name.into(),
            b: b_name.into(),
            makespan_a_s: a.makespan_s,
            makespan_b_s: b.makespan_s,
            speedup: if b.makespan_s > 0.0 {
                a.makespan_s / b.makespan_s
            } else {
                0.0
            },
            ranks: a
                .ranks
                .iter()
                .zip(&b.ranks)
                .map(|(x, y)| RankDelta {
                    rank: x.rank,
                    busy_delta_s: y.busy_s - x.busy_s,
                    bubble_delta_s: y.bubble_s - x.bubble_s,
                    peak_memory_delta_bytes: y.peak_memory_bytes - x.peak_memory_bytes,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::metrics::BubbleSplit;

    fn rank(rank: usize, busy_s: f64, warmup_s: f64, peak: f64) -> RankMetrics {
        RankMetrics {
            stage_comm_s: 0.0,
            hidden_comm_s: 0.0,
            overlap_rate: None,
            rank,
            busy_s,
            idle_s: 0.0,
            bubble_s: 0.0,
            bubble: BubbleSplit {
                warmup_s,
                ..Default::default()
            },
            warmup_window_s: None,
            encoder_work_s: None,
            spill_s: None,
            simulated_extra_s: None,
            peak_memory_bytes: peak,
            over_capacity: false,
        }
    }

    #[test]
    fn each_column_of_the_rank_table_reads_in_one_unit() {
        let rows = rank_rows(&[rank(0, 105.0, 0.6013, 12.8e9), rank(1, 48.0, 0.0, 900e6)]);
        let column = |c: usize| rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>();
        assert_eq!(column(1), ["105.000 s", "48.000 s"]);
        assert_eq!(column(3), ["601.300 ms", "0.000 ms"]);
        assert_eq!(column(7), ["–", "–"]);
        assert_eq!(column(11), ["12.80 GB", "0.90 GB"]);
        // The app's narrower form: units in the heads, bare figures in the cells.
        let (heads, rows) =
            rank_table(&[rank(0, 105.0, 0.6013, 12.8e9), rank(1, 48.0, 0.0, 900e6)]);
        let heads: Vec<&str> = heads.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(heads[0], "rank");
        assert_eq!(heads[1], "busy (s)");
        assert_eq!(heads[3], "warmup (ms)");
        assert_eq!(heads[11], "peak mem (GB)");
        assert_eq!(heads[7], "w_r");
        let column = |c: usize| rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>();
        assert_eq!(column(1), ["105.000", "48.000"]);
        assert_eq!(column(3), ["601.300", "0.000"]);
        assert_eq!(column(7), ["–", "–"]);
        assert_eq!(column(11), ["12.80", "0.90"]);
    }

    #[test]
    fn with_collectives_inside_stages_the_empty_encoder_columns_give_way() {
        let mut ranks = [rank(0, 105.0, 0.6013, 12.8e9), rank(1, 48.0, 0.0, 900e6)];
        for r in &mut ranks {
            r.stage_comm_s = 2.0;
            r.hidden_comm_s = 0.5;
            r.overlap_rate = Some(0.25);
        }
        let (heads, rows) = rank_table(&ranks);
        let heads: Vec<&str> = heads.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(
            heads,
            [
                "rank",
                "busy (s)",
                "bubble (ms)",
                "warmup (ms)",
                "steady (ms)",
                "cooldown (ms)",
                "comm (ms)",
                "peak mem (GB)",
                "coll. (s)",
                "overlap (%)"
            ]
        );
        assert_eq!(rows[0][8..], ["2.000", "25.0"]);
        // The CLI's table keeps every column.
        assert_eq!(rank_rows(&ranks)[0].len(), 14);
    }
}
