//! A million events on the timeline: culling and merging into drawable items must fit a frame.

use criterion::{Criterion, criterion_group, criterion_main};
use mpipe_studio::gantt::geometry::{Span, TimeView, render_items};
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
                    backward: (i + lane) % 2 == 0,
                    mb: i % 1024,
                    index: lane * 16_384 + i,
                })
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let lanes = lanes();
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

criterion_group!(benches, bench);
criterion_main!(benches);
