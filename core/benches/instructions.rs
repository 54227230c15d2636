//! Instruction counts beside the criterion times (issue 30): exact and repeatable on a loaded
//! machine, where times are not. `cargo bench -p mpipe --bench instructions` runs each case in a
//! child process of this benchmark under `valgrind --tool=callgrind`, collecting only inside the
//! case's `measured_*` function, and prints the case's instructions (`common/callgrind.rs`).
//! Needs `valgrind` on the `PATH`.

#![allow(clippy::expect_used, clippy::panic)] // a benchmark input that does not derive or import, or a case not listed, is a bug in the benchmark

#[path = "common/callgrind.rs"]
mod callgrind;
mod common;
#[path = "common/kineto.rs"]
mod kineto;

use std::hint::black_box;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One rank's file of the eight (`kineto_files.py 8100000`: 64.8 MB in all).
const FILE_BYTES: usize = 8_100_000;
const FILES: u64 = 8;

const CASES: [(&str, &str); 7] = [
    ("small", "derive+simulate transpose+1f1b P=8 M=64"),
    ("large", "derive+simulate interleaved P=64 M=1024 v=4"),
    ("growth", "derive+simulate interleaved P=32 M=256 v=4"),
    (
        "fold",
        "derive+simulate 1f1b on the V fold, slow links, P=32 M=256",
    ),
    (
        "fold-uneven",
        "derive+simulate 1f1b on the V fold, uneven stages, P=32 M=256",
    ),
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
        "fold" => measured_simulate(black_box(&common::fold(
            32,
            256,
            mpipe::schedules::ONE_F_ONE_B,
            common::Fold::SlowLinks,
        ))),
        "fold-uneven" => measured_simulate(black_box(&common::fold(
            32,
            256,
            mpipe::schedules::ONE_F_ONE_B,
            common::Fold::Uneven,
        ))),
        "import" => measured_import(black_box(&files())),
        "parse" => measured_parse(black_box(&files())),
        other => panic!("no case {other}"),
    };
    black_box(out);
}

fn main() {
    callgrind::main(&CASES, run_case);
}
