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
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Reads a pipeline CSV (`text`, from `file`): one row per rank. Errors name the file, line and
/// column of the cell.
pub fn read(text: &str, file: &str) -> Result<CsvOrders, ScenarioError> {
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
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| syntax(file, text, &e))?;
        if !more {
            break;
        }
        let line = record
            .position()
            .map_or(out.orders.len() + 1, |p| line_at(text, p.byte()));
        let mut steps = Vec::with_capacity(record.len());
        let mut positions = Vec::with_capacity(record.len());
        for (column, cell) in record.iter().enumerate() {
            let cell = cell.trim();
            if cell.is_empty() {
                continue;
            }
            if is_communication(cell) {
                out.skipped += 1;
                continue;
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
    Ok(out)
}

/// The 1-based line of the record starting at `byte` (a CRLF file's record may start at the
/// `\n` ending the one before it).
fn line_at(text: &str, byte: u64) -> usize {
    let bytes = text.as_bytes();
    let mut at = usize::try_from(byte)
        .unwrap_or(bytes.len())
        .min(bytes.len());
    while bytes.get(at).is_some_and(|b| *b == b'\n' || *b == b'\r') {
        at += 1;
    }
    1 + bytes
        .get(..at)
        .map_or(0, |b| memchr::memchr_iter(b'\n', b).count())
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

    #[test]
    fn cells_are_actions_pairs_idle_or_skipped_communication() {
        let text =
            "0F0, 0F1,,0B0,(0F2;0B1)OVERLAP_F_B\n1UNSHARD,1RECV_F0,1F0,1SEND_F0,1WAIT_SEND_F0\n";
        let read = read(text, "o.csv").unwrap();
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
            read("0F0,0F1\n1F0,1F0x\n", "o.csv")
                .unwrap_err()
                .to_string(),
            "o.csv:2:2: cell 2: `1F0x` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        assert_eq!(
            read("0SEND_Fx\n", "o.csv").unwrap_err().to_string(),
            "o.csv:1:1: cell 1: `0SEND_Fx` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        // CRLF lines, as Python's `csv` module ends them, count as lines.
        assert_eq!(
            read("0F0\r\n1F0\r\n2F0,2x\r\n", "o.csv")
                .unwrap_err()
                .to_string(),
            "o.csv:3:2: cell 2: `2x` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
        // Quoted cells read as PyTorch's `csv` module writes them.
        assert_eq!(
            read("\"0F0\",\" 0B0 \"\n", "o.csv").unwrap().orders,
            [["0F0", "0B0"]]
        );
    }
}
