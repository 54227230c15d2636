//! Instruction counts beside the Gantt chart's criterion times (issue 30; `gantt.rs` times the
//! same work): exact and repeatable on a loaded machine, where times are not.
//! `cargo bench -p mpipe-studio --bench instructions` runs each case in a child process under
//! `valgrind --tool=callgrind`, counting only inside its `measured_*` function (the schedule's
//! simulation, its scene and a first frame — fonts, the atlas — are not counted), and prints its
//! instructions (`core/benches/common/callgrind.rs`). Needs `valgrind` on the `PATH`.

#![allow(clippy::panic)] // a case not listed is a bug in the benchmark

#[path = "../../core/benches/common/callgrind.rs"]
mod callgrind;
mod common;

use mpipe_studio::geometry::{Lane, TimeView, render_items};
use std::hint::black_box;

const CASES: [(&str, &str); 3] = [
    (
        "frame",
        "timeline frame, 1M compute events, whole step (layout, painting, tessellation)",
    ),
    (
        "zoomed",
        "timeline frame, 1M compute events, zoomed in (layout, painting, tessellation)",
    ),
    (
        "items",
        "gantt items, 1M events, whole step (culling and merging)",
    ),
];

#[inline(never)]
fn measured_frame(frame: &common::Frame, range: Option<(f64, f64)>) -> usize {
    frame.run(range)
}

#[inline(never)]
fn measured_items(lanes: &[Lane<'_, mpipe_studio::geometry::Span>], view: &TimeView) -> usize {
    render_items(lanes, view).len()
}

/// The case named, run once in this process (the child's side).
fn run_case(name: &str) {
    let out = match name {
        "frame" | "zoomed" => {
            let frame = common::Frame::new();
            let range = (name == "zoomed").then_some((100.0, 140.0));
            // A first frame sets up what every later frame reuses (fonts, the atlas, the
            // widget's memory): the criterion times are of later frames.
            black_box(frame.run(range));
            measured_frame(black_box(&frame), range)
        }
        "items" => {
            let lists = common::lanes();
            let lanes = Lane::of(&lists);
            let whole = TimeView::new(0.0, 16.384, 64.0, 1400.0);
            measured_items(black_box(&lanes), &whole)
        }
        other => panic!("no case {other}"),
    };
    black_box(out);
}

fn main() {
    callgrind::main(&CASES, run_case);
}
