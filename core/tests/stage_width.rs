//! A stage wider than one device (issue 28, DESIGN.md §3.1): the collectives inside a stage equal
//! their closed forms (ring all-reduce `2(g−1)α + 2(g−1)/g·βn`, all-to-all and ring exchange
//! `(g−1)α + (g−1)/g·βn`), on the link their group spans; with free links the width only divides
//! the compute; a hidden share of 1 with enough compute hides everything (overlap rate 100 %) and
//! a share of 0 nothing, with exact makespans; an overlapped pair hides each half's collectives
//! under the other's compute; the (max,+) composition still equals the longest path; and a width
//! that cannot be is refused with its field.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::sim::run::Simulation;
use serde_json::{Value, json};

fn scenario(layers: Value, schedule: &[&str], ranks: usize, m: usize, extra: Value) -> String {
    let mut s = json!({
        "format": "mpipe-scenario/1",
        "model": {"layers": layers},
        "schedule": schedule,
        "ranks": ranks,
        "microbatches": m,
    });
    if let (Some(obj), Some(more)) = (s.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            obj.insert(k.clone(), v.clone());
        }
    }
    s.to_string()
}

fn simulate(text: &str) -> Simulation {
    let s = mpipe::Scenario::from_json_str(text, "w.json").unwrap();
    mpipe::tune::pipeline::simulate_scenario(&s, Default::default()).unwrap()
}

fn refused(text: &str) -> String {
    let s = mpipe::Scenario::from_json_str(text, "w.json").unwrap();
    match mpipe::derive(&s) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("derived"),
    }
}

/// One layer, one rank, one microbatch: the step is one forward and one backward.
fn one_layer(layer: Value, width: Value, hardware: Value, extra: Value) -> Simulation {
    let mut more = json!({"width": [width], "hardware": hardware});
    if let (Some(obj), Some(x)) = (more.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            obj.insert(k.clone(), v.clone());
        }
    }
    simulate(&scenario(json!([layer]), &["1f1b"], 1, 1, more))
}

/// Links inside a node only: the pipeline's seams and the gradient reduce stay free.
fn intra() -> Value {
    json!({"intra_link_alpha_s": 0.5, "intra_link_bytes_per_s": 4.0})
}

#[test]
fn a_tensor_parallel_layer_all_reduces_its_output_twice_each_way() {
    // tp = 4: the forward computes 4/4 = 1 s, the backward 8/4 = 2 s; each all-reduce of 8 bytes
    // over 4 devices takes 2·3·0.5 + 2·3/4·8/4 = 6 s, two per forward and two per backward.
    let layer = json!({"name": "l", "fwd_s": 4.0, "bwd_s": 8.0, "output_bytes": 8.0});
    let sim = one_layer(layer, json!({"tp": 4}), intra(), json!({}));
    assert_eq!(sim.makespan_s, (1.0 + 12.0) + (2.0 + 12.0));
    assert_eq!(sim.ranks[0].stage_comm_s, 24.0);
    assert_eq!(sim.ranks[0].overlap_rate, Some(0.0));
}

#[test]
fn under_in_weight_the_first_stages_collectives_run_in_its_weight_half() {
    // Zero bubble on one rank (its only stage the first): split, the input half computes half the
    // backward, 1 s, and runs both backward all-reduces, 12 s; the weight half computes 1 s.
    // Under `in_weight` the input half runs nothing and the weight half all of it, 2 + 12 s.
    let layer = json!({"name": "l", "fwd_s": 4.0, "bwd_s": 8.0, "output_bytes": 8.0});
    for (first_stage, want) in [("split", [13.0, 1.0]), ("in_weight", [0.0, 14.0])] {
        let mut hardware = intra();
        hardware["first_stage_backward"] = json!(first_stage);
        let text = scenario(
            json!([layer]),
            &["zb1p"],
            1,
            1,
            json!({"width": [{"tp": 4}], "hardware": hardware}),
        );
        let sim = simulate(&text);
        let halves: Vec<f64> = ["I", "W"]
            .iter()
            .map(|code| sim.durations()[common::first_of_phase(&sim, code)])
            .collect();
        assert_eq!(halves, want, "{first_stage}");
        assert_eq!(sim.makespan_s, 13.0 + 14.0, "{first_stage}");
        assert_eq!(sim.ranks[0].stage_comm_s, 24.0, "{first_stage}");
    }
}

#[test]
fn an_moe_layer_dispatches_and_combines_by_all_to_all() {
    // ep = 4 over four data-parallel replicas: each all-to-all of 8 bytes takes
    // 3·0.5 + 3/4·8/4 = 3 s, dispatch and combine in each direction; EP does not divide compute.
    let layer = json!({"name": "moe", "fwd_s": 4.0, "bwd_s": 8.0, "moe_dispatch_bytes": 8.0});
    let sim = one_layer(
        layer,
        json!({"ep": 4}),
        intra(),
        json!({"data_parallel": 4}),
    );
    assert_eq!(sim.makespan_s, (4.0 + 6.0) + (8.0 + 6.0));
}

#[test]
fn a_context_parallel_layer_passes_keys_and_values_round_a_ring() {
    // cp = 2: compute halves; the ring passes 16 bytes' halves once, 0.5 + 1/2·16/4 = 2.5 s in
    // the forward, twice that in the backward.
    let layer = json!({"name": "att", "fwd_s": 4.0, "bwd_s": 8.0, "cp_exchange_bytes": 16.0});
    let sim = one_layer(layer, json!({"cp": 2}), intra(), json!({}));
    assert_eq!(sim.makespan_s, (2.0 + 2.5) + (4.0 + 5.0));
}

#[test]
fn a_group_wider_than_a_node_runs_on_the_links_between_nodes() {
    // tp = 8: compute 0.5 s and 1 s; two all-reduces of 8 bytes each way. Inside a node
    // (α 0.5, 4 B/s): 2·7·0.5 + 2·7/8·2 = 10.5 s each; across nodes (α 1, 8 B/s):
    // 2·7·1 + 2·7/8·1 = 15.75 s each.
    let layer = json!({"name": "l", "fwd_s": 4.0, "bwd_s": 8.0, "output_bytes": 8.0});
    let hw = |node: usize| {
        json!({"intra_link_alpha_s": 0.5, "intra_link_bytes_per_s": 4.0,
               "link_alpha_s": 1.0, "link_bytes_per_s": 8.0, "node_devices": node})
    };
    let inside = one_layer(layer.clone(), json!({"tp": 8}), hw(8), json!({}));
    assert_eq!(inside.makespan_s, 0.5 + 21.0 + 1.0 + 21.0);
    let across = one_layer(layer, json!({"tp": 8}), hw(4), json!({}));
    assert_eq!(across.makespan_s, 0.5 + 31.5 + 1.0 + 31.5);
}

#[test]
fn with_free_links_the_width_only_divides_the_compute() {
    // 1F1B, P = 4, M = 8, t_f = 1, t_b = 2 per stage on one device: (M + P − 1)(t_f + t_b)/D.
    let layers = json!([{"name": "l", "count": 4, "fwd_s": 1.0, "bwd_s": 2.0,
                         "output_bytes": 8.0, "moe_dispatch_bytes": 8.0}]);
    for (width, devices) in [
        (json!({"tp": 2, "cp": 2}), 4.0),
        (json!({"tp": 4, "devices": 8}), 8.0),
        (json!({"ep": 2, "cp": 2}), 2.0),
    ] {
        let sim = simulate(&scenario(
            layers.clone(),
            &["1f1b"],
            4,
            8,
            json!({"width": [width], "data_parallel": 2}),
        ));
        assert_eq!(sim.makespan_s, 11.0 * 3.0 / devices, "{width}");
        assert!(sim.ranks.iter().all(|r| r.stage_comm_s == 0.0));
    }
}

/// 1F1B over two ranks, one tensor-parallel layer each, 4 microbatches, the collectives hidden
/// by `share`; the layer's forward is `fwd_s` on one device (its backward twice that).
fn hidden(fwd_s: f64, share: f64) -> Simulation {
    let layers = json!([{"name": "l", "count": 2, "fwd_s": fwd_s, "output_bytes": 8.0}]);
    simulate(&scenario(
        layers,
        &["1f1b"],
        2,
        4,
        json!({"width": [{"tp": 4, "tp_overlap": share}], "hardware": intra()}),
    ))
}

#[test]
fn a_hidden_share_of_one_with_enough_compute_hides_every_collective() {
    // tp = 4: t_f = 64/4 = 16 s and t_b = 32 s of compute, 12 s of collectives each way.
    // Share 1: all hidden, (M + P − 1)(t_f + t_b) = 5·48; share 0: 5·(28 + 44); share 0.5:
    // 6 s of each hidden, 5·(22 + 38).
    let all = hidden(64.0, 1.0);
    assert_eq!(all.makespan_s, 5.0 * 48.0);
    for r in &all.ranks {
        assert_eq!(r.overlap_rate, Some(1.0));
        assert_eq!(r.stage_comm_s, 4.0 * 24.0);
    }
    let none = hidden(64.0, 0.0);
    assert_eq!(none.makespan_s, 5.0 * 72.0);
    assert!(none.ranks.iter().all(|r| r.overlap_rate == Some(0.0)));
    assert_eq!(hidden(64.0, 0.5).makespan_s, 5.0 * 60.0);
    assert!(
        hidden(64.0, 0.5)
            .ranks
            .iter()
            .all(|r| r.overlap_rate == Some(0.5))
    );
}

#[test]
fn compute_hides_at_most_itself() {
    // t_f = 4 s and t_b = 8 s of compute under 12 s of collectives each way, all hideable:
    // the forward hides 4 s, the backward 8 s, each action takes the 12 s its collectives do.
    let short = hidden(16.0, 1.0);
    assert_eq!(short.makespan_s, 5.0 * 24.0);
    assert!(short.ranks.iter().all(|r| r.overlap_rate == Some(0.5)));
}

/// DualPipeV, P = 2, M = 8, one tensor-parallel layer per stage: its paired slots.
fn dualpipev(pair_overlap: bool) -> Simulation {
    let layers =
        json!([{"name": "l", "count": 4, "fwd_s": 24.0, "bwd_s": 48.0, "output_bytes": 8.0}]);
    let width = json!({"tp": 4, "fb_comm_overlap": pair_overlap});
    simulate(&scenario(
        layers,
        &["dualpipev", "dualpipev"],
        2,
        8,
        json!({"cut": [2], "width": [width, width], "hardware": intra()}),
    ))
}

#[test]
fn an_overlapped_pair_hides_each_halfs_collectives_under_the_others_compute() {
    // Each forward computes 6 s, each backward 12 s, each with 12 s of collectives: in a pair
    // the forward's 12 s run under the backward's 12 s of compute (all hidden) and the
    // backward's under the forward's 6 s (6 s exposed); outside a pair nothing is hidden.
    let on = dualpipev(true);
    let off = dualpipev(false);
    let pairs = &on.derivation.order.pairs;
    assert!(!pairs.is_empty());
    let paired: std::collections::HashSet<usize> =
        pairs.iter().flatten().map(|n| n.index()).collect();
    for &[f, b] in pairs {
        assert_eq!(on.stage_comm.of(f.index()), (12.0, 0.0));
        assert_eq!(on.stage_comm.of(b.index()), (12.0, 6.0));
        assert_eq!(off.stage_comm.of(b.index()), (12.0, 12.0));
    }
    for n in 0..on.derivation.order.graph.node_count() {
        let (all, exposed) = on.stage_comm.of(n);
        if !paired.contains(&n) {
            assert_eq!(all, exposed, "node {n} outside a pair hides nothing");
        }
    }
    assert!(on.makespan_s < off.makespan_s);
    assert!(off.ranks.iter().all(|r| r.overlap_rate == Some(0.0)));
    assert!(on.ranks.iter().all(|r| r.overlap_rate.unwrap() > 0.0));
}

#[test]
fn the_max_plus_composition_equals_the_longest_path_with_collectives_inside_stages() {
    let layers = json!([
        {"name": "vit", "role": "encoder", "count": 2, "fwd_s": 2.0, "output_bytes": 4.0,
         "workload_varies": true},
        {"name": "moe", "count": 8, "fwd_s": 3.0, "bwd_s": 5.0, "output_bytes": 8.0,
         "moe_dispatch_bytes": 16.0, "cp_exchange_bytes": 8.0}
    ]);
    let hw = json!({"intra_link_alpha_s": 0.1, "intra_link_bytes_per_s": 4.0,
                    "link_alpha_s": 0.2, "link_bytes_per_s": 2.0, "node_devices": 4});
    for (cut, schedule, width) in [
        (
            json!([2]),
            vec!["transpose", "1f1b"],
            json!([{"tp": 1}, {"tp": 2, "ep": 2, "tp_overlap": 0.5}]),
        ),
        (
            json!([]),
            vec!["1f1b"],
            json!([{"tp": 2, "cp": 2, "cp_overlap": 1.0}]),
        ),
        (
            json!([6]),
            vec!["dualpipev", "dualpipev"],
            json!([{"tp": 4, "ep": 2, "ep_overlap": 0.3}, {"tp": 2, "ep": 2}]),
        ),
        (
            json!([6]),
            vec!["zbv", "zbv"],
            json!([{"tp": 2, "sp": true}, {"tp": 2}]),
        ),
    ] {
        let text = scenario(
            layers.clone(),
            &schedule,
            2,
            8,
            json!({"cut": cut, "width": width, "hardware": hw, "data_parallel": 2,
                   "workload": {"encoder_scale": [1.0, 0.5, 2.0, 1.0, 0.0, 1.5, 1.0, 1.0]}}),
        );
        let sim = simulate(&text);
        let d = &sim.derivation;
        assert!(
            sim.ranks.iter().any(|r| r.stage_comm_s > 0.0),
            "{schedule:?}"
        );
        let composed = mpipe::sim::maxplus::composed_completion(
            &d.order,
            sim.durations(),
            d.plan.regions.len(),
        );
        assert_eq!(
            composed,
            sim.timeline.ends().collect::<Vec<_>>(),
            "{schedule:?}"
        );
    }
}

#[test]
fn memory_per_device_follows_the_width() {
    // One layer, M = 1: the peak is the parameters (1 byte each) and the saved activations.
    // tp = 4 without sequence parallelism keeps (10 + 24/4)/34 of the activations, with it 1/4;
    // the experts' 40 of the 100 parameter bytes are split over tp × ep, the rest over tp.
    let layer = json!({"name": "l", "fwd_s": 1.0, "activation_bytes": 340.0,
                       "param_bytes": 100.0, "expert_param_bytes": 40.0});
    let peak = |width: Value| {
        one_layer(layer.clone(), width, json!({}), json!({"data_parallel": 2})).memory[0].peak_bytes
    };
    assert_eq!(peak(json!({})), 100.0 + 340.0);
    assert_eq!(peak(json!({"tp": 4})), 25.0 + 160.0);
    assert_eq!(peak(json!({"tp": 4, "sp": true})), 25.0 + 85.0);
    assert_eq!(peak(json!({"ep": 2})), 60.0 + 20.0 + 340.0);
    // Context parallelism splits the sequence: every activation by cp; parameters whole.
    assert_eq!(peak(json!({"cp": 2})), 100.0 + 170.0);
}

#[test]
fn an_encoder_on_a_wider_rank_runs_data_parallel_over_its_devices() {
    // ⟨transpose, 1f1b⟩: the backbone's tp = 4 makes every rank four devices; the encoder
    // (tp = 1) runs four-way data-parallel on them: its 4 s forward takes 1 s.
    let layers = json!([
        {"name": "vit", "role": "encoder", "fwd_s": 4.0, "trainable": false},
        {"name": "llm", "count": 2, "fwd_s": 4.0}
    ]);
    let text = scenario(
        layers,
        &["transpose", "1f1b"],
        2,
        2,
        json!({"cut": [1], "width": [{}, {"tp": 4}]}),
    );
    let s = mpipe::Scenario::from_json_str(&text, "w.json").unwrap();
    let d = mpipe::derive(&s).unwrap();
    let devices: Vec<usize> = d.plan.layers.iter().map(|l| l.width.devices).collect();
    assert_eq!(devices, [4, 4, 4]);
    let sim = simulate(&text);
    let encodes: Vec<f64> = d
        .order
        .graph
        .node_indices()
        .filter(|&n| {
            matches!(d.order.graph[n], mpipe::graph::event::Event::Fwd { region, .. } if usize::from(region) == 1)
        })
        .map(|n| sim.durations()[n.index()])
        .collect();
    assert_eq!(encodes, [1.0, 1.0]);
}

#[test]
fn a_width_that_cannot_be_is_refused_with_its_field() {
    let layers = json!([{"name": "l", "count": 2, "fwd_s": 1.0}]);
    let with = |extra: Value| scenario(layers.clone(), &["1f1b"], 2, 2, extra);
    assert_eq!(
        refused(&with(json!({"width": [{}, {}]}))),
        "rule `width`: `width` has 2 entries but there are 1 regions"
    );
    assert_eq!(
        refused(&with(json!({"width": [{"tp": 4, "devices": 6}]}))),
        "rule `width`: `width[0]`: `devices` = 6 is not a multiple of tp × cp = 4 × 1"
    );
    assert_eq!(
        refused(&with(json!({"width": [{"ep": 8}], "data_parallel": 2}))),
        "rule `width`: layer `l.0` has ep = 8, which does not divide its 2 expert-parallel peers (devices / tp = 1 × data_parallel = 2): expert parallelism is carved out of the data- and context-parallel devices"
    );
    let shared = json!([
        {"name": "vit", "role": "encoder", "fwd_s": 1.0, "trainable": false},
        {"name": "llm", "count": 2, "fwd_s": 1.0}
    ]);
    let text = scenario(
        shared,
        &["transpose", "1f1b"],
        2,
        2,
        json!({"cut": [1], "width": [{"tp": 3}, {"tp": 2}]}),
    );
    assert_eq!(
        refused(&text),
        "rule `width`: layer `llm.0` needs tp × cp = 2 devices, which do not divide the 3 devices of rank 0 (as layer `vit` asks); give the layers that share a rank widths whose devices are multiples of each other's tp × cp"
    );
    let own = json!([{"name": "l", "count": 2, "fwd_s": 1.0, "param_bytes": 1.0,
                      "expert_param_bytes": 2.0}]);
    let text = scenario(own, &["1f1b"], 2, 2, json!({}));
    assert!(
        refused(&text)
            .contains("`expert_param_bytes` = 2 is more than the layer's `param_bytes` = 1")
    );
}

#[test]
fn merging_regions_keeps_every_layers_width() {
    // BigMac's memory-efficient design of Mpipe's large-scale sample (the encoder's region
    // merged into the backbone's, its layers alone on rank 0) keeps the encoder 8-way
    // data-parallel on its 8 devices and the backbone's tp 8 / ep 8: the same step as the
    // baseline sample written by hand.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap();
    let mut merged =
        mpipe::Scenario::from_json_str(&read("mpipe-large-scale.json"), "m.json").unwrap();
    let old_cut = std::mem::take(&mut merged.cut);
    merged.schedule = vec![mpipe::schedules::skeleton::Skeleton::named("1f1b").unwrap()];
    merged.slabs = Some(vec![Some(vec![32, 9, 9, 9, 9, 9, 8, 8])]);
    merged.owner = Default::default();
    mpipe::scenario::edit::carry_widths(&mut merged, &old_cut);
    let w = merged.width.clone().unwrap();
    assert_eq!((w.len(), w[0].tp, w[0].ep, w[0].sp), (1, 8, 8, true));
    let encoder = merged.model.layers[0].width.unwrap();
    assert_eq!((encoder.tp, encoder.devices), (1, Some(8)));
    let baseline = simulate(&read("mpipe-large-scale-baseline.json"));
    let mut text = serde_json::to_value(&merged).unwrap();
    text["name"] = json!("merged");
    assert_eq!(simulate(&text.to_string()).makespan_s, baseline.makespan_s);
}

#[test]
fn the_collectives_inside_the_stages_are_said_in_words() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let text = std::fs::read_to_string(root.join("mpipe-large-scale.json")).unwrap();
    let s = mpipe::Scenario::from_json_str(&text, "m.json").unwrap();
    let d = mpipe::derive(&s).unwrap();
    assert_eq!(
        mpipe::report::derive::stage_collectives_in_words(&d.plan),
        [
            "inside region 1's stages (8 devices: tp 1, ep 1, cp 1): no collectives (data-parallel inside the stage)",
            "inside region 2's stages (8 devices: tp 8, ep 8, cp 1, sequence parallel): tensor-parallel all-reduces of the output (2 a layer each way, as reduce-scatter + all-gather); expert-parallel dispatch and combine all-to-alls (58 MoE layers)"
        ]
    );
    // A scenario without widths has none to say.
    let plain = mpipe::derive(
        &mpipe::Scenario::from_json_str(
            &scenario(
                json!([{"name": "l", "count": 2, "fwd_s": 1.0}]),
                &["1f1b"],
                2,
                2,
                json!({}),
            ),
            "p.json",
        )
        .unwrap(),
    )
    .unwrap();
    assert!(mpipe::report::derive::stage_collectives_in_words(&plain.plan).is_empty());
}

#[test]
fn the_svg_chart_draws_exposed_collectives_only_where_there_are_some() {
    let sim = hidden(16.0, 0.0);
    let svg = mpipe::report::svg::render("w", &sim);
    // Every action exposes its 12 s of collectives, drawn at its end.
    let actions = sim.derivation.order.actions(0).len() + sim.derivation.order.actions(1).len();
    assert_eq!(
        svg.matches(r#"fill="url(#exposed)"><title>"#).count(),
        actions
    );
    assert!(svg.contains("collectives inside the stage, exposed</text>"));
    let all_hidden = mpipe::report::svg::render("w", &hidden(64.0, 1.0));
    assert!(!all_hidden.contains("exposed"));
}
