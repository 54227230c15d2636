//! JanusPipe in the app: the WaveK sweep runs on a worker and any k is applied in one click;
//! GARS before and after is simulated and either packing applied; the wave size is edited.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe::workload::gars::Packing;
use mpipe_studio::Studio;

fn on_uma() -> Harness<'static, Studio> {
    // Tall enough for the panels under the timeline and the memory plot.
    let mut studio = Studio::empty();
    let sample = mpipe_studio::samples::SAMPLES
        .iter()
        .find(|s| s.file == "uma-1.2b.json")
        .unwrap();
    studio.open_sample(sample);
    let mut harness = common::sized(studio, egui::vec2(1500.0, 1800.0), 0.25);
    common::wait(&mut harness, |s| s.shown().is_some());
    harness
}

#[test]
fn the_wave_sweep_plots_k_and_applies_one_in_a_click() {
    let mut harness = on_uma();
    let w = common::run_analysis(
        &mut harness,
        "WaveK sweep (JanusPipe): throughput and memory against k",
        "Sweep k",
        |s| &s.analyses.wave_sweep,
    );
    assert_eq!(
        w.points.iter().map(|p| p.k).collect::<Vec<_>>(),
        (1..=16).collect::<Vec<_>>()
    );
    assert_eq!(w.best_k, Some(8));
    harness.get_by_label_contains("best k within capacity: 8");
    harness.get_by_label("peak memory (GB, highest rank) against k");
    // Both plots number their axes (each labelled one tick, "10" and "1", issue 25 item 4).
    for id in ["wave sweep throughput", "wave sweep memory"] {
        let (y, x) = common::axis_numbers(&harness, id);
        assert!(y.len() >= 3 && x.len() >= 3, "{id}: y {y:?}, x {x:?}");
    }
    let before = harness.state().scenario().cloned().unwrap();
    assert_eq!(before.wave_k, Some(4));
    harness.get_by_label("8").click();
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().wave_k, Some(8));
    // The sweep was of the scenario before: not shown for the new one.
    let now = harness.state().doc.generation();
    assert!(harness.state().analyses.wave_sweep.current(now).is_none());
    common::wait(&mut harness, |s| {
        s.shown().is_some_and(|sh| sh.generation == now)
    });
    let shown = harness.state().shown().unwrap().sim.makespan_s;
    assert_eq!(
        Some(shown),
        w.points.iter().find(|p| p.k == 8).map(|p| p.makespan_s)
    );
    harness.get_by_label("Undo").click();
    harness.run();
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn gars_before_and_after_is_simulated_and_either_packing_applied() {
    let mut harness = on_uma();
    let c = common::run_analysis(
        &mut harness,
        "Graph packing (GARS): per-microbatch load before and after",
        "Compare packings",
        |s| &s.analyses.packing,
    );
    assert_eq!(c.gars.factors.len(), 32);
    assert!(c.gars.makespan_s < c.sequential.makespan_s);
    harness.get_by_label("load per microbatch (edges over the mean microbatch's)");
    harness.get_by_label("Use sequential packing").click();
    harness.run();
    let packing = |h: &Harness<'static, Studio>| {
        h.state()
            .scenario()
            .and_then(|s| s.workload.as_ref())
            .and_then(|w| w.graphs.as_ref())
            .map(|g| g.packing)
    };
    assert_eq!(packing(&harness), Some(Packing::Sequential));
    let now = harness.state().doc.generation();
    common::wait(&mut harness, |s| {
        s.shown().is_some_and(|sh| sh.generation == now)
    });
    assert_eq!(
        harness.state().shown().unwrap().sim.makespan_s,
        c.sequential.makespan_s
    );
}

#[test]
fn the_wave_size_is_edited_and_goes_with_the_last_wavek_region() {
    let mut harness = on_uma();
    common::type_into(&mut harness, "Wave size (k)", "6");
    harness.key_press(egui::Key::Enter);
    harness.run();
    assert_eq!(harness.state().scenario().unwrap().wave_k, Some(6));
    common::choose(&mut harness, "region 1", "1f1b-2nd");
    let s = harness.state().scenario().unwrap();
    assert_eq!(s.schedule, [mpipe::schedules::ONE_F_ONE_B_2ND]);
    assert_eq!(s.wave_k, None);
    assert!(harness.query_by_label("Wave size (k)").is_none());
}

#[test]
fn the_model_editor_edits_the_four_phase_times() {
    let mut harness = on_uma();
    assert_eq!(
        harness.get_by_label("BF s").value().as_deref(),
        Some("0.036")
    );
    assert!(harness.query_by_label("fwd s").is_none());
    common::type_into(&mut harness, "BF s", "0.05");
    harness.key_press(egui::Key::Enter);
    harness.run();
    let layer = harness.state().scenario().unwrap().model.layers[0].clone();
    assert_eq!(layer.bf_s, Some(0.05));
    // Nothing else of the layer changed.
    assert_eq!(
        (layer.fe_s, layer.ff_s, layer.be_s, layer.fwd_s),
        (Some(0.012), Some(0.02), Some(0.028), None)
    );
}
