//! A million events on the timeline: culling and merging into drawable items must fit a frame.

#![allow(clippy::expect_used)] // a benchmark scenario that does not derive is a bug in the benchmark

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use mpipe_studio::geometry::{Lane, TimeView, render_items};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let lists = common::lanes();
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

/// [`common::Frame`]: the whole step and zoomed in.
fn frame(c: &mut Criterion) {
    let frame = common::Frame::new();
    eprintln!(
        "timeline frame: {} compute events",
        frame.shown.scene.events.len()
    );
    let mut group = c.benchmark_group("frame");
    group.sample_size(20);
    group.bench_function("timeline frame, 1M compute events, whole step", |b| {
        b.iter(|| frame.run(None))
    });
    group.bench_function("timeline frame, 1M compute events, zoomed in", |b| {
        b.iter(|| frame.run(Some((100.0, 140.0))))
    });
    group.finish();
}

criterion_group!(benches, bench, frame);
criterion_main!(benches);
