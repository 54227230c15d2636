//! Each schedule's textbook formula (`Schedule::formula`) against the simulator on the setting it
//! describes: uniform stages, free links, no overhead. Where a schedule gives a formula, its step,
//! its bubble fraction and its peak activation memory must be what the simulation of the derived
//! order gives, exactly, over a range of shapes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::scenario::Scenario;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B, ONE_F_ONE_B_2ND, Uniform, VHALF, VMIN, WAVEK};
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::parameter::Parameter;
use mpipe::vocab::role::Role;

/// Bytes one stage saves for backward per microbatch.
const A: f64 = 1000.0;

/// `P` stages of one layer each, every forward `t_f`, every backward `t_b`, each saving `A`.
fn uniform(skeleton: Skeleton, p: usize, m: usize, costs: Uniform) -> Scenario {
    chunked(skeleton, p, m, 1, costs)
}

/// [`uniform`] over `v` Sharded regions of `P` layers each (`v` chunks a rank).
fn chunked(skeleton: Skeleton, p: usize, m: usize, v: usize, costs: Uniform) -> Scenario {
    let mut layer = LayerSpec::timed("layer", Role::Backbone, p * v, costs.forward_s);
    layer.bwd_s = Some(costs.backward_s);
    layer.activation_bytes = Some(A);
    if skeleton.second_order() {
        for phase in [
            &mut layer.fe_s,
            &mut layer.ff_s,
            &mut layer.bf_s,
            &mut layer.be_s,
        ] {
            *phase = Some(costs.forward_s);
        }
        layer.force_activation_bytes = Some(0.0);
    }
    let cut: Vec<usize> = (1..v).map(|c| c * p).collect();
    common::scenario(vec![layer], &cut, &vec![skeleton; v], p, m)
}

/// Checks the formula of `skeleton` on every shape of `shapes` where it gives one, with backwards
/// twice as long as forwards; returns how many it checked.
fn check(skeleton: Skeleton, shapes: impl Iterator<Item = (usize, usize, Option<usize>)>) -> usize {
    let costs = Uniform {
        forward_s: 1.0,
        backward_s: 2.0,
    };
    check_with(skeleton, shapes, costs)
}

/// [`check`] with the given costs.
fn check_with(
    skeleton: Skeleton,
    shapes: impl Iterator<Item = (usize, usize, Option<usize>)>,
    costs: Uniform,
) -> usize {
    check_chunked(skeleton, shapes, 1, costs)
}

/// [`check_with`] over `v` chunks; a formula given for a shape the schedule refuses fails.
fn check_chunked(
    skeleton: Skeleton,
    shapes: impl Iterator<Item = (usize, usize, Option<usize>)>,
    v: usize,
    costs: Uniform,
) -> usize {
    let mut checked = 0;
    for (p, m, k) in shapes {
        let mut s = chunked(skeleton, p, m, v, costs);
        s.wave_k = k;
        let Some(f) = skeleton.schedule().formula(&s.run_ctx(), costs) else {
            continue;
        };
        let at = format!("{skeleton} P={p} M={m} v={v} k={k:?}");
        let sim = simulate_scenario(&s, Default::default())
            .unwrap_or_else(|e| panic!("{at}: a formula for a refused shape: {e}"));
        assert!(
            (sim.makespan_s - f.step_s).abs() < 1e-9,
            "{at}: simulated {} against {} = {}",
            sim.makespan_s,
            f.step,
            f.step_s
        );
        assert!(
            (sim.bubble_fraction - f.bubble_fraction).abs() < 1e-9,
            "{at}: bubble {} against {} = {}",
            sim.bubble_fraction,
            f.bubble,
            f.bubble_fraction
        );
        if let Some(peak) = f.peak_activations {
            assert!(
                (sim.peak_memory_bytes() - peak * A).abs() < 1e-6,
                "{at}: peak {} B against {:?} = {} A",
                sim.peak_memory_bytes(),
                f.memory,
                peak
            );
        }
        checked += 1;
    }
    checked
}

fn shapes() -> impl Iterator<Item = (usize, usize, Option<usize>)> {
    (1..=5).flat_map(|p| (1..=10).map(move |m| (p, m, None)))
}

#[test]
fn gpipe_fills_and_drains_and_holds_every_microbatch() {
    assert_eq!(check(GPIPE, shapes()), 50);
    let f = GPIPE
        .schedule()
        .formula(&uniform(GPIPE, 4, 8, ones()).run_ctx(), ones())
        .unwrap();
    assert_eq!(
        (f.step, f.bubble, f.memory),
        (
            "(M + P − 1)·(t_F + t_B)",
            "(P − 1)/(M + P − 1)",
            Some("M·A")
        )
    );
    assert_eq!((f.step_s, f.peak_activations), (22.0, Some(8.0)));
}

#[test]
fn one_f_one_b_holds_at_most_the_depth() {
    assert_eq!(check(ONE_F_ONE_B, shapes()), 50);
    let f = ONE_F_ONE_B
        .schedule()
        .formula(&uniform(ONE_F_ONE_B, 4, 8, ones()).run_ctx(), ones())
        .unwrap();
    assert_eq!(
        (f.memory, f.peak_activations),
        (Some("min(P, M)·A"), Some(4.0))
    );
    // Interleaved over v chunks, M ≥ P: one chunk's fill and drain, `(vM + P − 1)·(t_F + t_B)`
    // (issue 26, item 4), checked for v = 2 and 3 in `every_formula_a_schedule_gives_…`.
    let s = chunked(ONE_F_ONE_B, 4, 8, 2, ones());
    let f = ONE_F_ONE_B
        .schedule()
        .formula(&s.run_ctx(), ones())
        .unwrap();
    assert_eq!(f.step_s, (2.0 * 8.0 + 3.0) * 2.0);
    assert_eq!(f.bubble, "(P − 1)/(vM + P − 1)");
    // M < P: the warmup runs out of microbatches; no closed form.
    let s = chunked(ONE_F_ONE_B, 4, 3, 2, ones());
    assert_eq!(ONE_F_ONE_B.schedule().formula(&s.run_ctx(), ones()), None);
}

#[test]
fn wavek_pays_one_boundary_bubble_a_wave_when_k_divides_m() {
    let shapes =
        (1..=4).flat_map(|p| (1..=8).flat_map(move |m| (1..=m).map(move |k| (p, m, Some(k)))));
    let checked = check(WAVEK, shapes);
    // Every k that divides M: 1 + 2 + 2 + 3 + 2 + 4 + 2 + 4 = 20 for each of four depths.
    assert_eq!(checked, 80);
    // k ∤ M has no closed form: the trailing wave costs more.
    let mut s = uniform(WAVEK, 4, 8, ones());
    s.wave_k = Some(3);
    assert_eq!(WAVEK.schedule().formula(&s.run_ctx(), ones()), None);
    s.wave_k = Some(4);
    let f = WAVEK.schedule().formula(&s.run_ctx(), ones()).unwrap();
    assert_eq!(f.step, "(4M + 2(P − 1)(M/k + 1))·t, k | M");
    assert_eq!(f.step_s, 32.0 + 2.0 * 3.0 * 3.0);
}

#[test]
fn one_f_one_b_2nd_is_wavek_with_waves_of_one() {
    assert_eq!(
        check(ONE_F_ONE_B_2ND, shapes().filter(|(p, _, _)| *p >= 2)),
        40
    );
    let s = uniform(ONE_F_ONE_B_2ND, 3, 5, ones());
    let f = ONE_F_ONE_B_2ND
        .schedule()
        .formula(&s.run_ctx(), ones())
        .unwrap();
    assert_eq!(f.step_s, 4.0 * 5.0 + 2.0 * 2.0 * 6.0);
}

/// V-Half and V-Min (issue 26 item 4): in the paper's setting (`t_F = t_I = t_W`), the step
/// the construction gives and the paper's memory, `⌊(P + 2)/2⌋` and `⌊(P + 4)/3⌋` microbatches
/// of a rank, on every `P` of 3 to 12 and `M` of `P` to `3P` — whatever share of a
/// microbatch's activations its input half frees — and no formula below the bound on `M`, for
/// two ranks, or with the backward not twice the forward.
#[test]
fn v_half_and_v_min_state_the_step_their_construction_gives_and_the_papers_memory() {
    let costs = Uniform {
        forward_s: 1.0,
        backward_s: 2.0,
    };
    for (skeleton, least) in [(VHALF, 2), (VMIN, 1)] {
        let mut checked = 0;
        for share in [None, Some(0.0), Some(1.0)] {
            for p in 2..=12 {
                for m in p..=3 * p {
                    let mut s = chunked(skeleton, p, m, 2, costs);
                    s.model.layers[0].activation_input_share = share;
                    let at = format!("{skeleton} P={p} M={m} share={share:?}");
                    let f = skeleton.schedule().formula(&s.run_ctx(), costs);
                    let Some(f) = f else {
                        assert!(p < 3 || m < p + least, "{at}: no formula");
                        continue;
                    };
                    assert!(
                        p >= 3 && m >= p + least,
                        "{at}: a formula outside its bound"
                    );
                    let sim = simulate_scenario(&s, Default::default()).unwrap();
                    assert_eq!(sim.makespan_s, f.step_s, "{at}: {}", f.step);
                    assert!(
                        (sim.bubble_fraction - f.bubble_fraction).abs() < 1e-12,
                        "{at}"
                    );
                    let peak = f.peak_activations.unwrap();
                    assert_eq!(sim.peak_memory_bytes(), peak * A, "{at}: {:?}", f.memory);
                    checked += 1;
                }
            }
        }
        // P of 3 to 12, 2P + 1 − least values of M each, three shares.
        assert_eq!(
            checked,
            3 * (3..=12).map(|p| 2 * p + 1 - least).sum::<usize>()
        );
        // Outside the paper's setting: none.
        let s = chunked(skeleton, 4, 12, 2, costs);
        for other in [
            ones(),
            Uniform {
                forward_s: 1.0,
                backward_s: 3.0,
            },
        ] {
            assert_eq!(skeleton.schedule().formula(&s.run_ctx(), other), None);
        }
    }
    // The figures the paper's table gives (P = 8): V-Half holds 5 microbatches of a rank, V-Min 4,
    // against 1F1B's 8.
    let ctx = chunked(VHALF, 8, 24, 2, costs).run_ctx();
    let half = VHALF.schedule().formula(&ctx, costs).unwrap();
    let min = VMIN.schedule().formula(&ctx, costs).unwrap();
    assert_eq!(
        (half.peak_activations, min.peak_activations),
        (Some(10.0), Some(8.0))
    );
    assert_eq!((half.step_s, min.step_s), (144.0 + 17.0, 144.0 + 27.0));
}

/// ZB-H1 where the input half outlasts the forward: the first input halves wait on each other
/// down the pipeline, `(P − 1)·t_I` of bubble instead of the paper's `(P − 1)·t_F`.
#[test]
fn zb_h1_idles_the_longer_of_a_forward_and_an_input_half_a_stage() {
    // P = 4, M = 8, t_F = 1, t_I = t_W = 2: 8·5 + 3·2 = 46 s; with t_I = t_W = 1/2, 8·2 + 3·1.
    for (backward_s, step_s) in [(4.0, 46.0), (1.0, 19.0)] {
        let costs = Uniform {
            forward_s: 1.0,
            backward_s,
        };
        let s = uniform(mpipe::schedules::ZB1P, 4, 8, costs);
        let f = mpipe::schedules::ZB1P
            .schedule()
            .formula(&s.run_ctx(), costs)
            .unwrap();
        assert_eq!(f.step_s, step_s);
        assert_eq!(
            simulate_scenario(&s, Default::default())
                .unwrap()
                .makespan_s,
            step_s
        );
    }
}

fn ones() -> Uniform {
    Uniform {
        forward_s: 1.0,
        backward_s: 1.0,
    }
}

/// Every shape of `P ≤ 4`, `M ≤ 8`, with each `k` of `1..=M` and without one.
fn shapes_with_k() -> impl Iterator<Item = (usize, usize, Option<usize>)> {
    (1..=4).flat_map(|p| {
        (1..=8).flat_map(move |m| {
            std::iter::once(None)
                .chain((1..=m).map(Some))
                .map(move |k| (p, m, k))
        })
    })
}

#[test]
fn every_formula_a_schedule_gives_is_the_simulated_one() {
    // Whatever schedule the registry holds: where it gives a formula, the simulation agrees,
    // with backwards longer than forwards and shorter.
    let mut given = Vec::new();
    for &skeleton in Skeleton::all() {
        let mut checked = 0;
        for (forward_s, backward_s) in [(1.0, 2.0), (3.0, 1.0), (1.0, 3.0), (1.0, 1.0)] {
            let costs = Uniform {
                forward_s,
                backward_s,
            };
            // A `k` only where the schedule reads one (elsewhere the scenario is invalid); one,
            // two and three chunks a rank.
            let reads_k = skeleton.reads(Parameter::WaveK);
            for v in 1..=3 {
                let shapes = shapes_with_k().filter(|(_, _, k)| reads_k || k.is_none());
                checked += check_chunked(skeleton, shapes, v, costs);
            }
        }
        if checked > 0 {
            given.push(skeleton.name());
        }
    }
    assert_eq!(
        given,
        [
            "1f1b",
            "gpipe",
            "looped_bfs",
            "zb1p",
            "zb2p",
            "zbv",
            "vhalf",
            "vmin",
            "dualpipe",
            "chimera",
            "dualpipev",
            "1f1b-2nd",
            "wavek",
            "hanayo"
        ]
    );
}

/// The formula beside the simulation (`report::formula`, what `mpipe simulate` prints and the
/// app shows, issue 26 item 4): the costs are read off the simulation, and where the step departs
/// from the formula the reading says why — uneven stages, a link that takes time, the runtime's
/// overhead; where no formula applies, why not.
#[test]
fn the_formula_is_read_beside_the_simulation_with_why_it_departs() {
    use mpipe::report::formula::read;
    let costs = Uniform {
        forward_s: 1.0,
        backward_s: 2.0,
    };
    let s = uniform(ONE_F_ONE_B, 4, 8, costs);
    let r = read(&simulate_scenario(&s, Default::default()).unwrap()).unwrap();
    assert_eq!(r.costs, costs);
    assert_eq!(r.formula.step_s, 33.0);
    assert_eq!(r.simulated_step_s, 33.0);
    assert!(r.departures.is_empty(), "{:?}", r.departures);
    assert_eq!(
        r.lines(),
        [
            "formula (1f1b, t_F = 1.000 s, t_B = 2.000 s): step (M + P − 1)·(t_F + t_B) = 33.000 s (simulated 33.000 s, +0.0 %); bubble (P − 1)/(M + P − 1) = 27.3 % (simulated 27.3 %); activations held min(P, M)·A = 4 A (simulated 4 A)",
            "the simulation is in the formula's setting (uniform stages, free links, no overhead)",
        ]
    );
    // A link of 0.25 s a transfer and 10 ms of runtime per action: the simulation is longer and
    // says why.
    let mut slow = s.clone();
    slow.hardware = Some(mpipe::scenario::hardware::Hardware {
        link_alpha_s: Some(0.25),
        action_overhead_s: Some(0.01),
        ..Default::default()
    });
    let r = read(&simulate_scenario(&slow, Default::default()).unwrap()).unwrap();
    assert!(r.simulated_step_s > r.formula.step_s);
    assert_eq!(r.departures.len(), 2, "{:?}", r.departures);
    assert!(r.departures[0].starts_with("transfers take time (up to 250.000 ms each"));
    assert!(r.departures[1].starts_with("the runtime's own time per action"));
    // One stage twice as slow as the others: the costs are the means, the spread is said.
    let mut uneven = s.clone();
    uneven.slabs = Some(vec![Some(vec![1, 1, 1, 1])]);
    uneven.model.layers = vec![
        {
            let mut l = LayerSpec::timed("slow", Role::Backbone, 1, 2.0);
            l.bwd_s = Some(4.0);
            l
        },
        {
            let mut l = LayerSpec::timed("layer", Role::Backbone, 3, 1.0);
            l.bwd_s = Some(2.0);
            l
        },
    ];
    let r = read(&simulate_scenario(&uneven, Default::default()).unwrap()).unwrap();
    assert_eq!(r.costs.forward_s, 1.25);
    assert_eq!(
        r.departures,
        [
            "forwards differ between stages or microbatches (1.000 s–2.000 s; the formula takes their mean)",
            "backwards differ between stages or microbatches (2.000 s–4.000 s; the formula takes their mean)",
        ]
    );
    // No formula: an encoder region outside the pipeline, an interleaved schedule.
    let sample = |file: &str| {
        let path = format!("{}/../samples/{file}", env!("CARGO_MANIFEST_DIR"));
        let s = Scenario::from_json_str(&std::fs::read_to_string(&path).unwrap(), file).unwrap();
        read(&simulate_scenario(&s, Default::default()).unwrap())
    };
    assert_eq!(
        sample("mllm-understanding.json").unwrap_err(),
        "no textbook formula: region 1 (nested) runs outside the pipeline's formula (its encodes run just in time in the backbone's idle slots, placed by a greedy search, so its step has no closed form)"
    );
    // A transposed encoder reads as Mpipe's spill over the backbone's formula; a trained one
    // runs its backwards in the cooldown, outside it, and its first encode (microbatch 0's, on
    // rank 3 under the greedy owners) reaches the first stage over a link.
    let mpipe = sample("mpipe-vit-llm.json").unwrap();
    assert_eq!(
        mpipe.lines()[..2],
        [
            "formula (⟨transpose, 1f1b⟩, t_F = 2.000 s, t_B = 4.000 s): step (M + P − 1)·(t_F + t_B) + max_r max(0, E_r − w_r) = 66.000 s + 2.000 s = 68.000 s (simulated 74.039 s, +8.9 %); bubble (P − 1)/(M + P − 1) of the backbone's step, the encodes busy over the whole = 22.4 % (simulated 15.9 %); the backbone's activations held min(P, M)·A = 4 A (the encoder's on top)",
            "Mpipe's spill: rank r's encodes (E_r) run in its warmup window w_r = s_r·t_F (s_r: the forwards before its first stage); the worst is rank 0's, E_0 = 2.000 s against w_0 = 0 s",
        ]
    );
    // (Microbatch 0's encode, on rank 3, ends with rank 0's own: only its gather's time on the
    // link holds the first stage, which the transfers' departure says.)
    assert_eq!(mpipe.departures.len(), 2, "{:?}", mpipe.departures);
    assert!(mpipe.departures[0].starts_with("transfers take time"));
    assert_eq!(
        mpipe.departures[1],
        "the encoder trains: its backwards run in the cooldown, which Mpipe's spill (its forwards' against the warmup) does not count"
    );
    // Rank 0 encoding nothing (w_0 = 0) and every other rank within its window: no spill, the
    // closest rank named (rank 1: 0.5 s of encodes in 1 s); but microbatch 0's encode, first on
    // rank 3, ends 0.25 s in, after rank 0 could start: the step is that much longer, and why.
    let owners = mpipe::scenario::owner::OwnerSpec::Explicit(vec![3, 3, 2, 1, 2, 1, 3, 2]);
    let light = transposed(ONE_F_ONE_B, (4, 8, 1), 0.25, owners, None);
    let r = read(&simulate_scenario(&light, Default::default()).unwrap()).unwrap();
    assert_eq!(
        r.spill.as_ref().map(|s| (s.max_s, s.worst_rank)),
        Some((0.0, 1))
    );
    assert!(
        r.lines()[1].ends_with(
            "none passes its window; the closest is rank 1's, E_1 = 500.000 ms against w_1 = 1.000 s"
        ),
        "{:?}",
        r.lines()
    );
    assert_eq!(
        r.departures,
        [
            "the first backbone stage waited for 1 encode (up to 250.000 ms, microbatch 0's, on rank 3): the encode, not the warmup window, set its start"
        ]
    );
    assert_eq!((r.step_s(), r.simulated_step_s), (33.0, 33.25));
    // The DualPipe sample: its overlapped pairs hide half of the forward; the costs are read
    // as the halves take apart (4 s and 8 s: four layers a stage) and the overlap is named.
    let dual = sample("dualpipe.json").unwrap();
    assert_eq!((dual.costs.forward_s, dual.costs.backward_s), (4.0, 8.0));
    assert_eq!(dual.formula.step_s, 200.0);
    assert_eq!(dual.simulated_step_s, 176.0);
    // Its activations beside the formula's: P + 1 of a stage's microbatch, as DualPipe says.
    assert_eq!(
        (
            dual.formula.peak_activations,
            dual.simulated_peak_activations
        ),
        (Some(5.0), Some(5.0))
    );
    assert_eq!(
        dual.departures,
        [
            "overlapped pairs hide 0.5·min(t_F, t_B) of each pair's slot (hardware.fb_overlap; the formula's F&B is t_F + t_B)"
        ]
    );
    // The VPP-3 sample: interleaved 1F1B over three chunks, in the formula's setting.
    let vpp3 = sample("vpp3.json").unwrap();
    assert_eq!(vpp3.formula.step_s, 81.0);
    assert_eq!(vpp3.simulated_step_s, 81.0);
    assert!(vpp3.departures.is_empty());
    // Folded as a V, its order is list-scheduled, not the schedule's own: the reading says so
    // (the step is the formula's: the least-slack order reaches interleaving's bubble here).
    let mut folded = chunked(ONE_F_ONE_B, 4, 8, 2, costs);
    folded.placement = Some(mpipe::scenario::placement::PlacementSpec::VFold);
    let r = read(&simulate_scenario(&folded, Default::default()).unwrap()).unwrap();
    assert_eq!(r.simulated_step_s, r.formula.step_s);
    assert_eq!(r.departures.len(), 1, "{:?}", r.departures);
    assert!(
        r.departures[0]
            == "the order is not the schedule's own: it is list-scheduled over a placement the schedule's slots do not assume",
        "{:?}",
        r.departures
    );
    // Its stages on other ranks (an explicit placement the slots do not assume): said.
    let mut moved = uniform(ONE_F_ONE_B, 4, 8, costs);
    moved.placement = Some(mpipe::scenario::placement::PlacementSpec::Explicit(vec![
        1, 0, 3, 2,
    ]));
    let r = read(&simulate_scenario(&moved, Default::default()).unwrap()).unwrap();
    assert_eq!(r.departures, ["the placement is not the schedule's own"]);
    // DualPipeV: DualPipe's table with PP the V's 2P stages, in its setting; with the halves'
    // sum apart from twice the forward, no formula.
    let s = chunked(mpipe::schedules::DUALPIPEV, 4, 8, 2, costs);
    let r = read(&simulate_scenario(&s, Default::default()).unwrap()).unwrap();
    assert_eq!((r.formula.step_s, r.simulated_step_s), (54.0, 54.0));
    assert_eq!(r.simulated_peak_activations, Some(9.0));
    assert!(r.departures.is_empty(), "{:?}", r.departures);
    let slow_backward = Uniform {
        forward_s: 1.0,
        backward_s: 3.0,
    };
    let s = chunked(mpipe::schedules::DUALPIPEV, 4, 8, 2, slow_backward);
    assert_eq!(
        read(&simulate_scenario(&s, Default::default()).unwrap()).unwrap_err(),
        "dualpipev gives no textbook formula for this shape (P = 4, M = 8, v = 2) at these costs"
    );
    // The automatic scheduler states no closed form at any shape, and says why.
    let s = uniform(mpipe::schedules::ZB_AUTO, 4, 8, costs);
    assert_eq!(
        read(&simulate_scenario(&s, Default::default()).unwrap()).unwrap_err(),
        "no textbook formula: zb_auto (a heuristic orders it by the stages' own costs under the memory limit, so its step has no closed form)"
    );
    // ZB-H1 with its halves apart (I a third of the backward): the formula takes them equal.
    let mut s = uniform(mpipe::schedules::ZB1P, 4, 8, costs);
    s.model.layers[0].bwd_input_s = Some(2.0 / 3.0);
    let r = read(&simulate_scenario(&s, Default::default()).unwrap()).unwrap();
    assert_eq!(
        r.departures,
        [
            "the backward's halves differ (I 666.667 ms, W 1.333 s on average; the formula takes them equal)"
        ]
    );
}

/// A frozen encoder layer of `e_f` a microbatch transposed before `v` chunks of `skeleton` over
/// `P` one-layer stages (`t_F = 1`, `t_B = 2`), its owners `owner`, its microbatches scaled by
/// `scales` where given.
fn transposed(
    skeleton: Skeleton,
    (p, m, v): (usize, usize, usize),
    e_f: f64,
    owner: mpipe::scenario::owner::OwnerSpec,
    scales: Option<Vec<f64>>,
) -> Scenario {
    let mut encoder = LayerSpec::timed("enc", Role::Encoder, 1, e_f);
    encoder.trainable = false;
    encoder.workload_varies = scales.is_some();
    let mut layer = LayerSpec::timed("layer", Role::Backbone, p * v, 1.0);
    layer.bwd_s = Some(2.0);
    let cut: Vec<usize> = (0..v).map(|c| 1 + c * p).collect();
    let mut schedule = vec![mpipe::schedules::TRANSPOSE];
    schedule.extend(std::iter::repeat_n(skeleton, v));
    let mut s = common::scenario(vec![encoder, layer], &cut, &schedule, p, m);
    s.owner = owner;
    s.workload = scales.map(|f| mpipe::workload::Workload {
        encoder_scale: Some(f),
        ..Default::default()
    });
    s
}

/// Mpipe's formula (the paper's §4.3, issue 26 item 4): with a transposed encoder, the step is
/// the backbone's textbook step plus the worst rank's spill `max(0, E_r − w_r)`, `w_r` the
/// forwards before the rank's first stage times `t_F` and `E_r` its encodes. Checked against an
/// oracle written here (the backbone's closed form, the owners the plan chose, each encode's
/// `e_f` times its microbatch's factor) and against the simulation: never above the simulated
/// step (a lower bound with free links), equal to it wherever the reading names no departure,
/// and no departure where every microbatch weighs the same and rank 0 — whose window is empty —
/// owns the most (round robin, everything on rank 0).
#[test]
fn mpipe_spill_adds_the_worst_ranks_overflow_to_the_backbones_formula() {
    use mpipe::report::formula::read;
    use mpipe::scenario::owner::OwnerSpec;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut draw = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    // The backbones with their chunks and, for the textbook three, the step's closed form at
    // `t_F = 1`, `t_B = 2` (the others' formulas are held to the simulation above).
    type Step = fn(f64, f64, f64) -> f64;
    let backbones: [(Skeleton, usize, Option<Step>); 8] = [
        (ONE_F_ONE_B, 1, Some(|p, m, _| 3.0 * (m + p - 1.0))),
        (GPIPE, 1, Some(|p, m, _| 3.0 * (m + p - 1.0))),
        // Interleaved over `v` chunks of one-layer stages (`M` a multiple of `P`): `v` times the
        // work, the fill and drain of one chunk's.
        (ONE_F_ONE_B, 2, Some(|p, m, v| 3.0 * (v * m + p - 1.0))),
        (mpipe::schedules::LOOPED_BFS, 2, None),
        (mpipe::schedules::ZB1P, 1, None),
        (mpipe::schedules::ZB2P, 1, None),
        (mpipe::schedules::ZBV, 2, None),
        (mpipe::schedules::DUALPIPEV, 2, None),
    ];
    let (mut cases, mut exact, mut spilled) = (0, 0, 0);
    for (skeleton, v, closed) in backbones {
        for p in 2..=5usize {
            for m in [p, 2 * p, 2 * p + 1] {
                if v > 1 && m % p != 0 && skeleton == ONE_F_ONE_B {
                    continue;
                }
                for e_f in [0.25, 1.0, 3.0] {
                    let explicit: Vec<usize> = (0..m).map(|_| draw(p)).collect();
                    let owners = [
                        OwnerSpec::RoundRobin,
                        OwnerSpec::FirstRank,
                        OwnerSpec::GreedySlack,
                        OwnerSpec::Explicit(explicit),
                    ];
                    for owner in owners {
                        let even = matches!(owner, OwnerSpec::RoundRobin | OwnerSpec::FirstRank);
                        let varied: Vec<f64> =
                            (0..m).map(|_| 0.25 * (1 + draw(12)) as f64).collect();
                        for scales in [None, Some(varied)] {
                            let uniform_work = scales.is_none();
                            let s =
                                transposed(skeleton, (p, m, v), e_f, owner.clone(), scales.clone());
                            // A shape the backbone does not run (ZB-2P's `M ≥ 2P`) is not
                            // Mpipe's either.
                            let Ok(sim) = simulate_scenario(&s, Default::default()) else {
                                assert!(closed.is_none(), "{}", skeleton.name());
                                continue;
                            };
                            // Where the backbone gives no formula for this shape, neither does
                            // Mpipe's reading.
                            let r = match read(&sim) {
                                Ok(r) => r,
                                Err(why) => {
                                    assert!(
                                        closed.is_none()
                                            && why.contains(
                                                "gives no textbook formula for this shape"
                                            ),
                                        "{why}"
                                    );
                                    continue;
                                }
                            };
                            let spill = r.spill.as_ref().unwrap();
                            // The oracle: rank r's stages start at r (the default placement),
                            // its encodes are its microbatches' `e_f`s scaled.
                            let plan = &sim.derivation.plan;
                            let mut work = vec![0.0; p];
                            for mb in 0..m {
                                work[plan.owner_of(mb)] +=
                                    e_f * scales.as_ref().map_or(1.0, |f| f[mb]);
                            }
                            let worst = (0..p)
                                .map(|r| (work[r] - r as f64).max(0.0))
                                .fold(0.0, f64::max);
                            let backbone = closed.map(|f| f(p as f64, m as f64, v as f64));
                            let case = format!(
                                "{} v={v} P={p} M={m} e_f={e_f} {owner:?} {scales:?}",
                                skeleton.name()
                            );
                            if let Some(backbone) = backbone {
                                assert_eq!(r.formula.step_s, backbone, "{case}");
                            }
                            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
                            assert!(
                                close(spill.max_s, worst),
                                "{case}: {} vs {worst}",
                                spill.max_s
                            );
                            assert!(
                                spill
                                    .warmup_s
                                    .iter()
                                    .enumerate()
                                    .all(|(r, &w)| w == r as f64),
                                "{case}: {:?}",
                                spill.warmup_s
                            );
                            assert!(
                                spill.work_s.iter().zip(&work).all(|(&a, &b)| close(a, b)),
                                "{case}: {:?} vs {work:?}",
                                spill.work_s
                            );
                            assert!(
                                r.simulated_step_s >= r.step_s() - 1e-9,
                                "{case}: {} < {}",
                                r.simulated_step_s,
                                r.step_s()
                            );
                            if r.departures.is_empty() {
                                assert!(
                                    close(r.simulated_step_s, r.step_s()),
                                    "{case}: {} vs {}",
                                    r.simulated_step_s,
                                    r.step_s()
                                );
                                assert!(
                                    close(r.simulated_bubble, r.bubble_fraction()),
                                    "{case}: bubble {} vs {}",
                                    r.simulated_bubble,
                                    r.bubble_fraction()
                                );
                                exact += 1;
                            } else {
                                assert!(
                                    r.departures
                                        .iter()
                                        .all(|d| d
                                            .starts_with("the first backbone stage waited for")),
                                    "{case}: {:?}",
                                    r.departures
                                );
                            }
                            if even && uniform_work {
                                assert!(r.departures.is_empty(), "{case}: {:?}", r.departures);
                            }
                            spilled += usize::from(worst > 0.0);
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 1920);
    assert!(
        exact > cases / 2 && spilled > cases / 2,
        "{exact} exact, {spilled} spilled of {cases}"
    );
}
