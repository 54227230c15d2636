//! Derive + simulate time (figures recorded in the README), with the allocator the `mpipe` CLI
//! and the app use (mimalloc). Peak heap per case is the `memory` benchmark.

mod common;

use common::{Fold, fold, run, scenario};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let small = scenario(8, 64, 1, true);
    c.bench_function("derive+simulate transpose+1f1b P=8 M=64", |b| {
        b.iter(|| run(black_box(&small)))
    });

    let large = scenario(64, 1024, 4, false);
    let mut group = c.benchmark_group("large");
    group.sample_size(10);
    group.bench_function("derive+simulate interleaved P=64 M=1024 v=4", |b| {
        b.iter(|| run(black_box(&large)))
    });
    group.finish();

    let mut growth = c.benchmark_group("growth");
    growth.sample_size(10);
    for (p, m, v) in [
        (4, 32, 2),
        (8, 64, 2),
        (16, 128, 2),
        (32, 256, 2),
        (32, 256, 4),
    ] {
        let s = scenario(p, m, v, false);
        let events = run(&s) as u64;
        growth.throughput(Throughput::Elements(events));
        growth.bench_with_input(
            BenchmarkId::from_parameter(format!("P{p}xM{m}xv{v}")),
            &s,
            |b, s| b.iter(|| run(black_box(s))),
        );
    }
    growth.finish();

    // V-Half's greedy passes (README: Known gaps), P·(P + M) growing 8× a row.
    let mut v = c.benchmark_group("vhalf");
    v.sample_size(10);
    for (p, m) in [(16, 128), (32, 256), (64, 512)] {
        // A V of two regions of `p` one-second layers each.
        let mut s = scenario(p, m, 2, false);
        s.schedule = vec![mpipe::schedules::VHALF; 2];
        v.bench_with_input(
            BenchmarkId::from_parameter(format!("P{p}xM{m}")),
            &s,
            |b, s| b.iter(|| run(black_box(s))),
        );
    }
    v.finish();

    // A fold the slots do not assume (the V placement under `1f1b` and `zb1p`): its order is
    // list-scheduled (README: "Per-rank orders"), again with each stage's own times where they
    // differ and with the transfers where they count.
    let mut folds = c.benchmark_group("fold");
    folds.sample_size(10);
    for (skeleton, kind) in [
        (mpipe::schedules::ONE_F_ONE_B, Fold::Uniform),
        (mpipe::schedules::ZB1P, Fold::Uniform),
        (mpipe::schedules::ONE_F_ONE_B, Fold::Uneven),
        (mpipe::schedules::ONE_F_ONE_B, Fold::SlowLinks),
        (mpipe::schedules::ZB1P, Fold::SlowLinks),
    ] {
        let s = fold(64, 1024, skeleton, kind);
        folds.bench_with_input(
            BenchmarkId::from_parameter(format!("{} {kind:?} P64xM1024", skeleton.name())),
            &s,
            |b, s| b.iter(|| run(black_box(s))),
        );
    }
    folds.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
