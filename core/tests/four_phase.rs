//! JanusPipe's second-order schedules: the four phases per microbatch and stage, their
//! directions, WaveK's trailing-wave bubble and memory, the (max,+) check, Lemma 1.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::scenario;
use mpipe::graph::event::Event;
use mpipe::scenario::Scenario;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::{ONE_F_ONE_B_2ND, TRANSPOSE, WAVEK};
use mpipe::sim::engine::SimOptions;
use mpipe::sim::run::Simulation;
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::phase::Phase;
use mpipe::vocab::role::Role;
use std::collections::HashMap;

/// `layers` layers of a second-order model with the paper's phase order (FE < FF < BE < BF).
fn mlip(layers: usize) -> Vec<LayerSpec> {
    vec![LayerSpec {
        fe_s: Some(1.0),
        ff_s: Some(1.5),
        bf_s: Some(2.5),
        be_s: Some(2.0),
        activation_bytes: Some(100.0),
        force_activation_bytes: Some(60.0),
        ..LayerSpec::timed("block", Role::Backbone, layers, 1.0)
    }]
}

/// Every phase takes `t` = 1 s per stage (one layer per rank).
fn uniform(ranks: usize) -> Vec<LayerSpec> {
    vec![LayerSpec {
        fe_s: Some(1.0),
        ff_s: Some(1.0),
        bf_s: Some(1.0),
        be_s: Some(1.0),
        activation_bytes: Some(1.0),
        ..LayerSpec::timed("block", Role::Backbone, ranks, 1.0)
    }]
}

fn wavek(layers: Vec<LayerSpec>, ranks: usize, microbatches: usize, k: usize) -> Scenario {
    let mut s = scenario(layers, &[], &[WAVEK], ranks, microbatches);
    s.wave_k = Some(k);
    s
}

fn sim(s: &Scenario) -> Simulation {
    simulate_scenario(s, SimOptions::default()).unwrap()
}

/// (stage, phase, microbatch) → (start, end) of every four-phase event.
fn times(sim: &Simulation) -> HashMap<(usize, Phase, usize), (f64, f64)> {
    let g = &sim.derivation.order.graph;
    g.node_indices()
        .filter_map(|n| match g.node_weight(n) {
            Some(&Event::FourPhase {
                stage, mb, phase, ..
            }) => Some((
                (stage.index(), phase, mb.index()),
                sim.timeline.span_of(n).unwrap(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn phases_run_in_order_per_stage_and_flow_in_their_directions() {
    for (p, m) in [(1, 3), (2, 5), (3, 7), (4, 8), (4, 32), (5, 6)] {
        let mut cases: Vec<Scenario> = (1..=m).map(|k| wavek(mlip(2 * p), p, m, k)).collect();
        cases.push(scenario(mlip(2 * p), &[], &[ONE_F_ONE_B_2ND], p, m));
        for s in cases {
            let sim = sim(&s);
            let t = times(&sim);
            assert_eq!(t.len(), 4 * p * m, "P={p} M={m} k={:?}", s.wave_k);
            let at = |stage, phase, mb| t.get(&(stage, phase, mb)).copied().unwrap();
            for mb in 0..m {
                for stage in 0..p {
                    for pair in Phase::FOUR.windows(2) {
                        let (before, after) = (at(stage, pair[0], mb), at(stage, pair[1], mb));
                        assert!(
                            after.0 >= before.1,
                            "{stage}{:?}{mb} before {:?}",
                            pair[1],
                            pair[0]
                        );
                    }
                    if stage + 1 < p {
                        for phase in Phase::FOUR {
                            let (up, down) = (at(stage, phase, mb), at(stage + 1, phase, mb));
                            if phase.flows_down() {
                                assert!(down.0 >= up.1, "{phase:?} flows first → last");
                            } else {
                                assert!(up.0 >= down.1, "{phase:?} flows last → first");
                            }
                        }
                    }
                }
                // The turnarounds: FF starts where FE ends, BF at the first stage after the
                // forces, BE where BF ends.
                let last = p - 1;
                assert!(
                    at(last, Phase::ForceForward, mb).0 >= at(last, Phase::EnergyForward, mb).1
                );
                assert!(at(0, Phase::ForceBackward, mb).0 >= at(0, Phase::ForceForward, mb).1);
                assert!(
                    at(last, Phase::EnergyBackward, mb).0 >= at(last, Phase::ForceBackward, mb).1
                );
            }
        }
    }
}

#[test]
fn the_trailing_wave_costs_exactly_when_k_does_not_divide_m() {
    // Uniform phases of t = 1 s: with k | M the step takes 4M + 2(P−1)(M/k + 1) seconds (one
    // boundary bubble of 2(P−1) per wave, plus one); with k ∤ M, strictly more than that
    // formula at M/k waves.
    for p in 1..=5 {
        for m in 1..=16 {
            for k in 1..=m {
                let got = sim(&wavek(uniform(p), p, m, k)).makespan_s;
                let waves = m as f64 / k as f64;
                let formula = 4.0 * m as f64 + 2.0 * (p as f64 - 1.0) * (waves + 1.0);
                if m % k == 0 {
                    assert_eq!(got, formula, "P={p} M={m} k={k}");
                } else if p > 1 {
                    assert!(got > formula + 1e-9, "P={p} M={m} k={k}: {got} ≤ {formula}");
                }
            }
        }
    }
}

#[test]
fn peak_memory_never_falls_as_k_grows() {
    for (layers, p, m) in [(mlip(8), 4, 32), (uniform(4), 4, 12), (mlip(6), 3, 10)] {
        let peaks: Vec<f64> = (1..=m)
            .map(|k| {
                sim(&wavek(layers.clone(), p, m, k))
                    .memory
                    .iter()
                    .map(|c| c.peak_bytes)
                    .fold(0.0, f64::max)
            })
            .collect();
        for (k, pair) in peaks.windows(2).enumerate() {
            assert!(pair[1] >= pair[0], "k = {} → {}: {:?}", k + 1, k + 2, peaks);
        }
        assert!(peaks[m - 1] > peaks[0]);
    }
}

#[test]
fn a_wave_holds_its_microbatches_activations() {
    // Rank 0 of P = 4, M = 8, one layer per rank, FE saving 100 B and FF 60 B a microbatch:
    // while a wave's energy backwards run, the next wave's energy forwards have started, so the
    // peak holds two waves' FE activations (2k · 100 B); one wave (k = M) holds its FE and FF
    // activations at once (k · 160 B).
    let peak = |k| {
        sim(&wavek(mlip(4), 4, 8, k))
            .memory
            .first()
            .map(|c| c.peak_bytes)
            .unwrap()
    };
    assert_eq!(peak(1), 2.0 * 100.0);
    assert_eq!(peak(2), 4.0 * 100.0);
    assert_eq!(peak(4), 8.0 * 100.0);
    assert_eq!(peak(8), 8.0 * (100.0 + 60.0));
}

#[test]
fn one_f_one_b_2nd_is_wavek_in_waves_of_one() {
    for (p, m) in [(2, 3), (4, 8), (3, 9)] {
        let baseline = sim(&scenario(mlip(p), &[], &[ONE_F_ONE_B_2ND], p, m));
        let one = sim(&wavek(mlip(p), p, m, 1));
        for r in 0..p {
            assert_eq!(
                baseline.derivation.order.actions(r),
                one.derivation.order.actions(r)
            );
        }
        assert_eq!(baseline.makespan_s, one.makespan_s);
        // Waves of P run faster than the baseline.
        assert!(sim(&wavek(mlip(p), p, m, p)).makespan_s < baseline.makespan_s);
    }
    assert_eq!(
        common::rank_actions(&scenario(mlip(2), &[], &[ONE_F_ONE_B_2ND], 2, 2), 1),
        "1FE0 1FF0 1BF0 1FE1 1BE0 1FF1 1BF1 1BE1"
    );
}

#[test]
fn composing_region_denotations_gives_the_longest_path() {
    for s in [
        wavek(mlip(8), 4, 32, 5),
        wavek(uniform(3), 3, 7, 2),
        scenario(mlip(4), &[], &[ONE_F_ONE_B_2ND], 4, 6),
    ] {
        let sim = sim(&s);
        let d = &sim.derivation;
        let composed = mpipe::sim::maxplus::composed_completion(
            &d.order,
            sim.durations(),
            d.plan.regions.len(),
        );
        assert_eq!(composed, sim.timeline.ends().collect::<Vec<_>>());
        let events = mpipe::sim::engine::simulate_events(
            &d.order,
            sim.durations().to_vec(),
            SimOptions::default(),
        );
        assert_eq!(
            events.ends().collect::<Vec<_>>(),
            sim.timeline.ends().collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_frozen_model_runs_energy_and_forces_only() {
    let mut layers = mlip(4);
    layers[0].trainable = false;
    let sim = sim(&wavek(layers, 2, 3, 2));
    let t = times(&sim);
    assert_eq!(t.len(), 2 * 2 * 3);
    assert!(t.keys().all(|(_, phase, _)| !phase.is_backward()));
    let g = &sim.derivation.order.graph;
    assert!(
        !g.node_weights()
            .any(|e| matches!(e, Event::DpReduce { .. }))
    );
    // Trainable: both BF (second order) and BE accumulate into the reduce.
    let sim = sim_dp(wavek(mlip(4), 2, 3, 2));
    let g = &sim.derivation.order.graph;
    let reduce = g
        .node_indices()
        .find(|&n| matches!(g.node_weight(n), Some(Event::DpReduce { rank, .. }) if rank.index() == 0))
        .unwrap();
    let mut feeding: Vec<String> = g
        .neighbors_directed(reduce, petgraph::Direction::Incoming)
        .filter_map(|n| {
            g.node_weight(n)
                .and_then(Event::action)
                .map(|a| a.to_string())
        })
        .collect();
    feeding.sort();
    assert_eq!(feeding, ["0BE0", "0BE1", "0BE2", "0BF0", "0BF1", "0BF2"]);
}

fn sim_dp(mut s: Scenario) -> Simulation {
    s.data_parallel = 2;
    sim(&s)
}

#[test]
fn phase_costs_default_to_the_papers_order() {
    // fwd 1 s, bwd 2 s: FE 1, FF 1.5, BE 2, BF 2.5.
    let s = wavek(
        vec![LayerSpec::timed("block", Role::Backbone, 1, 1.0)],
        1,
        1,
        1,
    );
    let sim = sim(&s);
    let t = times(&sim);
    let length = |phase| t.get(&(0, phase, 0)).map(|(a, b)| b - a).unwrap();
    assert_eq!(
        Phase::FOUR.map(length),
        [1.0, 1.5, 2.5, 2.0],
        "FE, FF, BF, BE"
    );
    assert_eq!(sim.makespan_s, 7.0);
}

#[test]
fn hand_written_four_phase_orders_are_read() {
    let mut s = scenario(mlip(2), &[], &[ONE_F_ONE_B_2ND], 2, 1);
    s.orders = Some(vec![
        ["0FE0", "0FF0", "0BF0", "0BE0"].map(String::from).to_vec(),
        ["1FE0", "1FF0", "1BF0", "1BE0"].map(String::from).to_vec(),
    ]);
    // One microbatch: its four passes over both stages, 7 s a stage.
    assert_eq!(sim(&s).makespan_s, 2.0 * 7.0);
    s.orders = Some(vec![
        ["0FE0", "0FF0", "0BE0"].map(String::from).to_vec(),
        ["1FE0", "1FF0", "1BF0", "1BE0"].map(String::from).to_vec(),
    ]);
    assert_eq!(
        mpipe::derive(&s).unwrap_err().to_string(),
        "rule `orders`: `orders[0]`: misses `0BF0`"
    );
}

#[test]
fn second_order_rules_are_named() {
    let err = |s: &Scenario| mpipe::derive(s).unwrap_err().to_string();
    assert_eq!(
        err(&wavek(mlip(4), 2, 4, 0)),
        "rule `wave-k`: `wave_k` = 0; WaveK's unit size must be between 1 and M = 4"
    );
    assert_eq!(
        err(&wavek(mlip(4), 2, 4, 5)),
        "rule `wave-k`: `wave_k` = 5; WaveK's unit size must be between 1 and M = 4"
    );
    let mut s = scenario(mlip(4), &[], &[ONE_F_ONE_B_2ND], 2, 4);
    s.wave_k = Some(2);
    assert_eq!(
        err(&s),
        "rule `wave-k`: `wave_k` = 2 is set, but no region runs `wavek` (the schedule is ⟨1f1b-2nd⟩)"
    );
    let mut layers = mlip(4);
    layers.insert(0, LayerSpec::timed("embed", Role::Encoder, 1, 0.5));
    assert_eq!(
        err(&scenario(layers, &[1], &[TRANSPOSE, WAVEK], 2, 4)),
        "rule `four-phase-alone`: region 2 is wavek, but the schedule also runs transpose (region 1); second-order schedules run the whole model, four phases per microbatch, and do not compose with other skeletons yet"
    );
    assert_eq!(
        err(&scenario(mlip(4), &[2], &[WAVEK, WAVEK], 2, 4)),
        "rule `four-phase-region`: wavek runs exactly 1 Sharded regions (each of its four phases is one pass over the pipeline); the schedule gives 2"
    );
}

#[test]
fn the_uma_sample_has_the_shape_of_fig_12_and_gars_shortens_its_step() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/uma-1.2b.json");
    let text = std::fs::read_to_string(path).unwrap();
    let s = Scenario::from_json_str(&text, path).unwrap();
    let w = mpipe::tune::wave_sweep::sweep(&s, 2..=12, SimOptions::default(), &mut |_| true)
        .unwrap()
        .unwrap();
    let at = |k: usize| w.points.iter().find(|p| p.k == k).unwrap();
    // Non-divisible k (trailing-wave bubbles) fall behind their divisible neighbours.
    assert!(at(5).makespan_s > at(4).makespan_s);
    assert!(at(9).makespan_s > at(8).makespan_s);
    // Memory rises with k; k = 11 is the first beyond the 40.96 GB device.
    for pair in w.points.windows(2) {
        assert!(pair[1].peak_memory_bytes >= pair[0].peak_memory_bytes);
    }
    assert!(!at(10).over_capacity && at(11).over_capacity);
    assert_eq!(w.best_k, Some(8));
    assert_eq!(at(4).throughput_vs_default, Some(1.0));
    // GARS against sequential packing: a shorter step, a smaller largest microbatch.
    let c = mpipe::tune::packing::compare_packings(&s, SimOptions::default())
        .unwrap()
        .unwrap();
    assert!(c.gars.makespan_s < c.sequential.makespan_s);
    assert!(c.gars.imbalance < c.sequential.imbalance);
    assert!(c.gars.max_atoms <= c.sequential.max_atoms);
}

#[test]
fn the_sweep_refuses_first_order_schedules() {
    let s = scenario(
        common::uniform(4),
        &[],
        &[mpipe::schedules::ONE_F_ONE_B],
        2,
        4,
    );
    assert_eq!(
        mpipe::tune::wave_sweep::sweep(&s, 2..=12, SimOptions::default(), &mut |_| true)
            .unwrap_err()
            .to_string(),
        "the WaveK sweep needs a schedule that runs with a unit size k (`wavek` or `1f1b-2nd`); the schedule is ⟨1f1b⟩"
    );
    // A 1f1b-2nd scenario is swept as wavek, over k within 1..=M only.
    let s = scenario(mlip(2), &[], &[ONE_F_ONE_B_2ND], 2, 3);
    let w =
        mpipe::tune::wave_sweep::sweep(&s, 2..=usize::MAX, SimOptions::default(), &mut |_| true)
            .unwrap()
            .unwrap();
    assert_eq!(w.points.iter().map(|p| p.k).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(w.points.first().map(|p| p.trailing), Some(1));
}

const UMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/uma-1.2b.json");

#[test]
fn mpipe_sweep_prints_each_k_and_marks_the_ones_beyond_capacity() {
    let (code, out, err) = common::mpipe(&["sweep", UMA, "--wave-k", "4..12"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("WaveK sweep, M = 32 (throughput against k = 4; device capacity 40.96 GB)")
    );
    assert_eq!(lines.len(), 2 + 9 + 1);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("   8 ") && l.ends_with("best"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("   5 ") && l.ends_with("k ∤ M: trailing wave of 2"))
    );
    // Beyond capacity, the fit finds nothing (a second-order schedule only recomputes, which
    // cannot lower the peak of a wave's energy forwards waiting for their force forwards).
    assert!(lines.iter().any(|l| l.starts_with("  11 ")
        && l.ends_with(
            "k ∤ M: trailing wave of 10, over capacity; nothing fits: no lower than 43.44 GB"
        )));
    assert_eq!(lines.last().copied(), Some("best k within capacity: 8"));
    let (code, out, _) = common::mpipe(&["sweep", UMA, "--wave-k", "8", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["best_k"], 8);
    assert_eq!(v["points"][0]["k"], 8);
    assert_eq!(
        v["points"][0]["throughput_vs_default"],
        serde_json::Value::Null
    );
    let (code, _, err) = common::mpipe(&["sweep", UMA, "--wave-k", "12..2"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "error: --wave-k: `12..2` is not a range of unit sizes; write A..B (both included) or one k, e.g. 2..12"
    );
}

#[test]
fn mpipe_simulate_shows_the_packing_before_and_after() {
    let (code, out, err) = common::mpipe(&["simulate", UMA]);
    assert_eq!(code, 0, "{err}");
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("graph packing (GARS)"))
        .collect();
    assert_eq!(
        block.first().copied(),
        Some("graph packing (GARS): sequential → GARS")
    );
    assert!(
        block
            .iter()
            .any(|l| l.trim_start().starts_with("imbalance (max/mean)"))
    );
    // 32 microbatches, each with its load before and after.
    assert_eq!(
        block
            .iter()
            .filter(|l| l.trim_start().starts_with("mb "))
            .count(),
        32
    );
    assert_eq!(block.last().copied(), Some("  the scenario uses GARS"));
    let (_, out, _) = common::mpipe(&["simulate", UMA, "--json", "--no-events"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let before = v["packing"]["sequential"]["makespan_s"].as_f64().unwrap();
    let after = v["packing"]["gars"]["makespan_s"].as_f64().unwrap();
    assert!(after < before);
    assert_eq!(v["makespan_s"].as_f64(), Some(after));
}

#[test]
fn edits_set_the_wave_size_and_the_packing() {
    use mpipe::scenario::edit::Edit;
    let mut s = scenario(mlip(4), &[], &[ONE_F_ONE_B_2ND], 2, 4);
    // A k for a 1f1b-2nd scenario makes it wavek.
    Edit::WaveK(Some(3)).apply(&mut s);
    assert_eq!((s.schedule.clone(), s.wave_k), (vec![WAVEK], Some(3)));
    // wave_k goes with the last wavek region, and only then.
    Edit::Skeleton {
        region: 1,
        skeleton: WAVEK,
    }
    .apply(&mut s);
    assert_eq!(s.wave_k, Some(3));
    Edit::Skeleton {
        region: 1,
        skeleton: ONE_F_ONE_B_2ND,
    }
    .apply(&mut s);
    assert_eq!(s.wave_k, None);
    mpipe::derive(&s).unwrap();
    // The packing of a batch of graphs; nothing without one.
    Edit::Packing(mpipe::workload::gars::Packing::Sequential).apply(&mut s);
    assert_eq!(s.workload, None);
    s.workload = Some(mpipe::workload::Workload {
        graphs: Some(mpipe::workload::gars::Graphs {
            atoms: Some(vec![5, 6, 7, 8]),
            ..Default::default()
        }),
        ..Default::default()
    });
    Edit::Packing(mpipe::workload::gars::Packing::Sequential).apply(&mut s);
    assert_eq!(
        s.workload.and_then(|w| w.graphs).map(|g| g.packing),
        Some(mpipe::workload::gars::Packing::Sequential)
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random second-order scenarios: uneven phase costs, slabs, trainability, data
    /// parallelism, links and workloads. Every order holds the four phases' per-stage order and
    /// directions, and the (max,+) composition gives the simulated timeline.
    #[test]
    fn random_second_order_scenarios_keep_the_phase_order(
        p in 1usize..6,
        m in 1usize..14,
        k_pick in 0usize..14,
        costs in proptest::collection::vec(0.0f64..3.0, 4),
        extra_layers in 0usize..5,
        trainable in proptest::bool::ANY,
        dp in 1usize..3,
        link in proptest::bool::ANY,
        baseline in proptest::bool::ANY,
        seed in 0u64..1000,
    ) {
        let layer = LayerSpec {
            fe_s: Some(costs[0]),
            ff_s: Some(costs[1]),
            bf_s: Some(costs[2]),
            be_s: Some(costs[3]),
            trainable,
            activation_bytes: Some(10.0),
            output_bytes: Some(5.0),
            param_bytes: Some(3.0),
            workload_varies: true,
            ..LayerSpec::timed("block", Role::Backbone, p + extra_layers, 1.0)
        };
        let mut s = if baseline {
            scenario(vec![layer], &[], &[ONE_F_ONE_B_2ND], p, m)
        } else {
            wavek(vec![layer], p, m, 1 + k_pick % m)
        };
        s.data_parallel = dp;
        if link {
            s.hardware = Some(mpipe::scenario::hardware::Hardware {
                link_alpha_s: Some(0.1),
                link_bytes_per_s: Some(50.0),
                ..Default::default()
            });
        }
        s.workload = Some(mpipe::workload::Workload {
            distribution: Some(mpipe::workload::Distribution::Uniform { low: 0.5, high: 2.0 }),
            seed: Some(seed),
            ..Default::default()
        });
        let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
        let t = times(&sim);
        let phases: &[Phase] = if trainable { &Phase::FOUR } else { &Phase::FOUR[..2] };
        proptest::prop_assert_eq!(t.len(), phases.len() * p * m);
        for mb in 0..m {
            for stage in 0..p {
                for pair in phases.windows(2) {
                    let (a, b) = (t[&(stage, pair[0], mb)], t[&(stage, pair[1], mb)]);
                    proptest::prop_assert!(b.0 >= a.1);
                }
                if stage + 1 < p {
                    for &phase in phases {
                        let (up, down) = (t[&(stage, phase, mb)], t[&(stage + 1, phase, mb)]);
                        if phase.flows_down() {
                            proptest::prop_assert!(down.0 >= up.1);
                        } else {
                            proptest::prop_assert!(up.0 >= down.1);
                        }
                    }
                }
            }
        }
        let d = &sim.derivation;
        let composed =
            mpipe::sim::maxplus::composed_completion(&d.order, sim.durations(), d.plan.regions.len());
        proptest::prop_assert_eq!(&composed, &sim.timeline.ends().collect::<Vec<_>>());
    }
}

#[test]
fn four_phase_orders_round_trip_through_the_pipeline_csv() {
    use mpipe::scenario::orders_csv;
    let s = wavek(mlip(8), 4, 9, 4);
    let d = mpipe::derive(&s).unwrap();
    let mut bytes = Vec::new();
    mpipe::report::orders_csv::write(&d, &mut bytes).unwrap();
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("0FE0,0FE1,0FE2,0FE3,")
    );
    let read = orders_csv::read(text, "w.csv", mpipe::algebra::budget::csv_limits(&s)).unwrap();
    assert_eq!(read.skipped, 0);
    let mut followed = s.clone();
    followed.orders = Some(read.orders);
    assert_eq!(sim(&followed).makespan_s, sim(&s).makespan_s);
}

#[test]
fn every_rank_runs_one_order_and_a_per_position_warmup_deadlocks() {
    // WaveK gives every rank the same sequence of (phase, microbatch).
    let s = wavek(mlip(4), 4, 10, 3);
    let d = mpipe::derive(&s).unwrap();
    let shape = |r: usize| -> Vec<(Phase, usize)> {
        d.order
            .actions(r)
            .iter()
            .map(|a| (a.phase, usize::from(a.mb)))
            .collect()
    };
    for r in 1..4 {
        assert_eq!(shape(r), shape(0));
    }
    // 1F1B's own warmup, P − 1 − r forward blocks (FE, FF) before the first backward block
    // (BF, BE), deadlocks with four phases: each block is a round trip.
    let (p, m) = (3, 4);
    let orders: Vec<Vec<String>> = (0..p)
        .map(|r| {
            let block =
                |a: &str, b: &str, mb: usize| [format!("{r}{a}{mb}"), format!("{r}{b}{mb}")];
            let warmup = (p - 1 - r).min(m);
            let mut list: Vec<String> = (0..warmup).flat_map(|mb| block("FE", "FF", mb)).collect();
            for mb in warmup..m {
                list.extend(block("FE", "FF", mb));
                list.extend(block("BF", "BE", mb - warmup));
            }
            list.extend((m - warmup..m).flat_map(|mb| block("BF", "BE", mb)));
            list
        })
        .collect();
    let mut hand = scenario(mlip(p), &[], &[ONE_F_ONE_B_2ND], p, m);
    hand.orders = Some(orders);
    let err = mpipe::derive(&hand).unwrap_err().to_string();
    assert!(err.starts_with("rule `deadlock-free`"), "{err}");
}

#[test]
fn the_sweep_runs_a_unit_size_a_step_to_the_same_sweep() {
    // What the web build runs between frames: one k per step (with its fit under the capacity
    // when it is over, as k = 11 and 12 are here), Cancel heard at the next step.
    use mpipe::tune::Stepped;
    use mpipe::tune::wave_sweep::SweepSteps;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/uma-1.2b.json");
    let text = std::fs::read_to_string(path).unwrap();
    let s = Scenario::from_json_str(&text, path).unwrap();
    let whole = mpipe::tune::wave_sweep::sweep(&s, 2..=12, SimOptions::default(), &mut |_| true)
        .unwrap()
        .unwrap();
    let mut steps = SweepSteps::new(&s, 2..=12, SimOptions::default()).unwrap();
    let mut again = 0;
    let stepped = loop {
        match steps.step(&mut |_| true).unwrap() {
            Stepped::Again => again += 1,
            Stepped::Done(w) => break w,
            Stepped::Cancelled => panic!("not cancelled"),
        }
    };
    assert_eq!(stepped, whole);
    assert_eq!(again, 11);
    let mut steps = SweepSteps::new(&s, 2..=12, SimOptions::default()).unwrap();
    assert_eq!(steps.step(&mut |_| true).unwrap(), Stepped::Again);
    assert_eq!(steps.step(&mut |_| false).unwrap(), Stepped::Cancelled);
}

#[test]
fn the_packings_run_one_a_step_to_the_same_comparison() {
    use mpipe::tune::packing::PackingSteps;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/uma-1.2b.json");
    let text = std::fs::read_to_string(path).unwrap();
    let s = Scenario::from_json_str(&text, path).unwrap();
    let whole = mpipe::tune::packing::compare_packings(&s, SimOptions::default())
        .unwrap()
        .unwrap();
    let mut steps = PackingSteps::new(&s, SimOptions::default()).unwrap();
    // The sequential packing, then GARS with the comparison, each after the fraction done.
    use mpipe::tune::Stepped;
    let mut fractions = Vec::new();
    let mut heard = |f: f32| {
        fractions.push(f);
        true
    };
    assert_eq!(steps.step(&mut heard).unwrap(), Stepped::Again);
    assert_eq!(steps.step(&mut heard).unwrap(), Stepped::Done(whole));
    assert_eq!(fractions, [0.0, 0.5]);
    // Stopped after the first, it says so.
    let mut steps = PackingSteps::new(&s, SimOptions::default()).unwrap();
    assert_eq!(steps.step(&mut |_| true).unwrap(), Stepped::Again);
    assert_eq!(steps.step(&mut |_| false).unwrap(), Stepped::Cancelled);
    // A scenario whose workload packs no graphs has no steps.
    let mut plain = s.clone();
    plain.workload = None;
    assert!(PackingSteps::new(&plain, SimOptions::default()).is_none());
}
