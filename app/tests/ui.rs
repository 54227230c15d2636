//! UI tests: drive the window by its labels, as a user would, and assert on the app's state.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{choose, drag, edit, harness, pointer_click, sized, temp_dir};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe::scenario::edit::Edit;
use mpipe_studio::Studio;
use mpipe_studio::command::Command;

/// A harness whose frames are `dt` seconds apart (double clicks need frames under 0.3 s apart).
fn harness_with_step(dt: f32) -> Harness<'static, Studio> {
    sized(Studio::default(), egui::vec2(1500.0, 1000.0), dt)
}

#[test]
fn opens_on_the_mpipe_sample_and_shows_its_timeline() {
    let harness = harness();
    assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
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
    choose(&mut harness, "Sample", "GPipe");
    assert_eq!(harness.state().source(), "gpipe.json");
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
    choose(&mut harness, "Sample", "1F1B");
    choose(&mut harness, "region 1", "gpipe");
    assert_eq!(
        harness.state().scenario().unwrap().schedule,
        [mpipe::schedules::GPIPE]
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
fn the_skeleton_menu_lists_every_schedule_with_its_explanation_in_view() {
    // At 1280 × 720 the menu shows every skeleton of the registry, each beside its one-line
    // explanation, none scrolled out of the window.
    let mut harness = sized(Studio::default(), egui::vec2(1280.0, 720.0), 1.0 / 60.0);
    choose(&mut harness, "Sample", "1F1B");
    harness.get_by_label("region 1").click();
    harness.run();
    for skeleton in mpipe::schedules::skeleton::Skeleton::all() {
        let name = harness.get_by_label(skeleton.name());
        let explanation = harness.get_by_label(skeleton.schedule().summary());
        for node in [&name, &explanation] {
            let r = node.rect();
            assert!(r.min.y >= 0.0 && r.max.y <= 720.0, "{skeleton}: {r:?}");
        }
        assert!(explanation.rect().min.x > name.rect().max.x, "{skeleton}");
    }
    // Choosing one in the lower half of the menu picks it.
    harness.get_by_label("vmin").click();
    harness.run();
    assert_eq!(
        harness.state().scenario().unwrap().schedule,
        [mpipe::schedules::VMIN]
    );
}

#[test]
fn freezing_the_encoder_removes_its_backwards() {
    let mut harness = harness();
    let before = harness.state().rank_actions(0);
    assert_eq!(before.last().map(String::as_str), Some("0B5"));
    // The first "trainable" box belongs to the first layer spec, the ViT encoder.
    harness
        .get_all_by_label("trainable")
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
    edit(&mut harness, Edit::Ranks(16));
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
    edit(&mut harness, Edit::Microbatches(4));
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 4);
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 8);
    harness.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::Z,
    );
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 4);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 8);
    harness.get_by_label("Redo").click();
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 4);
}

#[test]
fn a_broken_file_shows_its_error_and_keeps_the_scenario() {
    let mut harness = harness();
    harness
        .state_mut()
        .open_text("{\"format\": \"mpipe-scenario/1\"", "broken.json", None);
    harness.run();
    harness.get_by_label_contains("broken.json:1:");
    assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
    // The schedule on screen is still the valid one, not dimmed.
    assert!(harness.state().current().is_some());
    assert!(harness.state().notice.as_ref().unwrap().is_error);
    harness.get_by_label_contains("makespan 74.039 s");
}

/// A file dropped onto the window in tests.
#[derive(Debug)]
struct Dropped {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
}

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &std::path::Path {
        &self.path
    }
    fn bytes(&self) -> Result<Vec<u8>, String> {
        Ok(self.bytes.clone())
    }
}

fn drop_file(harness: &mut Harness<'static, Studio>, name: &str, text: &str) {
    harness
        .input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped {
            path: name.into(),
            bytes: text.as_bytes().to_vec(),
        }));
    harness.run();
}

#[test]
fn dropping_a_scenario_opens_it() {
    let mut harness = harness();
    drop_file(
        &mut harness,
        "/data/vpp3.json",
        include_str!("../../samples/vpp3.json"),
    );
    assert_eq!(harness.state().source(), "/data/vpp3.json");
    assert_eq!(
        harness.state().rank_actions(0)[..4],
        ["0F0", "0F1", "0F2", "0F3"]
    );
    harness.get_by_label_contains("makespan");
    // A broken drop names the file and keeps what was open.
    drop_file(&mut harness, "/data/bad.json", "{\"format\": 3}");
    harness.get_by_label_contains("/data/bad.json:1:");
    assert_eq!(harness.state().source(), "/data/vpp3.json");
}

#[test]
fn dropping_trace_files_imports_them_beside_the_scenario() {
    let mut harness = harness();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/traces/pp-interleaved");
    for name in ["rank0.json.gz", "rank1.json.gz"] {
        harness
            .input_mut()
            .dropped_files
            .push(std::sync::Arc::new(Dropped {
                path: dir.join(name),
                bytes: std::fs::read(dir.join(name)).unwrap(),
            }));
    }
    harness.step();
    for _ in 0..400 {
        if harness.state().traces.import.is_none() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        harness.step();
    }
    harness.run();
    // The scenario on screen stays; the traces sit beside it.
    assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
    let m = harness.state().traces.measurement.as_ref().unwrap();
    assert_eq!(m.ranks.len(), 2);
    harness.get_by_label_contains("2 file(s), 2 rank(s), shared clock");
}

#[test]
fn compare_mode_shows_the_speedup_over_the_pinned_baseline() {
    let mut harness = harness();
    harness.get_by_label("Pin as baseline").click();
    harness.run();
    // Freeze the encoder: no cooldown backwards, a faster step.
    harness
        .get_all_by_label("trainable")
        .next()
        .unwrap()
        .click();
    harness.run();
    let speedup = harness.state().speedup().unwrap();
    assert!((speedup - 74.03882 / 68.01207).abs() < 1e-3, "{speedup}");
    harness.get_by_label_contains(&format!("speedup of the current schedule: {speedup:.3}×"));
    harness.get_by_label("Unpin all").click();
    harness.run();
    assert!(harness.state().baselines.is_empty());
}

#[test]
fn the_teaching_cursor_steps_through_the_step() {
    let mut harness = harness();
    harness.get_by_label("Teach").click();
    harness.run();
    assert_eq!(harness.state().view.teach.map(|t| t.t), Some(0.0));
    harness.get_by_label_contains("rank 0: 0F5 (forward of microbatch 5)");
    harness.get_by_label("Step ▶").click();
    harness.run();
    let t = harness.state().view.teach.unwrap().t;
    assert!(t > 0.0);
    harness.get_by_label("Play").click();
    harness.run_steps(5);
    assert!(harness.state().view.teach.unwrap().t > t);
    assert!(harness.state().view.teach.unwrap().playing);
}

#[test]
fn f1_shows_the_keyboard_help() {
    let mut harness = harness();
    harness.key_press(egui::Key::F1);
    harness.run();
    harness.get_by_label("Keyboard and mouse");
    harness.get_by_label("undo the last edit");
}

/// eframe storage in memory.
#[derive(Default)]
struct Memory(std::collections::HashMap<String, String>);

impl eframe::Storage for Memory {
    fn get_string(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }
    fn set_string(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }
    fn remove_string(&mut self, key: &str) {
        self.0.remove(key);
    }
    fn flush(&mut self) {}
}

#[test]
fn the_last_session_is_restored_and_a_corrupt_one_is_ignored() {
    use eframe::{App, Storage};
    let mut app = mpipe_studio::StudioApp::restore(None);
    assert_eq!(app.studio.source(), "mpipe-vit-llm.json");
    app.studio.apply(Command::Edit {
        edit: Edit::Owner(mpipe::scenario::owner::OwnerSpec::FirstRank),
        gesture: None,
    });
    let mut storage = Memory::default();
    app.save(&mut storage);
    let again = mpipe_studio::StudioApp::restore(Some(&storage));
    assert_eq!(again.studio.scenario(), app.studio.scenario());
    assert!(
        again.studio.current().is_some(),
        "{:?}",
        again.studio.error()
    );
    storage.set_string(mpipe_studio::SESSION_KEY, "{ not json".into());
    let fresh = mpipe_studio::StudioApp::restore(Some(&storage));
    assert_eq!(fresh.studio.source(), "mpipe-vit-llm.json");
    assert_eq!(
        fresh.studio.scenario().map(|s| s.owner.clone()),
        Some(mpipe::scenario::owner::OwnerSpec::GreedySlack)
    );
}

#[test]
fn changing_m_resizes_the_per_microbatch_workload() {
    let mut s =
        mpipe::Scenario::from_json_str(include_str!("../../samples/mpipe-vit-llm.json"), "s.json")
            .unwrap();
    s.microbatches = 12;
    mpipe::scenario::edit::resize_per_microbatch_lists(&mut s);
    let scales = s.workload.as_ref().unwrap().encoder_scale.as_ref().unwrap();
    assert_eq!(scales.len(), 12);
    assert_eq!(scales[8..], [1.0, 1.0, 1.0, 1.0]);
    assert!(mpipe::derive(&s).is_ok());
    s.microbatches = 3;
    mpipe::scenario::edit::resize_per_microbatch_lists(&mut s);
    assert_eq!(
        s.workload.as_ref().unwrap().encoder_scale.as_ref().unwrap(),
        &vec![1.0, 0.3, 2.5]
    );
}

fn large_scenario() -> String {
    r#"{"format": "mpipe-scenario/1", "name": "big",
        "model": {"layers": [{"name": "l", "count": 64, "fwd_s": 1.0}]},
        "schedule": ["1f1b"], "ranks": 32, "microbatches": 128}"#
        .to_string()
}

#[test]
fn large_runs_simulate_in_the_background_and_can_be_cancelled() {
    let mut harness = harness();
    harness
        .state_mut()
        .open_text(&large_scenario(), "big.json", None);
    assert!(harness.state().derived.running().is_some());
    // (Shown while it runs: checked on the longer run below, which is still in flight after a
    // frame however fast the machine; this one may be done by then.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while harness.state().derived.running().is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background run did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        harness.step();
    }
    let sim = &harness.state().current().unwrap().sim;
    assert_eq!(sim.makespan_s, (128 + 32 - 1) as f64 * 2.0 * (1.0 + 2.0));

    // Cancelling a run in flight steps back to the scenario on screen (a run long enough to
    // be in flight when the button is clicked, however fast the machine).
    edit(&mut harness, Edit::Microbatches(4096));
    assert!(harness.state().derived.running().is_some());
    harness.step();
    harness.get_by_label("Simulating the edited scenario in the background…");
    // The previous timeline stays on screen meanwhile (the edited scenario's is on its way).
    let shown = &harness.state().shown().unwrap().sim;
    assert_eq!(shown.derivation.plan.microbatches, 128);
    assert_eq!(harness.state().scenario().unwrap().microbatches, 4096);
    harness.get_by_label("Cancel").click();
    harness.step();
    assert!(harness.state().derived.running().is_none());
    // The cancelled run's thread really stops (it is not left to finish unseen).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while harness.state().derived.stopping() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the cancelled run went on"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        harness.step();
    }
    assert_eq!(harness.state().scenario().unwrap().microbatches, 128);
    assert!(harness.state().doc.can_redo());
}

#[test]
fn dragging_a_cut_moves_the_region_boundary() {
    let mut harness = harness();
    let strip = harness.get_by_label("cut strip").rect();
    // The Mpipe sample cuts 12 layers at 4: the handle sits 4/12 of the way along the strip.
    let at = |b: f32| egui::pos2(strip.left() + strip.width() * b / 12.0, strip.center().y);
    drag(&mut harness, at(4.0), at(6.0));
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.cut, [6]);
    // The encoder region now holds two backbone layers too; the derivation follows.
    let sim = &harness.state().current().unwrap().sim;
    assert_eq!(sim.derivation.plan.regions[0].layers, 0..6);
    // One undo puts the cut back where it was.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().cut, [4]);
}

#[test]
fn double_clicking_the_strip_adds_a_cut_and_right_clicking_a_handle_removes_it() {
    let mut harness = harness_with_step(0.02);
    let strip = harness.get_by_label("cut strip").rect();
    let at = |b: f32| egui::pos2(strip.left() + strip.width() * b / 12.0, strip.center().y);
    harness.hover_at(at(8.0));
    harness.step();
    for _ in 0..2 {
        pointer_click(&mut harness, at(8.0), egui::PointerButton::Primary);
    }
    harness.run();
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.cut, [4, 8]);
    assert_eq!(s.schedule.len(), 3);
    harness.hover_at(at(8.0));
    harness.run();
    pointer_click(&mut harness, at(8.0), egui::PointerButton::Secondary);
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().cut, [4]);
}

#[test]
fn a_hardware_preset_sets_the_links() {
    let mut harness = harness();
    choose(&mut harness, "Sample", "1F1B");
    assert_eq!(harness.state().current().unwrap().sim.makespan_s, 66.0);
    choose(&mut harness, "Hardware", "NVIDIA A100 80GB, PCIe 4.0");
    let s = harness.state().scenario().unwrap();
    assert_eq!(
        s.hardware.as_ref().and_then(|h| h.link_bytes_per_s),
        Some(25e9)
    );
    // Transfers now cost α + n/β between ranks: the step gets longer.
    assert!(harness.state().current().unwrap().sim.makespan_s > 66.0);
}

#[test]
fn dragging_a_workload_bar_sets_that_microbatchs_scale() {
    let mut harness = harness();
    let bars = harness.get_by_label("workload bars").rect();
    // Eight bars; drag inside the third one to the top: scale 4 for microbatch 2.
    let x = bars.left() + bars.width() * 2.5 / 8.0;
    drag(
        &mut harness,
        egui::pos2(x, bars.bottom() - 5.0),
        egui::pos2(x, bars.top() - 10.0),
    );
    let scales = harness
        .state()
        .scenario()
        .unwrap()
        .workload
        .as_ref()
        .unwrap()
        .encoder_scale
        .clone()
        .unwrap();
    assert_eq!(scales[2], 4.0);
    assert_eq!(scales[0], 1.0);
    assert!(harness.state().current().is_some());
}

#[test]
fn save_writes_the_file_and_open_reads_it_back() {
    let mut harness = harness();
    let path = temp_dir("save").join("mine.json");
    edit(&mut harness, Edit::Microbatches(4));
    harness.state_mut().save_to(&path);
    harness.run();
    harness.get_by_label_contains("saved ");
    assert_eq!(harness.state().doc.path(), Some(path.as_path()));
    assert_eq!(
        harness.state().io.recent.first().map(String::as_str),
        Some(path.display().to_string().as_str())
    );
    // Ctrl+S saves to the same file.
    edit(&mut harness, Edit::Microbatches(6));
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    harness.run();
    let saved = mpipe::Scenario::load(std::fs::File::open(&path).unwrap(), "mine.json").unwrap();
    assert_eq!(saved.microbatches, 6);
    // Opening it elsewhere gives the same scenario; a missing file names itself.
    let mut other = harness_with_step(0.25);
    common::open(&mut other, &path);
    assert_eq!(other.state().scenario().unwrap(), &saved);
    common::open(&mut other, std::path::Path::new("/nonexistent/x.json"));
    other.get_by_label_contains("/nonexistent/x.json: cannot read:");
    assert_eq!(other.state().scenario().unwrap(), &saved);
}

#[test]
fn export_writes_the_timeline_as_svg() {
    let mut harness = harness();
    let path = temp_dir("svg").join("t.svg");
    harness.state_mut().export_svg(&path);
    harness.run();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg ") && svg.contains(">rank 3</text>"));
    harness.get_by_label_contains("exported ");
}

#[test]
fn adjacent_transposes_offer_the_normal_form_as_a_one_click_fix() {
    let mut harness = harness();
    edit(
        &mut harness,
        Edit::CutAndSchedule {
            cut: vec![2, 4],
            schedule: vec![
                mpipe::schedules::TRANSPOSE,
                mpipe::schedules::TRANSPOSE,
                mpipe::schedules::ONE_F_ONE_B,
            ],
        },
    );
    harness.run();
    harness.get_by_label_contains("rule `no-adjacent-replicated`");
    harness
        .get_by_label("Apply the normal form: cut [4], schedule ⟨transpose, 1f1b⟩")
        .click();
    harness.run();
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.cut, [4]);
    assert!(harness.state().current().is_some());
}

#[test]
fn regions_can_be_split_swapped_and_merged_from_the_list() {
    let mut harness = harness();
    harness.get_by_label("Add region (split the last)").click();
    harness.run();
    // 12 layers cut at 4: the last region (4..12) splits at 8 and copies its skeleton.
    let s = harness.state().scenario().unwrap().clone();
    assert_eq!(s.cut, [4, 8]);
    assert_eq!(s.schedule.len(), 3);
    // Swap regions 1 and 2: ⟨1f1b, transpose, 1f1b⟩, a Replicated region between two Sharded ones.
    harness.get_all_by_label("⬆").next().unwrap().click();
    harness.run();
    use mpipe::schedules::{ONE_F_ONE_B, TRANSPOSE};
    assert_eq!(
        harness.state().scenario().unwrap().schedule,
        [ONE_F_ONE_B, TRANSPOSE, ONE_F_ONE_B]
    );
    assert!(
        harness.state().current().is_some(),
        "{:?}",
        harness.state().error()
    );
    // Merge region 3 into region 2.
    harness.get_all_by_label("✕").nth(1).unwrap().click();
    harness.run();
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.cut, [4]);
    assert_eq!(s.schedule, [ONE_F_ONE_B, TRANSPOSE]);
}

#[test]
fn png_export_asks_the_window_for_a_screenshot_of_the_timeline() {
    let mut harness = harness();
    let path = temp_dir("png").join("t.png");
    let ctx = harness.ctx.clone();
    harness.state_mut().export_png(&ctx, path);
    // The screenshot arrives from the renderer; the request is in flight and names the file then.
    assert!(harness.state().io.png.is_some());
    assert!(
        harness
            .state()
            .view
            .chart_rects
            .first()
            .is_some_and(|r| r.width() > 100.0)
    );
}

#[test]
fn dragging_the_memory_plot_pans_the_timeline_too() {
    let mut harness = harness();
    assert_eq!(harness.state().view.range, None);
    // Zoomed in to 20..50 s (the whole step cannot pan: the view stays inside the step).
    harness
        .state_mut()
        .apply(Command::Range(Some((20.0, 50.0))));
    harness.run();
    let title = harness.get_by_label("Memory per rank").rect();
    let from = egui::pos2(title.left() + 400.0, title.bottom() + 100.0);
    let to = egui::pos2(from.x + 200.0, from.y);
    drag(&mut harness, from, to);
    // Dragging right shows earlier times: the timeline moved back, and not past 0.
    let (t0, t1) = harness
        .state()
        .view
        .range
        .expect("the timeline follows the plot");
    assert!((0.0..20.0).contains(&t0) && t1 < 50.0, "{t0} {t1}");
    assert!((t1 - t0 - 30.0).abs() < 1e-6, "{t0} {t1}");
}

#[test]
fn an_invalid_cut_shows_the_rule_and_keeps_the_old_timeline() {
    let mut harness = harness();
    let before = harness.state().rank_actions(3);
    // Type a cut outside the model into the "starts at layer" box of region 2.
    edit(&mut harness, Edit::SetCut { index: 0, to: 12 });
    harness.run();
    harness.get_by_label_contains("rule `cut-tiles`: cut[0] = 12 is outside (0, 12)");
    harness.get_by_label("Showing the last valid schedule, dimmed.");
    assert_eq!(harness.state().rank_actions(3), before);
    // Undo brings the valid cut back.
    harness.get_by_label("Undo").click();
    harness.run();
    assert!(harness.state().current().is_some());
}

#[test]
fn a_file_that_opens_but_breaks_a_rule_is_positioned_in_that_file() {
    let mut harness = harness();
    let text = include_str!("../../samples/1f1b.json").replace("\"ranks\": 4", "\"ranks\": 16");
    harness.state_mut().open_text(&text, "wide.json", None);
    harness.run();
    // The first skeleton sits on line 11 of the sample, column 16.
    harness.get_by_label_contains("wide.json:11:16: field `schedule[0]`: rule `sharded-slabs`");
}

/// The `optimized` owner search (issue 10) runs on the worker with progress, and Cancel stops it
/// between candidates rather than after its budget of simulations.
#[test]
fn the_optimized_owner_search_shows_progress_and_stops_on_cancel() {
    let text = r#"{"format": "mpipe-scenario/1", "name": "search",
        "model": {"layers": [{"name": "enc", "role": "encoder", "count": 8, "fwd_s": 0.25, "workload_varies": true},
                             {"name": "l", "count": 8, "fwd_s": 1.0}]},
        "cut": [8], "schedule": ["transpose", "1f1b"], "ranks": 8, "microbatches": 4096,
        "workload": {"distribution": {"kind": "uniform", "low": 0.5, "high": 1.5}},
        "owner": "optimized"}"#;
    let mut harness = harness();
    let start = std::time::Instant::now();
    harness.state_mut().open_text(text, "search.json", None);
    assert!(harness.state().derived.running().is_some());
    // Wait until the search has simulated candidates (progress within the derivation's 30 %).
    let deadline = start + std::time::Duration::from_secs(120);
    loop {
        let progress = harness.state().derived.running().map(|j| j.progress());
        assert!(
            progress.is_some(),
            "the search ended before it could be cancelled"
        );
        if progress.is_some_and(|p| p > 0.01) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(20));
        harness.step();
    }
    harness.step();
    harness.get_by_label("Simulating the edited scenario in the background…");
    harness.get_by_label("Cancel").click();
    harness.step();
    let cancelled = std::time::Instant::now();
    while harness.state().derived.stopping() > 0 {
        assert!(
            // One candidate takes a fraction of a second; the whole search about two minutes.
            cancelled.elapsed() < std::time::Duration::from_secs(15),
            "the cancelled search went on"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        harness.step();
    }
    eprintln!(
        "search: cancelled after {:?}, stopped {:?} later",
        cancelled - start,
        cancelled.elapsed()
    );
}

#[test]
fn a_dualpipev_schedule_is_chosen_from_the_menu_and_its_pairs_drawn() {
    let mut harness = harness();
    choose(&mut harness, "Sample", "1F1B");
    harness.get_by_label("Add region (split the last)").click();
    harness.run();
    choose(&mut harness, "region 1", "dualpipev");
    // Half chosen, the wavefront mixes skeletons: the rule says so, the last chart stays.
    harness.get_by_label_contains("rule `uniform-wavefront`");
    choose(&mut harness, "region 2", "dualpipev");
    assert_eq!(
        harness.state().scenario().unwrap().schedule,
        [mpipe::schedules::DUALPIPEV, mpipe::schedules::DUALPIPEV]
    );
    // The V fold: rank 0 holds stages 0 and 7; the steady state runs overlapped pairs, and the
    // chart's legend says how they are drawn.
    let rank0 = harness.state().rank_actions(0);
    assert_eq!(
        rank0[..8],
        ["0F0", "0F1", "0F2", "0F3", "0F4", "0F5", "0F6", "7F0"]
    );
    let shown = harness.state().shown().unwrap().clone();
    assert!(!shown.scene.default_placement);
    assert_eq!(
        shown.scene.lanes[0].stages,
        [0, 7].map(mpipe::vocab::ids::Stage::new)
    );
    harness.get_by_label("overlapped pair (F;B): one compute slot, the forward first");
    let d = mpipe::derive(harness.state().scenario().unwrap()).unwrap();
    assert!(
        d.order
            .steps(0)
            .iter()
            .any(|s| s.to_string() == "(0F7;7B3)OVERLAP_F_B")
    );
}

#[test]
fn the_operator_table_shows_the_schedule_as_a_grid() {
    // BigMac's global operator table under the chart: collapsed until opened; a row per rank,
    // a column per slot, every backbone forward of microbatch 0 once per rank.
    let mut harness = harness();
    harness
        .get_by_label("Operator table (time slot × rank)")
        .click();
    harness.run();
    let shown = harness.state().shown().unwrap().clone();
    let table = shown.table.as_ref().unwrap();
    assert_eq!(table.ranks.len(), shown.sim.derivation.plan.ranks);
    assert_eq!(
        harness.get_all_by_label("F0").count(),
        shown.sim.derivation.plan.ranks
    );
    assert!(harness.get_all_by_label("IDLE").count() > 0);
    harness.get_by_label_contains("Every compute action takes one slot");
}

#[test]
fn the_three_designs_are_compared_on_a_worker_and_any_one_applied() {
    // The default sample (⟨transpose, 1f1b⟩): compare BigMac's three designs, then make the
    // scenario its nested design in one click, and undo it.
    let mut harness = harness();
    let c = common::run_analysis(
        &mut harness,
        "Three designs (BigMac): step time and memory against M",
        "Compare the designs",
        |s| &s.analyses.designs,
    );
    assert_eq!(c.points.len(), 12);
    assert!(c.refused.is_empty());
    harness.get_by_label("step time (s) against M");
    let before = harness.state().scenario().cloned().unwrap();
    harness.get_by_label("Use nested").click();
    harness.run();
    assert_eq!(
        harness.state().scenario().unwrap().schedule[0],
        mpipe::schedules::NESTED
    );
    // The comparison was of the scenario before: it is not shown for the new one.
    let now = harness.state().doc.generation();
    assert!(harness.state().analyses.designs.current(now).is_none());
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn recomputing_a_layer_group_trades_its_memory_for_time_and_undo_takes_it_back() {
    let mut harness = harness();
    let sim = |h: &Harness<'static, Studio>| {
        let s = &h.state().current().unwrap().sim;
        let peaks: Vec<f64> = s.memory.iter().map(|c| c.peak_bytes).collect();
        (s.makespan_s, peaks)
    };
    let before = sim(&harness);
    // The last "recompute" box belongs to the last layer spec, the backbone.
    harness
        .get_all_by_label("recompute")
        .last()
        .unwrap()
        .click();
    harness.run();
    let layers = &harness.state().scenario().unwrap().model.layers;
    assert_eq!(
        layers.last().unwrap().recompute,
        Some(mpipe::scenario::layer::Recompute::Full)
    );
    assert!(layers.iter().rev().skip(1).all(|l| l.recompute.is_none()));
    // Each backbone backward runs its forward again: 74.0 s → 94.0 s. Rank 0, with the most
    // microbatches in flight, holds 12.8 GB → 7.2 GB; the last rank, with one, holds the one
    // it makes again plus its input (+33 MB).
    let after = sim(&harness);
    assert!(
        (after.0 - before.0 - 20.0).abs() < 1e-6,
        "{after:?} vs {before:?}"
    );
    assert!(after.1[0] < 0.6 * before.1[0], "{after:?} vs {before:?}");
    assert!(
        (after.1[3] - before.1[3] - 33e6).abs() < 1.0,
        "{after:?} vs {before:?}"
    );
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(sim(&harness), before);
}

#[test]
fn a_schedule_over_capacity_is_fitted_under_it_on_a_worker_and_the_fit_used_and_undone() {
    // The default sample with a 10 GB device: rank 0 holds 12.8 GB. Fit it under, use the fit
    // (every rank now within 10 GB), and undo it.
    let mut harness = harness();
    let mut s = harness.state().scenario().cloned().unwrap();
    s.hardware.as_mut().unwrap().memory_bytes = Some(10e9);
    harness.state_mut().apply(Command::Edit {
        edit: Edit::Replace(Box::new(s)),
        gesture: None,
    });
    harness.run();
    let before = harness.state().scenario().cloned().unwrap();
    assert!(harness.state().current().unwrap().sim.memory[0].over_capacity);
    harness.get_by_label_contains("a rank is over the device's capacity");
    harness.get_by_label("Fit under 10.00 GB").click();
    harness.run();
    common::wait(&mut harness, |s| s.analyses.fit.running.is_none());
    harness.run();
    let generation = harness.state().doc.generation();
    let fit = harness
        .state()
        .analyses
        .fit
        .current(generation)
        .cloned()
        .unwrap();
    let after = fit.after.clone().unwrap();
    assert!(after.peaks_bytes.iter().all(|&p| p <= 10e9), "{after:?}");
    harness.get_by_label_contains("fits under 10.00 GB: step");
    harness.get_by_label("Use the fit").click();
    harness.run();
    let sim = &harness.state().current().unwrap().sim;
    assert!(sim.memory.iter().all(|c| !c.over_capacity));
    assert_eq!(sim.makespan_s, after.makespan_s);
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn recomputation_and_offload_are_edited_per_layer_group_and_undone() {
    // The over-capacity sample: make its one layer group recompute selectively, place the
    // recomputation early (Mario), and undo both.
    let mut harness = harness();
    choose(
        &mut harness,
        "Sample",
        "LLM over a 24 GB device: fit it by offload or recomputation",
    );
    let before = harness.state().scenario().cloned().unwrap();
    harness.get_by_label("Recompute and offload").click();
    harness.run();
    choose(&mut harness, "recomputation", "selective");
    let l = harness.state().scenario().unwrap().model.layers[0].clone();
    assert_eq!(
        (
            l.recompute,
            l.recompute_activation_share,
            l.recompute_cost_share
        ),
        (
            Some(mpipe::scenario::layer::Recompute::Selective),
            Some(0.5),
            Some(0.1)
        )
    );
    // Selective: each backward reruns a tenth of its forward, rank 0 keeps half.
    let sim = &harness.state().current().unwrap().sim;
    assert!(
        sim.memory[0].peak_bytes < 30e9,
        "{}",
        sim.memory[0].peak_bytes
    );
    harness.get_by_label("early").click();
    harness.run();
    assert!(harness.state().scenario().unwrap().model.layers[0].recompute_early);
    let r = harness
        .state()
        .current()
        .unwrap()
        .scene
        .lane_events(0)
        .iter()
        .filter(|e| e.action.phase == mpipe::vocab::phase::Phase::Recompute)
        .count();
    assert_eq!(r, 8, "one early recomputation per microbatch on rank 0");
    harness.get_by_label_contains("R: recomputation placed early");
    harness.state_mut().apply(Command::Undo);
    harness.run();
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn a_regions_width_is_edited_field_by_field_and_undone() {
    // The 1F1B MoE sample: give its one region tensor parallelism 2 by typing it, turn the
    // pair overlap off, and undo both; each edit changes its one field.
    let mut harness = harness();
    choose(&mut harness, "Sample", "DeepSeek-V3-like MoE, EP 64 ⟨1f1b⟩");
    let before = harness.state().scenario().cloned().unwrap();
    let step = harness.state().current().unwrap().sim.makespan_s;
    harness.get_by_label("Width (devices per stage)").click();
    harness.run();
    harness.get_by_label("tp").click();
    harness.run();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get_by_label("tp").type_text("2");
    harness.key_press(egui::Key::Enter);
    harness.run();
    common::wait(&mut harness, |s| {
        s.current().is_some_and(|c| c.sim.makespan_s != step)
    });
    let width = harness.state().scenario().unwrap().width.clone().unwrap();
    let want = mpipe::scenario::width::WidthSpec {
        tp: 2,
        ..before.width.as_ref().unwrap()[0]
    };
    assert_eq!(width, [want]);
    // Two devices a stage: the compute halves, the all-reduces come in.
    let sim = &harness.state().current().unwrap().sim;
    assert!(sim.makespan_s < step, "{} vs {step}", sim.makespan_s);
    assert!(sim.ranks.iter().all(|r| r.stage_comm_s > 0.0));
    harness.get_by_label("F&B").click();
    harness.run();
    let width = harness.state().scenario().unwrap().width.clone().unwrap();
    assert_eq!(width[0].fb_comm_overlap, Some(false));
    assert_eq!(width[0].tp, 2);
    harness.state_mut().apply(Command::Undo);
    harness.run();
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn links_open_a_sample_or_a_scenario_and_a_bad_link_keeps_the_document() {
    let mut studio = Studio::default();
    assert!(!studio.open_link("#view=1"));
    assert!(studio.open_link("#sample=gpipe.json"));
    assert_eq!(studio.source(), "gpipe.json");
    assert!(studio.open_link("sample=nope.json"));
    let notice = studio.notice.clone().unwrap();
    assert!(notice.is_error);
    assert_eq!(
        notice.text,
        "the link: no sample `nope.json` (the samples are the files of the Sample menu, e.g. `mpipe-vit-llm.json`)"
    );
    assert!(studio.open_link("scenario=%%"));
    assert_eq!(
        studio.notice.clone().unwrap().text,
        "the link: cannot read: the part after `scenario=` is not URL-safe base64: `%` at character 1 of it (was the link cut or changed?)"
    );
    // A link whose scenario is invalid JSON says where, as a file does.
    let bad = mpipe::scenario::share::to_fragment("{\n  \"ranks\": 4,\n  \"microbatches\": x\n}");
    assert!(studio.open_link(&bad));
    assert_eq!(
        studio.notice.clone().unwrap().text,
        "the link:3:19: expected value"
    );
    assert_eq!(studio.source(), "gpipe.json", "the document stays");
    // The link of the document on screen opens the same scenario.
    let fragment = studio.share_fragment().unwrap();
    let before = studio.scenario().unwrap().to_json_string();
    assert!(studio.open_link(&fragment));
    assert_eq!(studio.source(), "the link");
    assert_eq!(studio.scenario().unwrap().to_json_string(), before);
}

#[test]
fn share_link_in_the_file_menu_copies_the_scenario_s_fragment() {
    let mut harness = harness();
    harness.get_by_label("File").click();
    harness.run();
    harness.get_by_label("Share link").click();
    harness.run();
    let studio = harness.state();
    let fragment = studio.share_fragment().unwrap();
    let notice = studio.notice.clone().unwrap();
    assert!(!notice.is_error);
    assert_eq!(
        notice.text,
        format!(
            "copied the link's fragment ({} characters): put it after the web build's address",
            fragment.len() + 1
        )
    );
}
