//! Importing a synthetic 200 MB Kineto-style trace (figures recorded in the README): the
//! importer's throughput next to serde_json parsing the same bytes into `IgnoredAny` (from a slice
//! and from a reader), and the importer's peak heap beyond the input bytes.

#![allow(clippy::expect_used, clippy::indexing_slicing)] // a benchmark input that does not import is a bug in the benchmark

#[path = "common/kineto.rs"]
mod kineto;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use peak_alloc::PeakAlloc;
use std::hint::black_box;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

const TARGET_BYTES: usize = 200 * 1000 * 1000;

fn import(c: &mut Criterion) {
    let bytes = kineto::synthetic_trace(TARGET_BYTES, None);
    let mb = bytes.len() as f64 / 1e6;

    PEAK.reset_peak_usage();
    let before = PEAK.current_usage();
    let trace = mpipe::trace::import_bytes(&bytes, "synthetic.json").expect("imports");
    let peak = PEAK.peak_usage().saturating_sub(before);
    let kept = PEAK.current_usage().saturating_sub(before);
    // The room the lists were given for the file's length and never filled: asked for, so the
    // heap counts it, but its pages are never touched.
    let room = (trace.spans.capacity() - trace.spans.len())
        * std::mem::size_of_val(&trace.spans[0])
        + (trace.flows.capacity() - trace.flows.len()) * std::mem::size_of_val(&trace.flows[0]);
    println!(
        "synthetic trace: {mb:.1} MB, {} events, {} spans; importer peak heap {:.1} MB ({:.2}× the file), kept {:.1} MB; of both, {:.1} MB room never filled",
        trace.event_count,
        trace.spans.len(),
        peak as f64 / 1e6,
        peak as f64 / bytes.len() as f64,
        kept as f64 / 1e6,
        room as f64 / 1e6
    );
    drop(trace);

    let mut group = c.benchmark_group("trace_import_200MB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("serde_json IgnoredAny from_slice", |b| {
        b.iter(|| {
            serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&bytes)).expect("parses")
        })
    });
    group.bench_function("serde_json IgnoredAny from_reader", |b| {
        b.iter(|| {
            serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(black_box(
                bytes.as_slice(),
            )))
            .expect("parses")
        })
    });
    group.bench_function("mpipe import (streaming)", |b| {
        b.iter(|| mpipe::trace::import_bytes(black_box(&bytes), "synthetic.json").expect("imports"))
    });
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
