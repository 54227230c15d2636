//! BigMac's nested encoder (`nested`): the backbone's order untouched, encoder work in its idle
//! slots just in time, modality activation memory bounded whatever the number of microbatches,
//! deadlock-free for every owner map, and refused where it is not defined.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;
use common::{scenario, vit_llm};
use mpipe::Scenario;
use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::owner::OwnerSpec;
use mpipe::schedules::{NESTED, ONE_F_ONE_B, TRANSPOSE};
use mpipe::vocab::phase::Phase;
use mpipe::vocab::role::Role;

const P: usize = 4;

/// ⟨encoder, 1f1b⟩: 4 encoder layers (region 1, stages 0–3), 8 backbone layers (stages 4–7).
fn with_encoder(
    skeleton: mpipe::schedules::skeleton::Skeleton,
    m: usize,
    owner: OwnerSpec,
) -> Scenario {
    let mut s = scenario(vit_llm(4, 8, true), &[4], &[skeleton, ONE_F_ONE_B], P, m);
    s.owner = owner;
    s
}

/// Each rank's backbone actions as `(phase, microbatch)`, in order.
fn backbone(s: &Scenario, first_backbone_stage: usize) -> Vec<Vec<(Phase, usize)>> {
    backbone_of(
        &mpipe::derive(s).unwrap_or_else(|e| panic!("{e}")),
        first_backbone_stage,
    )
}

/// The derivation as the simulator runs it: a cost-based owner map chosen, the nested actions
/// placed in real time.
fn tuned(s: &Scenario) -> mpipe::Derivation {
    mpipe::tune::owners::derive_tuned(s, Default::default(), &mut |_| true)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn backbone_of(d: &mpipe::Derivation, first_backbone_stage: usize) -> Vec<Vec<(Phase, usize)>> {
    actions_of_stages(d, first_backbone_stage..usize::MAX)
}

/// Each rank's actions of the stages in `stages` as `(phase, microbatch)`, in order.
fn actions_of_stages(
    d: &mpipe::Derivation,
    stages: std::ops::Range<usize>,
) -> Vec<Vec<(Phase, usize)>> {
    (0..P)
        .map(|r| {
            d.order
                .actions(r)
                .iter()
                .filter(|a| stages.contains(&usize::from(a.stage)))
                .map(|a| (a.phase, usize::from(a.mb)))
                .collect()
        })
        .collect()
}

#[test]
fn the_backbone_order_is_the_same_nested_transposed_or_without_an_encoder() {
    for m in [4, 8, 13] {
        let alone = scenario(
            vec![LayerSpec::timed("llm", Role::Backbone, 8, 1.0)],
            &[],
            &[ONE_F_ONE_B],
            P,
            m,
        );
        let want = backbone(&alone, 0);
        for skeleton in [NESTED, TRANSPOSE] {
            let s = with_encoder(skeleton, m, OwnerSpec::RoundRobin);
            assert_eq!(backbone(&s, P), want, "{skeleton} M={m}");
            // Placed in real time too.
            assert_eq!(backbone_of(&tuned(&s), P), want, "{skeleton} M={m}, tuned");
        }
    }
}

/// Makespan of a derivation as the simulator runs it.
fn makespan(d: mpipe::Derivation) -> f64 {
    mpipe::sim::run::run(d, Default::default()).makespan_s
}

#[test]
fn placed_in_real_time_nested_is_never_slower_than_in_logical_slots() {
    // For light and heavy encoders, with and without a generator, and every kind of owner map:
    // the real-time placement keeps each backbone order and each nested action once, and never
    // lengthens the step the logical placement (`derive`'s) gives.
    let alone = scenario(
        vec![LayerSpec::timed("llm", Role::Backbone, 8, 1.0)],
        &[],
        &[ONE_F_ONE_B],
        P,
        8,
    );
    let want = backbone(&alone, 0);
    let owners = [
        OwnerSpec::RoundRobin,
        OwnerSpec::FirstRank,
        OwnerSpec::Explicit(vec![2, 0, 3, 3, 1, 0, 2, 1]),
        OwnerSpec::GreedySlack,
        OwnerSpec::Optimized,
    ];
    for encoder_s in [0.1, 0.5, 2.0] {
        for generator in [false, true] {
            for owner in &owners {
                let mut s = if generator {
                    with_generator(NESTED, 8, true)
                } else {
                    with_encoder(NESTED, 8, OwnerSpec::RoundRobin)
                };
                s.model.layers[0] = LayerSpec::timed("vit", Role::Encoder, 4, encoder_s);
                s.owner = owner.clone();
                let case = format!("encoder {encoder_s} s, generator {generator}, {owner:?}");
                let placed = tuned(&s);
                // The logical placement of the same owner map.
                let mut logical_plan = placed.plan.clone();
                logical_plan.owner = placed.plan.owner.clone();
                let logical = mpipe::graph::derive::derive_plan(logical_plan, None).unwrap();
                let actions = |d: &mpipe::Derivation| {
                    let mut all: Vec<String> = (0..P)
                        .flat_map(|r| d.order.actions(r))
                        .map(|a| a.to_string())
                        .collect();
                    all.sort();
                    all
                };
                assert_eq!(actions(&placed), actions(&logical), "{case}");
                assert_eq!(actions_of_stages(&placed, P..2 * P), want, "{case}");
                let (placed, logical) = (makespan(placed), makespan(logical));
                assert!(
                    placed <= logical,
                    "{case}: {placed} s placed, {logical} s logical"
                );
            }
        }
    }
}

#[test]
fn with_idle_time_to_fill_nested_costs_only_the_first_encode_and_the_last_encoder_backward() {
    // A last stage five times the others' (layers 1, 1, 1, 5): ranks 0–2 idle most of each
    // 1F1B cycle. An encoder forward of 0.4 s (backward 0.8 s) fits in that idle time, so with
    // an owner map that keeps the busy last rank free of encoder work, the last stage runs
    // exactly 0.4 s later than without the encoder — microbatch 0's encoder forward has to come
    // first — and the step ends 0.8 s after the backbone does (the last microbatch's encoder
    // backward waits for its gradient). Round robin gives the last rank microbatch 7,
    // whose forward cannot wait in its idle warmup (that would hold it from the start) and so
    // delays the last stage by 0.4 s.
    let mut s = scenario(
        vec![
            LayerSpec::timed("vit", Role::Encoder, 4, 0.1),
            LayerSpec::timed("llm", Role::Backbone, 8, 1.0),
        ],
        &[4],
        &[NESTED, ONE_F_ONE_B],
        P,
        8,
    );
    s.slabs = Some(vec![None, Some(vec![1, 1, 1, 5])]);
    let run = |owner: OwnerSpec| {
        let mut s = s.clone();
        s.owner = owner;
        mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap()
    };
    let best = run(OwnerSpec::Optimized);
    let free = best.encoder_free_makespan_s.unwrap();
    assert_eq!(free, 129.0);
    assert!(
        (best.makespan_s - (free + 0.4 + 0.8)).abs() < 1e-9,
        "{}",
        best.makespan_s
    );
    // The bottleneck stage's every action exactly 0.4 s after its time in the same order
    // without the encoder (the others have slack to absorb an encode: they may move more
    // without lengthening the step).
    let order = &best.derivation.order;
    let without = mpipe::sim::encoder_free::without_source(order, best.durations(), 1);
    let encoder_free = mpipe::sim::engine::simulate(order, without, Default::default());
    let mut checked = 0;
    for &n in &order.nodes[P - 1] {
        if let Some(a) = order.graph[n].action()
            && usize::from(a.stage) >= P
        {
            let moved = best.timeline.start_of(n).unwrap() - encoder_free.start_of(n).unwrap();
            assert!((moved - 0.4).abs() < 1e-9, "{a} moved {moved} s");
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
    // The idle-time greedy finds that map too; round robin is 0.4 s slower.
    let greedy = run(OwnerSpec::GreedySlack);
    assert!((greedy.makespan_s - best.makespan_s).abs() < 1e-9);
    let round_robin = run(OwnerSpec::RoundRobin);
    assert!((round_robin.makespan_s - (best.makespan_s + 0.4)).abs() < 1e-9);
}

/// The most encoder activations any rank holds at once (each microbatch's encoder activation
/// is one byte; nothing else takes memory).
fn encoder_peak(skeleton: mpipe::schedules::skeleton::Skeleton, m: usize) -> f64 {
    let mut vit = LayerSpec::timed("vit", Role::Encoder, 4, 0.5);
    vit.activation_bytes = Some(0.25);
    let llm = LayerSpec::timed("llm", Role::Backbone, 8, 1.0);
    let s = scenario(vec![vit, llm], &[4], &[skeleton, ONE_F_ONE_B], P, m);
    let sim = mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap();
    sim.memory.iter().map(|c| c.peak_bytes).fold(0.0, f64::max)
}

#[test]
fn nested_encoder_memory_stays_bounded_while_transposes_grows_with_m() {
    let nested: Vec<f64> = [8, 16, 32, 64].map(|m| encoder_peak(NESTED, m)).to_vec();
    let transpose: Vec<f64> = [8, 16, 32, 64].map(|m| encoder_peak(TRANSPOSE, m)).to_vec();
    // Nested: the same peak whatever M. Transpose: every owned forward first, so a rank holds
    // M / P encoder activations until the cooldown.
    assert!(nested.windows(2).all(|w| w[0] == w[1]), "{nested:?}");
    assert_eq!(transpose, [2.0, 4.0, 8.0, 16.0]);
    assert!(nested[0] <= transpose[0], "{nested:?} {transpose:?}");
}

#[test]
fn every_owner_map_nests_without_deadlock_and_each_encoder_action_once() {
    let m = 8;
    let maps = [
        OwnerSpec::RoundRobin,
        OwnerSpec::FirstRank,
        OwnerSpec::Explicit(vec![3; 8]),
        OwnerSpec::Explicit(vec![2, 0, 3, 3, 1, 0, 2, 1]),
    ];
    for owner in maps {
        let s = with_encoder(NESTED, m, owner.clone());
        let d = mpipe::derive(&s).unwrap_or_else(|e| panic!("{owner:?}: {e}"));
        let plan = &d.plan;
        let mut encoder: Vec<(Phase, usize)> = (0..P)
            .flat_map(|r| d.order.actions(r))
            .filter(|a| usize::from(a.stage) < P)
            .map(|a| (a.phase, usize::from(a.mb)))
            .collect();
        encoder.sort();
        let want: Vec<(Phase, usize)> = [Phase::Forward, Phase::Backward]
            .into_iter()
            .flat_map(|p| (0..m).map(move |mb| (p, mb)))
            .collect();
        assert_eq!(encoder, want, "{owner:?}");
        // Each encoder action runs on its microbatch's owner.
        for r in 0..P {
            for a in d.order.actions(r) {
                if usize::from(a.stage) < P {
                    assert_eq!(plan.owner_of(usize::from(a.mb)), r, "{owner:?} {a}");
                }
            }
        }
        mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap();
        // With a nested generator after the backbone, too.
        let mut generation = with_generator(NESTED, m, true);
        generation.owner = owner.clone();
        mpipe::derive(&generation).unwrap_or_else(|e| panic!("{owner:?} with a generator: {e}"));
    }
}

#[test]
fn an_encoder_forward_runs_just_before_its_output_is_used_and_its_backward_once_its_gradient_is_back()
 {
    // Round robin, M = 8, read off the operator table (one slot per compute action): every
    // encoder forward precedes the backbone's first-stage forward of its microbatch, every
    // encoder backward follows the first stage's backward of it.
    let s = with_encoder(NESTED, 8, OwnerSpec::RoundRobin);
    let d = mpipe::derive(&s).unwrap();
    let table = mpipe::report::table::OperatorTable::new(&d);
    let at = |rank: usize, name: &str| {
        table.ranks[rank]
            .iter()
            .position(|c| c.split(';').any(|x| x == name))
            .unwrap_or_else(|| panic!("{name} not on rank {rank}"))
    };
    for mb in 0..8 {
        let owner = d.plan.owner_of(mb);
        let forward = at(owner, &format!("VF{mb}"));
        let consumed = at(0, &format!("F{mb}"));
        assert!(
            forward < consumed,
            "VF{mb} at {forward}, F{mb} at {consumed}"
        );
        let backward = at(owner, &format!("VB{mb}"));
        let returned = at(0, &format!("B{mb}"));
        assert!(
            backward > returned,
            "VB{mb} at {backward}, B{mb} at {returned}"
        );
    }
}

#[test]
fn nested_is_defined_first_and_last_around_a_backbone_only() {
    // ⟨1f1b, nested, 1f1b⟩: in the middle, between Sharded regions; ⟨nested⟩: no backbone.
    let middle = scenario(
        vec![
            LayerSpec::timed("llm", Role::Backbone, 8, 1.0),
            LayerSpec::timed("mid", Role::Other, 4, 1.0),
            LayerSpec::timed("head", Role::Backbone, 4, 1.0),
        ],
        &[8, 12],
        &[ONE_F_ONE_B, NESTED, ONE_F_ONE_B],
        P,
        8,
    );
    let alone = scenario(
        vec![LayerSpec::timed("vit", Role::Encoder, 4, 1.0)],
        &[],
        &[NESTED],
        P,
        8,
    );
    for (s, region, field) in [(middle, 2, "schedule[1]"), (alone, 1, "schedule[0]")] {
        let e = mpipe::derive(&s).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "rule `nested-position`: region {region} is `nested`, which is defined for the first region (an encoder before the backbone) and the last (a generator after it), around a Sharded backbone"
            )
        );
        assert_eq!(e.field(), field);
    }
}

/// ⟨encoder, 1f1b, nested⟩: 4 encoder layers (stages 0–3), 8 backbone layers (stages 4–7), a
/// 4-layer generator (stages 8–11).
fn with_generator(
    encoder: mpipe::schedules::skeleton::Skeleton,
    m: usize,
    generator_trainable: bool,
) -> Scenario {
    let mut layers = vit_llm(4, 8, true);
    let mut generator = LayerSpec::timed("gen", Role::Generator, 4, 0.5);
    generator.trainable = generator_trainable;
    layers.push(generator);
    scenario(layers, &[4, 12], &[encoder, ONE_F_ONE_B, NESTED], P, m)
}

#[test]
fn a_nested_generator_runs_after_the_last_stages_forward_and_before_its_backward() {
    // ⟨nested, 1f1b, nested⟩ and ⟨transpose, 1f1b, nested⟩ (BigMac's generation designs): the
    // backbone's order is the one it has alone; on its owner, each generator forward follows
    // the last stage's forward of its microbatch, its backward follows it, and the last stage's
    // backward follows that (the table's slots; the last stage is rank 3).
    let m = 8;
    let alone = scenario(
        vec![LayerSpec::timed("llm", Role::Backbone, 8, 1.0)],
        &[],
        &[ONE_F_ONE_B],
        P,
        m,
    );
    for encoder in [NESTED, TRANSPOSE] {
        let s = with_generator(encoder, m, true);
        let d = mpipe::derive(&s).unwrap_or_else(|e| panic!("{encoder}: {e}"));
        assert_eq!(
            actions_of_stages(&d, P..2 * P),
            backbone(&alone, 0),
            "{encoder}"
        );
        let table = mpipe::report::table::OperatorTable::new(&d);
        let at = |rank: usize, name: &str| {
            table.ranks[rank]
                .iter()
                .position(|c| c.split(';').any(|x| x == name))
                .unwrap_or_else(|| panic!("{encoder}: {name} not on rank {rank}"))
        };
        for mb in 0..m {
            let owner = d.plan.owner_of(mb);
            let (f, gf, gb, b) = (
                at(P - 1, &format!("F{mb}")),
                at(owner, &format!("GF{mb}")),
                at(owner, &format!("GB{mb}")),
                at(P - 1, &format!("B{mb}")),
            );
            assert!(
                f < gf && gf < gb && gb < b,
                "{encoder} mb {mb}: {f} {gf} {gb} {b}"
            );
        }
        // Table 2's seam into a Replicated sink: Scatter forward, Gather backward.
        assert!(
            mpipe::report::derive::text("", &d)
                .contains("seam 2→3: forward Scatter, backward Gather"),
            "{encoder}"
        );
        mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap();
    }
}

#[test]
fn a_frozen_generator_keeps_its_forward_and_backward_and_loses_its_reduce() {
    // Lemma 1: a frozen generator still runs its forward (the loss is after it) and its
    // backward (the trainable backbone needs the gradient it sends back); what freezing deletes
    // is exactly its weight-gradient reduce.
    let reduces = |d: &mpipe::Derivation, region: usize| {
        d.order
            .graph
            .node_weights()
            .filter(|e| matches!(e, mpipe::graph::event::Event::DpReduce { region: r, .. } if usize::from(*r) == region))
            .count()
    };
    for encoder in [NESTED, TRANSPOSE] {
        let trained = mpipe::derive(&with_generator(encoder, 8, true)).unwrap();
        let frozen = mpipe::derive(&with_generator(encoder, 8, false)).unwrap();
        for r in 0..P {
            assert_eq!(
                trained.order.actions(r),
                frozen.order.actions(r),
                "{encoder} rank {r}"
            );
        }
        assert_eq!(reduces(&trained, 3), P, "{encoder}");
        assert_eq!(reduces(&frozen, 3), 0, "{encoder}");
        assert_eq!(reduces(&trained, 1), reduces(&frozen, 1), "{encoder}");
    }
}

#[test]
fn a_frozen_nested_encoder_loses_exactly_its_backwards_and_reduce() {
    // Lemma 1: the encoder is the first region, so frozen it needs no backward at all (nothing
    // upstream waits for its gradient) and no reduce; the backbone's order is unchanged.
    let build = |trainable: bool| {
        let mut layers = vit_llm(4, 8, trainable);
        layers[1].trainable = true;
        mpipe::derive(&scenario(layers, &[4], &[NESTED, ONE_F_ONE_B], P, 8)).unwrap()
    };
    let (trained, frozen) = (build(true), build(false));
    for r in 0..P {
        let without_encoder_backwards: Vec<_> = trained
            .order
            .actions(r)
            .into_iter()
            .filter(|a| !(usize::from(a.stage) < P && a.phase.is_backward()))
            .collect();
        assert_eq!(
            frozen.order.actions(r),
            without_encoder_backwards,
            "rank {r}"
        );
    }
    let reduces = |d: &mpipe::Derivation| {
        d.order
            .graph
            .node_weights()
            .filter(|e| matches!(e, mpipe::graph::event::Event::DpReduce { region, .. } if usize::from(*region) == 1))
            .count()
    };
    assert_eq!((reduces(&trained), reduces(&frozen)), (P, 0));
}
