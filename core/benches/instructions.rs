//! Instruction counts beside the criterion times (issue 30): exact and repeatable on a loaded
//! machine, where times are not. `cargo bench -p mpipe --bench instructions` runs each case in a
//! child process of this benchmark under `valgrind --tool=callgrind`, collecting only inside the
//! case's `measured_*` function (`--toggle-collect`), so building the input is not counted, and
//! prints the case's instructions (callgrind's `Ir`). Needs `valgrind` on the `PATH`.

#![allow(clippy::expect_used, clippy::panic)] // a benchmark input that does not derive or import, or a case not listed, is a bug in the benchmark

mod common;
#[path = "common/kineto.rs"]
mod kineto;

use std::hint::black_box;
use std::process::Command;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One rank's file of the eight (`kineto_files.py 8100000`: 64.8 MB in all).
const FILE_BYTES: usize = 8_100_000;
const FILES: u64 = 8;

const CASES: [(&str, &str); 5] = [
    ("small", "derive+simulate transpose+1f1b P=8 M=64"),
    ("large", "derive+simulate interleaved P=64 M=1024 v=4"),
    ("growth", "derive+simulate interleaved P=32 M=256 v=4"),
    (
        "import",
        "import 8 Kineto files, 64.8 MB (mpipe::trace::import_bytes each)",
    ),
    (
        "parse",
        "the same bytes parsed into serde's IgnoredAny (the floor)",
    ),
];

#[inline(never)]
fn measured_simulate(s: &mpipe::Scenario) -> usize {
    common::run(s)
}

#[inline(never)]
fn measured_import(files: &[Vec<u8>]) -> usize {
    files
        .iter()
        .map(|bytes| {
            mpipe::trace::import_bytes(bytes, "rank.json")
                .expect("imports")
                .event_count
        })
        .sum()
}

#[inline(never)]
fn measured_parse(files: &[Vec<u8>]) -> usize {
    files
        .iter()
        .map(|bytes| {
            serde_json::from_slice::<serde::de::IgnoredAny>(bytes).expect("parses");
            bytes.len()
        })
        .sum()
}

fn files() -> Vec<Vec<u8>> {
    (0..FILES)
        .map(|rank| kineto::synthetic_trace(FILE_BYTES, Some(rank)))
        .collect()
}

/// The case named, run once in this process (the child's side).
fn run_case(name: &str) {
    let out = match name {
        "small" => measured_simulate(black_box(&common::scenario(8, 64, 1, true))),
        "large" => measured_simulate(black_box(&common::scenario(64, 1024, 4, false))),
        "growth" => measured_simulate(black_box(&common::scenario(32, 256, 4, false))),
        "import" => measured_import(black_box(&files())),
        "parse" => measured_parse(black_box(&files())),
        other => panic!("no case {other}"),
    };
    black_box(out);
}

/// Callgrind's total `Ir` from its output file's `summary:` (or `totals:`) line.
fn instructions(out_file: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(out_file).ok()?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--case") {
        run_case(args.get(at + 1).map(String::as_str).unwrap_or(""));
        return;
    }
    // `cargo bench` passes its own flags (`--bench`); a further word selects cases by name.
    let filter = args.iter().skip(1).find(|a| !a.starts_with("--"));
    let me = std::env::current_exe().expect("the benchmark's own path");
    let dir = std::env::temp_dir().join(format!("mpipe-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for (name, label) in CASES {
        if filter.is_some_and(|f| !label.contains(f.as_str()) && name != f) {
            continue;
        }
        let out_file = dir.join(format!("{name}.out"));
        let status = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--toggle-collect=instructions::measured_*")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(&me)
            .args(["--case", name])
            .stderr(std::process::Stdio::null())
            .status();
        match (status, instructions(&out_file)) {
            (Ok(s), Some(ir)) if s.success() => {
                println!("{label}: {:.1} M instructions", ir as f64 / 1e6)
            }
            (Err(e), _) => {
                println!("{label}: valgrind did not start ({e}); install valgrind");
                break;
            }
            _ => println!("{label}: callgrind gave no count"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
