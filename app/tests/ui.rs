//! UI tests: drive the window by its labels, as a user would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe_studio::Studio;

fn harness() -> Harness<'static, Studio> {
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1400.0, 800.0))
        .with_context_setup(mpipe_studio::fonts::install)
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), Studio::default());
    harness.run();
    harness
}

#[test]
fn opens_on_the_mpipe_sample_and_shows_its_order() {
    let harness = harness();
    assert_eq!(harness.state().source, "mpipe-vit-llm.json");
    harness.get_by_label("rank 0");
    harness.get_by_label("rank 3");
    // greedy_slack leaves rank 0 (no warmup window) one light encode, mb 5, which it runs
    // (stage 0) before its first backbone forward (stage 4).
    assert_eq!(harness.state().rank_actions(0)[..3], ["0F5", "4F0", "4F1"]);
    assert!(harness.query_all_by_label("4F0").count() >= 1);
}

#[test]
fn choosing_a_sample_changes_the_order() {
    let mut harness = harness();
    harness.get_by_label("Sample").click();
    harness.run();
    harness.get_by_label("GPipe").click();
    harness.run();
    assert_eq!(harness.state().source, "gpipe.json");
    let rank0 = harness.state().rank_actions(0);
    assert_eq!(
        rank0[..9],
        [
            "0F0", "0F1", "0F2", "0F3", "0F4", "0F5", "0F6", "0F7", "0B0"
        ]
    );
    assert!(harness.query_by_label("4F0").is_none());
}

#[test]
fn a_broken_scenario_shows_its_error() {
    let mut harness = harness();
    harness
        .state_mut()
        .open_text("{\"format\": \"mpipe-scenario/1\"", "broken.json");
    harness.run();
    harness.get_by_label_contains("broken.json:1:");
    harness.get_by_label("No valid schedule to show.");
}
