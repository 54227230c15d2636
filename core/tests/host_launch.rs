//! The host that launches each rank's work (DESIGN.md §3.1, `hardware.host_launch_per_layer_s`):
//! a device starts an action no earlier than its host starts launching it and ends it no
//! earlier than its host has launched it all; fitted from the GPU fixtures' action spans.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;
use mpipe::scenario::hardware::{Hardware, PhaseSeconds};
use mpipe::scenario::layer::LayerSpec;
use mpipe::vocab::role::Role;

fn simulate(s: &mpipe::Scenario) -> mpipe::sim::run::Simulation {
    mpipe::tune::pipeline::simulate_scenario(s, Default::default()).unwrap()
}

fn host(forward: f64, backward: Option<f64>) -> Option<Hardware> {
    Some(Hardware {
        host_launch_per_layer_s: Some(PhaseSeconds {
            forward: Some(forward),
            backward,
            ..PhaseSeconds::default()
        }),
        ..Hardware::default()
    })
}

#[test]
fn a_host_that_launches_slower_than_the_device_runs_sets_the_pace_exactly() {
    // 1F1B, P = 2, M = 2, one layer a rank, t_F = 1, t_B = 2: (M + P − 1)(t_F + t_B) = 9.
    let mut s = common::scenario(
        vec![LayerSpec::timed("x", Role::Backbone, 2, 1.0)],
        &[],
        &[mpipe::schedules::ONE_F_ONE_B],
        2,
        2,
    );
    assert_eq!(simulate(&s).makespan_s, 9.0);
    // A host launching a forward in 3 and a backward in 1. Rank 0 launches F0 [0, 3], F1 [3, 6],
    // B0 [6, 7], B1 [7, 8]; rank 1 F0 [0, 3], B0 [3, 4], F1 [4, 7], B1 [7, 8]. By hand: r0 F0
    // [0, 3] (its work done at 1, its launch at 3), F1 [3, 6]; r1 F0 [3, 4], B0 [4, 6], F1
    // [6, 7], B1 [7, 9]; r0 B0 [6, 8], B1 [9, 11].
    s.hardware = host(3.0, Some(1.0));
    let sim = simulate(&s);
    assert_eq!(sim.makespan_s, 11.0);
    let spans: Vec<Vec<(String, f64, f64)>> = sim
        .derivation
        .order
        .nodes
        .iter()
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|&n| {
                    let (start, end) = sim.timeline.span_of(n).unwrap();
                    let label = sim.derivation.order.graph[n].action()?.to_string();
                    Some((label, start, end))
                })
                .collect()
        })
        .collect();
    let want = |list: &[(&str, f64, f64)]| {
        list.iter()
            .map(|&(l, s, e)| (l.to_string(), s, e))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        spans,
        vec![
            want(&[
                ("0F0", 0.0, 3.0),
                ("0F1", 3.0, 6.0),
                ("0B0", 6.0, 8.0),
                ("0B1", 9.0, 11.0)
            ]),
            want(&[
                ("1F0", 3.0, 4.0),
                ("1B0", 4.0, 6.0),
                ("1F1", 6.0, 7.0),
                ("1B1", 7.0, 9.0)
            ]),
        ]
    );
    // What the device waited inside r0's forwards (2 each) is the host's, not the work's.
    let waits: f64 = sim.host_wait_s.iter().sum();
    assert_eq!(waits, 4.0);
    // Busy time leaves it out (rank 0 works 1 + 1 + 2 + 2 = 6 of 11), the bubble holds it, and
    // the chart draws it at the end of those two boxes, with a legend entry.
    let r0 = &sim.ranks[0];
    assert_eq!((r0.busy_s, r0.bubble.host_s), (6.0, 4.0));
    let svg = mpipe::report::svg::render("host", &sim);
    assert_eq!(
        svg.matches("<title>waiting for its host to launch the work: ")
            .count(),
        2
    );
    assert!(svg.contains(">waiting for its host to launch the work</text>"));
    // The longest path, the event engine and the (max,+) composition agree.
    let d = &sim.derivation;
    let work = mpipe::sim::cost::durations(&d.plan, &d.order);
    let events = mpipe::sim::engine::simulate_events_launched(
        &d.order,
        work,
        &sim.launches,
        Default::default(),
    );
    assert_eq!(events.makespan, 11.0);
    let composed = mpipe::sim::maxplus::composed_completion_launched(
        &d.order,
        sim.durations(),
        d.plan.regions.len(),
        &sim.launches,
    );
    assert_eq!(composed.iter().copied().fold(0.0, f64::max), 11.0);
    // A host faster than the device changes nothing.
    s.hardware = host(0.5, Some(1.0));
    assert_eq!(simulate(&s).makespan_s, 9.0);
    assert!(simulate(&s).host_wait_s.is_empty());
}

#[test]
fn a_half_the_host_was_not_given_launches_as_long_as_a_whole_backward() {
    // ZB-H1 (split backward), two layers a rank: every input and weight half launches in
    // 2 × 0.75, the whole backward's per layer, and forwards in 2 × 0.25; a recomputed layer
    // adds its forward's launch to its first backward phase (the input half).
    let mut s = common::scenario(
        vec![LayerSpec::timed("x", Role::Backbone, 4, 1.0)],
        &[],
        &[mpipe::schedules::ZB1P],
        2,
        3,
    );
    s.hardware = host(0.25, Some(0.75));
    let sim = simulate(&s);
    let d = &sim.derivation;
    let mut seen = std::collections::BTreeSet::new();
    for nodes in &d.order.nodes {
        for &n in nodes {
            let Some(a) = d.order.graph[n].action() else {
                continue;
            };
            let took = sim.launches.end[n.index()] - sim.launches.start[n.index()];
            let want = match a.phase.code() {
                "F" => 0.5,
                "I" | "W" => 1.5,
                other => panic!("{other}"),
            };
            assert_eq!(took, want, "{a}");
            seen.insert(a.phase.code());
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["F", "I", "W"]);
    // With full recomputation the input half launches the forward again too: 1.5 + 2 × 0.25.
    for layer in &mut s.model.layers {
        layer.recompute = Some(mpipe::scenario::layer::Recompute::Full);
    }
    let sim = simulate(&s);
    let d = &sim.derivation;
    // What calibration takes off a measured launch: the forwards the half reruns.
    let rerun = |phase| mpipe::sim::cost::rerun_forwards(&d.plan, 0..2, phase);
    use mpipe::vocab::phase::Phase;
    assert_eq!(
        [
            rerun(Phase::Forward),
            rerun(Phase::Input),
            rerun(Phase::Weight)
        ],
        [0.0, 2.0, 0.0]
    );
    for nodes in &d.order.nodes {
        for &n in nodes {
            let Some(a) = d.order.graph[n].action() else {
                continue;
            };
            let took = sim.launches.end[n.index()] - sim.launches.start[n.index()];
            if a.phase.code() == "I" {
                assert_eq!(took, 2.0, "{a}");
            }
        }
    }
}

#[test]
fn a_cpu_run_calibrates_a_host_model_away() {
    // A CPU run's host is its device: calibrated on one, a scenario's host model is dropped (and
    // an accelerator's run fits one: core/tests/gpu_trace.rs).
    let seven = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/traces/seven/gpipe");
    let mut s = mpipe::Scenario::from_json_str(
        &std::fs::read_to_string(seven.join("scenario.json")).unwrap(),
        "scenario.json",
    )
    .unwrap();
    s.hardware
        .get_or_insert_with(Default::default)
        .host_launch_per_layer_s = Some(PhaseSeconds {
        forward: Some(0.001),
        ..PhaseSeconds::default()
    });
    let dir = std::env::temp_dir().join(format!("mpipe-host-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (given, out) = (dir.join("given.json"), dir.join("calibrated.json"));
    std::fs::write(&given, s.to_json_string()).unwrap();
    let (code, text, err) = common::mpipe(&[
        "compare-trace",
        "--calibrated",
        out.to_str().unwrap(),
        given.to_str().unwrap(),
        seven.join("rank0.json.gz").to_str().unwrap(),
        seven.join("rank1.json.gz").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!text.contains("fitted host:"), "{text}");
    let calibrated =
        mpipe::Scenario::from_json_str(&std::fs::read_to_string(&out).unwrap(), "calibrated.json")
            .unwrap();
    assert_eq!(calibrated.hardware.unwrap().host_launch_per_layer_s, None);
    std::fs::remove_dir_all(&dir).unwrap();
}
