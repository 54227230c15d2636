//! The timeline scene and the teaching cursor: lanes, bubbles, colours by role, dependencies,
//! stepping, and why each rank is idle, on 1F1B with P = 2, M = 2, t_f = 1, t_b = 2:
//! rank 0 runs 0F0 [0,1) 0F1 [1,2) 0B0 [4,6) 0B1 [7,9); rank 1 runs 1F0 [1,2) 1B0 [2,4)
//! 1F1 [4,5) 1B1 [5,7).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // tests fail by panicking

mod common;

use common::scenario;
use mpipe::scenario::hardware::Hardware;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::{ONE_F_ONE_B, TRANSPOSE};
use mpipe::sim::engine::SimOptions;
use mpipe::sim::metrics::{Gap, GapKind};
use mpipe::sim::run::Simulation;
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::view::explain::{Idle, Waited, at_time};
use mpipe::view::scene::Scene;
use mpipe::vocab::role::Role;

fn two_by_two(hardware: Option<Hardware>) -> Simulation {
    let mut s = scenario(
        vec![LayerSpec::timed("l", Role::Backbone, 2, 1.0)],
        &[],
        &[ONE_F_ONE_B],
        2,
        2,
    );
    s.hardware = hardware;
    simulate_scenario(&s, SimOptions::default()).unwrap()
}

fn gap(start_s: f64, end_s: f64, kind: GapKind) -> Gap {
    Gap {
        start_s,
        end_s,
        kind,
    }
}

#[test]
fn lanes_hold_each_ranks_events_and_bubbles() {
    let sim = two_by_two(None);
    let scene = Scene::new(&sim);
    let actions = |r: usize| -> Vec<String> {
        scene
            .lane_events(r)
            .iter()
            .map(|e| e.action.to_string())
            .collect()
    };
    assert_eq!(actions(0), ["0F0", "0F1", "0B0", "0B1"]);
    assert_eq!(actions(1), ["1F0", "1B0", "1F1", "1B1"]);
    use GapKind::*;
    assert_eq!(
        scene.lanes[0].bubbles,
        [gap(2.0, 4.0, Steady), gap(6.0, 7.0, Steady)]
    );
    assert_eq!(
        scene.lanes[1].bubbles,
        [gap(0.0, 1.0, Warmup), gap(7.0, 9.0, Cooldown)]
    );
    assert_eq!(scene.lanes[1].warmup.map(|w| w.end_s), Some(1.0));
    assert_eq!(scene.lanes[0].warmup, None);
    // The bubbles add up to the per-rank bubble the metrics report.
    for (lane, metrics) in scene.lanes.iter().zip(&sim.ranks) {
        let total: f64 = lane.bubbles.iter().map(|g| g.end_s - g.start_s).sum();
        assert_eq!(total, metrics.bubble_s);
    }
    assert_eq!(
        scene.running(1, 1.5).map(|e| e.action.to_string()),
        Some("1F0".into())
    );
    assert_eq!(scene.running(1, 0.5), None);
    assert_eq!(scene.running(0, 9.0), None);
}

#[test]
fn colours_follow_the_role_so_the_backbone_is_blue_in_every_sample() {
    let backbone = mpipe::view::palette::region_hue(Role::Backbone, 0);
    let encoder = mpipe::view::palette::region_hue(Role::Encoder, 0);
    let sim = two_by_two(None);
    assert_eq!(Scene::new(&sim).regions[0].forward, backbone);
    let mpipe = scenario(
        common::vit_llm(4, 8, true),
        &[4],
        &[TRANSPOSE, ONE_F_ONE_B],
        4,
        8,
    );
    let scene = Scene::new(&simulate_scenario(&mpipe, SimOptions::default()).unwrap());
    assert_eq!(scene.regions[0].forward, encoder);
    assert_eq!(scene.regions[0].role, Role::Encoder);
    assert_eq!(scene.regions[1].forward, backbone);
    assert_eq!(scene.regions[0].label(), "region 1 · encoder · transpose");
    assert_eq!(
        scene.colour(2, mpipe::vocab::phase::Phase::Backward),
        mpipe::view::palette::backward_shade(backbone)
    );
}

#[test]
fn dependencies_look_through_transfers_and_the_loss() {
    let sim = two_by_two(None);
    let scene = Scene::new(&sim);
    let index = |a: &str| {
        scene
            .events
            .iter()
            .position(|e| e.action.to_string() == a)
            .unwrap()
    };
    let deps: Vec<(String, String)> = scene
        .dependencies(&sim, index("1F0"))
        .iter()
        .map(|d| {
            (
                scene.events[d.from].action.to_string(),
                scene.events[d.to].action.to_string(),
            )
        })
        .collect();
    assert_eq!(
        deps,
        [("0F0".into(), "1F0".into()), ("1F0".into(), "1B0".into())]
    );
}

#[test]
fn the_cursor_steps_forward_and_back_between_event_boundaries() {
    let scene = Scene::new(&two_by_two(None));
    assert_eq!(scene.next_boundary(0.0), Some(1.0));
    assert_eq!(scene.next_boundary(4.0), Some(5.0));
    assert_eq!(scene.next_boundary(9.0), None);
    assert_eq!(scene.previous_boundary(9.0), Some(7.0));
    assert_eq!(scene.previous_boundary(1.0), Some(0.0));
    assert_eq!(scene.previous_boundary(0.0), None);
}

#[test]
fn idle_ranks_say_what_they_wait_for() {
    let sim = two_by_two(None);
    let scene = Scene::new(&sim);
    let idle = |t: f64, rank: usize| at_time(&sim, &scene, t)[rank].idle.clone();
    assert_eq!(
        idle(0.5, 1),
        Some(Idle::Warmup {
            waiting_for: Some(Waited {
                what: "0F0".into(),
                rank: Some(0),
                end_s: 1.0
            })
        })
    );
    assert_eq!(
        at_time(&sim, &scene, 0.5)[1].sentence(),
        "rank 1: idle — warmup: nothing to do until the first microbatch arrives (waiting for 0F0 from rank 0, done at 1.000 s) · holds 0 B"
    );
    assert_eq!(
        idle(3.0, 0).unwrap().sentence(),
        "waiting for 1B0 from rank 1 (done at 4.000 s) before it can run 0B0"
    );
    assert_eq!(
        idle(6.5, 0).unwrap().sentence(),
        "waiting for 1B1 from rank 1 (done at 7.000 s) before it can run 0B1"
    );
    assert_eq!(idle(7.5, 1), Some(Idle::Done));
    assert_eq!(idle(1.5, 0), None);
    assert_eq!(
        at_time(&sim, &scene, 1.5)[0].sentence(),
        "rank 0: 0F1 (forward of microbatch 1) · holds 0 B"
    );
}

#[test]
fn an_input_on_the_wire_is_named_with_its_arrival() {
    let sim = two_by_two(Some(Hardware {
        link_alpha_s: Some(0.5),
        link_bytes_per_s: Some(1e12),
        ..Default::default()
    }));
    let scene = Scene::new(&sim);
    let at = at_time(&sim, &scene, 1.2);
    assert_eq!(
        at[1].idle.as_ref().unwrap().sentence(),
        "waiting for the output of 0F0 from rank 0 to arrive (Send of microbatch 0, at 1.500 s) before it can run 1F0"
    );
}

/// Teach called a split backward's halves "backward of microbatch N" (issue 25): a zero-bubble
/// lesson is about the two halves, so each is named — the input half, which the stage before
/// waits for, and the weight half, which nothing waits for.
#[test]
fn split_halves_are_named_as_halves() {
    // ⟨zb1p⟩ over 2 ranks, 2 microbatches, one 1 s layer a rank (backward 2 s: halves of 1 s).
    let s = scenario(
        vec![LayerSpec::timed("l", Role::Backbone, 2, 1.0)],
        &[],
        &[mpipe::schedules::ZB1P],
        2,
        2,
    );
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    let scene = Scene::new(&sim);
    let sentences: Vec<String> = (0..=sim.makespan_s as usize * 2)
        .map(|h| h as f64 * 0.5 + 0.25)
        .flat_map(|t| at_time(&sim, &scene, t))
        .map(|r| r.sentence())
        .collect();
    assert!(
        sentences.contains(
            &"rank 1: 1I0 (input half of the backward of microbatch 0: the gradient the stage before waits for) · holds 0 B".to_string()
        ),
        "{sentences:#?}"
    );
    assert!(
        sentences.iter().any(|s| s.starts_with("rank 1: 1W0 (weight half of the backward of microbatch 0: its weight gradients, which nothing waits for)")),
        "{sentences:#?}"
    );
    assert!(!sentences.iter().any(|s| s.contains("I0 (backward")));
}
