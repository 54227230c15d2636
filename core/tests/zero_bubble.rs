//! Split backward (`I` and `W`) and ZB-H1 (`zb1p` with one Sharded region): the closed form,
//! Lemma 1 on both halves, memory freed in two parts, hand-written orders with `I` and `W`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{rank_actions, scenario, uniform};
use mpipe::Scenario;
use mpipe::graph::event::Event;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::{DUALPIPEV, ONE_F_ONE_B, TRANSPOSE, ZB1P, ZBV};
use mpipe::sim::engine::SimOptions;
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::phase::Half;
use mpipe::vocab::role::Role;

fn makespan(s: &Scenario) -> f64 {
    simulate_scenario(s, SimOptions::default())
        .unwrap()
        .makespan_s
}

#[test]
fn zb_h1_takes_3m_plus_p_minus_1_where_1f1b_takes_3_m_plus_p_minus_1() {
    // One layer a stage, t_F = 1 and t_B = 2, so t_I = t_W = 1; free links.
    for p in 1..=8 {
        for m in p..=3 * p {
            let zb = scenario(uniform(p), &[], &[ZB1P], p, m);
            let one = scenario(uniform(p), &[], &[ONE_F_ONE_B], p, m);
            assert_eq!(makespan(&zb), (3 * m + p - 1) as f64, "P = {p}, M = {m}");
            assert_eq!(makespan(&one), (3 * (m + p - 1)) as f64, "P = {p}, M = {m}");
        }
    }
}

#[test]
fn zb_h1_orders_by_hand() {
    let s = scenario(uniform(3), &[], &[ZB1P], 3, 4);
    assert_eq!(
        rank_actions(&s, 0),
        "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3"
    );
    assert_eq!(
        rank_actions(&s, 1),
        "1F0 1F1 1I0 1F2 1I1 1W0 1F3 1I2 1W1 1I3 1W2 1W3"
    );
    assert_eq!(
        rank_actions(&s, 2),
        "2F0 2I0 2F1 2I1 2F2 2I2 2W0 2F3 2I3 2W1 2W2 2W3"
    );
    // The halves take bwd_input_s and bwd_weight_s when given.
    let mut layer = LayerSpec::timed("l", Role::Backbone, 3, 1.0);
    layer.bwd_input_s = Some(1.5);
    layer.bwd_weight_s = Some(0.5);
    let timed = scenario(vec![layer], &[], &[ZB1P], 3, 4);
    let sim = simulate_scenario(&timed, SimOptions::default()).unwrap();
    let g = &sim.derivation.order.graph;
    for n in g.node_indices() {
        if let Event::Bwd { half, .. } = g[n] {
            let want = match half {
                Half::Input => 1.5,
                Half::Weight => 0.5,
                Half::Whole => panic!("zb1p runs no whole backward"),
            };
            assert_eq!(sim.durations()[n.index()], want);
        }
    }
}

#[test]
fn split_costs_are_checked() {
    let mut layer = LayerSpec::timed("l", Role::Backbone, 2, 1.0);
    layer.bwd_s = Some(2.0);
    layer.bwd_input_s = Some(1.5);
    layer.bwd_weight_s = Some(1.0);
    let e = mpipe::derive(&scenario(vec![layer.clone()], &[], &[ZB1P], 2, 2)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "rule `layer-cost`: layer 0 (`l`): `bwd_input_s` + `bwd_weight_s` = 2.5 but `bwd_s` = 2: the two halves make the whole backward"
    );
    layer.bwd_weight_s = None;
    layer.bwd_input_s = Some(3.0);
    let e = mpipe::derive(&scenario(vec![layer], &[], &[ZB1P], 2, 2)).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("`bwd_input_s` = 3 is more than the whole backward (2)"),
        "{e}"
    );
}

#[test]
fn freezing_deletes_the_weight_halves_and_keeps_the_input_halves_that_are_gated_on() {
    // ⟨transpose, zb1p⟩: the encoder trainable, the backbone frozen. The backbone still sends
    // gradients upstream (its I halves run) but reduces nothing (no W, no reduce).
    let mut layers = common::vit_llm(2, 4, true);
    layers[1].trainable = false;
    let s = scenario(layers, &[2], &[TRANSPOSE, ZB1P], 2, 4);
    let d = mpipe::derive(&s).unwrap();
    let count = |half: Half, region: usize| {
        d.order
            .graph
            .node_weights()
            .filter(|e| matches!(e, Event::Bwd { half: h, region: r, .. } if *h == half && r.index() == region))
            .count()
    };
    assert_eq!(count(Half::Input, 2), 2 * 4);
    assert_eq!(count(Half::Weight, 2), 0);
    assert_eq!(count(Half::Whole, 1), 4);
    let reduces: Vec<usize> = d
        .order
        .graph
        .node_weights()
        .filter_map(|e| match e {
            Event::DpReduce { region, .. } => Some(region.index()),
            _ => None,
        })
        .collect();
    assert!(reduces.iter().all(|&r| r == 1), "{reduces:?}");
    // Trained, each backbone I has its W, and the forward order does not change.
    let trained = scenario(common::vit_llm(2, 4, true), &[2], &[TRANSPOSE, ZB1P], 2, 4);
    let t = mpipe::derive(&trained).unwrap();
    let forwards = |d: &mpipe::Derivation, r| -> Vec<String> {
        d.order
            .actions(r)
            .iter()
            .filter(|a| a.phase == mpipe::vocab::phase::Phase::Forward)
            .map(|a| a.to_string())
            .collect()
    };
    for r in 0..2 {
        assert_eq!(forwards(&d, r), forwards(&t, r));
    }
    let weights = t
        .order
        .graph
        .node_weights()
        .filter(|e| {
            matches!(
                e,
                Event::Bwd {
                    half: Half::Weight,
                    region,
                    ..
                } if region.index() == 2
            )
        })
        .count();
    assert_eq!(weights, 2 * 4);
}

#[test]
fn activations_are_freed_in_two_parts() {
    // P = 1, M = 1: F [0, 1], I [1, 2], W [2, 3]; 100 bytes saved, 30 % of them only for I.
    let mut layer = LayerSpec::timed("l", Role::Backbone, 1, 1.0);
    layer.activation_bytes = Some(100.0);
    layer.activation_input_share = Some(0.3);
    let s = scenario(vec![layer], &[], &[ZB1P], 1, 1);
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    assert_eq!(
        sim.memory[0].points,
        [[0.0, 0.0], [0.0, 100.0], [2.0, 70.0], [3.0, 0.0]]
    );
}

#[test]
fn hand_written_orders_take_input_and_weight_halves() {
    // P = 2, M = 2, every W at the end.
    let mut s = scenario(uniform(2), &[], &[ZB1P], 2, 2);
    let lists = [
        ["0F0", "0F1", "0I0", "0I1", "0W0", "0W1"],
        ["1F0", "1I0", "1F1", "1I1", "1W0", "1W1"],
    ];
    s.orders = Some(
        lists
            .iter()
            .map(|l| l.iter().map(|a| a.to_string()).collect())
            .collect(),
    );
    assert_eq!(rank_actions(&s, 0), lists[0].join(" "));
    // One layer a stage: 1F0 [1, 2], 1I0 [2, 3], 1F1 [3, 4], 1I1 [4, 5], rank 0's I1 [5, 6]
    // after I0 [3, 4] and the W's [6, 8]; rank 1's W's [5, 7].
    assert_eq!(makespan(&s), 8.0);
    // Any backward may be written whole or as its halves, whatever the schedule's op set: a
    // whole 0B0 in a zero-bubble order, a split 1I1/1W1 in a 1F1B one; a half without its
    // other half is missing an event.
    s.orders = Some(vec![
        vec![
            "0F0".into(),
            "0F1".into(),
            "0B0".into(),
            "0I1".into(),
            "0W1".into(),
        ],
        vec![
            "1F0".into(),
            "1I0".into(),
            "1W0".into(),
            "1F1".into(),
            "1B1".into(),
        ],
    ]);
    let d = mpipe::derive(&s).unwrap();
    assert_eq!(
        d.order
            .steps(0)
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>(),
        ["0F0", "0F1", "0B0", "0I1", "0W1"]
    );
    let mut one = scenario(uniform(2), &[], &[ONE_F_ONE_B], 2, 2);
    one.orders = Some(vec![
        vec!["0F0".into(), "0F1".into(), "0B0".into(), "0I1".into()],
        vec!["1F0".into(), "1B0".into(), "1F1".into(), "1B1".into()],
    ]);
    assert_eq!(
        mpipe::derive(&one).unwrap_err().to_string(),
        "rule `orders`: `orders[0]`: misses `0W1`"
    );
}

#[test]
fn the_zero_bubble_family_refuses_what_pytorch_refuses_with_named_rules() {
    // ⟨zb1p × 2⟩ runs in interleaved 1F1B's rounds.
    let e = mpipe::derive(&scenario(uniform(8), &[4], &[ZB1P, ZB1P], 4, 9)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "rule `interleaved-rounds`: interleaved zero bubble runs microbatches in rounds of M / max(1, ⌊M/P⌋); M = 9 is not a multiple of the 2 rounds that P = 4 gives (try M = 8 or M = 10)"
    );
    let e = mpipe::derive(&scenario(uniform(6), &[2, 4], &[ZBV, ZBV, ZBV], 2, 4)).unwrap_err();
    assert_eq!(e.field(), "schedule");
    assert_eq!(
        e.to_string(),
        "rule `zbv-chunks`: zbv runs exactly 2 Sharded regions (the two arms of the V, as PyTorch's ScheduleZBVZeroBubble); the schedule gives 3"
    );
    let e = mpipe::derive(&scenario(uniform(4), &[2], &[DUALPIPEV, DUALPIPEV], 2, 3)).unwrap_err();
    assert_eq!(e.field(), "microbatches");
    assert_eq!(
        e.to_string(),
        "rule `dualpipev-microbatches`: dualpipev needs at least as many microbatches as stages (M ≥ 2P, as PyTorch's ScheduleDualPipeV): M = 3 < 4"
    );
}

/// Hardware whose overlapped pairs hide `e` of their shorter half.
fn overlapping(e: f64) -> Option<mpipe::scenario::hardware::Hardware> {
    Some(mpipe::scenario::hardware::Hardware {
        fb_overlap: Some(e),
        ..Default::default()
    })
}

#[test]
fn an_overlapped_pair_is_one_slot_of_t_f_plus_t_b_minus_e_min() {
    // P = 1, M = 2, ⟨dualpipev, dualpipev⟩ (stages 0 and 1 on rank 0): t_F = 1, t_B = 2,
    // t_I = t_W = 1, no transfers. Rank 0 runs 0F0 1F0 0F1 1B0 (1F1;0B0)OVERLAP_F_B 1B1 0I1 0W1:
    // 4 forwards, 3 whole backwards and two halves back to back take 12; hiding the shorter
    // half of the pair (e = 1) saves its forward.
    let mut s = scenario(uniform(2), &[1], &[DUALPIPEV, DUALPIPEV], 1, 2);
    assert_eq!(rank_actions(&s, 0), "0F0 1F0 0F1 1B0 1F1 0B0 1B1 0I1 0W1");
    let steps: Vec<String> = mpipe::derive(&s)
        .unwrap()
        .order
        .steps(0)
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(steps[4], "(1F1;0B0)OVERLAP_F_B");
    assert_eq!(makespan(&s), 12.0);
    // The SVG frames the pair and says so in its legend.
    let svg =
        mpipe::report::svg::render("p", &simulate_scenario(&s, SimOptions::default()).unwrap());
    assert!(svg.contains("<title>(1F1;0B0)OVERLAP_F_B</title>"), "{svg}");
    assert!(svg.contains(">overlapped pair (F;B)</text>"));
    s.hardware = overlapping(1.0);
    assert_eq!(makespan(&s), 11.0);
    s.hardware = overlapping(0.5);
    assert_eq!(makespan(&s), 11.5);
    // A hand-written order may pair any forward with a backward; here a 1F1B order, with the
    // pair's halves placed together.
    let mut one = scenario(uniform(2), &[1], &[ONE_F_ONE_B, ONE_F_ONE_B], 1, 2);
    one.orders = Some(vec![
        [
            "0F0",
            "1F0",
            "1B0",
            "0F1",
            "(1F1;0B0)OVERLAP_F_B",
            "1B1",
            "0B1",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect(),
    ]);
    let d = mpipe::derive(&one).unwrap();
    assert_eq!(d.order.pairs.len(), 1);
    assert_eq!(d.order.steps(0)[4].to_string(), "(1F1;0B0)OVERLAP_F_B");
    one.hardware = overlapping(1.0);
    assert_eq!(makespan(&one), 11.0);
    // Bad values of the overlap are refused by name.
    one.hardware = overlapping(1.5);
    assert_eq!(
        mpipe::derive(&one).unwrap_err().to_string(),
        "rule `hardware`: `hardware.fb_overlap` = 1.5 must be between 0 (an overlapped pair's halves back to back) and 1 (the shorter one hidden entirely)"
    );
}

#[test]
fn freezing_a_v_schedule_deletes_exactly_its_weight_halves() {
    // ⟨transpose, zbv, zbv⟩ and ⟨transpose, dualpipev, dualpipev⟩, P = 2, M = 4, the encoder
    // trainable: frozen, the backbone keeps every forward, input half and whole backward (its
    // gradients feed the encoder) and loses exactly its weight halves; the order is the trained
    // one without them.
    for skeleton in [ZBV, DUALPIPEV] {
        let build = |backbone_trainable: bool| {
            let mut layers = common::vit_llm(2, 4, true);
            layers[1].trainable = backbone_trainable;
            mpipe::derive(&scenario(
                layers,
                &[2, 4],
                &[TRANSPOSE, skeleton, skeleton],
                2,
                4,
            ))
            .unwrap()
        };
        let (trained, frozen) = (build(true), build(false));
        let halves = |d: &mpipe::Derivation, half: Half| {
            d.order
                .graph
                .node_weights()
                .filter(
                    |e| matches!(e, Event::Bwd { half: h, region: r, .. } if *h == half && *r > 1.into()),
                )
                .count()
        };
        assert!(halves(&trained, Half::Weight) > 0, "{skeleton}");
        assert_eq!(halves(&frozen, Half::Weight), 0, "{skeleton}");
        for half in [Half::Input, Half::Whole] {
            assert_eq!(halves(&frozen, half), halves(&trained, half), "{skeleton}");
        }
        for rank in 0..2 {
            let without_w: Vec<String> = trained
                .order
                .actions(rank)
                .iter()
                .filter(|a| a.phase != mpipe::vocab::phase::Phase::Weight)
                .map(|a| a.to_string())
                .collect();
            let got: Vec<String> = frozen
                .order
                .actions(rank)
                .iter()
                .map(|a| a.to_string())
                .collect();
            assert_eq!(got, without_w, "{skeleton} rank {rank}");
        }
    }
}
