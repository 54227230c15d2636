//! Derive + simulate throughput (figures recorded in the README).
//!
//! Also prints, once per size, the events, the peak heap bytes of one derive + simulate (counted
//! by `peak_alloc`'s allocator) and bytes per event.

#![allow(clippy::expect_used)] // a benchmark scenario that does not derive is a bug in the benchmark

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mpipe::algebra::model::{LayerSpec, Role};
use mpipe::scenario::{FORMAT, ModelSpec, Scenario};
use mpipe::sim::engine::SimOptions;
use peak_alloc::PeakAlloc;
use std::hint::black_box;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

/// ⟨transpose, 1f1b, …⟩: a replicated encoder and `v` Sharded backbone regions over `p` ranks.
fn scenario(p: usize, m: usize, v: usize, transpose: bool) -> Scenario {
    let mut layers = Vec::new();
    let mut cut = Vec::new();
    let mut schedule = Vec::new();
    let mut at = 0;
    if transpose {
        let mut vit = LayerSpec::timed("vit", Role::Encoder, 2, 0.5);
        vit.activation_bytes = Some(1e8);
        vit.output_bytes = Some(1e7);
        layers.push(vit);
        schedule.push(mpipe::schedules::TRANSPOSE);
        at = 2;
    }
    for _ in 0..v {
        if at > 0 {
            cut.push(at);
        }
        let mut llm = LayerSpec::timed("llm", Role::Backbone, p, 1.0);
        llm.activation_bytes = Some(1e9);
        llm.output_bytes = Some(3e7);
        layers.push(llm);
        schedule.push(mpipe::schedules::ONE_F_ONE_B);
        at += p;
    }
    Scenario {
        format: FORMAT.into(),
        name: String::new(),
        description: String::new(),
        model: ModelSpec { layers },
        cut,
        schedule,
        ranks: p,
        microbatches: m,
        data_parallel: 1,
        slabs: None,
        hardware: Some(mpipe::scenario::Hardware {
            link_alpha_s: Some(1e-5),
            link_bytes_per_s: Some(5e10),
            ..Default::default()
        }),
        workload: None,
        owner: Default::default(),
        static_memory_factor: None,
        orders: None,
        owner_budget: None,
        placement: None,
    }
}

fn run(s: &Scenario) -> usize {
    let sim = mpipe::sim::run::simulate_scenario(s, SimOptions::default())
        .expect("valid benchmark scenario");
    sim.derivation.order.graph.node_count()
}

fn report_memory(label: &str, s: &Scenario) {
    let before = PEAK.current_usage();
    PEAK.reset_peak_usage();
    let events = run(s);
    let peak = PEAK.peak_usage().saturating_sub(before);
    eprintln!(
        "{label}: {events} events, peak heap {:.1} MB, {:.0} bytes/event",
        peak as f64 / 1e6,
        peak as f64 / events as f64
    );
}

fn bench(c: &mut Criterion) {
    let small = scenario(8, 64, 1, true);
    report_memory("transpose+1f1b P=8 M=64", &small);
    c.bench_function("derive+simulate transpose+1f1b P=8 M=64", |b| {
        b.iter(|| run(black_box(&small)))
    });

    let large = scenario(64, 1024, 4, false);
    report_memory("interleaved P=64 M=1024 v=4", &large);
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
