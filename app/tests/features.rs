//! UI tests of what users of Perfetto, PyTorch's schedule visualizer and PP-Schedule-Visualization
//! expect: a legend, keyboard navigation, selection with its dependencies, search, transfer
//! tooltips, lane height, several pinned baselines, and teaching that says why a rank waits.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{
    choose, click_at, edit, harness, harness_on, hover, on_sample, timeline_point, type_into,
};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe::scenario::edit::Edit;
use mpipe_studio::Studio;
use mpipe_studio::command::Command;

fn press(harness: &mut Harness<'static, Studio>, key: egui::Key) {
    harness.key_press(key);
    harness.run_steps(2);
}

#[test]
fn the_legend_names_every_mark_and_regions_keep_their_role_colour() {
    let mut harness = harness();
    for label in [
        "region 1 · encoder · transpose (forward light, backward dark)",
        "region 2 · backbone · 1f1b (forward light, backward dark)",
        "idle: a bubble",
        "warmup window",
        "encoder spill",
        "transfer arriving",
        "waiting for a transfer",
        "selected and its dependencies",
        "critical path",
    ] {
        harness.get_by_label(label);
    }
    let backbone = harness.state().shown().unwrap().scene.regions[1].forward;
    harness.get_by_label("Legend").click();
    harness.run();
    assert!(harness.query_by_label("idle: a bubble").is_none());
    // The backbone is the same colour when it is region 1 of plain 1F1B.
    let plain = on_sample("1f1b.json");
    plain.get_by_label("region 1 · backbone · 1f1b (forward light, backward dark)");
    assert_eq!(
        plain.state().shown().unwrap().scene.regions[0].forward,
        backbone
    );
}

#[test]
fn keys_zoom_and_pan_as_in_perfetto_but_not_while_typing() {
    let mut harness = harness();
    press(&mut harness, egui::Key::W);
    let (t0, t1) = harness.state().view.range.expect("W zooms in");
    assert!((t1 - t0 - 74.03882 / 1.25).abs() < 1e-3, "{t0} {t1}");
    press(&mut harness, egui::Key::D);
    let (d0, _) = harness.state().view.range.unwrap();
    assert!(d0 > t0);
    press(&mut harness, egui::Key::ArrowLeft);
    press(&mut harness, egui::Key::A);
    let (a0, _) = harness.state().view.range.unwrap();
    assert!(a0 < d0);
    press(&mut harness, egui::Key::ArrowUp);
    let (u0, u1) = harness.state().view.range.unwrap();
    assert!(u1 - u0 < t1 - t0);
    for _ in 0..4 {
        press(&mut harness, egui::Key::S);
    }
    assert_eq!(
        harness.state().view.range,
        None,
        "S zooms out to the whole step, no further"
    );
    // In a text field the letters are text, not navigation.
    harness.get_all_by_label("layer").nth(1).unwrap().click();
    harness.run();
    press(&mut harness, egui::Key::W);
    assert_eq!(harness.state().view.range, None);
}

#[test]
fn clicking_an_event_selects_it_with_what_it_waits_for_and_feeds() {
    let mut harness = harness();
    // Rank 0 runs the encoder's 0F5 for 2 s, then the backbone's first forward 4F0.
    let at = timeline_point(&harness, 0, 3.0);
    click_at(&mut harness, at);
    harness.get_by_label("Selected: 4F0");
    // 4F0 waits for microbatch 0's encoder forward on its owner, rank 3, and feeds rank 1.
    harness.get_by_label("3F0 (rank 3, Activation)");
    harness.get_by_label("5F0 (rank 1, Activation)").click();
    harness.run();
    harness.get_by_label("Selected: 5F0");
    press(&mut harness, egui::Key::F);
    let (t0, t1) = harness.state().view.range.expect("F fits the selection");
    let e =
        harness.state().shown().unwrap().scene.events[harness.state().selected().unwrap()].clone();
    assert!(t0 < e.start_s && t1 > e.end_s && t1 - t0 < 3.0 * (e.end_s - e.start_s));
    press(&mut harness, egui::Key::Escape);
    assert_eq!(harness.state().selected(), None);
    // A selection survives an edit that keeps the event (found again by rank and action).
    harness.state_mut().apply(Command::FitAll);
    harness.run();
    let at = timeline_point(&harness, 0, 3.0);
    click_at(&mut harness, at);
    edit(&mut harness, Edit::Microbatches(6));
    harness.run();
    harness.get_by_label("Selected: 4F0");
}

#[test]
fn search_finds_actions_microbatches_and_stages() {
    let mut harness = harness();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::F);
    harness.run();
    harness.get_by_label("Search").click();
    harness.run();
    harness.get_by_label("Search").type_text("mb 7");
    harness.run();
    // The encoder's forward and backward, and four backbone stages' forwards and backwards.
    harness.get_by_label("10 match(es)");
    harness.get_by_label("Next").click();
    harness.run();
    let first = harness.state().selected().unwrap();
    assert_eq!(
        harness.state().shown().unwrap().scene.events[first]
            .mb()
            .index(),
        7
    );
    assert!(
        harness.state().view.range.is_some(),
        "the match is brought into view"
    );
    type_into(&mut harness, "Search", "4x0");
    harness.get_by_label_contains("`4x0` is not a search term");
}

/// Ctrl+F opened the search without focusing its field (issue 25): typing right after it
/// searches.
#[test]
fn ctrl_f_then_typing_searches() {
    let mut harness = harness();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::F);
    harness.run();
    harness.event(egui::Event::Text("mb 7".into()));
    harness.run();
    assert_eq!(harness.state().view.search.text, "mb 7");
    harness.get_by_label("10 match(es)");
    assert!(
        !harness.state().view.search.focus,
        "asked once, not every frame"
    );
}

#[test]
fn transfers_name_themselves_on_hover() {
    let mut harness = harness();
    choose(&mut harness, "Hardware", "NVIDIA A100 80GB, PCIe 4.0");
    let scene = harness.state().shown().unwrap().scene.clone();
    let send = scene
        .transfers
        .iter()
        .filter(|c| c.to_rank.index() == 1 && c.comm == "Send")
        .max_by(|a, b| (a.end_s - a.start_s).total_cmp(&(b.end_s - b.start_s)))
        .unwrap()
        .clone();
    // Zoom in on it so it is several pixels wide.
    let pad = (send.end_s - send.start_s) * 2.0;
    harness
        .state_mut()
        .apply(Command::Range(Some((send.start_s - pad, send.end_s + pad))));
    harness.run();
    let mut at = timeline_point(&harness, 1, 0.5 * (send.start_s + send.end_s));
    at.y += harness.state().view.lane_height / 2.0 + 3.0;
    hover(&mut harness, at);
    harness.get_by_label_contains(&format!(
        "Send(2→2) of microbatch {}\nrank 0 → rank 1",
        send.mb.unwrap()
    ));
}

#[test]
fn lanes_can_be_taller() {
    let mut harness = harness();
    let before = harness.state().view.chart_rects[0].height();
    harness.state_mut().apply(Command::LaneHeight(40.0));
    harness.run();
    let after = harness.state().view.chart_rects[0].height();
    assert_eq!(after - before, 4.0 * 16.0);
}

#[test]
fn several_baselines_compare_on_one_time_axis() {
    let mut harness = harness();
    harness.get_by_label("Pin as baseline").click();
    harness.run();
    edit(
        &mut harness,
        Edit::LayerTrainable {
            layer: 0,
            trainable: false,
        },
    );
    harness.get_by_label("Pin as baseline").click();
    harness.run();
    edit(&mut harness, Edit::Microbatches(12));
    harness.run();
    harness.get_by_label_contains("Baseline A: ");
    harness.get_by_label_contains("Baseline B: ");
    harness.get_by_label_contains("Current: ");
    // Three charts, all at full brightness, on one time axis: the longest makespan.
    let s = harness.state();
    assert_eq!(s.view.chart_rects.len(), 3);
    let longest = [
        s.baselines[0].shown.sim.makespan_s,
        s.baselines[1].shown.sim.makespan_s,
        s.current().unwrap().sim.makespan_s,
    ]
    .into_iter()
    .fold(0.0, f64::max);
    assert_eq!(s.span(), longest);
    let a = s.speedup_over(0).unwrap();
    let b = s.speedup_over(1).unwrap();
    assert_ne!(a, b);
    harness.get_by_label_contains(&format!("speedup of the current schedule: {a:.3}×"));
    harness.get_by_label_contains(&format!("speedup of the current schedule: {b:.3}×"));
    // Their memory curves join the plot, dashed, and each has `mpipe compare`'s table.
    // (the legend beside the plot says how: dashed, with the baselines' letters)
    harness.get_by_label("dashed: baseline A, B");
    harness
        .get_by_label("Per rank: baseline A vs the current schedule (now)")
        .click();
    harness.run();
    harness.get_by_label("busy A");
    harness.get_by_label("Δ peak mem");
    harness.get_all_by_label("Unpin").next().unwrap().click();
    harness.run();
    assert_eq!(harness.state().baselines.len(), 1);
    assert!(harness.state().baselines[0].name.starts_with("B: "));
}

#[test]
fn teaching_steps_both_ways_plays_at_a_speed_and_says_why_ranks_wait() {
    let mut harness = on_sample("1f1b.json");
    harness.get_by_label("Teach").click();
    harness.run();
    harness.get_by_label("Step ▶").click();
    harness.run();
    let first = harness.state().view.teach.unwrap().t;
    harness.get_by_label("Step ▶").click();
    harness.run();
    harness.get_by_label("◀ Step back").click();
    harness.run();
    assert_eq!(harness.state().view.teach.unwrap().t, first);
    harness.state_mut().apply(Command::Speed(2.0));
    harness.state_mut().apply(Command::Cursor(1.0));
    harness.run();
    assert_eq!(harness.state().view.teach.unwrap().speed, 2.0);
    harness.get_by_label_contains(
        "rank 1: idle — warmup: nothing to do until the first microbatch arrives (waiting for 0F0 from rank 0, done at 2.000 s)",
    );
    // At 9 s rank 0 has run its four warmup forwards and waits for the first gradient.
    harness.state_mut().apply(Command::Cursor(9.0));
    harness.run();
    harness.get_by_label_contains(
        "rank 0: idle — waiting for 1B0 from rank 1 (done at 20.000 s) before it can run 0B0",
    );
    // The per-rank table explains its terms on hover.
    let head = harness.get_by_label("w_r").rect().center();
    hover(&mut harness, head);
    harness.get_by_label_contains("w_r: the warmup window");
}

/// Teach called a split backward's halves "backward of microbatch N" (issue 25): on the 1F1B
/// sample switched to zb1p, the input and weight halves are named as such.
#[test]
fn teaching_names_the_split_halves() {
    let mut harness = on_sample("1f1b.json");
    choose(&mut harness, "region 1", "zb1p");
    harness.get_by_label("Teach").click();
    harness.run();
    let shown = harness.state().current().unwrap();
    let timings = mpipe::view::timings::event_timings(&shown.sim);
    let span = |name: &str| {
        let e = timings
            .iter()
            .find(|e| e.action.to_string() == name)
            .unwrap_or_else(|| panic!("no {name}"));
        0.5 * (e.start_s + e.end_s)
    };
    let (input, weight) = (span("3I0"), span("3W0"));
    harness.state_mut().apply(Command::Cursor(input));
    harness.run();
    harness.get_by_label_contains(
        "rank 3: 3I0 (input half of the backward of microbatch 0: the gradient the stage before waits for)",
    );
    harness.state_mut().apply(Command::Cursor(weight));
    harness.run();
    harness.get_by_label_contains(
        "rank 3: 3W0 (weight half of the backward of microbatch 0: its weight gradients, which nothing waits for)",
    );
}

/// After clicking a button (which then has the keyboard focus) the plain keys still navigate.
#[test]
fn keys_work_after_clicking_a_button() {
    let mut harness = harness();
    let teach = harness.get_by_label("Teach").rect().center();
    click_at(&mut harness, teach);
    assert!(harness.state().view.teach.is_some());
    press(&mut harness, egui::Key::Period);
    assert!(harness.state().view.teach.unwrap().t > 0.0);
    press(&mut harness, egui::Key::W);
    assert!(harness.state().view.range.is_some());
}

/// OctoPipe's deadlocks drawn (issue 14): a hand order that deadlocks keeps the last valid chart
/// with its wait-for cycle, says what the proposed reordering moves, and applies it in one
/// click; Undo brings the deadlocking order back.
#[test]
fn a_deadlocking_order_shows_its_cycle_and_its_fix_applies_in_one_click() {
    let mut harness = on_sample("1f1b.json");
    harness.run();
    let bad: Vec<Vec<String>> = (0..4)
        .map(|r| {
            harness
                .state()
                .rank_actions(r)
                .iter()
                .map(|a| a.to_string())
                .collect()
        })
        .map(|mut list: Vec<String>| {
            // Rank 0 wants microbatch 0's backward right after its forward, rank 1 microbatch 1
            // before microbatch 0: each waits for the other.
            if list.first().is_some_and(|a| a == "0F0") {
                let b = list.iter().position(|a| a == "0B0").unwrap();
                let step = list.remove(b);
                list.insert(1, step);
            }
            if list.first().is_some_and(|a| a == "1F0") {
                list.swap(0, 1);
            }
            list
        })
        .collect();
    edit(&mut harness, Edit::Orders(Some(bad.clone())));
    let deadlock = harness.state().deadlock().cloned().unwrap();
    assert_eq!(
        deadlock.fix.summary(),
        "rank 0: 0F1 before 0B0; rank 0: 0F2 before 0B0"
    );
    assert!(deadlock.cycle.len() >= 2);
    harness.run();
    let error = harness.state().error().unwrap().to_string();
    assert!(error.contains("rule `deadlock-free`"), "{error}");
    harness.get_by_label(&error);
    harness.get_by_label_contains("Proposed: rank 0: 0F1 before 0B0; rank 0: 0F2 before 0B0.");
    harness.get_by_label("Showing the last valid schedule, dimmed.");
    harness.get_by_label("Apply the proposed order").click();
    harness.run();
    assert!(harness.state().error().is_none());
    assert_eq!(
        harness.state().doc.scenario().unwrap().orders.as_ref(),
        Some(&deadlock.fix.orders)
    );
    assert_eq!(harness.state().rank_actions(1)[..2], ["1F1", "1F0"]);
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().doc.scenario().unwrap().orders, Some(bad));
    assert!(harness.state().deadlock().is_some());
}

/// OctoPipe's tuner in the app (issue 14): Tune runs the search on a worker, its iterations
/// show as they end, and the tuned pipeline — the one `mpipe tune` finds — is one undoable click
/// away.
#[test]
fn the_tuner_runs_on_a_worker_and_its_pipeline_is_one_click_away() {
    // The OctoPipe paper's Fig. 3 toy: six 1T layers cut 2 | 4 over two ranks, two
    // microbatches, 1F1B (30T).
    let text = r#"{"format": "mpipe-scenario/1", "name": "Fig. 3 toy",
        "model": {"layers": [{"name": "layer", "role": "backbone", "count": 6, "fwd_s": 1.0}]},
        "schedule": ["1f1b"], "slabs": [[2, 4]], "ranks": 2, "microbatches": 2}"#;
    let mut studio = Studio::empty();
    assert!(studio.open_text(text, "fig3.json", None));
    let mut harness = harness_on(studio);
    harness.run();
    harness
        .get_by_label("Tune (OctoPipe): partitioning, placement, scheduling")
        .click();
    harness.run();
    // Every schedule of the registry tried: Chimera after the partitioning move.
    harness.get_by_label("Tune the pipeline").click();
    harness.run_steps(2);
    common::wait(&mut harness, |s| s.analyses.tuner.running.is_none());
    let generation = harness.state().doc.generation();
    let every = harness.state().analyses.tuner.current(generation).unwrap();
    assert_eq!(every.makespan_s, 18.0);
    // The paper's Algorithm 1: OctoPipe's own moves only.
    harness.get_by_label("OctoPipe's own moves only").click();
    harness.run();
    assert!(harness.state().analyses.tuner.own_moves_only);
    harness.get_by_label("Tune the pipeline").click();
    harness.run_steps(2);
    common::wait(&mut harness, |s| s.analyses.tuner.running.is_none());
    let tuned = harness
        .state()
        .analyses
        .tuner
        .current(generation)
        .unwrap()
        .clone();
    assert_eq!((tuned.start_makespan_s, tuned.makespan_s), (30.0, 19.0));
    harness.run();
    harness.get_by_label("30.000 s → 19.000 s (bubble 40.0 % → 5.3 %)");
    harness.get_by_label("tuned: 30.000 s → 19.000 s in 8 iterations");
    harness.get_by_label("Use the tuned pipeline").click();
    harness.run();
    assert_eq!(
        harness.state().doc.scenario().unwrap().schedule,
        [mpipe::schedules::ZB1P; 3]
    );
    assert_eq!(harness.state().current_makespan(), 19.0);
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().current_makespan(), 30.0);
}

/// OctoPipe's hand-edited orders (issue 14): Ctrl-dragging an event along its lane moves it in its
/// rank's order; the orders become the scenario's hand-written ones, Undo takes it back, and a
/// drag that deadlocks is reported live with its cycle.
#[test]
fn ctrl_dragging_an_event_reorders_its_rank() {
    let mut harness = on_sample("1f1b.json");
    harness.run();
    assert_eq!(
        harness.state().rank_actions(0)[..4],
        ["0F0", "0F1", "0F2", "0F3"]
    );
    // 0F1 runs 2–4 s on rank 0 (2 s forwards): drop it at 7 s, inside 0F3.
    let from = timeline_point(&harness, 0, 3.0);
    let to = timeline_point(&harness, 0, 7.0);
    ctrl_drag(&mut harness, from, to);
    let orders = harness
        .state()
        .doc
        .scenario()
        .unwrap()
        .orders
        .clone()
        .unwrap();
    assert_eq!(orders[0][..4], ["0F0", "0F2", "0F3", "0F1"]);
    assert_eq!(orders[1], harness.state().rank_actions(1));
    assert_eq!(
        harness.state().rank_actions(0)[..4],
        ["0F0", "0F2", "0F3", "0F1"]
    );
    harness.get_by_label("moved 0F1 on rank 0");
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert!(harness.state().doc.scenario().unwrap().orders.is_none());
    // Rank 0's first backward dragged before its first forward: a deadlock, drawn and fixable.
    let from = middle_of(&harness, 0, "0B0");
    let to = timeline_point(&harness, 0, 0.1);
    ctrl_drag(&mut harness, from, to);
    assert!(harness.state().deadlock().is_some());
    harness.get_by_label("Apply the proposed order");
}

/// Where the middle of `action`'s chip on `rank`'s lane is drawn.
fn middle_of(harness: &Harness<'static, Studio>, rank: usize, action: &str) -> egui::Pos2 {
    let e = harness
        .state()
        .shown()
        .unwrap()
        .scene
        .events
        .iter()
        .find(|e| e.rank.index() == rank && e.action.to_string() == action)
        .unwrap()
        .clone();
    timeline_point(harness, rank, (e.start_s + e.end_s) / 2.0)
}

fn ctrl_drag(harness: &mut Harness<'static, Studio>, from: egui::Pos2, to: egui::Pos2) {
    harness.event(egui::Event::ModifiersChanged(egui::Modifiers::COMMAND));
    common::drag(harness, from, to);
    harness.event(egui::Event::ModifiersChanged(egui::Modifiers::NONE));
    harness.run();
}

/// OctoPipe's partitioning by hand (issue 14): each Sharded region has a stage strip; dragging a
/// boundary between two stages moves layers from one to the other (a stage may be emptied), as
/// one undoable edit of the per-stage layer counts.
#[test]
fn dragging_a_stage_boundary_moves_layers_between_stages() {
    let mut harness = on_sample("1f1b.json");
    harness.run();
    let strip = harness.get_by_label("stage strip of region 1").rect();
    // Eight layers, balanced 2 | 2 | 2 | 2: the first boundary is at a quarter of the strip.
    let x = |layer: f32| strip.left() + strip.width() * layer / 8.0;
    let y = strip.center().y;
    common::drag(&mut harness, egui::pos2(x(2.0), y), egui::pos2(x(4.0), y));
    assert_eq!(
        harness.state().doc.scenario().unwrap().slabs,
        Some(vec![Some(vec![4, 0, 2, 2])])
    );
    // One drag, one undo step.
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().doc.scenario().unwrap().slabs, None);
}

/// A Ctrl-drag on a scenario with a transposed encoder whose owner map is chosen by simulation
/// (`greedy_slack`, the default sample): the hand orders name the rank of every encoder action, so
/// the owner map on screen is pinned with them, and the moved schedule derives.
#[test]
fn reordering_with_a_cost_based_owner_map_pins_it() {
    let mut harness = on_sample("mpipe-vit-llm.json");
    harness.run();
    let owners = harness
        .state()
        .shown()
        .unwrap()
        .sim
        .derivation
        .plan
        .owner
        .clone();
    let from = middle_of(&harness, 0, "4F1");
    let to = middle_of(&harness, 0, "4F3");
    ctrl_drag(&mut harness, from, to);
    assert!(
        harness.state().error().is_none(),
        "{:?}",
        harness.state().error()
    );
    let s = harness.state().doc.scenario().unwrap();
    assert_eq!(s.owner, mpipe::scenario::owner::OwnerSpec::Explicit(owners));
    let rank0 = harness.state().rank_actions(0);
    let at = |a: &str| rank0.iter().position(|x| x == a).unwrap();
    assert!(at("4F3") < at("4F1"), "{rank0:?}");
}

/// Ctrl-drags in region 1's stage strip (of `layers` layers) from layer `from` to layer `to`.
fn ctrl_drag_in_strip(harness: &mut Harness<'static, Studio>, layers: f32, from: f32, to: f32) {
    let strip = harness.get_by_label("stage strip of region 1").rect();
    let x = |layer: f32| strip.left() + strip.width() * layer / layers;
    let y = strip.center().y;
    ctrl_drag(harness, egui::pos2(x(from), y), egui::pos2(x(to), y));
}

/// OctoPipe's placement by hand (issue 14): Ctrl-dragging a stage onto another in the stage strip
/// trades their ranks (an explicit stage → rank map), one undoable edit.
#[test]
fn ctrl_dragging_a_stage_onto_another_trades_their_ranks() {
    let mut harness = on_sample("1f1b.json");
    harness.run();
    ctrl_drag_in_strip(&mut harness, 8.0, 1.0, 5.0);
    assert_eq!(
        harness.state().doc.scenario().unwrap().placement,
        Some(mpipe::scenario::placement::PlacementSpec::Explicit(vec![
            2, 1, 0, 3
        ]))
    );
    // Stage 0 now runs on rank 2.
    assert_eq!(harness.state().rank_actions(2)[0], "0F0");
    harness.state_mut().apply(Command::Undo);
    harness.run();
    assert_eq!(harness.state().doc.scenario().unwrap().placement, None);
    assert_eq!(harness.state().rank_actions(0)[0], "0F0");
}

/// Under DualPipe each rank holds a stage of each direction: a stage dragged onto another trades
/// the two ranks whole (the mirrors' stages with them), which derives — a trade of the two
/// stages alone deadlocks the schedule's slots.
#[test]
fn ctrl_dragging_a_dualpipe_stage_trades_both_directions() {
    let mut harness = on_sample("dualpipe.json");
    harness.run();
    ctrl_drag_in_strip(&mut harness, 16.0, 2.0, 6.0);
    assert_eq!(
        harness.state().doc.scenario().unwrap().placement,
        Some(mpipe::scenario::placement::PlacementSpec::Explicit(vec![
            1, 0, 2, 3, 3, 2, 0, 1
        ]))
    );
    assert!(
        harness.state().error().is_none(),
        "{:?}",
        harness.state().error()
    );
    // Rank 1 now starts with stage 0's forwards and runs the mirror's last stage (7).
    assert_eq!(harness.state().rank_actions(1)[..3], ["0F0", "0F1", "0F2"]);
    assert!(harness.state().rank_actions(1).contains(&"7F8".to_string()));
    assert_eq!(harness.state().shown().unwrap().sim.makespan_s, 176.0);
}

/// The textbook formula beside the simulated figures (issue 26, item 4): on the 1F1B sample the
/// simulation is in the formula's setting and equals it; on the Mpipe sample Mpipe's spill is
/// added to it; on a nested encoder's sample the panel says why no formula applies.
#[test]
fn the_formula_is_shown_beside_the_simulation() {
    let harness = on_sample("1f1b.json");
    harness.get_by_label(
        "formula (1f1b, t_F = 2.000 s, t_B = 4.000 s): step (M + P − 1)·(t_F + t_B) = 66.000 s (simulated 66.000 s, +0.0 %); bubble (P − 1)/(M + P − 1) = 27.3 % (simulated 27.3 %); activations held min(P, M)·A = 4 A (simulated 4 A)",
    );
    harness.get_by_label(
        "the simulation is in the formula's setting (uniform stages, free links, no overhead)",
    );
    // The Mpipe sample: its transposed encoder reads as Mpipe's spill over 1F1B's formula.
    let harness = on_sample("mpipe-vit-llm.json");
    harness.get_by_label(
        "Mpipe's spill: rank r's encodes (E_r) run in its warmup window w_r = s_r·t_F (s_r: the forwards before its first stage); the worst is rank 0's, E_0 = 2.000 s against w_0 = 0 s",
    );
    let harness = on_sample("mllm-understanding.json");
    harness
        .get_by_label("no textbook formula: region 1 (nested) runs outside the pipeline's formula (its encodes run just in time in the backbone's idle slots, placed by a greedy search, so its step has no closed form)");
}
