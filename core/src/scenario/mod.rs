//! The scenario document, format `mpipe-scenario/1`: load and save with errors that name the file,
//! the field path, and the line and column; its spec types (layers, owners, placement, slabs),
//! the hardware with its cost functions, the edits that change it, and reading a pipeline CSV.

pub mod edit;
pub mod hardware;
pub mod jitter;
pub mod layer;
pub mod locate;
pub mod orders_csv;
pub mod owner;
pub mod placement;
pub mod share;
pub mod slab;
pub mod title;
pub mod width;

use crate::scenario::hardware::Hardware;
use crate::scenario::layer::LayerSpec;
use crate::scenario::locate::{PathSeg, strip_position};
use crate::scenario::owner::OwnerSpec;
use crate::scenario::placement::PlacementSpec;
use crate::schedules::RunCtx;
use crate::schedules::skeleton::Skeleton;
use crate::vocab::layout::Layout;
use crate::vocab::parameter::Parameter;
pub use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The one format this version reads and writes.
pub const FORMAT: &str = "mpipe-scenario/1";

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// A whole scenario: model, cut, schedule, sizes, hardware, workload and owner map.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub format: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub model: ModelSpec,
    /// Interior boundaries `0 < c1 < … < c(k−1) < L`.
    #[serde(default)]
    pub cut: Vec<usize>,
    /// One skeleton per region.
    pub schedule: Vec<Skeleton>,
    /// Pipeline ranks `P`.
    pub ranks: usize,
    /// Microbatches `M` per step.
    pub microbatches: usize,
    /// Data-parallel size (the DataGroup of every Sharded region).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub data_parallel: usize,
    /// Per-region, per-rank layer counts for Sharded regions (`null` for balanced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slabs: Option<Vec<Option<Vec<usize>>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<Hardware>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    #[serde(default, skip_serializing_if = "OwnerSpec::is_default")]
    pub owner: OwnerSpec,
    /// Static memory bytes per parameter byte (default 1: parameters only; about 8 for
    /// mixed-precision Adam: bf16 parameters and gradients plus fp32 master weights, m and v).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_memory_factor: Option<f64>,
    /// How many candidate owner maps `owner: "optimized"` may simulate (default 400; a large
    /// scenario gets fewer, so that the search also stays within its work budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_budget: Option<usize>,
    /// Hand-written per-rank compute orders in action notation (`["0F0", "0F1", "0B0", …]`),
    /// replacing the derived ones; checked for completeness and deadlock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orders: Option<Vec<Vec<String>>>,
    /// A pipeline CSV holding the per-rank orders instead (PyTorch's `_dump_csv` format,
    /// [`orders_csv`]), its path relative to the scenario file. The CLI and the app read it into
    /// [`Scenario::orders_from_csv`]; the library reads no files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orders_csv: Option<String>,
    /// The orders read from `orders_csv` (not part of the file: saving keeps the reference).
    #[serde(skip)]
    pub orders_from_csv: Option<Vec<Vec<String>>>,
    /// Which rank runs each stage: `default`, `v_fold` or the rank of every stage (absent: the
    /// skeleton's own placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementSpec>,
    /// WaveK's unit size `k` (`wavek` schedules only; default `P`): microbatches run in waves of
    /// `k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_k: Option<usize>,
    /// The most microbatches' activations a stage may hold (`zb_auto` only; default `P`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_limit: Option<usize>,
    /// Each region's width (aligned with `schedule`): its tensor-, expert- and context-parallel
    /// degrees and devices ([`width::WidthSpec`]; absent: every stage one device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<Vec<width::WidthSpec>>,
    /// How a traced run's costs varied ([`jitter::Jitter`]), as `compare-trace --calibrated`
    /// writes it: with one, `simulate` gives the expected step under it beside the simulated
    /// one (absent: nothing is drawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<jitter::Jitter>,
}

/// `model`: the ordered layers.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub layers: Vec<LayerSpec>,
}

impl Scenario {
    /// The hand-written orders the derivation follows: `orders`, or those read from
    /// `orders_csv`.
    pub fn explicit_orders(&self) -> Option<&[Vec<String>]> {
        self.orders.as_deref().or(self.orders_from_csv.as_deref())
    }

    /// The shape the scenario's schedules are asked about (its wavefront's chunks: its Sharded
    /// regions).
    pub fn run_ctx(&self) -> RunCtx {
        RunCtx {
            ranks: self.ranks,
            microbatches: self.microbatches,
            chunks: self
                .schedule
                .iter()
                .filter(|s| s.layout() == Layout::Sharded)
                .count(),
            wave_k: self.wave_k,
            activation_limit: self.activation_limit,
        }
    }

    /// The value the scenario's schedule runs `parameter` with — the one given, else the
    /// schedule's default — when one of its regions' schedules reads it.
    pub fn parameter(&self, parameter: Parameter) -> Option<usize> {
        let reader = self.schedule.iter().find(|s| s.reads(parameter))?;
        reader.schedule().parameter(parameter, &self.run_ctx())
    }

    /// The value the scenario's schedule runs `parameter` with when the scenario does not give
    /// it, when one of its regions' schedules reads it.
    pub fn parameter_default(&self, parameter: Parameter) -> Option<usize> {
        let reader = self.schedule.iter().find(|s| s.reads(parameter))?;
        let ctx = self.run_ctx().without(parameter);
        reader.schedule().parameter(parameter, &ctx)
    }
}

/// What went wrong reading a scenario. Every variant names the file; positions are 1-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read: {message}")]
    Read { file: String, message: String },
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}:{line}:{column}: field `{path}`: {message}")]
    Field {
        file: String,
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
}

impl Scenario {
    /// Parses a scenario from JSON text; `file` is the name errors give.
    pub fn from_json_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        // A byte-order mark (editors on Windows write one) is not part of the JSON.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut de = serde_json::Deserializer::from_str(text);
        let scenario: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let inner = err.inner();
            let message = strip_position(&inner.to_string());
            let (line, column) = (inner.line(), inner.column());
            let path = err.path().to_string();
            if inner.is_syntax() || inner.is_eof() || path == "." {
                ScenarioError::Syntax {
                    file: file.to_string(),
                    line,
                    column,
                    message,
                }
            } else {
                ScenarioError::Field {
                    file: file.to_string(),
                    path,
                    line,
                    column,
                    message,
                }
            }
        })?;
        de.end().map_err(|err| ScenarioError::Syntax {
            file: file.to_string(),
            line: err.line(),
            column: err.column(),
            message: strip_position(&err.to_string()),
        })?;
        if scenario.format != FORMAT {
            return Err(field_error(
                text,
                file,
                "format",
                format!(
                    "unsupported format `{}`, expected `{FORMAT}`",
                    scenario.format
                ),
            ));
        }
        Ok(scenario)
    }

    /// Reads a scenario from any reader.
    pub fn load(reader: impl Read, file: &str) -> Result<Scenario, ScenarioError> {
        let bytes = read_bounded(reader, file)?;
        Scenario::from_json_str(&text_from_bytes(bytes, file)?, file)
    }

    /// Pretty JSON, the form `save` writes.
    pub fn to_json_string(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Writes the scenario as pretty JSON.
    pub fn save(&self, mut writer: impl Write) -> std::io::Result<()> {
        writer.write_all(self.to_json_string().as_bytes())
    }
}

/// The largest scenario file read (64 MiB): a scenario that describes even the largest model
/// `sizes` accepts is a few megabytes; anything far larger is not one.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads at most [`MAX_FILE_BYTES`] from `reader`; a longer input is an error that names the
/// limit, before it is held in memory.
pub fn read_bounded(reader: impl Read, file: &str) -> Result<Vec<u8>, ScenarioError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| ScenarioError::Read {
            file: file.to_string(),
            message: err.to_string(),
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ScenarioError::Read {
            file: file.to_string(),
            message: format!(
                "larger than a scenario file may be ({} MiB); a scenario of the largest model this version accepts is a few megabytes",
                MAX_FILE_BYTES >> 20
            ),
        });
    }
    Ok(bytes)
}

/// Whether `head` starts like UTF-16 text: a byte-order mark, or an ASCII character with a NUL
/// beside it (`{\0` little-endian, `\0{` big-endian). All NULs is not text of any kind.
pub fn looks_like_utf16(head: &[u8]) -> bool {
    let ascii = |b: u8| b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    match head {
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => true,
        [a, 0, ..] | [0, a, ..] => ascii(*a),
        _ => false,
    }
}

/// The text of a scenario file's bytes: UTF-8, a byte-order mark accepted (and dropped). A
/// UTF-16 file, or bytes that are not UTF-8, are errors that say so — the latter at the line and
/// column of the first bad byte.
pub fn text_from_bytes(bytes: Vec<u8>, file: &str) -> Result<String, ScenarioError> {
    if looks_like_utf16(&bytes) {
        return Err(ScenarioError::Syntax {
            file: file.to_string(),
            line: 1,
            column: 1,
            message: "the file is UTF-16; scenarios are read as UTF-8 (save it as UTF-8)".into(),
        });
    }
    let start = if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            text.drain(..start);
            Ok(text)
        }
        Err(e) => {
            let bytes = e.as_bytes();
            let at = e.utf8_error().valid_up_to();
            // Everything before the bad byte is valid: count lines and characters in it.
            let valid = std::str::from_utf8(bytes.get(start..at).unwrap_or_default()).unwrap_or("");
            let (line, column) = locate::line_col(valid, valid.len());
            Err(ScenarioError::Syntax {
                file: file.to_string(),
                line,
                column,
                message: format!(
                    "not UTF-8: byte 0x{:02X} cannot start or continue a character",
                    bytes.get(at).copied().unwrap_or(0)
                ),
            })
        }
    }
}

/// An error about the value at `path` (as `cut[1]`), positioned in `text` when it can be found.
pub fn field_error(text: &str, file: &str, path: &str, message: String) -> ScenarioError {
    let segs: Vec<PathSeg> = locate::parse_path(path);
    let (line, column) = locate::locate(text, &segs).unwrap_or((1, 1));
    ScenarioError::Field {
        file: file.to_string(),
        path: path.to_string(),
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{
  "format": "mpipe-scenario/1",
  "model": { "layers": [ { "name": "llm", "count": 8, "fwd_s": 1.0 } ] },
  "schedule": ["1f1b"],
  "ranks": 4,
  "microbatches": 8
}"#;

    #[test]
    fn minimal_scenario_loads_with_defaults() {
        let s = Scenario::from_json_str(MINIMAL, "m.json").unwrap();
        assert_eq!(s.cut, Vec::<usize>::new());
        assert_eq!(s.data_parallel, 1);
        assert_eq!(s.owner, OwnerSpec::RoundRobin);
        assert_eq!(s.model.layers[0].count, 8);
    }

    #[test]
    fn unknown_field_is_named_with_position() {
        let text = MINIMAL.replace("\"ranks\": 4", "\"rankz\": 4");
        let err = Scenario::from_json_str(&text, "m.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.json:5:9: field `rankz`: unknown field `rankz`, expected one of `format`, `name`, `description`, `model`, `cut`, `schedule`, `ranks`, `microbatches`, `data_parallel`, `slabs`, `hardware`, `workload`, `owner`, `static_memory_factor`, `owner_budget`, `orders`, `orders_csv`, `placement`, `wave_k`, `activation_limit`, `width`, `jitter`"
        );
        let text = MINIMAL.replace("\"count\": 8", "\"cnt\": 8");
        let err = Scenario::from_json_str(&text, "m.json").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("m.json:3:47: field `model.layers[0].cnt`: unknown field `cnt`"),
            "{err}"
        );
    }

    #[test]
    fn wrong_types_and_syntax_errors_have_positions() {
        let text = MINIMAL.replace("\"ranks\": 4", "\"ranks\": -4");
        let err = Scenario::from_json_str(&text, "m.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.json:5:13: field `ranks`: invalid value: integer `-4`, expected usize"
        );
        let text = MINIMAL.replace("[\"1f1b\"]", "[\"2f2b\"]");
        let err = Scenario::from_json_str(&text, "m.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.json:4:21: field `schedule[0]`: unknown variant `2f2b`, expected one of `1f1b`, `gpipe`, `transpose`, `nested`, `looped_bfs`, `zb1p`, `zb2p`, `zbv`, `vhalf`, `vmin`, `dualpipe`, `chimera`, `zb_auto`, `dualpipev`, `1f1b-2nd`, `wavek`, `hanayo`"
        );
        let err = Scenario::from_json_str(&MINIMAL[..60], "m.json").unwrap_err();
        assert_eq!(err.to_string(), "m.json:3:26: EOF while parsing an object");
        let err = Scenario::from_json_str(&format!("{MINIMAL} x"), "m.json").unwrap_err();
        assert_eq!(err.to_string(), "m.json:7:3: trailing characters");
        let err = Scenario::from_json_str("{}", "m.json").unwrap_err();
        assert_eq!(err.to_string(), "m.json:1:2: missing field `format`");
    }

    #[test]
    fn wrong_format_is_rejected() {
        let text = MINIMAL.replace("mpipe-scenario/1", "mpipe-scenario/9");
        let err = Scenario::from_json_str(&text, "m.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.json:2:13: field `format`: unsupported format `mpipe-scenario/9`, expected `mpipe-scenario/1`"
        );
    }

    #[test]
    fn save_then_load_is_identical() {
        let s = Scenario::from_json_str(MINIMAL, "m.json").unwrap();
        let mut bytes = Vec::new();
        s.save(&mut bytes).unwrap();
        let again = Scenario::load(bytes.as_slice(), "saved.json").unwrap();
        assert_eq!(s, again);
    }
}
