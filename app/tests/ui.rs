//! UI tests: drive the window by its labels, as a user would, and assert on the app's state.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe_studio::Studio;

fn harness() -> Harness<'static, Studio> {
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1500.0, 1000.0))
        .with_context_setup(mpipe_studio::fonts::install)
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), Studio::default());
    harness.run();
    harness
}

#[test]
fn opens_on_the_mpipe_sample_and_shows_its_timeline() {
    let harness = harness();
    assert_eq!(harness.state().source, "mpipe-vit-llm.json");
    // greedy_slack leaves rank 0 (no warmup window) one light encode, mb 5, which it runs
    // (stage 0) before its first backbone forward (stage 4).
    assert_eq!(harness.state().rank_actions(0)[..3], ["0F5", "4F0", "4F1"]);
    harness.get_by_label_contains("makespan 74.039 s");
    harness.get_by_label("Memory per rank");
    harness.get_by_label_contains("seam 1→2: forward Gather, backward Scatter");
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
    harness.get_by_label_contains("makespan 66.000 s");
}

#[test]
fn changing_a_skeleton_changes_the_order() {
    let mut harness = harness();
    harness.get_by_label("Sample").click();
    harness.run();
    harness.get_by_label("1F1B").click();
    harness.run();
    harness.get_by_label("region 1").click();
    harness.run();
    harness.get_by_label("gpipe").click();
    harness.run();
    assert_eq!(
        harness.state().scenario.as_ref().unwrap().schedule,
        [mpipe::skeleton::Skeleton::GPipe]
    );
    let rank0 = harness.state().rank_actions(0);
    assert_eq!(
        rank0[..9],
        [
            "0F0", "0F1", "0F2", "0F3", "0F4", "0F5", "0F6", "0F7", "0B0"
        ]
    );
}

#[test]
fn freezing_the_encoder_removes_its_backwards() {
    let mut harness = harness();
    let before = harness.state().rank_actions(0);
    assert_eq!(before.last().map(String::as_str), Some("0B5"));
    // The first trainable box belongs to the first layer spec, the ViT encoder.
    harness
        .get_all_by_role(Role::CheckBox)
        .next()
        .unwrap()
        .click();
    harness.run();
    let after = harness.state().rank_actions(0);
    assert!(after.iter().all(|a| !a.starts_with("0B")), "{after:?}");
    // Only the encoder backward went: the forward order is unchanged.
    let forwards = |v: &[String]| {
        v.iter()
            .filter(|a| a.contains('F'))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(forwards(&before), forwards(&after));
}

#[test]
fn an_invalid_edit_shows_the_rule_and_keeps_the_last_timeline() {
    let mut harness = harness();
    let before = harness.state().rank_actions(0);
    // 16 ranks for an 8-layer backbone: rule `sharded-slabs`.
    harness.state_mut().edit(|s| s.ranks = 16);
    harness.run();
    harness
        .get_by_label_contains("rule `sharded-slabs`: region 2 (1f1b) has 8 layer(s) for 16 ranks");
    harness.get_by_label("Showing the last valid schedule, dimmed.");
    assert_eq!(harness.state().rank_actions(0), before);
    harness.get_by_label_contains("makespan 74.039 s");
}

#[test]
fn undo_and_redo_cover_edits_by_button_and_keyboard() {
    let mut harness = harness();
    harness.state_mut().edit(|s| s.microbatches = 4);
    harness.run();
    assert_eq!(harness.state().scenario.as_ref().unwrap().microbatches, 4);
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario.as_ref().unwrap().microbatches, 8);
    harness.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::Z,
    );
    harness.run();
    assert_eq!(harness.state().scenario.as_ref().unwrap().microbatches, 4);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    harness.run();
    assert_eq!(harness.state().scenario.as_ref().unwrap().microbatches, 8);
    harness.get_by_label("Redo").click();
    harness.run();
    assert_eq!(harness.state().scenario.as_ref().unwrap().microbatches, 4);
}

#[test]
fn a_broken_file_shows_its_error_and_keeps_the_scenario() {
    let mut harness = harness();
    harness
        .state_mut()
        .open_text("{\"format\": \"mpipe-scenario/1\"", "broken.json");
    harness.run();
    harness.get_by_label_contains("broken.json:1:");
    assert_eq!(harness.state().source, "mpipe-vit-llm.json");
    harness.get_by_label_contains("makespan 74.039 s");
}
