//! Image snapshots of the window, rendered by wgpu (Mesa's software drivers on CI machines).
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p mpipe-studio --test snapshots` after a
//! deliberate visual change, and look at the new PNGs in `app/tests/snapshots/` before committing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use egui_kittest::{Harness, SnapshotOptions};
use mpipe_studio::Studio;

fn harness(studio: Studio) -> Harness<'static, Studio> {
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .with_context_setup(mpipe_studio::fonts::install)
        .wgpu()
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), studio);
    harness.run();
    harness
}

fn sample(file: &str) -> &'static mpipe_studio::samples::Sample {
    mpipe_studio::samples::SAMPLES
        .iter()
        .find(|s| s.file == file)
        .unwrap()
}

/// The one place snapshot tolerances live: the default per-pixel colour distance, and a handful
/// of pixels for anti-aliasing differences between software rasterisers.
fn snapshot(harness: &mut Harness<'static, Studio>, name: &str) {
    harness.snapshot_options(
        name,
        &SnapshotOptions::new().threshold(0.6).max_failed_pixels(16),
    );
}

#[test]
fn the_default_window() {
    let mut h = harness(Studio::default());
    snapshot(&mut h, "mpipe_default");
}

#[test]
fn gpipe_with_a_pinned_1f1b_baseline() {
    let mut studio = Studio::default();
    studio.open_sample(sample("1f1b.json"));
    studio.pin_baseline();
    studio.apply(mpipe_studio::command::Command::Edit {
        edit: mpipe::scenario::edit::Edit::Skeleton {
            region: 1,
            skeleton: mpipe::schedules::GPIPE,
        },
        gesture: None,
    });
    let mut h = harness(studio);
    snapshot(&mut h, "compare_gpipe_over_1f1b");
}

#[test]
fn an_invalid_edit_dims_the_last_timeline() {
    let mut studio = Studio::default();
    studio.apply(mpipe_studio::command::Command::Edit {
        edit: mpipe::scenario::edit::Edit::Ranks(16),
        gesture: None,
    });
    let mut h = harness(studio);
    snapshot(&mut h, "invalid_edit_dimmed");
}

#[test]
fn a_deadlocking_order_drawn_on_the_last_valid_chart() {
    // Rank 0 runs microbatch 0's backward right after its forward, rank 1 microbatch 1 first:
    // the wait-for cycle outlined in red with its arrows, the proposed fix above the chart.
    let mut studio = Studio::default();
    studio.open_sample(sample("1f1b.json"));
    let mut orders: Vec<Vec<String>> = (0..4).map(|r| studio.rank_actions(r)).collect();
    let b = orders[0].iter().position(|a| a == "0B0").unwrap();
    let step = orders[0].remove(b);
    orders[0].insert(1, step);
    orders[1].swap(0, 1);
    studio.apply(mpipe_studio::command::Command::Edit {
        edit: mpipe::scenario::edit::Edit::Orders(Some(orders)),
        gesture: None,
    });
    let mut h = harness(studio);
    snapshot(&mut h, "deadlock_cycle");
}
