//! One UI test per bug found by trying the app as a user would (issue 9). Each failed before its
//! fix; the comment says what went wrong.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{
    choose, drag, edit, harness, harness_on, hover, on_sample, sized, temp_dir, timeline_point,
    type_into, wait,
};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe::scenario::edit::Edit;
use mpipe_studio::Studio;
use mpipe_studio::command::Command;
use mpipe_studio::samples::SAMPLES;

fn sample(file: &str) -> &'static mpipe_studio::samples::Sample {
    SAMPLES.iter().find(|s| s.file == file).unwrap()
}

/// The 1F1B sample switched to GPipe drew 1F1B still: the chart's layout cache was keyed on
/// (event count, makespan, ranks), which the two share, so hover, Teach and the chart read the
/// previous simulation's events.
#[test]
fn switching_1f1b_to_gpipe_redraws_the_timeline_with_gpipe() {
    let mut harness = harness();
    choose(&mut harness, "Sample", "1F1B");
    harness.get_by_label("Pin as baseline").click();
    harness.run();
    choose(&mut harness, "region 1", "gpipe");
    // Stages of 2 s forwards: at 9 s GPipe's rank 0 runs its fifth forward, 1F1B's rank 0 has
    // run its four and waits for the first gradient.
    let at = timeline_point(&harness, 0, 9.0);
    hover(&mut harness, at);
    harness.get_by_label_contains("0F4 forward");
    harness.get_by_label("Teach").click();
    harness.run();
    harness.state_mut().apply(Command::Cursor(9.0));
    harness.run();
    harness.get_by_label_contains("rank 0: 0F4 (forward of microbatch 4)");
    // The pinned baseline still is 1F1B, the current chart GPipe.
    let s = harness.state();
    assert_eq!(s.baselines[0].shown.rank_actions(0)[4], "0B0");
    assert_eq!(s.current().unwrap().rank_actions(0)[4], "0F4");
    assert_ne!(
        s.baselines[0].shown.generation,
        s.current().unwrap().generation
    );
}

/// One turn of the mouse wheel of `points` (positive: away from the user).
fn wheel(harness: &mut Harness<'static, Studio>, points: f32) {
    harness.event(egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, points),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Wheel,
        modifiers: egui::Modifiers::NONE,
    });
}

/// The wheel over the Gantt zoomed it and scrolled the page; zooming out went past the step.
#[test]
fn the_wheel_zooms_the_timeline_without_scrolling_the_page_and_stops_at_the_step() {
    // A short window: the central panel scrolls.
    let mut harness = sized(Studio::default(), egui::vec2(1500.0, 600.0), 0.25);
    let top = harness.state().view.chart_rects[0].top();
    let at = timeline_point(&harness, 1, 30.0);
    harness.hover_at(at);
    harness.run_steps(2);
    wheel(&mut harness, 120.0);
    harness.run_steps(2);
    let (t0, t1) = harness.state().view.range.expect("zoomed in");
    assert!(t1 - t0 < 74.0 && t0 >= 0.0, "{t0} {t1}");
    assert_eq!(
        harness.state().view.chart_rects[0].top(),
        top,
        "the page scrolled"
    );
    for _ in 0..10 {
        wheel(&mut harness, -400.0);
        harness.run_steps(2);
    }
    assert_eq!(harness.state().view.range, None, "zoomed out past the step");
    assert_eq!(
        harness.state().view.chart_rects[0].top(),
        top,
        "the page scrolled"
    );
}

/// Open…, Save as…, Export SVG… did nothing without a desktop portal: they now open the
/// in-app dialog, which walks folders, names what it cannot read, and does the job.
#[test]
fn file_dialogs_work_without_a_desktop_portal() {
    let dir = temp_dir("dialog");
    let mut harness = harness();
    harness.get_by_label("File").click();
    harness.run();
    harness.get_by_label("Save as…").click();
    harness.run();
    harness.get_by_label("Save the scenario as");
    type_into(&mut harness, "Folder", dir.to_str().unwrap());
    harness.get_by_label("Go").click();
    harness.run();
    type_into(&mut harness, "File name", "mine");
    harness.get_by_label("Save").click();
    harness.run();
    let saved = dir.join("mine.json");
    assert!(saved.exists());
    assert_eq!(harness.state().doc.path(), Some(saved.as_path()));
    assert!(harness.state().io.dialog.is_none());
    // A folder that cannot be read is said in the dialog.
    harness.get_by_label("File").click();
    harness.run();
    harness.get_by_label_contains("Open…").click();
    harness.run();
    let missing = dir.join("nope");
    type_into(&mut harness, "Folder", missing.to_str().unwrap());
    harness.get_by_label("Go").click();
    harness.run();
    harness.get_by_label_contains(&format!("{}: cannot read:", missing.display()));
    // Open the saved file from the listing after an edit.
    type_into(&mut harness, "Folder", dir.to_str().unwrap());
    harness.get_by_label("Go").click();
    harness.run();
    harness.get_by_label("Cancel").click();
    harness.run();
    edit(&mut harness, Edit::Microbatches(4));
    harness.get_by_label("File").click();
    harness.run();
    harness.get_by_label_contains("Open…").click();
    harness.run();
    harness.get_by_label("mine.json").click();
    harness.run();
    harness.get_by_label("Open").click();
    common::wait(&mut harness, |s| s.io.opening.is_none());
    assert_eq!(harness.state().scenario().unwrap().microbatches, 8);
    // Export SVG writes the timeline.
    harness.get_by_label("File").click();
    harness.run();
    harness.get_by_label("Export SVG…").click();
    harness.run();
    harness.get_by_label("Export").click();
    harness.run();
    // Named after the document.
    let svg = std::fs::read_to_string(dir.join("mine.svg")).unwrap();
    assert!(svg.starts_with("<svg "));
    std::fs::remove_dir_all(&dir).ok();
}

/// At 1280×720 the top bar cut Help and Teach off and the per-rank table's columns overlapped.
#[test]
fn at_1280_by_720_the_top_bar_and_the_table_fit() {
    let harness = sized(Studio::default(), egui::vec2(1280.0, 720.0), 0.25);
    for label in [
        "File",
        "View",
        "Undo",
        "Redo",
        "Pin as baseline",
        "Teach",
        "Help (F1)",
    ] {
        let r = harness.get_by_label(label).rect();
        assert!(r.right() <= 1280.0 && r.left() >= 0.0, "{label} at {r:?}");
    }
    // Units in the heads, figures alone in the cells (issue 25, item 9: the last column was
    // cut at the window's edge).
    let (names, _) =
        mpipe::report::simulate::rank_table(&harness.state().shown().unwrap().sim.ranks);
    let heads: Vec<egui::Rect> = names
        .iter()
        .map(|(h, _)| harness.get_by_label(h).rect())
        .collect();
    assert_eq!(names[1].0, "busy (s)");
    let last = heads.last().unwrap();
    assert!(last.right() <= 1280.0 - 12.0, "the last column at {last:?}");
    for pair in heads.windows(2) {
        assert!(
            pair[0].right() <= pair[1].left(),
            "{:?} overlaps {:?}",
            pair[0],
            pair[1]
        );
    }
    // The cells of rank 0's row too.
    let cells: Vec<egui::Rect> = ["54.000", "20.039", "18.006", "2.003", "30.100"]
        .iter()
        .map(|c| harness.get_by_label(c).rect())
        .collect();
    for pair in cells.windows(2) {
        assert!(
            pair[0].right() <= pair[1].left(),
            "{:?} overlaps {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// The memory plot's y axis showed only "0" (its y range was wrong, the curves and peak markers
/// sat clipped at the top), its time axis was ~20 px off the Gantt's (by seconds with a
/// baseline pinned), and it had no teaching cursor.
#[test]
fn the_memory_plot_fits_its_curves_and_shares_the_timelines_axis() {
    let mut harness = harness();
    let check = |harness: &Harness<'static, Studio>| {
        let s = harness.state();
        let frame = s.view.memory_frame.unwrap();
        let (x0, x1) = s.view.timeline_x.unwrap();
        assert!((frame.x_of_t0 - x0).abs() < 1.0, "{frame:?} vs {x0}");
        assert!((frame.x_of_t1 - x1).abs() < 1.0, "{frame:?} vs {x1}");
        let shown = s.shown().unwrap();
        let peak = shown
            .sim
            .memory
            .iter()
            .map(|c| c.peak_bytes)
            .fold(0.0, f64::max);
        let low = shown
            .sim
            .memory
            .iter()
            .map(|c| c.static_bytes)
            .fold(f64::INFINITY, f64::min);
        assert!(frame.y_bytes.1 > peak * 1.02, "{frame:?} peak {peak}");
        assert!(
            frame.y_bytes.0 > 0.0 && frame.y_bytes.0 < low,
            "{frame:?} low {low}"
        );
        frame
    };
    check(&harness);
    // Zoomed in, and with a longer baseline pinned (the span is the baseline's).
    harness.state_mut().apply(Command::PinBaseline);
    edit(
        &mut harness,
        Edit::LayerTrainable {
            layer: 0,
            trainable: false,
        },
    );
    harness
        .state_mut()
        .apply(Command::Range(Some((10.0, 40.0))));
    harness.run();
    check(&harness);
    harness.get_by_label("Teach").click();
    harness.run();
    harness.state_mut().apply(Command::Cursor(25.0));
    harness.run();
    let cursor = harness.state().view.memory_frame.unwrap().cursor_x.unwrap();
    assert!((cursor - timeline_point(&harness, 0, 25.0).x).abs() < 1.0);
}

/// A bad scenario opened on the command line was drawn dimmed over the previous session's
/// chart, as if that were its own last valid state.
#[test]
fn an_invalid_file_opened_after_a_session_shows_no_chart_of_the_session() {
    let mut studio = Studio::default();
    studio.open_sample(sample("gpipe.json"));
    let wide = sample("1f1b.json")
        .json
        .replace("\"ranks\": 4", "\"ranks\": 16");
    studio.open_text(&wide, "wide.json", None);
    let harness = harness_on(studio);
    harness.get_by_label_contains("wide.json:");
    harness.get_by_label("No valid schedule to show.");
    assert!(harness.state().derived.last_good().is_none());
    assert!(harness.query_by_label("timeline").is_none());
}

/// A cut dragged through valid positions to an invalid one kept an intermediate position as
/// "last valid"; the last valid state is the one before the drag (what Undo gives back).
#[test]
fn an_invalid_cut_drag_keeps_the_state_before_the_drag() {
    let mut harness = harness();
    let strip = harness.get_by_label("cut strip").rect();
    let at = |b: f32| egui::pos2(strip.left() + strip.width() * b / 12.0, strip.center().y);
    // 4 → 7 (valid: 5 backbone layers for 4 ranks) → 10 (2 layers for 4 ranks: invalid).
    drag(&mut harness, at(4.0), at(10.0));
    assert_eq!(harness.state().scenario().unwrap().cut, [10]);
    harness.get_by_label_contains("rule `sharded-slabs`");
    harness.get_by_label("Showing the last valid schedule, dimmed.");
    let last = harness.state().derived.last_good().unwrap();
    assert_eq!(last.sim.derivation.plan.regions[0].layers, 0..4);
}

/// The `sharded-slabs` error asked to edit `slabs[1]`, which the app could not edit.
#[test]
fn too_few_layers_for_the_ranks_can_be_fixed_with_per_rank_layer_counts() {
    let mut harness = harness();
    edit(&mut harness, Edit::Ranks(16));
    harness.run();
    harness.get_by_label_contains("give per-rank layer counts in `slabs[1]`");
    harness.get_by_label_contains("layers per rank (slabs[1])");
    harness
        .get_by_label(
            "Give region 2's 8 layer(s) one rank each (slabs[1]; the other ranks get none)",
        )
        .click();
    harness.run();
    let s = harness.state().scenario().unwrap();
    let mut counts = vec![1; 8];
    counts.extend([0; 8]);
    assert_eq!(s.slabs, Some(vec![None, Some(counts)]));
    assert!(
        harness.state().current().is_some(),
        "{:?}",
        harness.state().error()
    );
    // The counts are editable per rank, and "balanced" goes back.
    harness.get_by_label_contains("Σ 8 of 8");
    harness.get_by_label("balanced").click();
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().slabs, None);
    // With P = 4 again the region's row offers to set counts from balanced.
    edit(&mut harness, Edit::Ranks(4));
    harness.run();
    harness
        .get_all_by_label("set per rank")
        .next()
        .unwrap()
        .click();
    harness.run();
    assert_eq!(
        harness.state().scenario().unwrap().slabs,
        Some(vec![None, Some(vec![2, 2, 2, 2])])
    );
}

/// After Undo of a sample switch the Sample menu named the undone sample.
#[test]
fn undoing_a_sample_switch_brings_its_name_back() {
    let mut harness = harness();
    choose(&mut harness, "Sample", "GPipe");
    assert_eq!(harness.state().source(), "gpipe.json");
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
    assert_eq!(
        harness.get_by_label("Sample").value().as_deref(),
        Some("Mpipe ⟨transpose, 1f1b⟩ (ViT + LLM)")
    );
    harness.get_by_label("Redo").click();
    harness.run();
    assert_eq!(harness.state().source(), "gpipe.json");
}

/// Rank 0's warmup and spill marks stand 2 px above its lane; the chart clipped them.
#[test]
fn rank_0s_spill_outline_is_inside_the_chart() {
    let harness = harness();
    let chart = harness.state().view.chart_rects[0];
    let lane_top = timeline_point(&harness, 0, 0.0).y - harness.state().view.lane_height / 2.0;
    assert!(lane_top - 2.0 >= chart.top(), "{lane_top} {chart:?}");
}

/// The "saved …" notice stayed on screen after later edits, as if they were saved too.
#[test]
fn a_saved_notice_goes_with_the_next_edit() {
    let mut harness = harness();
    let path = std::env::temp_dir().join(format!("mpipe-notice-{}.json", std::process::id()));
    harness.state_mut().save_to(&path);
    harness.run();
    harness.get_by_label_contains("saved ");
    edit(&mut harness, Edit::Microbatches(6));
    harness.run();
    assert!(harness.state().notice.is_none());
    assert!(harness.query_by_label_contains("saved ").is_none());
    std::fs::remove_file(&path).ok();
}

/// Recent stored the path as given, so a relative one opened another file from elsewhere.
#[test]
fn recent_keeps_absolute_paths() {
    let mut harness = harness();
    // Tests run in the crate's folder: this path is relative.
    common::open(&mut harness, std::path::Path::new("../samples/1f1b.json"));
    let first = harness.state().io.recent.first().cloned().unwrap();
    assert!(std::path::Path::new(&first).is_absolute(), "{first}");
    assert!(first.ends_with("samples/1f1b.json"));
}

/// A loaded `fwd_s` above the editor's old range (1e6) was shown as 1e6 and saved so with the
/// next edit of anything.
#[test]
fn the_editors_never_change_a_value_they_did_not_edit() {
    let mut studio = Studio::empty();
    let text = sample("1f1b.json")
        .json
        .replace("\"fwd_s\": 1.0", "\"fwd_s\": 5.0e7");
    assert!(studio.open_text(&text, "big-costs.json", None));
    let mut harness = harness_on(studio);
    assert_eq!(
        harness.get_by_label("fwd s").value().as_deref(),
        Some("50000000.00"),
        "shown as it is"
    );
    // Edit M in its field, as a user would.
    harness.get_by_label("Microbatches (M)").click();
    harness.run();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get_by_label("Microbatches (M)").type_text("6");
    harness.key_press(egui::Key::Enter);
    harness.run();
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.microbatches, 6);
    assert_eq!(s.model.layers[0].fwd_s, Some(5.0e7));
    assert_eq!(s.model.layers[0].bwd_s, Some(2.0));
}

/// Typing 12 into M went through M = 1 (the field updated on every digit), which cut the
/// per-microbatch workload list to one entry: the first eight scales were lost.
#[test]
fn typing_a_size_commits_it_once_and_keeps_the_per_microbatch_lists() {
    let mut harness = harness();
    let before = harness
        .state()
        .scenario()
        .unwrap()
        .workload
        .clone()
        .unwrap();
    harness.get_by_label("Microbatches (M)").click();
    harness.run();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get_by_label("Microbatches (M)").type_text("1");
    harness.run();
    harness.get_by_label("Microbatches (M)").type_text("2");
    harness.run();
    assert_eq!(
        harness.state().scenario().unwrap().microbatches,
        8,
        "not yet committed"
    );
    harness.key_press(egui::Key::Enter);
    harness.run();
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.microbatches, 12);
    let scales = s.workload.as_ref().unwrap().encoder_scale.as_ref().unwrap();
    assert_eq!(scales[..8], before.encoder_scale.unwrap()[..]);
    assert_eq!(scales[8..], [1.0; 4]);
    // One undo step for the whole number.
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().microbatches, 8);
}

/// A layer name typed letter by letter is one undo step, not one per letter.
#[test]
fn a_typed_name_is_one_undo_step() {
    let mut harness = harness();
    harness.get_all_by_label("layer").next().unwrap().click();
    harness.run();
    harness.key_press(egui::Key::End);
    for letter in ["-", "b", "i", "g"] {
        harness
            .get_all_by_label("layer")
            .next()
            .unwrap()
            .type_text(letter);
        harness.run();
    }
    assert_eq!(
        harness.state().scenario().unwrap().model.layers[0].name,
        "vit-big"
    );
    harness.key_press(egui::Key::Escape);
    harness.run();
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(
        harness.state().scenario().unwrap().model.layers[0].name,
        "vit"
    );
}

/// An edit that makes a total overflow (the backbone's fwd_s = 1e308: finite itself, but the
/// step's total of it is ∞) is rejected with its field and rule, and the last valid schedule
/// stays on screen (issue 10).
#[test]
fn an_overflowing_time_is_rejected_and_the_last_schedule_stays() {
    let mut harness = harness();
    let before = harness.state().rank_actions(0);
    edit(
        &mut harness,
        Edit::LayerFwd {
            layer: 1,
            seconds: 1e308,
        },
    );
    harness.run();
    harness.get_by_label_contains(
        "field `model.layers[1].fwd_s`: rule `finite`: `fwd_s` over the step (8 copies × 8 microbatches, with the defaults derived from it) overflows to ∞",
    );
    harness.get_by_label("Showing the last valid schedule, dimmed.");
    assert_eq!(harness.state().rank_actions(0), before);
    assert!(harness.state().shown().unwrap().sim.makespan_s.is_finite());
}

/// Hostile files in the app (issue 10): each is refused with its message, the window stays
/// interactive, and what was open stays open.
mod hostile {
    use super::*;
    use mpipe_studio::state::files::Given;

    fn corpus(name: &str) -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/hostile")
            .join(name)
    }

    /// Opens `paths` as the command line does, waiting for the worker that reads them.
    fn open_given(harness: &mut Harness<'static, Studio>, paths: Vec<std::path::PathBuf>) {
        harness.state_mut().open_given(paths);
        common::wait(harness, |s| s.io.opening.is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_on_the_command_line_does_not_block_the_window() {
        let fifo = temp_dir("fifo").join("f.json");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let mut harness = harness();
        open_given(&mut harness, vec![fifo.clone()]);
        harness.get_by_label_contains(&format!(
            "{}: cannot read: not a regular file (a folder, a FIFO or a device); give a file",
            fifo.display()
        ));
        assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
        assert!(harness.state().current().is_some());
    }

    /// A second-order phase's time of 1e308 passed validation and drew a 309-digit makespan
    /// that pushed the chart off the window: the document opens (to be fixed in the editors)
    /// with the error at its field, and nothing of it is simulated or drawn.
    #[test]
    fn a_second_order_time_of_1e308_is_refused_at_its_field() {
        let mut harness = harness();
        for (file, field) in [
            ("bf-s-1e308.json", "bf_s"),
            ("ff-s-1e308.json", "ff_s"),
            (
                "force-activation-bytes-1e308.json",
                "force_activation_bytes",
            ),
        ] {
            open_given(&mut harness, vec![corpus(file)]);
            harness.get_by_label_contains(&format!(
                "field `model.layers[0].{field}`: rule `finite`: `{field}` over the step"
            ));
            assert!(harness.state().source().ends_with(file));
            assert!(
                harness.state().current().is_none(),
                "{file}: nothing of it simulated"
            );
            assert!(
                harness.state().rank_actions(0).is_empty(),
                "{file}: nothing drawn"
            );
        }
    }

    #[test]
    fn utf16_bad_utf8_and_escapes_are_named_and_a_bom_is_accepted() {
        let mut harness = harness();
        open_given(&mut harness, vec![corpus("utf16.json")]);
        harness.get_by_label_contains(
            "utf16.json:1:1: the file is UTF-16; scenarios are read as UTF-8 (save it as UTF-8)",
        );
        open_given(&mut harness, vec![corpus("bad-utf8.json")]);
        harness.get_by_label_contains(
            "bad-utf8.json:3:23: not UTF-8: byte 0xFF cannot start or continue a character",
        );
        assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
        open_given(&mut harness, vec![corpus("escape-skeleton.json")]);
        harness.get_by_label_contains("unknown variant `1f1b\\u{1b}[2J\\u{1b}[31m`");
        assert_eq!(harness.state().source(), "mpipe-vit-llm.json");
        open_given(&mut harness, vec![corpus("bom.json")]);
        assert!(harness.state().source().ends_with("bom.json"));
        assert!(harness.state().current().is_some());
        // The command line sorts files as the CLI does.
        let sorted =
            mpipe_studio::state::files::sort_given(vec![corpus("bom.json")], &mut |_| true);
        assert!(matches!(&sorted[..], [Given::Scenario(_, Ok(_))]));
    }

    /// Every scenario file of the corpus opened as a user would (read on a worker, derived and
    /// simulated on another): none panics or hangs the window; each either opens to a schedule
    /// or says what is wrong, and the window keeps drawing.
    #[test]
    fn every_scenario_of_the_corpus_opens_or_is_refused_and_the_window_lives() {
        let dir = corpus("");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter(|p| p.file_name().is_none_or(|n| n != "cases.json"))
            .filter(|p| !mpipe_studio::state::files::is_trace_file(p))
            .collect();
        files.sort();
        assert!(files.len() >= 20, "{}", files.len());
        let mut harness = harness();
        for file in files {
            harness.state_mut().open_given(vec![file.clone()]);
            // The longest (a nested owner search over 64 ranks and 1,024 microbatches) takes
            // seconds in a debug build: wait for the work itself.
            common::wait(&mut harness, |s| {
                s.io.opening.is_none() && s.derived.running().is_none()
            });
            let s = harness.state();
            let opened = s
                .source()
                .ends_with(&*file.file_name().unwrap().to_string_lossy());
            let said = s.notice.as_ref().is_some_and(|n| n.is_error) || s.current().is_none();
            assert!(
                (opened && s.current().is_some()) || said,
                "{}: neither a schedule nor a message",
                file.display()
            );
        }
    }

    #[test]
    fn a_scenario_too_large_for_memory_is_refused_before_anything_runs() {
        let mut harness = harness();
        // 25.5 million events: within the CLI's limit (4.7 GiB), not with the app's timeline.
        let text = r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "l", "count": 64, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 64, "microbatches": 100000}"#;
        assert!(harness.state_mut().open_text(text, "big.json", None));
        assert!(
            harness.state().derived.running().is_none(),
            "nothing is started"
        );
        harness.run();
        harness.get_by_label_contains(
            "big.json: field `microbatches`: rule `memory`: simulating it needs about 9.5 GiB",
        );
        harness.get_by_label_contains("(with the app's timeline)");
        // Edited up to it from a small version, the small version's schedule stays.
        let small = text.replace("100000", "4");
        assert!(harness.state_mut().open_text(&small, "small.json", None));
        common::wait(&mut harness, |s| s.current().is_some());
        let before = harness.state().rank_actions(0);
        edit(&mut harness, Edit::Microbatches(100_000));
        harness.run();
        assert!(
            harness.state().derived.running().is_none(),
            "nothing is started"
        );
        harness.get_by_label_contains("small.json: field `microbatches`: rule `memory`");
        harness.get_by_label("Showing the last valid schedule, dimmed.");
        assert_eq!(harness.state().rank_actions(0), before);
        assert_eq!(
            harness.state().shown().unwrap().sim.makespan_s,
            (4 + 64 - 1) as f64 * 3.0
        );
        // The CLI's own check lets it through.
        let s = mpipe::Scenario::from_json_str(text, "big.json").unwrap();
        assert!(
            mpipe::algebra::budget::check(&s, mpipe::algebra::budget::MEMORY_LIMIT_BYTES, 0.0)
                .is_ok()
        );
    }

    #[test]
    fn an_overflowing_file_is_refused_and_a_huge_description_is_shown_cut() {
        let mut harness = harness();
        open_given(&mut harness, vec![corpus("alpha-1e308.json")]);
        harness.get_by_label_contains("field `hardware.link_alpha_s`: rule `finite`");
        let text = include_str!("../../samples/1f1b.json").replace(
            "Plain 1F1B over 4 ranks",
            &"a very long description ".repeat(200_000),
        );
        assert!(harness.state_mut().open_text(&text, "long.json", None));
        harness.run();
        let cut =
            mpipe::vocab::units::shorten(&harness.state().scenario().unwrap().description, 2000);
        assert_eq!(cut.chars().count(), 2001);
        assert!(cut.ends_with('…'));
        harness.get_by_label_contains(&cut);
    }
}

/// A scenario whose orders are a pipeline CSV beside it (`"orders_csv"`): the app reads the
/// CSV, derives with its orders, and keeps the reference (not a copy) in the document; a bad
/// CSV is refused by name and the current scenario stays.
#[test]
fn a_scenario_with_an_orders_csv_opens_with_its_orders() {
    let dir = common::temp_dir("orders-csv");
    let fixtures = std::path::Path::new("../tests/fixtures/pytorch_csv");
    std::fs::copy(fixtures.join("pytorch/zbv.csv"), dir.join("zbv.csv")).unwrap();
    let mut s: mpipe::Scenario = mpipe::Scenario::from_json_str(
        &std::fs::read_to_string(fixtures.join("zbv.json")).unwrap(),
        "zbv.json",
    )
    .unwrap();
    s.orders_csv = Some("zbv.csv".into());
    let path = dir.join("zbv.json");
    std::fs::write(&path, s.to_json_string()).unwrap();
    let mut harness = harness();
    harness.state_mut().open_path(&path);
    // The opened document's own derivation (the default sample has four ranks too).
    common::wait(&mut harness, |s| {
        s.doc.scenario().is_some_and(|d| d.orders_csv.is_some())
            && s.shown()
                .is_some_and(|d| d.generation == s.doc.generation())
    });
    let shown = harness.state().shown().unwrap();
    let rank0: Vec<String> = shown
        .sim
        .derivation
        .order
        .steps(0)
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(rank0[7], "7F0");
    let doc = harness.state().doc.scenario().unwrap();
    assert_eq!(doc.orders_csv.as_deref(), Some("zbv.csv"));
    assert!(doc.orders.is_none());
    assert!(doc.orders_from_csv.is_some());
    // A CSV with a bad cell: refused by name, the document unchanged.
    std::fs::write(dir.join("zbv.csv"), "0F0,0Fx\n").unwrap();
    common::open(&mut harness, &path);
    let notice = harness.state().notice.as_ref().unwrap();
    assert!(notice.is_error);
    assert_eq!(
        notice.text,
        format!(
            "{}:1:2: cell 2: `0Fx` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`",
            dir.join("zbv.csv").display()
        )
    );
    assert_eq!(harness.state().rank_actions(0)[7], "7F0");
    // A scenario naming a file outside its folder: refused at the field, nothing of that file
    // read or shown, the document unchanged.
    s.orders_csv = Some("/etc/passwd".into());
    let evil = dir.join("evil.json");
    std::fs::write(&evil, s.to_json_string()).unwrap();
    common::open(&mut harness, &evil);
    let notice = harness.state().notice.as_ref().unwrap();
    assert!(notice.is_error);
    assert_eq!(
        notice.text,
        format!(
            "{}: field `orders_csv`: `/etc/passwd` is outside the scenario's folder: a scenario names a pipeline CSV beside it or below it (give any other explicitly, with --orders-csv)",
            evil.display()
        )
    );
    assert!(!notice.text.contains("root"));
    assert_eq!(harness.state().rank_actions(0)[7], "7F0");
}

/// A long pipeline CSV was read on the UI thread (quadratic in its rows: a 4 MB file of 10⁶
/// rows froze the window past 120 s). It is read on a worker, the window keeps drawing with a
/// progress bar and a Cancel that stops it, and the document stays.
#[test]
fn a_long_orders_csv_is_read_on_a_worker_and_cancel_stops_it() {
    let dir = common::temp_dir("long-csv");
    // One row of 16 million cells (64 MB, the most a file may hold) for a scenario whose sizes
    // allow them: it takes seconds to read, so the window must not wait for it.
    let text = r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "l", "count": 4, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 1, "microbatches": 4000000, "orders_csv": "o.csv"}"#;
    std::fs::write(dir.join("s.json"), text).unwrap();
    let mut csv = "0F0,".repeat(16_000_000);
    csv.push('\n');
    std::fs::write(dir.join("o.csv"), csv).unwrap();
    let mut harness = harness();
    let before = harness.state().rank_actions(0);
    harness.state_mut().open_path(&dir.join("s.json"));
    harness.step();
    assert!(harness.state().io.opening.is_some(), "read on a worker");
    harness.get_by_label("Reading the file(s) to open…");
    harness.get_by_label("Cancel").click();
    harness.run();
    assert!(harness.state().io.opening.is_none());
    harness.get_by_label_contains("opening cancelled: the document is unchanged");
    assert_eq!(harness.state().rank_actions(0), before);
}

/// Every chart was named by the document: pinning 1F1B, then gpipe, then zb1p under looped_bfs
/// read "8-layer LLM, 1F1B" four times; baseline B's table was headed "B: … (A) vs current (B)";
/// the UMA sample still said "k = 4" after choosing k = 8 (issue 25, item 1).
#[test]
fn charts_are_named_by_the_schedule_they_show_and_letters_stay_straight() {
    // Tall enough for four charts and the comparison under them.
    let mut studio = Studio::empty();
    studio.open_sample(sample("1f1b.json"));
    let mut h = sized(studio, egui::vec2(1500.0, 2600.0), 0.25);
    let switch = |h: &mut Harness<'static, Studio>, skeleton| {
        edit(
            h,
            Edit::Skeleton {
                region: 1,
                skeleton,
            },
        );
        wait(h, |s| {
            s.shown()
                .is_some_and(|x| x.title.starts_with(skeleton.name()))
        });
    };
    h.get_by_label("Pin as baseline").click();
    h.run();
    switch(&mut h, mpipe::schedules::GPIPE);
    h.get_by_label("Pin as baseline").click();
    h.run();
    switch(&mut h, mpipe::schedules::ZB1P);
    h.get_by_label("Pin as baseline").click();
    h.run();
    switch(&mut h, mpipe::schedules::LOOPED_BFS);
    let document = "(document: 8-layer LLM, 1F1B)";
    h.get_by_label(&format!("Baseline A: 1f1b · P = 4 · M = 8 {document}"));
    h.get_by_label(&format!("Baseline B: gpipe · P = 4 · M = 8 {document}"));
    h.get_by_label(&format!("Baseline C: zb1p · P = 4 · M = 8 {document}"));
    h.get_by_label_contains("Current: looped_bfs · P = 4 · M = 8");
    // Baseline B's table: its columns carry B's letter, the current schedule's say "now".
    h.get_by_label("Per rank: baseline B vs the current schedule (now)")
        .click();
    h.run();
    h.get_by_label("busy B");
    h.get_by_label("busy now");
    assert!(h.query_by_label("busy A").is_none());

    let mut h = on_sample("uma-1.2b.json");
    h.get_by_label_contains("wavek · P = 4 · M = 32 · k = 4 (document: ");
    edit(&mut h, Edit::WaveK(Some(8)));
    wait(&mut h, |s| {
        s.shown().is_some_and(|x| x.title.contains("k = 8"))
    });
    h.get_by_label_contains("wavek · P = 4 · M = 32 · k = 8 (document: ");
}

/// The three designs' step-time plot had no numbers on its y axis and hovering a point showed no
/// value; the memory plot labelled one y tick ("10") on a 3–16 GB axis and one time where the
/// timeline above labels one every 2 s; WaveK's plots one each (issue 25, items 3 and 4).
#[test]
fn plots_number_their_axes_and_say_the_hovered_value() {
    let mut h = sized(Studio::default(), egui::vec2(1500.0, 2600.0), 0.25);
    let c = common::run_analysis(
        &mut h,
        "Three designs (BigMac): step time and memory against M",
        "Compare the designs",
        |s| &s.analyses.designs,
    );
    for id in ["designs makespan", "designs memory"] {
        let (y, x) = common::axis_numbers(&h, id);
        assert!(y.len() >= 3, "{id}: y ticks {y:?}");
        assert!(x.len() >= 3, "{id}: x ticks {x:?}");
    }
    // Hovering the nested design's point at M = 8 names it and says both values.
    let point = c
        .points
        .iter()
        .find(|p| p.design == mpipe::tune::designs::Design::Nested && p.microbatches == 8)
        .unwrap();
    let t = mpipe_studio::panels::plots::transform_of(&h.ctx, "designs makespan").unwrap();
    let at = t.position_from_point(&egui_plot::PlotPoint::new(8.0, point.makespan_s));
    hover(&mut h, at);
    let said = format!(
        "nested\nM = 8\nstep time (s) = {}",
        mpipe_studio::panels::plots::value(point.makespan_s)
    );
    assert!(
        common::painted_texts(&h).iter().any(|(t, _)| *t == said),
        "no hover label {said:?}"
    );
    // The memory plot: its legend beside the curves, not over their ends; several numbers on
    // each axis, as many times as the timeline labels.
    let frame = *mpipe_studio::panels::plots::transform_of(&h.ctx, "memory")
        .unwrap()
        .frame();
    let legend = h.get_by_label("rank 3").rect();
    assert!(!legend.intersects(frame), "{legend:?} over {frame:?}");
    let (y, x) = common::axis_numbers(&h, "memory");
    assert!(y.len() >= 3, "memory y ticks {y:?}");
    let chart = h.state().view.chart_rects[0];
    let gantt = common::painted_texts(&h)
        .iter()
        .filter(|(t, r)| {
            chart.contains(r.center())
                && t.strip_suffix(" s")
                    .is_some_and(|n| n.parse::<f64>().is_ok())
        })
        .count();
    assert!(
        x.len() >= 4 && x.len() + 2 >= gantt,
        "memory x ticks {x:?}, timeline {gantt}"
    );
}

/// Under a V placement the lane's "stages a, b" was drawn over its "rank N" (issue 25, item 7):
/// at the default lane height and on taller lanes, the two never overlap.
#[test]
fn a_v_placements_stage_label_is_clear_of_the_rank_name() {
    // The 1F1B sample cut in two, both arms zbv (placed as a V: rank 0 holds stages 0 and 7).
    let mut h = on_sample("1f1b.json");
    edit(&mut h, Edit::AddCut { at: 4 });
    for region in [1, 2] {
        edit(
            &mut h,
            Edit::Skeleton {
                region,
                skeleton: mpipe::schedules::ZBV,
            },
        );
    }
    wait(&mut h, |s| {
        s.shown().is_some_and(|x| x.title.starts_with("zbv"))
    });
    for lane_height in [24.0, 40.0] {
        h.state_mut().apply(Command::LaneHeight(lane_height));
        h.run();
        let texts = common::painted_texts(&h);
        let find = |label: &str| {
            texts
                .iter()
                .find(|(t, _)| t == label)
                .map(|(_, r)| *r)
                .unwrap_or_else(|| panic!("no {label:?} painted"))
        };
        let rank = find("rank 0");
        let stages = find("stages 0, 7");
        assert!(
            !rank.intersects(stages),
            "lanes of {lane_height} px: {rank:?} and {stages:?}"
        );
    }
}

/// The file dialogs did not share a folder (Export SVG opened on the working directory after
/// Export PNG went elsewhere, and one click wrote into the project); Enter in the file-name field
/// did not save; Export PNG wrote the Gantt alone — no title, legend or memory (issue 25, item 8).
#[test]
fn file_dialogs_share_a_folder_enter_saves_and_png_is_the_whole_figure() {
    let dir = temp_dir("shared-folder");
    let mut h = sized(Studio::default(), egui::vec2(1500.0, 1600.0), 0.25);
    let menu = |h: &mut Harness<'static, Studio>, item: &str| {
        h.get_by_label("File").click();
        h.run();
        h.get_by_label(item).click();
        h.run();
    };
    menu(&mut h, "Export PNG…");
    type_into(&mut h, "Folder", dir.to_str().unwrap());
    h.get_by_label("Go").click();
    h.run();
    type_into(&mut h, "File name", "figure");
    h.key_press(egui::Key::Enter);
    h.run();
    assert!(h.state().io.dialog.is_none(), "Enter did not export");
    wait(&mut h, |s| s.io.png.is_none());
    let written = dir.join("figure.png");
    assert_eq!(
        h.state().notice.as_ref().map(|n| n.text.clone()),
        Some(format!("exported {}", written.display()))
    );
    // The figure: the title above the timeline, the legend, and the memory plot under it.
    let rect = h.state().view.figure_rect.unwrap();
    let title = h.state().shown().unwrap().title.clone();
    assert!(
        rect.contains_rect(h.get_by_label(&title).rect()),
        "{rect:?}"
    );
    assert!(
        rect.contains_rect(h.get_by_label("idle: a bubble").rect()),
        "{rect:?}"
    );
    let memory = mpipe_studio::panels::plots::transform_of(&h.ctx, "memory").unwrap();
    assert!(rect.contains_rect(*memory.frame()), "{rect:?}");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&written).unwrap(),
    ));
    let info = decoder.read_info().unwrap();
    let ppp = h.ctx.pixels_per_point();
    let (w, hgt) = (info.info().width, info.info().height);
    assert_eq!(
        (w, hgt),
        (
            (rect.right() * ppp).round() as u32 - (rect.left() * ppp).round() as u32,
            (rect.bottom() * ppp).round() as u32 - (rect.top() * ppp).round() as u32
        )
    );
    // Export SVG opens where the PNG went, and Enter writes it there.
    menu(&mut h, "Export SVG…");
    assert_eq!(h.state().io.dialog.as_ref().unwrap().dir, dir);
    type_into(&mut h, "File name", "timeline");
    h.key_press(egui::Key::Enter);
    h.run();
    assert!(dir.join("timeline.svg").is_file());
}

/// At the default zoom the lanes of VPP-3, zero bubble and UMA showed digits only (issue 25,
/// item 5): a box too narrow for `4F0` now says its phase and microbatch (`F0`, `I3`, `BE2`).
#[test]
fn lanes_at_the_default_zoom_say_forward_or_backward() {
    // UMA at M = 8 (at its M = 32 its chips are too narrow for any label at this width).
    for (file, skeleton, microbatches) in [
        ("vpp3.json", None, None),
        ("1f1b.json", Some(mpipe::schedules::ZB1P), None),
        ("uma-1.2b.json", None, Some(8)),
    ] {
        let mut h = on_sample(file);
        if let Some(skeleton) = skeleton {
            edit(
                &mut h,
                Edit::Skeleton {
                    region: 1,
                    skeleton,
                },
            );
        }
        if let Some(m) = microbatches {
            edit(&mut h, Edit::Microbatches(m));
        }
        wait(&mut h, |s| {
            s.shown().is_some_and(|x| {
                skeleton.is_none_or(|k| x.title.starts_with(k.name()))
                    && microbatches.is_none_or(|m| x.title.contains(&format!("M = {m} ")))
            })
        });
        let chart = *h.state().view.chart_rects.last().unwrap();
        let labels: Vec<String> = common::painted_texts(&h)
            .into_iter()
            .filter(|(t, r)| {
                chart.contains(r.center())
                    && !t.is_empty()
                    && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '\n')
                    && t.chars().any(|c| c.is_ascii_digit())
                    && !t.starts_with("rank")
            })
            .map(|(t, _)| t)
            .collect();
        let digits_only = labels
            .iter()
            .filter(|t| t.chars().all(|c| c.is_ascii_digit()))
            .count();
        assert!(!labels.is_empty(), "{file}");
        // (UMA's FE and FF chips of 11–14 px still say only their microbatch: two-letter
        // phases need 15 px even stacked; vpp3 had half its labels digits only.)
        assert!(digits_only * 4 <= labels.len(), "{file}: {labels:?}");
    }
}

/// A wavefront of mixed skeletons (`uniform-wavefront`) had no one-click fix (issue 25, item 9):
/// choosing zb1p for one of VPP-3's regions now offers to set every Sharded region to it.
#[test]
fn a_mixed_wavefront_is_made_uniform_in_one_click() {
    let mut h = on_sample("vpp3.json");
    edit(
        &mut h,
        Edit::Skeleton {
            region: 2,
            skeleton: mpipe::schedules::ZB1P,
        },
    );
    wait(&mut h, |s| s.error().is_some());
    h.get_by_label_contains("rule `uniform-wavefront`");
    h.get_by_label("Set every Sharded region (1, 2, 3) to zb1p")
        .click();
    h.run();
    assert_eq!(
        h.state().scenario().unwrap().schedule,
        [mpipe::schedules::ZB1P; 3]
    );
    wait(&mut h, |s| {
        s.error().is_none() && s.shown().is_some_and(|x| x.title.starts_with("zb1p"))
    });
    // One undo step brings the mixed schedule back.
    h.get_by_label("Undo").click();
    h.run();
    assert_eq!(
        h.state().scenario().unwrap().schedule[1],
        mpipe::schedules::ZB1P
    );
    assert_eq!(
        h.state().scenario().unwrap().schedule[0],
        mpipe::schedules::ONE_F_ONE_B
    );
}

/// An invalid edit dimmed the last valid chart but left its memory plot and per-rank table bright
/// beside it, as if they described the document (issue 25, item 9).
#[test]
fn the_last_valid_schedules_memory_and_table_are_dimmed_with_its_chart() {
    let mut h = sized(Studio::default(), egui::vec2(1500.0, 1600.0), 0.25);
    for text in ["Memory per rank", "Per rank", "Collectives"] {
        assert_eq!(common::painted_opacity(&h, text), 1.0, "{text}");
    }
    // 16 ranks for 12 backbone layers: invalid; the last valid schedule stays, dimmed.
    edit(&mut h, Edit::Ranks(16));
    wait(&mut h, |s| s.error().is_some());
    for text in ["Memory per rank", "Per rank", "Collectives"] {
        assert!(common::painted_opacity(&h, text) < 0.5, "{text}");
    }
    h.get_by_label("Undo").click();
    wait(&mut h, |s| s.error().is_none());
    assert_eq!(common::painted_opacity(&h, "Memory per rank"), 1.0);
}

/// Layer names were cut to 3–4 characters in the model table (issue 25, item 9): the field grows
/// with its name (within bounds) so a name of ordinary length shows whole.
#[test]
fn the_model_table_shows_layer_names_whole() {
    let mut h = on_sample("1f1b.json");
    let name = "attention_blk";
    edit(
        &mut h,
        Edit::LayerName {
            layer: 0,
            name: name.into(),
        },
    );
    h.run();
    let field = h
        .get_all_by_label("layer")
        .find(|n| n.value().as_deref() == Some(name))
        .expect("the name's field")
        .rect();
    let text = common::painted_texts(&h)
        .into_iter()
        .find(|(t, _)| t == name)
        .expect("the name painted")
        .1;
    assert!(
        field.contains_rect(text),
        "field {field:?} cuts the name {text:?}"
    );
}

/// At 1280×720 the Sample menu hid its last entry with no hint that it scrolls (issue 25,
/// item 9): the list is as tall as the window allows, and its last sample opens with a click.
#[test]
fn at_1280_by_720_every_sample_is_one_click_away() {
    let mut h = sized(Studio::default(), egui::vec2(1280.0, 720.0), 0.25);
    let last = SAMPLES.last().unwrap();
    h.get_by_label("Sample").click();
    h.run();
    h.get_by_label(last.title).click();
    h.run();
    wait(&mut h, |s| s.source() == last.file);
}

/// At P = 64 the chart was ~1,700 px tall with no grouping or collapse (issue 25, item 9): ranks
/// group by eight, each group one summary row until its label is clicked.
#[test]
fn many_ranks_group_into_rows_that_expand_and_collapse() {
    let mut h = sized(Studio::default(), egui::vec2(1500.0, 1400.0), 0.25);
    h.state_mut().open_sample(sample("1f1b.json"));
    edit(
        &mut h,
        Edit::LayerCount {
            layer: 0,
            count: 64,
        },
    );
    edit(&mut h, Edit::Ranks(64));
    wait(&mut h, |s| s.shown().is_some_and(|x| x.scene.ranks == 64));
    let rows = |h: &Harness<'static, Studio>| {
        let chart = h.state().view.chart_rects[0].height();
        let lane = h.state().view.lane_height;
        // 4 px above, lanes 38 px apart (24 + 6 + 8), 28 px of axis.
        ((chart - 4.0 - 28.0) / (lane + 14.0)).round() as usize
    };
    assert_eq!(rows(&h), 8);
    let label = |h: &Harness<'static, Studio>, text: &str| {
        common::painted_texts(h)
            .into_iter()
            .find(|(t, _)| t == text)
            .map(|(_, r)| r.center())
            .unwrap_or_else(|| panic!("{text:?} not painted"))
    };
    let at = label(&h, "▸ 8–15");
    common::click_at(&mut h, at);
    assert!(h.state().view.expanded_groups.contains(&1));
    assert_eq!(rows(&h), 7 + 8);
    let at = label(&h, "▾ rank 8");
    common::click_at(&mut h, at);
    assert_eq!(rows(&h), 8);
    h.get_by_label("Expand all ranks").click();
    h.run();
    assert_eq!(rows(&h), 64);
    // At M = 1024, rank 0's steady state is one merged box: its tooltip gives the mix (issue 25,
    // item 2: it was drawn, and read, as all-backward) — a forward of 1 s to a backward of 2 s.
    edit(&mut h, Edit::Microbatches(1024));
    wait(&mut h, |s| {
        s.shown().is_some_and(|x| x.title.contains("M = 1024"))
    });
    let t = h.state().shown().unwrap().sim.makespan_s / 2.0;
    let at = common::timeline_point(&h, 0, t);
    hover(&mut h, at);
    let tip = h.get_by_label_contains(" events, ").value().unwrap();
    let share = |what: &str| -> f64 {
        let line = tip
            .lines()
            .find(|l| l.ends_with(&format!("% {what} · region 1 · backbone · 1f1b")))
            .unwrap_or_else(|| panic!("no {what} in {tip:?}"));
        line.split(' ').next().unwrap().parse().unwrap()
    };
    let (backward, forward) = (share("backward"), share("forward"));
    assert!((backward - 200.0 / 3.0).abs() < 3.0, "{tip}");
    assert_eq!(backward + forward, 100.0, "{tip}");
    h.get_by_label("Collapse rank groups").click();
    h.run();
    assert_eq!(rows(&h), 8);
}

/// At 1280×720 on the UMA sample (its four-phase model table widens the editors) the chart
/// header's slider overran the narrowed central panel and widened every chart under it past the
/// window's edge: the hint now has a line of its own and everything stays inside.
#[test]
fn at_1280_by_720_a_wide_editor_panel_leaves_the_charts_inside_the_window() {
    let mut studio = Studio::empty();
    studio.open_sample(sample("uma-1.2b.json"));
    let mut h = sized(studio, egui::vec2(1280.0, 720.0), 0.25);
    wait(&mut h, |s| s.shown().is_some());
    let chart = h.state().view.chart_rects[0];
    assert!(chart.right() <= 1280.0, "{chart:?}");
    let slider = h.get_by_label("lane height").rect();
    assert!(slider.right() <= 1280.0, "{slider:?}");
}

/// `v_fold` under an interleaved schedule was refused as a deadlock blamed on `orders`, with only
/// the slow reordering to apply (issue 26, item 2): where no stand-in order exists the error names
/// `placement` and its fix brings the schedule's own placement back in one click.
#[test]
fn a_fold_the_schedule_does_not_assume_is_fixed_by_its_own_placement() {
    // DualPipeV (forwards and backwards overlapped in pairs: no order is list-scheduled in its
    // place) under the default placement rather than its own V.
    let mut h = on_sample("moe-dualpipev.json");
    let before = h.state().scenario().cloned().unwrap();
    edit(
        &mut h,
        Edit::Placement(Some(mpipe::scenario::placement::PlacementSpec::Default)),
    );
    wait(&mut h, |s| s.error().is_some());
    h.get_by_label_contains("field `placement`: rule `deadlock-free`: the order the schedule derives under `placement` default");
    h.get_by_label("Use the schedule's own placement (remove `placement` default)")
        .click();
    h.run();
    wait(&mut h, |s| s.error().is_none());
    assert_eq!(h.state().scenario(), Some(&before));
}

/// `v_fold` with the default `1f1b` skeleton was refused as a deadlock (issue 26, item 2): the
/// VPP-3 sample folded as a V is derived with an order list-scheduled over the fold, and says so.
#[test]
fn a_v_fold_of_interleaved_1f1b_is_derived_and_says_how() {
    let mut h = on_sample("vpp3.json");
    edit(
        &mut h,
        Edit::Placement(Some(mpipe::scenario::placement::PlacementSpec::VFold)),
    );
    wait(&mut h, |s| {
        s.shown()
            .is_some_and(|x| x.title.contains("v_fold placement"))
    });
    assert!(h.state().error().is_none());
    h.get_by_label_contains("order: the schedule's slots deadlock under this placement");
}

/// The editor chooses the placement (issue 26): VPP-3 folded as a V from the *Placement* menu
/// derives with its list-scheduled order (81 s, as unfolded), the menu says `v_fold`, and one undo
/// brings the schedule's own placement back.
#[test]
fn the_placement_menu_folds_a_pipeline_and_undo_unfolds_it() {
    let mut h = on_sample("vpp3.json");
    let before = h.state().scenario().cloned().unwrap();
    assert_eq!(before.placement, None);
    choose(&mut h, "Placement", "v_fold");
    wait(&mut h, |s| {
        s.shown()
            .is_some_and(|x| x.title.contains("v_fold placement"))
    });
    assert_eq!(
        h.state().scenario().unwrap().placement,
        Some(mpipe::scenario::placement::PlacementSpec::VFold)
    );
    assert_eq!(h.state().shown().unwrap().sim.makespan_s, 81.0);
    h.get_by_label_contains("order: the schedule's slots deadlock under this placement");
    h.state_mut().apply(Command::Undo);
    wait(&mut h, |s| {
        s.shown()
            .is_some_and(|x| !x.title.contains("v_fold placement"))
    });
    assert_eq!(h.state().scenario(), Some(&before));
}

/// Interleaved zero bubble under the V fold was refused (its split backward had no
/// list-scheduled order): VPP-3 as `zb1p`, folded, is derived, says how, and runs as long as
/// unfolded (75 s, zero bubble's step).
#[test]
fn a_v_fold_of_interleaved_zero_bubble_is_derived_and_runs_as_long_as_unfolded() {
    let mut h = on_sample("vpp3.json");
    edit(
        &mut h,
        Edit::Skeletons {
            regions: vec![1, 2, 3],
            skeleton: mpipe::schedules::ZB1P,
        },
    );
    wait(&mut h, |s| {
        s.shown().is_some_and(|x| x.title.starts_with("zb1p"))
    });
    let unfolded = h.state().shown().unwrap().sim.makespan_s;
    assert_eq!(unfolded, 75.0);
    edit(
        &mut h,
        Edit::Placement(Some(mpipe::scenario::placement::PlacementSpec::VFold)),
    );
    wait(&mut h, |s| {
        s.shown()
            .is_some_and(|x| x.title.contains("v_fold placement"))
    });
    assert!(h.state().error().is_none());
    assert_eq!(h.state().shown().unwrap().sim.makespan_s, unfolded);
    h.get_by_label_contains("order: the schedule's slots deadlock under this placement");
}
