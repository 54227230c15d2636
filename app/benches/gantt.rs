//! A million events on the timeline: culling and merging into drawable items must fit a frame.

#![allow(clippy::expect_used)] // a benchmark scenario that does not derive is a bug in the benchmark

use criterion::{Criterion, criterion_group, criterion_main};
use mpipe_studio::geometry::{Lane, Span, TimeView, render_items};
use mpipe_studio::state::derived::Shown;
use mpipe_studio::timeline::{ChartInput, chart_ui};
use std::hint::black_box;

/// 64 lanes × 16,384 back-to-back events of 1 ms: 1,048,576 events.
fn lanes() -> Vec<Vec<Span>> {
    (0..64)
        .map(|lane| {
            (0..16_384)
                .map(|i| Span {
                    start: i as f64 * 1e-3,
                    end: (i + 1) as f64 * 1e-3,
                    region: 1 + (i / 7) % 3,
                    phase: if (i + lane) % 2 == 0 {
                        mpipe::vocab::phase::Phase::Backward
                    } else {
                        mpipe::vocab::phase::Phase::Forward
                    },
                    stage: lane,
                    mb: i % 1024,
                    index: lane * 16_384 + i,
                    pair: None,
                })
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let lists = lanes();
    let lanes = Lane::of(&lists);
    let whole = TimeView::new(0.0, 16.384, 64.0, 1400.0);
    let zoomed = TimeView::new(8.0, 8.2, 64.0, 1400.0);
    eprintln!(
        "1,048,576 events: {} items for the whole step, {} zoomed in to 0.2 s",
        render_items(&lanes, &whole).len(),
        render_items(&lanes, &zoomed).len()
    );
    c.bench_function("gantt items, 1M events, whole step", |b| {
        b.iter(|| render_items(black_box(&lanes), &whole))
    });
    c.bench_function("gantt items, 1M events, zoomed 0.2 s", |b| {
        b.iter(|| render_items(black_box(&lanes), &zoomed))
    });
}

/// A whole frame of the timeline widget on a simulated schedule of 1,048,576 compute events
/// (interleaved 1F1B, P = 64, M = 2048, v = 4): layout from the per-simulation scene, painting
/// and tessellation, headless (no GPU upload).
fn frame(c: &mut Criterion) {
    let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "a", "count": 64, "fwd_s": 1.0}, {"name": "b", "count": 64, "fwd_s": 1.0},
                             {"name": "c", "count": 64, "fwd_s": 1.0}, {"name": "d", "count": 64, "fwd_s": 1.0}]},
        "cut": [64, 128, 192], "schedule": ["1f1b", "1f1b", "1f1b", "1f1b"], "ranks": 64, "microbatches": 2048}"#;
    let scenario = mpipe::Scenario::from_json_str(text, "bench.json").expect("valid");
    let sim = mpipe::tune::pipeline::simulate_scenario(
        &scenario,
        mpipe::sim::engine::SimOptions::default(),
    )
    .expect("derives");
    // Laid out once per simulation, as the app does after every edit.
    let shown = Shown::new(1, "bench", sim);
    eprintln!(
        "timeline frame: {} compute events",
        shown.scene.events.len()
    );
    let ctx = egui::Context::default();
    mpipe_studio::fonts::install(&ctx);
    // Every lane drawn (a chart of many ranks is drawn with every group expanded: the worst case).
    let expanded: std::collections::BTreeSet<usize> =
        (0..mpipe_studio::geometry::Rows::groups(shown.scene.ranks)).collect();
    let run = |range: Option<(f64, f64)>| {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1400.0, 2400.0),
            )),
            ..Default::default()
        };
        let out = ctx.run_ui(input, |ui| {
            chart_ui(
                ui,
                ChartInput {
                    shown: &shown,
                    span: shown.sim.makespan_s,
                    range,
                    dimmed: false,
                    cursor: None,
                    selected: None,
                    matches: &[],
                    lane_height: 24.0,
                    id_salt: "bench",
                    cycle: &[],
                    expanded: &expanded,
                },
            );
        });
        ctx.tessellate(out.shapes, out.pixels_per_point).len()
    };
    let mut group = c.benchmark_group("frame");
    group.sample_size(20);
    group.bench_function("timeline frame, 1M compute events, whole step", |b| {
        b.iter(|| run(None))
    });
    group.bench_function("timeline frame, 1M compute events, zoomed in", |b| {
        b.iter(|| run(Some((100.0, 140.0))))
    });
    group.finish();
}

criterion_group!(benches, bench, frame);
criterion_main!(benches);
