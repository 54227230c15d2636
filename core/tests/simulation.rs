//! The simulator reproduces the closed forms exactly (uniform stages, free communication), the
//! transposed encoder's warmup windows and spill, the paper's trend, and memory lifetimes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::scenario;
use mpipe::Scenario;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B, TRANSPOSE};
use mpipe::sim::engine::SimOptions;
use mpipe::sim::run::Simulation;
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::role::Role;

const TF: f64 = 1.0;
const TB: f64 = 2.0;

fn layer(name: &str, role: Role, count: usize, fwd: f64, bwd: f64) -> LayerSpec {
    let mut l = LayerSpec::timed(name, role, count, fwd);
    l.bwd_s = Some(bwd);
    l
}

/// `P·v` one-layer stages of `t_f`, `t_b`.
fn uniform(skeleton: Skeleton, p: usize, m: usize, v: usize) -> Scenario {
    let cut: Vec<usize> = (1..v).map(|c| c * p).collect();
    scenario(
        vec![layer("l", Role::Backbone, p * v, TF, TB)],
        &cut,
        &vec![skeleton; v],
        p,
        m,
    )
}

fn sim(s: &Scenario) -> Simulation {
    simulate_scenario(s, SimOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn gpipe_and_1f1b_makespan_is_m_plus_p_minus_1_stage_times() {
    for skeleton in [GPIPE, ONE_F_ONE_B] {
        for p in 1..=6 {
            for m in 1..=10 {
                let s = sim(&uniform(skeleton, p, m, 1));
                let expected = (m + p - 1) as f64 * (TF + TB);
                assert_eq!(s.makespan_s, expected, "{skeleton} P={p} M={m}");
                for r in &s.ranks {
                    assert_eq!(
                        r.bubble_s,
                        (p - 1) as f64 * (TF + TB),
                        "{skeleton} P={p} M={m} rank {}",
                        r.rank
                    );
                    assert_eq!(r.busy_s, m as f64 * (TF + TB));
                    let b = r.bubble;
                    assert_eq!(
                        b.warmup_s + b.steady_s + b.cooldown_s + b.comm_s,
                        r.bubble_s
                    );
                    assert_eq!(b.comm_s, 0.0);
                }
                let fraction = (p - 1) as f64 / (m + p - 1) as f64;
                assert!((s.bubble_fraction - fraction).abs() < 1e-12);
                assert!((s.utilisation + s.bubble_fraction - 1.0).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn a_per_action_overhead_lengthens_every_compute_action() {
    // `hardware.action_overhead_s` = o: every forward and backward lasts its time plus o, so
    // GPipe and 1F1B take (M + P − 1)(t_F + t_B + 2o); a negative one is refused by name.
    let o = 0.25;
    for skeleton in [GPIPE, ONE_F_ONE_B] {
        for (p, m) in [(2, 4), (4, 8)] {
            let mut s = uniform(skeleton, p, m, 1);
            s.hardware = Some(mpipe::scenario::hardware::Hardware {
                action_overhead_s: Some(o),
                ..Default::default()
            });
            let expected = (m + p - 1) as f64 * (TF + TB + 2.0 * o);
            assert_eq!(sim(&s).makespan_s, expected, "{skeleton} P={p} M={m}");
        }
    }
    let mut s = uniform(GPIPE, 2, 2, 1);
    s.hardware = Some(mpipe::scenario::hardware::Hardware {
        action_overhead_s: Some(-1.0),
        ..Default::default()
    });
    assert_eq!(
        mpipe::derive(&s).unwrap_err().to_string(),
        "rule `hardware`: `hardware.action_overhead_s` = -1 must be a finite number ≥ 0"
    );
}

#[test]
fn one_f_one_b_warmup_bubble_is_r_forwards() {
    // Rank r waits r forwards before its first forward, and the mirror image at the end.
    let s = sim(&uniform(ONE_F_ONE_B, 4, 8, 1));
    for r in &s.ranks {
        assert_eq!(r.bubble.warmup_s, r.rank as f64 * TF, "rank {}", r.rank);
    }
}

#[test]
fn interleaved_makespan_is_v_m_stage_times_plus_p_minus_1() {
    for p in 2..=4 {
        for v in 2..=3 {
            for k in 1..=3 {
                let m = k * p;
                let s = sim(&uniform(ONE_F_ONE_B, p, m, v));
                let expected = (v * m) as f64 * (TF + TB) + (p - 1) as f64 * (TF + TB);
                assert_eq!(s.makespan_s, expected, "P={p} v={v} M={m}");
            }
        }
    }
}

/// In-flight activations (in units of one stage's activation) at the peak, per rank.
fn peak_microbatches(skeleton: Skeleton, p: usize, m: usize) -> Vec<f64> {
    let mut l = layer("l", Role::Backbone, p, TF, TB);
    l.activation_bytes = Some(1000.0);
    let s = sim(&scenario(vec![l], &[], &[skeleton], p, m));
    s.memory.iter().map(|c| c.peak_bytes / 1000.0).collect()
}

#[test]
fn peak_activations_are_min_p_minus_r_and_m_for_1f1b_and_m_for_gpipe() {
    for p in 1..=5 {
        for m in 1..=9 {
            let one = peak_microbatches(ONE_F_ONE_B, p, m);
            let expected: Vec<f64> = (0..p).map(|r| (p - r).min(m) as f64).collect();
            assert_eq!(one, expected, "1F1B P={p} M={m}");
            assert_eq!(
                peak_microbatches(GPIPE, p, m),
                vec![m as f64; p],
                "GPipe P={p} M={m}"
            );
        }
    }
}

/// ViT encoder (`enc_layers` of `enc_fwd` each) + `p` backbone stages, transposed.
fn mpipe(p: usize, m: usize, enc_fwd: f64, owner: mpipe::scenario::owner::OwnerSpec) -> Scenario {
    let mut s = scenario(
        vec![
            layer("vit", Role::Encoder, 1, enc_fwd, 2.0 * enc_fwd),
            layer("llm", Role::Backbone, p, TF, TB),
        ],
        &[1],
        &[TRANSPOSE, ONE_F_ONE_B],
        p,
        m,
    );
    s.owner = owner;
    s
}

#[test]
fn warmup_window_is_r_forwards_and_spill_is_the_overflow() {
    let (p, m) = (4, 8);
    let s = sim(&mpipe(
        p,
        m,
        0.75,
        mpipe::scenario::owner::OwnerSpec::RoundRobin,
    ));
    for r in &s.ranks {
        let w = r.rank as f64 * TF;
        assert_eq!(r.warmup_window_s, Some(w));
        // Round robin: each rank owns two microbatches of 0.75 s.
        assert_eq!(r.encoder_work_s, Some(1.5));
        assert_eq!(r.spill_s, Some((1.5 - w).max(0.0)));
    }
    // Rank 0 must encode before its first backbone forward: 1.5 s later than without the encoder.
    assert_eq!(s.ranks[0].simulated_extra_s, Some(1.5));
    assert_eq!(
        s.encoder_free_makespan_s,
        Some((m + p - 1) as f64 * (TF + TB))
    );
}

/// A rank that owns no encodes printed its encoder work as `-0.000 s` (JSON `-0.0`): an empty
/// f64 sum is −0.0 (issue 25).
#[test]
fn a_rank_that_owns_no_encodes_has_zero_encoder_work_not_minus_zero() {
    let s = sim(&mpipe(
        4,
        8,
        0.75,
        mpipe::scenario::owner::OwnerSpec::Explicit(vec![1, 2, 3, 1, 2, 3, 1, 2]),
    ));
    let work = s.ranks[0].encoder_work_s.unwrap();
    assert_eq!(work, 0.0);
    assert!(work.is_sign_positive(), "{work}");
    let text = mpipe::report::simulate::text("own", &s, None);
    assert!(!text.contains("-0.000"), "{text}");
}

/// Under a nested encoder the table reported 6 s of "spill" for rank 0 and the chart drew red
/// "encoder spill" boxes (issue 25, item 6): spill is transpose's concept. A nested encoder has
/// no spill; how much it delays the backbone stays, as `sim.extra`.
#[test]
fn a_nested_encoder_has_no_spill_only_its_delay_of_the_backbone() {
    let sample = |file: &str| {
        let path = format!("{}/../samples/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        sim(&Scenario::from_json_str(&text, &path).unwrap())
    };
    for file in ["mllm-generation.json", "mllm-understanding.json"] {
        let s = sample(file);
        assert!(s.ranks.iter().all(|r| r.spill_s.is_none()), "{file}");
        assert!(
            s.ranks.iter().any(|r| r.simulated_extra_s.unwrap() > 0.0),
            "{file}"
        );
        let scene = mpipe::view::scene::Scene::new(&s);
        assert!(scene.lanes.iter().all(|l| l.spill.is_none()), "{file}");
        let svg = mpipe::report::svg::render(file, &s);
        assert!(!svg.contains("encoder spill"), "{file}");
    }
    // Transpose keeps its spill and draws it.
    let s = sample("mpipe-vit-llm.json");
    assert!(s.ranks.iter().all(|r| r.spill_s.is_some()));
}

#[test]
fn without_a_transposed_encoder_the_encoder_fields_are_absent() {
    let s = sim(&uniform(ONE_F_ONE_B, 2, 2, 1));
    assert_eq!(s.ranks[0].warmup_window_s, None);
    assert_eq!(s.ranks[0].spill_s, None);
    assert_eq!(s.encoder_free_makespan_s, None);
}

/// The paper's comparison on `P = 4` ranks, `M = 8`: a frozen encoder of `enc` seconds forward
/// and a 12-layer backbone either as the baseline — the encoder as its own first stage (rank 0
/// holds only the encoder, ranks 1–3 four backbone layers each, via explicit `slabs`) — or as
/// Mpipe ⟨transpose, 1f1b⟩ with the backbone on all four ranks (three layers each) and the
/// paper's `greedy_slack` owner map. Returns (baseline − Mpipe makespan, max spill).
fn gain_over_encoder_stage(enc: f64) -> (f64, f64) {
    let (p, m) = (4, 8);
    let mut vit = layer("vit", Role::Encoder, 1, enc, 2.0 * enc);
    vit.trainable = false;
    let llm = layer("llm", Role::Backbone, 12, TF, TB);
    let mut baseline = scenario(vec![vit.clone(), llm.clone()], &[], &[ONE_F_ONE_B], p, m);
    baseline.slabs = Some(vec![Some(vec![1, 4, 4, 4])]);
    let mut transposed = scenario(vec![vit, llm], &[1], &[TRANSPOSE, ONE_F_ONE_B], p, m);
    transposed.owner = mpipe::scenario::owner::OwnerSpec::GreedySlack;
    let base = sim(&baseline);
    let ours = sim(&transposed);
    let spill = ours
        .ranks
        .iter()
        .filter_map(|r| r.spill_s)
        .fold(0.0, f64::max);
    (base.makespan_s - ours.makespan_s, spill)
}

#[test]
fn transpose_gains_more_as_the_encoder_grows_until_it_spills() {
    // Warmup windows of the 3-layer backbone stages are w_r = 3·r, so the greedy hides eight
    // encodes while they fit in ranks 1–3's windows. We stay below e = 4 s, where the baseline's
    // encoder stage would become its bottleneck (its backbone stages take 4 s).
    let sweep: Vec<(f64, f64, f64)> = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
        .iter()
        .map(|&e| {
            let (gain, spill) = gain_over_encoder_stage(e);
            (e, gain, spill)
        })
        .collect();
    let slope = |a: &(f64, f64, f64), b: &(f64, f64, f64)| (b.1 - a.1) / (b.0 - a.0);
    let hidden: Vec<_> = sweep.iter().filter(|x| x.2 == 0.0).collect();
    let spilled: Vec<_> = sweep.iter().filter(|x| x.2 > 0.0).collect();
    assert!(hidden.len() >= 3 && spilled.len() >= 3, "{sweep:?}");
    // While every E_r ≤ w_r the encoder is free: the gain grows with the encoder's share …
    let hidden_slopes: Vec<f64> = hidden.windows(2).map(|w| slope(w[0], w[1])).collect();
    assert!(hidden_slopes.iter().all(|&s| s > 0.0), "{sweep:?}");
    // … and once E_r > w_r the spill is exposed and each extra second of encoder gains less.
    let spill_slopes: Vec<f64> = spilled.windows(2).map(|w| slope(w[0], w[1])).collect();
    let worst_hidden = hidden_slopes.iter().copied().fold(f64::MAX, f64::min);
    let spill_slope = slope(spilled[0], spilled[spilled.len() - 1]);
    assert!(
        spill_slope < worst_hidden,
        "{sweep:?}: {spill_slopes:?} vs {hidden_slopes:?}"
    );
}

/// Bytes on the curve at time `t` (the value after every change at or before `t`).
fn bytes_at(curve: &mpipe::sim::memory::MemoryCurve, t: f64) -> f64 {
    curve
        .points
        .iter()
        .take_while(|p| p[0] <= t)
        .last()
        .map_or(0.0, |p| p[1])
}

#[test]
fn a_trainable_transposed_encoder_holds_its_activations_across_the_backbone_span() {
    for trainable in [true, false] {
        let mut vit = layer("vit", Role::Encoder, 1, 0.5, 1.0);
        vit.trainable = trainable;
        vit.activation_bytes = Some(1e6);
        vit.output_bytes = Some(1e3);
        let s = sim(&scenario(
            vec![vit, layer("llm", Role::Backbone, 4, TF, TB)],
            &[1],
            &[TRANSPOSE, ONE_F_ONE_B],
            4,
            8,
        ));
        for (r, curve) in s.memory.iter().enumerate() {
            let (first, last) = mpipe::sim::metrics::wavefront_span(
                &s.derivation.plan,
                &s.derivation.order,
                &s.timeline,
                r,
            )
            .unwrap();
            // Just before the rank's last backbone event ends, inside the backbone span.
            let probe = last - 1e-9;
            if trainable {
                // Both owned encodes (round robin, M = 2P) stay live until their cooldown backward.
                assert_eq!(bytes_at(curve, first), 2e6, "rank {r}");
                assert_eq!(bytes_at(curve, probe), 2e6, "rank {r}");
                assert_eq!(curve.peak_bytes, 2e6);
            } else {
                // A frozen encoder keeps only its output until the first backbone stage read it.
                assert_eq!(bytes_at(curve, probe), 0.0, "rank {r}");
                assert!(curve.peak_bytes <= 2e3, "rank {r}: {}", curve.peak_bytes);
            }
        }
    }
}

#[test]
fn static_memory_counts_slabs_replicas_and_the_state_factor() {
    let mut vit = layer("vit", Role::Encoder, 2, 0.5, 1.0);
    vit.param_bytes = Some(10.0);
    let mut llm = layer("llm", Role::Backbone, 4, TF, TB);
    llm.param_bytes = Some(100.0);
    let mut s = scenario(vec![vit, llm], &[2], &[TRANSPOSE, ONE_F_ONE_B], 2, 2);
    s.static_memory_factor = Some(8.0);
    s.hardware = Some(mpipe::scenario::hardware::Hardware {
        memory_bytes: Some(1700.0),
        ..Default::default()
    });
    let out = sim(&s);
    // Every rank holds the whole encoder replica (2 × 10) and two backbone layers (2 × 100), × 8.
    for c in &out.memory {
        assert_eq!(c.static_bytes, 8.0 * 220.0);
        assert!(c.over_capacity);
    }
    assert!(
        out.ranks
            .iter()
            .all(|r| r.over_capacity && r.peak_memory_bytes == 1760.0)
    );
}

#[test]
fn a_cancellable_simulation_reports_progress_and_stops_when_told() {
    use mpipe::tune::pipeline::{SimulationError, simulate_scenario_cancellable};
    let s = uniform(ONE_F_ONE_B, 4, 8, 1);
    let mut seen = Vec::new();
    let sim = simulate_scenario_cancellable(&s, SimOptions::default(), &mut |f| {
        seen.push(f);
        true
    })
    .unwrap();
    assert_eq!(
        sim.makespan_s,
        simulate_scenario(&s, SimOptions::default())
            .unwrap()
            .makespan_s
    );
    assert_eq!(seen.first(), Some(&0.0));
    assert_eq!(seen.last(), Some(&1.0));
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    // Told to stop at its third question, it stops there and says so.
    let mut asked = 0;
    let stopped = simulate_scenario_cancellable(&s, SimOptions::default(), &mut |_| {
        asked += 1;
        asked < 3
    });
    assert_eq!(stopped.err(), Some(SimulationError::Cancelled));
    assert_eq!(asked, 3);
}

/// What a weight half holds (`hardware.weight_transient_bytes_per_param_byte`): at most, its
/// stage's parameter bytes times the factor (the larger of that and the workspace; how it
/// builds up within the half is the next test's); a whole backward does not hold it. With activations of one byte and no other
/// memory, each rank's peak is exactly the transient (plus the few activation bytes held then,
/// at most `P`), and it is gone with the factor at 0 or under 1F1B.
#[test]
fn a_weight_half_holds_its_stages_weight_gradients_while_it_runs() {
    let p = 3;
    let with = |skeleton: Skeleton, factor: f64, workspace: f64| {
        let mut l = layer("l", Role::Backbone, p, TF, TB);
        l.activation_bytes = Some(1.0);
        l.param_bytes = Some(1e6);
        l.workspace_bytes = Some(workspace);
        let mut s = scenario(vec![l], &[], &[skeleton], p, 6);
        s.static_memory_factor = Some(0.0);
        s.hardware = Some(mpipe::scenario::hardware::Hardware {
            weight_transient_bytes_per_param_byte: Some(factor),
            ..Default::default()
        });
        sim(&s)
            .memory
            .iter()
            .map(|c| c.peak_bytes)
            .collect::<Vec<f64>>()
    };
    for peak in with(mpipe::schedules::ZB1P, 2.5, 1e3) {
        assert!((2.5e6..=2.5e6 + p as f64).contains(&peak), "{peak}");
    }
    // The workspace when it is the larger.
    for peak in with(mpipe::schedules::ZB1P, 2.5, 4e6) {
        assert!((4e6..=4e6 + p as f64).contains(&peak), "{peak}");
    }
    for peak in with(ONE_F_ONE_B, 2.5, 1e3) {
        assert!((1e3..=1e3 + p as f64).contains(&peak), "{peak}");
    }
}

/// How a weight half holds its gradients: made as it runs — half of the transient from its
/// start, all of it from its middle, to its end (PyTorch's weight half computes one parameter
/// group's gradients after another and adds them to `.grad` when it ends: measured, two 4.2 MB
/// steps a half on the seven-schedule runs) — except a stage's first of the step where the
/// step's gradient buffers are made: its gradients become them (`.grad` assigned, not added
/// to), so it holds nothing beside them. Exact levels with nothing else held (no activation
/// bytes, no workspace, no static bytes).
#[test]
fn a_weight_half_makes_its_gradients_as_it_runs_and_the_first_assigns_them() {
    use mpipe::graph::event::Event;
    use mpipe::vocab::phase::Half;
    let p = 3;
    // (step gradient buffers per parameter byte, workspace bytes) → each rank's levels a quarter
    // and three quarters into its first and its later weight halves.
    let check = |buffers: f64, workspace: f64, first: (f64, f64), later: (f64, f64)| {
        let mut l = layer("l", Role::Backbone, p, TF, TB);
        l.activation_bytes = Some(0.0);
        l.param_bytes = Some(1e6);
        l.workspace_bytes = Some(workspace);
        let mut s = scenario(vec![l], &[], &[mpipe::schedules::ZB1P], p, 6);
        s.static_memory_factor = Some(0.0);
        s.hardware = Some(mpipe::scenario::hardware::Hardware {
            weight_transient_bytes_per_param_byte: Some(1.0),
            step_grad_bytes_per_param_byte: Some(buffers),
            ..Default::default()
        });
        let s = sim(&s);
        let level = |rank: usize, t: f64| {
            let points = &s.memory[rank].points;
            points
                .iter()
                .take_while(|q| q[0] <= t)
                .last()
                .map_or(0.0, |q| q[1])
        };
        for rank in 0..p {
            let mut weights: Vec<(f64, f64)> = s
                .derivation
                .order
                .graph
                .node_indices()
                .filter(|&n| {
                    matches!(s.derivation.order.graph.node_weight(n),
                        Some(&Event::Bwd { rank: r, half: Half::Weight, .. }) if r.index() == rank)
                })
                .map(|n| s.timeline.span_of(n).unwrap())
                .collect();
            weights.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(weights.len(), 6);
            // Without a workspace nothing is held before the first weight half (no
            // activations; an input half holds its workspace).
            if workspace == 0.0 {
                assert_eq!(level(rank, weights[0].0 - 1e-9), 0.0, "rank {rank}");
            }
            for (k, &(start, end)) in weights.iter().enumerate() {
                let (early, late) = (
                    start + (end - start) / 4.0,
                    start + 3.0 * (end - start) / 4.0,
                );
                let want = if k == 0 { first } else { later };
                assert_eq!(
                    (level(rank, early), level(rank, late)),
                    want,
                    "rank {rank}, half {k}, buffers {buffers}, workspace {workspace}"
                );
            }
        }
    };
    // Buffers of 1e6: the first half's gradients are them; a later half holds half its
    // transient early, all of it late, beside them.
    check(1.0, 0.0, (1e6, 1e6), (1.5e6, 2e6));
    // Buffers of half the parameters and a workspace of 2e5: the first half holds the workspace
    // and what its gradients exceed the buffers by (3e5 beyond the workspace, half of it early);
    // a later one the workspace and the rest of its 1e6 (8e5), half early.
    check(
        0.5,
        2e5,
        (0.5e6 + 2e5 + 1.5e5, 0.5e6 + 2e5 + 3e5),
        (0.5e6 + 2e5 + 4e5, 1.5e6),
    );
}

/// The first stage's split backward run whole in its weight half (`hardware.first_stage_backward`:
/// `in_weight`, PyTorch's pipelining, whose first stage has no input gradient to compute): under
/// ZB1P its input halves take no time and hold nothing, its weight halves take the whole
/// backward's time and hold its workspace rather than the weight halves' transient. The other
/// stages' halves are as before (each half of the backward, the transient held by the weight
/// half), and so is every half with the field at its default (`split`).
#[test]
fn the_first_stages_split_backward_runs_whole_in_its_weight_half_under_in_weight() {
    use mpipe::graph::event::Event;
    use mpipe::scenario::hardware::{FirstStageBackward, Hardware};
    use mpipe::vocab::phase::Half;
    let p = 3;
    let run = |first_stage: Option<FirstStageBackward>| {
        let mut l = layer("l", Role::Backbone, p, TF, TB);
        l.activation_bytes = Some(1.0);
        l.param_bytes = Some(1e6);
        l.workspace_bytes = Some(4e5);
        let mut s = scenario(vec![l], &[], &[mpipe::schedules::ZB1P], p, 6);
        s.static_memory_factor = Some(0.0);
        s.hardware = Some(Hardware {
            weight_transient_bytes_per_param_byte: Some(1.0),
            first_stage_backward: first_stage,
            ..Default::default()
        });
        sim(&s)
    };
    for first_stage in [
        None,
        Some(FirstStageBackward::Split),
        Some(FirstStageBackward::InWeight),
    ] {
        let in_weight = first_stage == Some(FirstStageBackward::InWeight);
        let s = run(first_stage);
        let mut halves = 0;
        for (i, e) in s.derivation.order.graph.node_weights().enumerate() {
            if let Event::Bwd { stage, half, .. } = *e {
                let want = match (in_weight && stage.index() == 0, half) {
                    (_, Half::Whole) => TB,
                    (true, Half::Input) => 0.0,
                    (true, Half::Weight) => TB,
                    (false, _) => TB / 2.0,
                };
                assert_eq!(s.durations()[i], want, "{first_stage:?} {e:?}");
                halves += 1;
            }
        }
        assert_eq!(halves, 2 * p * 6);
        // Rank 0's peak: the workspace of its whole-in-weight halves (a few activation bytes
        // beside it), else the weight halves' transient, as every other rank's.
        let peaks: Vec<f64> = s.memory.iter().map(|c| c.peak_bytes).collect();
        for (rank, peak) in peaks.iter().enumerate() {
            let held = if in_weight && rank == 0 { 4e5 } else { 1e6 };
            assert!(
                (held..=held + p as f64).contains(peak),
                "{first_stage:?} {peaks:?}"
            );
        }
    }
}

/// The same on one rank, one microbatch (`F`, `I`, `W`), bytes read off the curve: the forward
/// saves `a`, half of it only the input half needs. Split, the input half frees that half at its
/// end and the step holds `a/2` until the weight half ends; under `in_weight` the input half frees
/// nothing and the step holds `a` until then. With full recomputation the activations are made
/// again by the backward's first phase: the input half split, the weight half under `in_weight`,
/// which then holds them (and its time the forward's rerun: `t_f + t_b`).
#[test]
fn under_in_weight_the_first_stages_weight_half_frees_and_recomputes_what_its_input_half_did() {
    use mpipe::scenario::hardware::{FirstStageBackward, Hardware};
    let a = 1e5;
    let run = |in_weight: bool, recompute: bool| {
        let mut l = layer("l", Role::Backbone, 1, TF, TB);
        l.activation_bytes = Some(a);
        l.activation_input_share = Some(0.5);
        if recompute {
            l.recompute = Some(mpipe::scenario::layer::Recompute::Full);
        }
        let mut s = scenario(vec![l], &[], &[mpipe::schedules::ZB1P], 1, 1);
        s.static_memory_factor = Some(0.0);
        s.hardware = Some(Hardware {
            first_stage_backward: in_weight.then_some(FirstStageBackward::InWeight),
            ..Default::default()
        });
        let sim = sim(&s);
        let half = |code: &str| {
            let i = common::first_of_phase(&sim, code);
            (sim.timeline.start[i], sim.durations()[i])
        };
        let (input, weight) = (half("I"), half("W"));
        // The level the curve holds once the input half has ended.
        let at = input.0 + input.1;
        let level = sim.memory[0]
            .points
            .iter()
            .rev()
            .find(|p| p[0] <= at)
            .unwrap()[1];
        (input.1, weight.1, level, sim.memory[0].peak_bytes)
    };
    assert_eq!(run(false, false), (TB / 2.0, TB / 2.0, a / 2.0, a));
    assert_eq!(run(true, false), (0.0, TB, a, a));
    // Recomputed: the forward keeps nothing on the first stage (its input is the model's), the
    // backward's first phase reruns the forward and makes `a` again — the weight half under
    // `in_weight` — and the peak is that one microbatch's `a` either way.
    let (i, w, _, peak) = run(true, true);
    assert_eq!((i, w), (0.0, TF + TB));
    let (si, sw, _, split_peak) = run(false, true);
    assert_eq!((si, sw), (TF + TB / 2.0, TB / 2.0));
    assert_eq!((peak, split_peak), (a, a));
}

/// Full recomputation (`"recompute": "full"`): 1F1B of uniform one-layer stages runs
/// `(M + P − 1)(2t_f + t_b)` — each backward runs its forward again first — and holds, instead
/// of `min(P − r, M)` microbatches' activations, that many stage inputs (the previous stage's
/// output; rank 0's input is not modelled) plus one microbatch's activations made again while a
/// backward runs.
#[test]
fn full_recomputation_costs_a_forward_per_backward_and_keeps_only_stage_inputs() {
    for p in 1..=4 {
        for m in 1..=8 {
            let mut l = layer("l", Role::Backbone, p, TF, TB);
            l.activation_bytes = Some(1000.0);
            l.output_bytes = Some(10.0);
            l.recompute = Some(mpipe::scenario::layer::Recompute::Full);
            let s = sim(&scenario(vec![l], &[], &[ONE_F_ONE_B], p, m));
            let want = (m + p - 1) as f64 * (2.0 * TF + TB);
            assert!(
                (s.makespan_s - want).abs() < 1e-9,
                "P={p} M={m}: {}",
                s.makespan_s
            );
            let peaks: Vec<f64> = s.memory.iter().map(|c| c.peak_bytes).collect();
            let expected: Vec<f64> = (0..p)
                .map(|r| {
                    let inputs = if r == 0 { 0 } else { (p - r).min(m) };
                    1000.0 + 10.0 * inputs as f64
                })
                .collect();
            assert_eq!(peaks, expected, "P={p} M={m}");
        }
    }
}

/// Selective recomputation (`"recompute": "selective"`, share `d` of the activations dropped,
/// share `c` of the forward re-run): 1F1B of uniform one-layer stages runs
/// `(M + P − 1)(t_f + c·t_f + t_b)`, and rank `r` peaks at `(k(1 − d) + d)·a` with
/// `k = min(P − r, M)`: `k` microbatches' kept part, and the dropped part of the one whose
/// backward made it again.
#[test]
fn selective_recomputation_reruns_its_share_and_keeps_the_rest() {
    let (d, c, a) = (0.75, 0.25, 1024.0);
    for p in 1..=4 {
        for m in 1..=8 {
            let mut l = layer("l", Role::Backbone, p, TF, TB);
            l.activation_bytes = Some(a);
            l.recompute = Some(mpipe::scenario::layer::Recompute::Selective);
            l.recompute_activation_share = Some(d);
            l.recompute_cost_share = Some(c);
            let s = sim(&scenario(vec![l], &[], &[ONE_F_ONE_B], p, m));
            let want = (m + p - 1) as f64 * (TF + c * TF + TB);
            assert!(
                (s.makespan_s - want).abs() < 1e-9,
                "P={p} M={m}: {}",
                s.makespan_s
            );
            let peaks: Vec<f64> = s.memory.iter().map(|c| c.peak_bytes).collect();
            let expected: Vec<f64> = (0..p)
                .map(|r| ((p - r).min(m) as f64 * (1.0 - d) + d) * a)
                .collect();
            assert_eq!(peaks, expected, "P={p} M={m}");
            // Less what recomputation made again, each rank holds its kept part alone.
            for (r, curve) in s.memory.iter().enumerate() {
                let kept = curve.with_part(&curve.recomputed_points, -1.0);
                let peak = kept.iter().map(|p| p[1]).fold(0.0, f64::max);
                assert_eq!(
                    peak,
                    (p - r).min(m) as f64 * (1.0 - d) * a,
                    "P={p} M={m} r={r}"
                );
            }
        }
    }
}

/// A layer whose shares do not make a selective recomputation is refused, naming the field.
#[test]
fn recomputation_shares_are_checked() {
    let with = |recompute, activation: Option<f64>, cost: Option<f64>| {
        let mut l = layer("l", Role::Backbone, 2, TF, TB);
        l.recompute = recompute;
        l.recompute_activation_share = activation;
        l.recompute_cost_share = cost;
        mpipe::algebra::model::expand(&l)
            .err()
            .map(|e| e.to_string())
    };
    use mpipe::scenario::layer::Recompute::{Full, Selective};
    assert_eq!(with(Some(Selective), Some(0.5), Some(0.2)), None);
    assert_eq!(
        with(Some(Selective), Some(0.5), None).as_deref(),
        Some(
            "`recompute: selective` needs `recompute_activation_share` (the share of the activations dropped) and `recompute_cost_share` (the share of the forward re-run)"
        )
    );
    assert_eq!(
        with(Some(Full), None, Some(0.2)).as_deref(),
        Some("`recompute_cost_share` is given but `recompute` is not `selective`")
    );
    assert_eq!(
        with(Some(Selective), Some(1.5), Some(0.2)).as_deref(),
        Some("`recompute_activation_share` must be between 0 and 1, got 1.5")
    );
}

/// 1F1B of uniform one-layer stages whose layers offload share `s` of `a` activation bytes, with
/// copies at `host` bytes per second (free without).
fn offloading(p: usize, m: usize, s: f64, host: Option<f64>) -> Simulation {
    let mut l = layer("l", Role::Backbone, p, TF, TB);
    l.activation_bytes = Some(1000.0);
    l.offload_share = Some(s);
    let mut sc = scenario(vec![l], &[], &[ONE_F_ONE_B], p, m);
    sc.hardware = Some(mpipe::scenario::hardware::Hardware {
        host_bytes_per_s: host,
        ..Default::default()
    });
    sim(&sc)
}

/// Offload with free copies changes no time, and takes the offloaded share of every microbatch
/// off the device except the two a rank's copy stream has brought back or not yet sent: rank `r`
/// of 1F1B peaks at `(k(1 − s) + 2s)·a` with `k = min(P − r, M) ≥ 2` — the forward before a
/// backward runs while that backward's activations come back — and at `a` with `k = 1`.
#[test]
fn offload_with_free_copies_changes_no_time_and_takes_its_share_off_the_peak() {
    let s = 0.5;
    for p in 1..=4 {
        for m in 1..=8 {
            let sim = offloading(p, m, s, None);
            let want = (m + p - 1) as f64 * (TF + TB);
            assert!(
                (sim.makespan_s - want).abs() < 1e-9,
                "P={p} M={m}: {}",
                sim.makespan_s
            );
            let peaks: Vec<f64> = sim.memory.iter().map(|c| c.peak_bytes).collect();
            let expected: Vec<f64> = (0..p)
                .map(|r| match (p - r).min(m) {
                    1 => 1000.0,
                    k => (k as f64 * (1.0 - s) + 2.0 * s) * 1000.0,
                })
                .collect();
            assert_eq!(peaks, expected, "P={p} M={m}");
            // What left the device is on the host, and all of it is back by the step's end; with
            // it added back, each rank holds what it would without offload, `k·a`.
            for (r, curve) in sim.memory.iter().enumerate() {
                let host = &curve.offloaded_points;
                assert_eq!(host.last().map(|p| p[1]), Some(0.0), "P={p} M={m}");
                let without = curve.with_part(host, 1.0);
                let peak = without.iter().map(|p| p[1]).fold(0.0, f64::max);
                assert_eq!(peak, (p - r).min(m) as f64 * 1000.0, "P={p} M={m} r={r}");
            }
        }
    }
}

/// With a slow copy of `c` seconds, one rank's 1F1B (`F0 B0 F1 B1 …`) waits for each backward's
/// copy out and back after its forward: `M(t_f + 2c + t_b)`. Under GPipe the copy back runs
/// while the forward before it computes, so copies of `2c ≤ t_f` cost nothing.
#[test]
fn a_slow_copy_delays_the_backward_that_waits_for_it_by_exactly_its_time() {
    let (s, host) = (0.5, 1000.0);
    let c = s * 100.0 / host;
    for m in 1..=6 {
        let mut l = layer("l", Role::Backbone, 1, TF, TB);
        l.activation_bytes = Some(100.0);
        l.offload_share = Some(s);
        let hw = Some(mpipe::scenario::hardware::Hardware {
            host_bytes_per_s: Some(host),
            ..Default::default()
        });
        let mut one = scenario(vec![l.clone()], &[], &[ONE_F_ONE_B], 1, m);
        one.hardware = hw.clone();
        let got = sim(&one).makespan_s;
        let want = m as f64 * (TF + 2.0 * c + TB);
        assert!((got - want).abs() < 1e-9, "1F1B M={m}: {got} vs {want}");
        let mut gpipe = scenario(vec![l], &[], &[GPIPE], 1, m);
        gpipe.hardware = hw;
        let got = sim(&gpipe).makespan_s;
        let want = m as f64 * (TF + TB) + if m == 1 { 2.0 * c } else { 0.0 };
        assert!((got - want).abs() < 1e-9, "GPipe M={m}: {got} vs {want}");
    }
}

/// Under a second-order schedule, full recomputation drops what `FE` saves once `FF` (which reads
/// it) has run, and makes it again in the force backward (which reruns the energy and force
/// forwards), held until the energy backward ends: the recomputed part is one stage's
/// activations per microbatch between its BF and BE, and the rank holds no more than without.
#[test]
fn second_order_recomputation_holds_its_activations_from_the_force_backward() {
    let run = |recompute: bool| {
        let mut l = layer("l", Role::Backbone, 2, TF, TB);
        l.activation_bytes = Some(1000.0);
        l.force_activation_bytes = Some(0.0);
        if recompute {
            l.recompute = Some(mpipe::scenario::layer::Recompute::Full);
        }
        sim(&scenario(
            vec![l],
            &[],
            &[mpipe::schedules::ONE_F_ONE_B_2ND],
            2,
            4,
        ))
    };
    let (kept, recomputed) = (run(false), run(true));
    assert!(recomputed.makespan_s > kept.makespan_s);
    for (k, r) in kept.memory.iter().zip(&recomputed.memory) {
        let most = r.recomputed_points.iter().map(|p| p[1]).fold(0.0, f64::max);
        assert!(
            most >= 1000.0 && most % 1000.0 == 0.0,
            "rank {}: {most}",
            r.rank
        );
        assert_eq!(r.recomputed_points.last().map(|p| p[1]), Some(0.0));
        assert!(r.peak_bytes <= k.peak_bytes, "rank {}", r.rank);
    }
}

/// Recomputation placed early (Mario, `recompute_early`): each backward's recomputation runs as
/// its own action `R` just before it, as soon as the rank is free, so the wait for the gradient
/// hides it. 1F1B of uniform one-layer stages with full recomputation runs
/// `(M + P − 1)(2t_f + t_b) − (P − 1)·t_f`: the recomputation leaves the gradient's path down the
/// `P − 1` hops. Each rank computes as much as with the recomputation in the backward, the
/// orders (PyTorch's actions) are the same, and the recomputed bytes are held from `R`'s start.
#[test]
fn early_recomputation_hides_in_the_wait_for_the_gradient() {
    for p in 1..=4 {
        for m in 1..=8 {
            let run = |early: bool| {
                let mut l = layer("l", Role::Backbone, p, TF, TB);
                l.activation_bytes = Some(1000.0);
                l.recompute = Some(mpipe::scenario::layer::Recompute::Full);
                l.recompute_early = early;
                sim(&scenario(vec![l], &[], &[ONE_F_ONE_B], p, m))
            };
            let (late, early) = (run(false), run(true));
            let want = (m + p - 1) as f64 * (2.0 * TF + TB) - (p - 1) as f64 * TF;
            assert!(
                (early.makespan_s - want).abs() < 1e-9,
                "P={p} M={m}: {} vs {want}",
                early.makespan_s
            );
            for r in 0..p {
                assert!((early.ranks[r].busy_s - late.ranks[r].busy_s).abs() < 1e-9);
                assert_eq!(
                    early.derivation.order.actions(r),
                    late.derivation.order.actions(r)
                );
            }
            // Rank 0's first R starts before its first backward: the recomputed bytes are
            // held from then.
            let g = &early.derivation.order.graph;
            let first_r = g
                .node_indices()
                .filter(|&n| {
                    matches!(
                        g.node_weight(n),
                        Some(mpipe::graph::event::Event::Recompute { rank, .. }) if rank.index() == 0
                    )
                })
                .filter_map(|n| early.timeline.start_of(n))
                .fold(f64::INFINITY, f64::min);
            let again = &early.memory[0].recomputed_points;
            assert_eq!(again.get(1).map(|p| (p[0], p[1])), Some((first_r, 1000.0)));
        }
    }
}

/// Offload under every first-order schedule of the registry (one or two chunks, whichever it
/// runs; split backwards, overlapped pairs, V shapes, bidirectional ones), and under the
/// transposed encoder: it derives without a deadlock, with free copies it changes no event's
/// time and no rank holds more than without, and with slow copies the step is no shorter.
#[test]
fn offload_derives_under_every_first_order_schedule_and_free_copies_change_no_time() {
    let with = |mut s: Scenario, share: f64, host: Option<f64>| {
        for l in &mut s.model.layers {
            l.activation_bytes = Some(1000.0);
            l.offload_share = (share > 0.0).then_some(share);
        }
        s.hardware = Some(mpipe::scenario::hardware::Hardware {
            host_bytes_per_s: host,
            ..Default::default()
        });
        simulate_scenario(&s, SimOptions::default())
    };
    for (name, s) in every_first_order(|s| with(s, 0.0, None).is_ok()) {
        let plain = with(s.clone(), 0.0, None).unwrap();
        let free = with(s.clone(), 0.5, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(free.makespan_s, plain.makespan_s, "{name}");
        for (f, p) in free.memory.iter().zip(&plain.memory) {
            assert!(f.peak_bytes <= p.peak_bytes, "{name} rank {}", f.rank);
        }
        let copies = free
            .derivation
            .order
            .graph
            .node_weights()
            .filter(|e| matches!(e, mpipe::graph::event::Event::Copy { .. }))
            .count();
        assert!(copies > 0, "{name}: no copies");
        let slow = with(s, 0.5, Some(100.0)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(slow.makespan_s >= plain.makespan_s, "{name}");
    }
}

/// Early recomputation under every first-order schedule of the registry (split backwards,
/// overlapped pairs, V shapes, bidirectional ones) and the transposed encoder, with a per-action
/// overhead and a switch cost: it derives, every rank computes exactly as much as with the
/// recomputation in the backward (an `R` pays no overhead and no switch, and is no break in a
/// run of one stage and phase), the orders are the same, and the step is no longer.
#[test]
fn early_recomputation_derives_under_every_first_order_schedule_at_the_same_work() {
    let with = |mut s: Scenario, early: bool| {
        for l in &mut s.model.layers {
            l.activation_bytes = Some(1000.0);
            l.recompute = Some(mpipe::scenario::layer::Recompute::Full);
            l.recompute_early = early;
        }
        s.hardware = Some(mpipe::scenario::hardware::Hardware {
            action_overhead_s: Some(0.01),
            action_switch_s: Some(mpipe::scenario::hardware::PhaseSeconds {
                backward: Some(0.1),
                ..Default::default()
            }),
            ..Default::default()
        });
        simulate_scenario(&s, SimOptions::default())
    };
    for (name, s) in every_first_order(|s| with(s, false).is_ok()) {
        let late = with(s.clone(), false).unwrap();
        let early = with(s, true).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rs = early
            .derivation
            .order
            .graph
            .node_weights()
            .filter(|e| matches!(e, mpipe::graph::event::Event::Recompute { .. }))
            .count();
        assert!(rs > 0, "{name}: no R");
        for (e, l) in early.ranks.iter().zip(&late.ranks) {
            assert!((e.busy_s - l.busy_s).abs() < 1e-9, "{name} rank {}", e.rank);
            assert_eq!(
                early.derivation.order.actions(e.rank),
                late.derivation.order.actions(e.rank),
                "{name}"
            );
        }
        assert!(early.makespan_s <= late.makespan_s + 1e-9, "{name}");
    }
}

/// Uniform P = 4, M = 8 scenarios of every first-order schedule of the registry (with one chunk,
/// or two where one does not derive — `derives` says), and ⟨transpose, 1f1b⟩, by name.
fn every_first_order(derives: impl Fn(Scenario) -> bool) -> Vec<(String, Scenario)> {
    let mut scenarios: Vec<(String, Scenario)> = Vec::new();
    for skeleton in Skeleton::all() {
        if skeleton.second_order() || skeleton.layout() != mpipe::vocab::layout::Layout::Sharded {
            continue;
        }
        let Some(s) = [1, 2]
            .into_iter()
            .map(|v| uniform(*skeleton, 4, 8, v))
            .find(|s| derives(s.clone()))
        else {
            panic!(
                "{} derives with neither one nor two chunks",
                skeleton.name()
            );
        };
        scenarios.push((skeleton.name().to_string(), s));
    }
    scenarios.push(("transpose".into(), mpipe(4, 8, 0.5, Default::default())));
    scenarios
}

#[test]
fn an_input_half_holds_what_it_keeps_for_its_weight_half() {
    // ZB-H1 on one rank, one microbatch, one layer saving 100 bytes: F0 [0, 1], I0 [1, 2],
    // W0 [2, 3]. PyTorch's input half frees nothing (`activation_input_share` 0) and holds half
    // as much again for its weight half (`input_half_held_share` 0.5): 100 from the forward's
    // start, 150 from the input half's end, nothing after the weight half.
    let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "l", "count": 1, "fwd_s": 1, "bwd_s": 2,
            "activation_bytes": 100, "activation_input_share": 0}]},
        "schedule": ["zb1p"], "ranks": 1, "microbatches": 1,
        "hardware": {"input_half_held_share": 0.5}}"#;
    let s = mpipe::Scenario::from_json_str(text, "held.json").unwrap();
    let curve = &simulate_scenario(&s, SimOptions::default()).unwrap().memory[0];
    assert_eq!(curve.peak_bytes, 150.0);
    assert_eq!(
        curve.points,
        vec![[0.0, 0.0], [0.0, 100.0], [2.0, 150.0], [3.0, 0.0]]
    );
    // The textbook split (absent: none held; half freed at the input half's end).
    let text = text
        .replace(r#", "activation_input_share": 0"#, "")
        .replace(r#""input_half_held_share": 0.5"#, "");
    let s = mpipe::Scenario::from_json_str(&text, "split.json").unwrap();
    let curve = &simulate_scenario(&s, SimOptions::default()).unwrap().memory[0];
    assert_eq!(
        curve.points,
        vec![[0.0, 0.0], [0.0, 100.0], [2.0, 50.0], [3.0, 0.0]]
    );
}

#[test]
fn a_split_backwards_halves_cost_what_the_runtime_charges_beyond_their_shares() {
    // ZB-H1 on one rank, one microbatch, one layer (F 1 s, whole backward 2 s): F0 [0, 1], then
    // the input half at ×0.5 of its 1 s share and the weight half at ×2.5 of its: 1 + 0.5 + 2.5.
    let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "l", "count": 1, "fwd_s": 1, "bwd_s": 2}]},
        "schedule": ["zb1p"], "ranks": 1, "microbatches": 1,
        "hardware": {"input_half_factor": 0.5, "weight_half_factor": 2.5}}"#;
    let makespan = |text: &str| {
        let s = mpipe::Scenario::from_json_str(text, "split.json").unwrap();
        simulate_scenario(&s, SimOptions::default())
            .unwrap()
            .makespan_s
    };
    assert_eq!(makespan(text), 4.0);
    // Halves the layer gives (0.5 s and 1.5 s) are priced the same way: 1 + 0.25 + 3.75.
    assert_eq!(
        makespan(&text.replace(
            r#""bwd_s": 2"#,
            r#""bwd_input_s": 0.5, "bwd_weight_s": 1.5"#
        )),
        5.0
    );
    // A whole backward is no split: 1F1B, and the first stage's backward run whole in its
    // weight half (PyTorch), cost the layer's 2 s.
    assert_eq!(makespan(&text.replace(r#"["zb1p"]"#, r#"["1f1b"]"#)), 3.0);
    assert_eq!(
        makespan(&text.replace(
            r#""weight_half_factor": 2.5"#,
            r#""weight_half_factor": 2.5, "first_stage_backward": "in_weight""#
        )),
        3.0
    );
    // Absent, the halves sum to the whole backward.
    assert_eq!(
        makespan(&text.replace(r#""input_half_factor": 0.5, "weight_half_factor": 2.5"#, "")),
        3.0
    );
}

#[test]
fn the_last_stage_keeps_each_microbatchs_output_to_the_steps_end() {
    // 1F1B, P = 2, M = 2, one layer a rank (F 1 s, B 2 s), each output 10 bytes, nothing saved:
    // rank 1 runs F0 [1, 2], B0 [2, 4], F1 [4, 5], B1 [5, 7]; the step ends at 9 (rank 0's B1).
    // PyTorch's schedules keep the last stage's outputs to merge them when the step returns
    // (`output_held_share` 1): each outlives its backward (until then it is among what the
    // forward saved, here nothing): 10 from B0's end, 20 from B1's, none after the step.
    let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "l", "count": 2, "fwd_s": 1, "bwd_s": 2,
            "output_bytes": 10}]},
        "schedule": ["1f1b"], "ranks": 2, "microbatches": 2,
        "hardware": {"output_held_share": 1}}"#;
    let s = mpipe::Scenario::from_json_str(text, "outputs.json").unwrap();
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    assert_eq!(sim.makespan_s, 9.0);
    assert_eq!(sim.memory[1].peak_bytes, 20.0);
    assert_eq!(
        sim.memory[1].points,
        vec![[0.0, 0.0], [4.0, 10.0], [7.0, 20.0], [9.0, 0.0]]
    );
    // The first stage's outputs go on to the next stage: it keeps none.
    assert_eq!(sim.memory[0].peak_bytes, 0.0);
    // Absent, nothing is kept.
    let s =
        mpipe::Scenario::from_json_str(&text.replace(r#""output_held_share": 1"#, ""), "none.json")
            .unwrap();
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    assert_eq!(sim.memory[1].peak_bytes, 0.0);
}

#[test]
fn each_direction_keeps_the_outputs_of_the_microbatches_it_runs() {
    // DualPipe over 2 ranks, 4 microbatches: each direction's last stage (rank 1 for the first,
    // rank 0 for its mirror) keeps the outputs of its own half of the microbatches, 10 bytes
    // each: 20 on each rank at the step's end — not all 4 outputs on both.
    let text = r#"{"format": "mpipe-scenario/1",
        "model": {"layers": [{"name": "l", "count": 2, "fwd_s": 1, "bwd_s": 2,
            "output_bytes": 10}]},
        "schedule": ["dualpipe"], "ranks": 2, "microbatches": 4,
        "hardware": {"output_held_share": 1}}"#;
    let s = mpipe::Scenario::from_json_str(text, "dualpipe.json").unwrap();
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    for rank in 0..2 {
        let kept: Vec<f64> =
            mpipe::sim::memory::outputs_kept(&sim.derivation.plan, &sim.derivation.order, rank)
                .map(|(_, bytes)| bytes)
                .collect();
        assert_eq!(kept, vec![10.0, 10.0], "rank {rank}");
        // Held from the backwards to the step's end, where it is the rank's whole memory.
        assert_eq!(sim.memory[rank].peak_bytes, 20.0, "rank {rank}");
    }
}

/// A title line `(y, text)` and a legend entry `(x, y, text)` of the SVG.
type TitleLine = (f64, String);
type LegendText = (f64, f64, String);

/// The SVG's title lines and legend entries: what the checks below read.
fn svg_title_and_legend(svg: &str) -> (Vec<TitleLine>, Vec<LegendText>) {
    let text = regex::Regex::new(
        r#"<text x="([0-9.]+)" y="([0-9.]+)" font-size="(11|15)"( font-weight="bold")?>([^<]*)</text>"#,
    )
    .unwrap();
    // The legend is everything in 11-pixel text above the first lane's label.
    let lane =
        regex::Regex::new(r#"y="([0-9.]+)" font-size="12" text-anchor="end">rank 0<"#).unwrap();
    let lane_y: f64 = lane.captures(svg).unwrap()[1].parse().unwrap();
    let mut title: Vec<TitleLine> = Vec::new();
    let mut legend: Vec<LegendText> = Vec::new();
    for c in text.captures_iter(svg) {
        let (x, y): (f64, f64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
        let words = c[5]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        if c.get(4).is_some() {
            assert_eq!(x, 72.0);
            title.push((y, words));
        } else if y < lane_y {
            legend.push((x, y, words));
        }
    }
    (title, legend)
}

/// Every title line and legend entry of `svg` ends inside the chart (by the renderer's estimate
/// of its text's width: 9.5 px a bold 15-pixel character, 6.6 px an 11-pixel one), the lines
/// 18 px apart, the legend below the title, the first lane below the legend, no legend entry's
/// chip under another's text.
fn assert_svg_fits(svg: &str, what: &str) {
    let (width, right) = (1200.0, 24.0);
    let (title, legend) = svg_title_and_legend(svg);
    assert!(!title.is_empty() && !legend.is_empty(), "{what}");
    for (i, (y, line)) in title.iter().enumerate() {
        assert_eq!(*y, 22.0 + 18.0 * i as f64, "{what}");
        assert!(
            72.0 + 9.5 * line.chars().count() as f64 <= width - right,
            "{what}: {line}"
        );
    }
    let last_title = title.last().unwrap().0;
    for (x, y, t) in &legend {
        assert!(
            x + 6.6 * t.chars().count() as f64 <= width - right,
            "{what}: {t} at {x}"
        );
        assert!(y - 10.0 > last_title, "{what}: {t}");
    }
    // Each entry's text ends before the next entry on its row starts (its chip, 30 px before
    // its text, or 28/40 for a region's).
    for pair in legend.windows(2) {
        let [(x0, y0, t0), (x1, y1, _)] = pair else {
            unreachable!()
        };
        if y0 == y1 {
            assert!(
                x0 + 6.6 * t0.chars().count() as f64 <= x1 - 28.0,
                "{what}: {t0}"
            );
        }
    }
}

/// The SVG's title and legend wrap inside the chart's width, and the lanes start below both:
/// a transposed encoder and four backbone regions under a long name, whose title (makespan and
/// bubble at its end) and legend each ran past the right edge on one line; and every sample.
#[test]
fn the_svg_title_and_legend_wrap_inside_the_chart() {
    let mut encoder = layer("vit", Role::Encoder, 2, 0.5, 1.0);
    encoder.activation_bytes = Some(1e8);
    let mut layers = vec![encoder];
    layers.extend((0..4).map(|i| layer(&format!("llm{i}"), Role::Backbone, 4, TF, TB)));
    let mut s = scenario(
        layers,
        &[2, 6, 10, 14],
        &[
            TRANSPOSE,
            ONE_F_ONE_B,
            ONE_F_ONE_B,
            ONE_F_ONE_B,
            ONE_F_ONE_B,
        ],
        4,
        8,
    );
    s.name = "five regions: an encoder transposed over four interleaved backbone regions".into();
    let simulation = sim(&s);
    let svg = mpipe::report::svg::render(&s.chart_title(), &simulation);
    assert_svg_fits(&svg, "five regions");
    let (title, legend) = svg_title_and_legend(&svg);
    // The whole title, in lines.
    let lines: Vec<&str> = title.iter().map(|(_, l)| l.as_str()).collect();
    assert!(lines.len() >= 2, "{lines:?}");
    let whole = format!(
        "{} · ⟨transpose, 1f1b, 1f1b, 1f1b, 1f1b⟩ — P = 4, M = 8: makespan {}, bubble {:.1} %",
        s.chart_title(),
        mpipe::vocab::units::secs(simulation.makespan_s),
        100.0 * simulation.bubble_fraction
    );
    assert_eq!(lines.join(" "), whole);
    // Every legend entry, in more than one row.
    let names: Vec<&str> = legend.iter().map(|(_, _, t)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "region 1 encoder transpose",
            "region 2 backbone 1f1b",
            "region 3 backbone 1f1b",
            "region 4 backbone 1f1b",
            "region 5 backbone 1f1b",
            "warmup window",
            "spill",
            "idle"
        ]
    );
    let rows: std::collections::BTreeSet<u64> = legend.iter().map(|(_, y, _)| *y as u64).collect();
    assert!(rows.len() >= 2, "{rows:?}");
    // Every sample: overlapped pairs, exposed collectives, host waits, long names among them.
    let dir = format!("{}/../samples", env!("CARGO_MANIFEST_DIR"));
    let mut entries: std::collections::BTreeSet<String> = Default::default();
    for file in std::fs::read_dir(&dir).unwrap() {
        let path = file.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = Scenario::from_json_str(&text, &path.display().to_string()).unwrap();
        let svg = mpipe::report::svg::render(&scenario.chart_title(), &sim(&scenario));
        assert_svg_fits(&svg, &path.display().to_string());
        entries.extend(svg_title_and_legend(&svg).1.into_iter().map(|(_, _, t)| t));
    }
    for kind in [
        "overlapped pair (F;B)",
        "collectives inside the stage, exposed",
    ] {
        assert!(entries.contains(kind), "{kind}: {entries:?}");
    }
}
