//! Bidirectional schedules (DualPipe): the model's region and its mirror (the same layers on the
//! ranks in reverse, for the second half of the microbatches). The derived orders equal the
//! reference orders of `tests/fixtures/dualpipe/orders.txt`, written by an independent
//! reimplementation of `deepseek-ai/DualPipe`'s `DualPipe.step` (generator beside it; P = 2..8,
//! M = 2P..4P); the mirror doubles the parameters, reduces with its region, and the rules name
//! what DualPipe refuses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{CHIMERA, DUALPIPE};

/// `P` one-layer stages in one region of `skeleton`.
fn scenario(skeleton: Skeleton, p: usize, m: usize) -> mpipe::Scenario {
    common::scenario(common::uniform(p), &[], &[skeleton], p, m)
}

#[test]
fn dualpipe_is_deepseeks_step() {
    let at = |p, m| scenario(DUALPIPE, p, m);
    assert_eq!(
        common::compare_fixture("dualpipe/orders.txt", "dualpipe", "dualpipe-", at),
        (24, 0)
    );
}

#[test]
fn chimera_is_the_authors_direct_concatenation() {
    let at = |p, m| scenario(CHIMERA, p, m);
    assert_eq!(
        common::compare_fixture("chimera/orders.txt", "chimera", "chimera-", at),
        (16, 76)
    );
    // Where the authors' definition does not reach, a named rule.
    let err = |p: usize, m: usize| mpipe::derive(&scenario(CHIMERA, p, m)).unwrap_err();
    assert_eq!(
        err(4, 6).to_string(),
        "rule `chimera-microbatches`: chimera needs the number of microbatches to be a multiple of 4 (basic units of P microbatches, concatenated); M = 6"
    );
    assert_eq!(err(3, 6).rule(), "chimera-ranks");
}

#[test]
fn dualpipe_refuses_what_deepseek_refuses_by_name() {
    let err = |p: usize, m: usize| mpipe::derive(&scenario(DUALPIPE, p, m)).unwrap_err();
    assert_eq!(
        err(3, 6).to_string(),
        "rule `dualpipe-ranks`: dualpipe needs the number of ranks to be a multiple of 2 (as DeepSeek's DualPipe); P = 3"
    );
    assert_eq!(err(3, 6).field(), "ranks");
    assert_eq!(
        err(4, 9).to_string(),
        "rule `dualpipe-microbatches`: dualpipe needs the number of microbatches to be a multiple of 2 (half of them runs each direction); M = 9"
    );
    assert_eq!(err(4, 9).field(), "microbatches");
    assert_eq!(
        err(4, 6).to_string(),
        "rule `dualpipe-microbatches`: dualpipe needs at least as many microbatches as stages (M ≥ 2P, as DeepSeek's DualPipe): M = 6 < 8"
    );
    // It runs the whole model: no second region beside it.
    let two = common::scenario(common::uniform(8), &[4], &[DUALPIPE, DUALPIPE], 4, 8);
    assert_eq!(
        mpipe::derive(&two).unwrap_err().to_string(),
        "rule `dualpipe-alone`: region 1 is `dualpipe`, which is defined for a model of one region (it runs the whole pipeline in two directions)"
    );
}

#[test]
fn the_mirror_holds_a_second_copy_of_the_parameters_and_reduces_with_its_region() {
    // Stage s's layer holds (s + 1) GB of parameters; rank r holds stage r down and stage
    // P − 1 − r up.
    let p = 4;
    let layers: Vec<_> = (0..p)
        .map(|s| {
            let mut l = mpipe::scenario::layer::LayerSpec::timed(
                &format!("l{s}"),
                mpipe::vocab::role::Role::Backbone,
                1,
                1.0,
            );
            l.param_bytes = Some((s + 1) as f64 * 1e9);
            l
        })
        .collect();
    let mut s = common::scenario(layers, &[], &[DUALPIPE], p, 8);
    s.data_parallel = 3;
    let d = mpipe::derive(&s).unwrap();
    for r in 0..p {
        assert_eq!(
            mpipe::sim::memory::static_bytes(&d.plan, r),
            ((r + 1) + (p - r)) as f64 * 1e9,
            "rank {r}"
        );
    }
    // The region (1) and its mirror (2): the stage's two copies in each of the 3 data-parallel
    // replicas reduce together.
    let members: Vec<(usize, usize)> = d
        .collectives
        .reduces
        .iter()
        .map(|r| (r.region, r.members))
        .collect();
    assert_eq!(members, [(1, 6), (2, 6)]);
    // No seam joins a region to its mirror; each keeps its slab-to-slab hops.
    assert!(d.collectives.seams.is_empty());
    assert_eq!(d.collectives.internal.len(), 2);
    // The scenario's schedule is still one region's.
    assert_eq!(d.plan.schedule(), [DUALPIPE]);
    assert_eq!(d.plan.placement.ranks_of_stages(), [0, 1, 2, 3, 3, 2, 1, 0]);
}

#[test]
fn dualpipe_idles_half_of_1f1b_and_holds_p_plus_one() {
    // t_F = t_I = t_W = 1: DualPipe's (3M + P − 2) against 1F1B's 3(M + P − 1), P + 1
    // microbatches' activations against 1F1B's P.
    for p in [2, 4, 6, 8] {
        for m in (2 * p..=4 * p).step_by(2) {
            let sim = |skeleton| {
                mpipe::tune::pipeline::simulate_scenario(
                    &scenario(skeleton, p, m),
                    Default::default(),
                )
                .unwrap()
            };
            let (dual, one) = (sim(DUALPIPE), sim(mpipe::schedules::ONE_F_ONE_B));
            assert_eq!(dual.makespan_s, (3 * m + p - 2) as f64, "P = {p}, M = {m}");
            assert_eq!(one.makespan_s, (3 * (m + p - 1)) as f64, "P = {p}, M = {m}");
            let a = one.peak_memory_bytes() / p as f64;
            assert_eq!(
                dual.peak_memory_bytes(),
                (p + 1) as f64 * a,
                "P = {p}, M = {m}"
            );
        }
    }
}

#[test]
fn chimera_with_backwards_twice_the_forwards() {
    // t_F = 1, t_B = 2: the makespans the fixture's generator simulated on its own (direct
    // concatenation idles (P − 2)·t_B per unit, more than the paper's (P/2 − 1)·(t_F + t_B)),
    // against 1F1B's 3(M + P − 1).
    for (p, m, chimera, one) in [
        (4, 4, 16.0, 21.0),
        (4, 8, 30.0, 33.0),
        (8, 8, 36.0, 45.0),
        (8, 16, 66.0, 69.0),
    ] {
        let step = |skeleton| {
            mpipe::tune::pipeline::simulate_scenario(&scenario(skeleton, p, m), Default::default())
                .unwrap()
                .makespan_s
        };
        assert_eq!(step(CHIMERA), chimera, "P = {p}, M = {m}");
        assert_eq!(step(mpipe::schedules::ONE_F_ONE_B), one, "P = {p}, M = {m}");
    }
}

#[test]
fn the_mirror_reduces_in_the_simulation_and_reads_as_a_mirror_in_the_derive_json() {
    // With one data-parallel replica the region and its mirror still reduce together: the
    // simulator prices a group of two, not a no-op.
    let mut layer =
        mpipe::scenario::layer::LayerSpec::timed("llm", mpipe::vocab::role::Role::Backbone, 4, 1.0);
    layer.param_bytes = Some(1e9);
    let mut s = common::scenario(vec![layer], &[], &[DUALPIPE], 4, 8);
    s.hardware = Some(mpipe::scenario::hardware::Hardware {
        link_alpha_s: Some(0.25),
        ..Default::default()
    });
    let sim = mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap();
    let d = &sim.derivation;
    assert_eq!(mpipe::sim::cost::reduce_members(&d.plan, 1, 0), 2);
    assert_eq!(mpipe::sim::cost::reduce_members(&d.plan, 2, 0), 2);
    let reduces: Vec<f64> = d
        .order
        .graph
        .node_indices()
        .filter(|&n| {
            matches!(
                d.order.graph.node_weight(n),
                Some(mpipe::graph::event::Event::DpReduce { .. })
            )
        })
        .map(|n| sim.durations()[n.index()])
        .collect();
    assert_eq!(reduces.len(), 8);
    assert!(reduces.iter().all(|&t| t > 0.0), "{reduces:?}");
    // The JSON's cut is the model's (one region: none); the mirror says whose it is.
    let json = serde_json::to_value(mpipe::report::derive::DeriveReport::new("d", d)).unwrap();
    assert_eq!(json["cut"], serde_json::json!([]));
    assert_eq!(json["schedule"], serde_json::json!(["dualpipe"]));
    assert!(json["placement"][0].get("mirror_of").is_none());
    assert_eq!(json["placement"][1]["mirror_of"], 1);
    assert_eq!(
        json["placement"][1]["stages"],
        serde_json::json!([4, 5, 6, 7])
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Drawn from each bidirectional schedule's own domain (P even; DualPipe M even ≥ 2P,
    /// Chimera M a multiple of P), with uneven stages, split backwards of any share, frozen
    /// layers and any overlap: the orders execute, and (max,+), the longest path and the event
    /// simulator agree.
    #[test]
    fn bidirectional_orders_execute_and_the_three_timings_agree(
        chimera in proptest::bool::ANY,
        half_p in 1usize..=3,
        k in 1usize..=3,
        times in proptest::collection::vec((0.1f64..3.0, 0.1f64..6.0, 0.0f64..=1.0), 6),
        trainable in proptest::collection::vec(proptest::bool::ANY, 6),
        overlap in 0.0f64..=1.0,
    ) {
        let p = 2 * half_p;
        let (skeleton, m) = if chimera { (CHIMERA, k * p) } else { (DUALPIPE, 2 * p + 2 * (k - 1)) };
        let layers: Vec<_> = (0..p)
            .map(|i| {
                let (f, b, share) = times[i];
                let mut l = mpipe::scenario::layer::LayerSpec::timed(
                    &format!("l{i}"),
                    mpipe::vocab::role::Role::Backbone,
                    1,
                    f,
                );
                l.bwd_s = Some(b);
                l.bwd_input_s = Some(b * share);
                l.trainable = trainable[i];
                l.activation_bytes = Some(1.0);
                l
            })
            .collect();
        let mut s = common::scenario(layers, &[], &[skeleton], p, m);
        s.hardware = Some(mpipe::scenario::hardware::Hardware {
            fb_overlap: Some(overlap),
            ..Default::default()
        });
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, Default::default())
            .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e}")))?;
        let d = &sim.derivation;
        proptest::prop_assert!(common::executes(d));
        let composed = mpipe::sim::maxplus::composed_completion(&d.order, sim.durations(), d.plan.regions.len());
        proptest::prop_assert_eq!(&composed, &sim.timeline.ends().collect::<Vec<_>>());
        let events = mpipe::sim::engine::simulate_events(&d.order, sim.durations().to_vec(), Default::default());
        proptest::prop_assert_eq!(&events.ends().collect::<Vec<_>>(), &sim.timeline.ends().collect::<Vec<_>>());
        // Each direction's microbatches run on its own stages: the first half on 0..P, the
        // second on the mirror's P..2P.
        for rank in 0..p {
            for a in d.order.actions(rank) {
                let second = usize::from(a.mb) >= m / 2;
                proptest::prop_assert_eq!(a.stage.index() >= p, second, "{}", a);
            }
        }
    }
}

#[test]
fn a_placement_that_does_not_reverse_the_mirror_is_blamed_with_its_fix() {
    // The mirror's stages on the ranks in order (`default`) deadlock both schedules' slots: the
    // error names the field the file wrote and the fix is the schedule's own placement.
    for skeleton in [DUALPIPE, CHIMERA] {
        let mut s = scenario(skeleton, 4, 8);
        s.placement = Some(mpipe::scenario::placement::PlacementSpec::Default);
        let err = mpipe::derive(&s).unwrap_err();
        assert_eq!(err.field(), "placement", "{skeleton}");
        assert!(
            err.to_string().starts_with(
                "rule `deadlock-free`: the order the schedule derives under `placement` default (its slots assume its own placement) deadlocks"
            ),
            "{skeleton}: {err}"
        );
        let fix = err.remedy().unwrap();
        let mut fixed = s.clone();
        fix.edit.apply(&mut fixed);
        assert_eq!(fixed.placement, None, "{skeleton}");
        assert!(mpipe::derive(&fixed).is_ok(), "{skeleton}");
    }
}
