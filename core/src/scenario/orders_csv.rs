//! PyTorch's pipeline CSV (`torch.distributed.pipelining`'s `_dump_csv` / `_load_csv`): one row
//! per rank, one cell per time step, each cell an action in PyTorch's notation (`0F3`, `3I1`,
//! `(0F3;3B1)OVERLAP_F_B`) or empty for an idle step.
//!
//! Reading takes what PyTorch's `_load_csv` takes: the `compute_only` format, and the
//! `compute_comms` one, whose communication and runtime actions (`0SEND_F1`, `3RECV_B0`,
//! `0WAIT_SEND_F2`, `1UNSHARD`, `1RESHARD`, `2REDUCE_GRAD`, `2WAIT_REDUCE_GRAD`) are skipped —
//! the derivation places its own transfers and reduces. Cells are trimmed; an empty one is an
//! idle step. Unlike PyTorch, which reads a cell's longest valid prefix, a cell with anything
//! after its action is an error, named by file, line and column. Writing is the report's
//! ([`crate::report::orders_csv`]).

use crate::scenario::ScenarioError;
use crate::vocab::action::Step;

/// The communication and runtime actions of PyTorch's `compute_comms` format, which reading
/// skips.
const COMMUNICATION: [&str; 10] = [
    "WAIT_REDUCE_GRAD",
    "WAIT_SEND_F",
    "WAIT_SEND_B",
    "REDUCE_GRAD",
    "UNSHARD",
    "RESHARD",
    "SEND_F",
    "RECV_F",
    "SEND_B",
    "RECV_B",
];

/// Orders read from a CSV, and where each came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsvOrders {
    /// Per rank, its compute steps in action notation, as a scenario's `orders` holds them.
    pub orders: Vec<Vec<String>>,
    /// `(line, column)` of each step's cell, 1-based, by rank and index.
    pub positions: Vec<Vec<(usize, usize)>>,
    /// How many communication or runtime cells were skipped.
    pub skipped: usize,
}

impl CsvOrders {
    /// Where `orders[rank][index]` came from, for an error about it.
    pub fn position(&self, rank: usize, index: usize) -> Option<(usize, usize)> {
        self.positions.get(rank)?.get(index).copied()
    }

    /// An error message about field `path` of the orders (`orders[r][i]`, `orders[r]`,
    /// `orders`) placed at the CSV cell or row it came from.
    pub fn locate(&self, file: &str, path: &str, message: &str) -> String {
        let indices: Vec<usize> = path
            .strip_prefix("orders")
            .unwrap_or("")
            .split(['[', ']'])
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        let at = match indices.as_slice() {
            [rank, index, ..] => self.position(*rank, *index),
            [rank] => Some((rank + 1, 1)),
            _ => None,
        };
        match at {
            Some((line, column)) => format!("{file}:{line}:{column}: {message}"),
            None => format!("{file}: {message}"),
        }
    }
}

/// Whether `cell` is one of PyTorch's communication or runtime actions (`<stage><NAME>[mb]`).
fn is_communication(cell: &str) -> bool {
    let rest = cell.trim_start_matches(|c: char| c.is_ascii_digit());
    if rest.len() == cell.len() {
        return false;
    }
    COMMUNICATION.iter().any(|name| {
        rest.strip_prefix(name)
            .is_some_and(|mb| mb.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// What a pipeline CSV may hold for a scenario: one row per rank, and no more actions than the
/// scenario's events (so what reading it allocates stays within what the `memory` rule allows
/// the derivation): [`crate::algebra::budget::csv_limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvLimits {
    pub rows: usize,
    pub cells: u64,
}

/// Reads a pipeline CSV (`text`, from `file`): one row per rank, within `limits`. Errors name the
/// file, line and column of the cell.
pub fn read(text: &str, file: &str, limits: CsvLimits) -> Result<CsvOrders, ScenarioError> {
    // Never stopped: `keep_going` always says go on.
    Ok(read_cancellable(text, file, limits, &mut |_| true)?.unwrap_or_default())
}

/// How many cells are read between two calls of `keep_going`.
const CELLS_PER_CHECK: u64 = 1 << 16;

/// [`read`] that reports the fraction of `text` read and stops (`Ok(None)`) as soon as
/// `keep_going` says so, at the latest [`CELLS_PER_CHECK`] cells later.
pub fn read_cancellable(
    text: &str,
    file: &str,
    limits: CsvLimits,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Option<CsvOrders>, ScenarioError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut out = CsvOrders {
        orders: Vec::new(),
        positions: Vec::new(),
        skipped: 0,
    };
    let mut record = csv::StringRecord::new();
    // Lines are counted from the last record on, so reading stays linear in the file.
    let mut lines = LineCounter::default();
    let mut cells = 0u64;
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| syntax(file, text, &e))?;
        if !more {
            break;
        }
        let fraction = reader.position().byte() as f32 / text.len().max(1) as f32;
        if !keep_going(fraction) {
            return Ok(None);
        }
        let line = record
            .position()
            .map_or(out.orders.len() + 1, |p| lines.line_at(text, p.byte()));
        if out.orders.len() >= limits.rows {
            return Err(ScenarioError::Syntax {
                file: file.to_string(),
                line,
                column: 1,
                message: format!(
                    "row {}: the scenario has {} rank(s), one row each",
                    out.orders.len() + 1,
                    limits.rows
                ),
            });
        }
        // Grown as actions are kept: a row of empty or communication cells reserves nothing.
        let mut steps = Vec::new();
        let mut positions = Vec::new();
        for (column, cell) in record.iter().enumerate() {
            let cell = cell.trim();
            if cell.is_empty() {
                continue;
            }
            if is_communication(cell) {
                out.skipped += 1;
                continue;
            }
            cells += 1;
            if cells.is_multiple_of(CELLS_PER_CHECK) && !keep_going(fraction) {
                return Ok(None);
            }
            if cells > limits.cells {
                return Err(ScenarioError::Syntax {
                    file: file.to_string(),
                    line,
                    column: column + 1,
                    message: format!(
                        "more than {} actions: the scenario's sizes run at most that many events",
                        limits.cells
                    ),
                });
            }
            let step: Step = cell.parse().map_err(|e| ScenarioError::Syntax {
                file: file.to_string(),
                line,
                column: column + 1,
                message: format!("cell {}: {e}", column + 1),
            })?;
            steps.push(step.to_string());
            positions.push((line, column + 1));
        }
        out.orders.push(steps);
        out.positions.push(positions);
    }
    Ok(Some(out))
}

/// The 1-based lines of records met in order of their bytes: each call counts the newlines
/// from the previous record's start only.
#[derive(Default)]
struct LineCounter {
    /// The byte counted up to, and the newlines before it.
    at: usize,
    newlines: usize,
}

impl LineCounter {
    /// The line of the record starting at `byte` (a CRLF file's record may start at the `\n`
    /// ending the one before it), `byte` not before the previous call's.
    fn line_at(&mut self, text: &str, byte: u64) -> usize {
        let bytes = text.as_bytes();
        let mut at = usize::try_from(byte)
            .unwrap_or(bytes.len())
            .min(bytes.len());
        while bytes.get(at).is_some_and(|b| *b == b'\n' || *b == b'\r') {
            at += 1;
        }
        if at >= self.at {
            self.newlines += bytes
                .get(self.at..at)
                .map_or(0, |b| memchr::memchr_iter(b'\n', b).count());
            self.at = at;
        }
        1 + self.newlines
    }
}

fn syntax(file: &str, text: &str, e: &csv::Error) -> ScenarioError {
    let line = e
        .position()
        .map_or(text.lines().count().max(1), |p| p.line() as usize);
    ScenarioError::Syntax {
        file: file.to_string(),
        line,
        column: 1,
        message: format!("not a pipeline CSV: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANY: CsvLimits = CsvLimits {
        rows: 8,
        cells: 1 << 20,
    };

    #[test]
    fn rows_beyond_the_ranks_and_cells_beyond_the_events_are_refused_where_they_start() {
        let limits = CsvLimits { rows: 2, cells: 3 };
        assert_eq!(
            read("0F0\n1F0\n2F0\n", "o.csv", limits)
                .unwrap_err()
                .to_string(),
            "o.csv:3:1: row 3: the scenario has 2 rank(s), one row each"
        );
        assert_eq!(
            read("0F0,0B0\n1SEND_F0,1F0,1B0\n", "o.csv", limits)
                .unwrap_err()
                .to_string(),
            "o.csv:2:3: more than 3 actions: the scenario's sizes run at most that many events"
        );
        // A cell of 50 MB is echoed cut.
        let cell = "x".repeat(50 << 20);
        let e = read(&format!("0F0,{cell}\n"), "o.csv", ANY)
            .unwrap_err()
            .to_string();
        assert!(e.len() < 200, "{}", e.len());
        assert!(e.starts_with("o.csv:1:2: cell 2: `xxxx"), "{e}");
    }

    #[test]
    fn reading_stops_when_asked() {
        let text = "0F0,".repeat(1 << 18);
        let mut calls = 0;
        let stopped = read_cancellable(&text, "o.csv", ANY, &mut |_| {
            calls += 1;
            calls < 2
        });
        assert_eq!(stopped, Ok(None));
        assert_eq!(calls, 2);
    }

    #[test]
    fn lines_are_counted_once_over_many_rows() {
        // Linear: a million rows read at once (it was quadratic in the rows), the last one's
        // error at its own line.
        let mut text = "0F0\n".repeat(1_000_000);
        text.push_str("0Fx\n");
        let limits = CsvLimits {
            rows: 2_000_000,
            cells: 1 << 30,
        };
        assert_eq!(
            read(&text, "o.csv", limits).unwrap_err().to_string(),
            "o.csv:1000001:1: cell 1: `0Fx` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
    }

    #[test]
    fn cells_are_actions_pairs_idle_or_skipped_communication() {
        let text =
            "0F0, 0F1,,0B0,(0F2;0B1)OVERLAP_F_B\n1UNSHARD,1RECV_F0,1F0,1SEND_F0,1WAIT_SEND_F0\n";
        let read = read(text, "o.csv", ANY).unwrap();
        assert_eq!(
            read.orders,
            [
                vec!["0F0", "0F1", "0B0", "(0F2;0B1)OVERLAP_F_B"],
                vec!["1F0"]
            ]
        );
        assert_eq!(read.positions[0], [(1, 1), (1, 2), (1, 4), (1, 5)]);
        assert_eq!(read.position(1, 0), Some((2, 3)));
        assert_eq!(read.skipped, 4);
        assert_eq!(
            read.locate("o.csv", "orders[1][0]", "no such stage"),
            "o.csv:2:3: no such stage"
        );
        assert_eq!(
            read.locate("o.csv", "orders[1]", "misses 1B0"),
            "o.csv:2:1: misses 1B0"
        );
    }

    #[test]
    fn a_cell_with_anything_after_its_action_is_refused_where_it_is() {
        assert_eq!(
            read("0F0,0F1\n1F0,1F0x\n", "o.csv", ANY)
                .unwrap_err()
                .to_string(),
            "o.csv:2:2: cell 2: `1F0x` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        assert_eq!(
            read("0SEND_Fx\n", "o.csv", ANY).unwrap_err().to_string(),
            "o.csv:1:1: cell 1: `0SEND_Fx` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        // CRLF lines, as Python's `csv` module ends them, count as lines.
        assert_eq!(
            read("0F0\r\n1F0\r\n2F0,2x\r\n", "o.csv", ANY)
                .unwrap_err()
                .to_string(),
            "o.csv:3:2: cell 2: `2x` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        // Quoted cells read as PyTorch's `csv` module writes them.
        assert_eq!(
            read("\"0F0\",\" 0B0 \"\n", "o.csv", ANY).unwrap().orders,
            [["0F0", "0B0"]]
        );
    }
}
