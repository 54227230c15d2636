//! BigMac's three designs of one model (`mpipe compare-designs`): how each is built from the
//! scenario, and the post's claims where they hold and where they do not.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;
use common::{mpipe, scenario};
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::{NESTED, ONE_F_ONE_B, TRANSPOSE};
use mpipe::tune::designs::{Design, compare_designs, scenario_for};
use mpipe::vocab::role::Role;

/// A 4-layer encoder (`encoder_s` per layer forward) before an 8-layer backbone (1 s per layer
/// forward), 4 ranks; every layer holds 1 GB of activation and 1 GB of parameters.
fn model(encoder_s: f64) -> mpipe::Scenario {
    let mut vit = LayerSpec::timed("vit", Role::Encoder, 4, encoder_s);
    let mut llm = LayerSpec::timed("llm", Role::Backbone, 8, 1.0);
    for l in [&mut vit, &mut llm] {
        l.activation_bytes = Some(1e9);
        l.param_bytes = Some(1e9);
    }
    scenario(vec![vit, llm], &[4], &[TRANSPOSE, ONE_F_ONE_B], 4, 8)
}

#[test]
fn each_design_is_built_from_the_scenario() {
    let s = model(0.5);
    assert_eq!(
        scenario_for(&s, Design::Nested).unwrap().schedule,
        [NESTED, ONE_F_ONE_B]
    );
    assert_eq!(
        scenario_for(&s, Design::ComputeEfficient).unwrap().schedule,
        [TRANSPOSE, ONE_F_ONE_B]
    );
    // The encoder alone on rank 0, the backbone balanced over ranks 1 to 3.
    let memory = scenario_for(&s, Design::MemoryEfficient).unwrap();
    assert_eq!(memory.schedule, [ONE_F_ONE_B]);
    assert!(memory.cut.is_empty());
    assert_eq!(memory.slabs, Some(vec![Some(vec![4, 3, 3, 2])]));
    mpipe::derive(&memory).unwrap();
    // No encoder first: nothing to compare.
    let plain = scenario(
        vec![LayerSpec::timed("llm", Role::Backbone, 8, 1.0)],
        &[],
        &[ONE_F_ONE_B],
        4,
        8,
    );
    assert_eq!(
        scenario_for(&plain, Design::Nested).unwrap_err(),
        "the designs need an encoder first (a Replicated region: transpose or nested) before a Sharded backbone"
    );
    // An interleaved backbone has no single stage list to put the encoder before.
    let mut layers = common::vit_llm(4, 8, true);
    layers[1].count = 8;
    let interleaved = scenario(
        layers,
        &[4, 8],
        &[TRANSPOSE, ONE_F_ONE_B, ONE_F_ONE_B],
        4,
        8,
    );
    assert_eq!(
        scenario_for(&interleaved, Design::MemoryEfficient).unwrap_err(),
        "memory-efficient: the encoder as its own stage needs one Sharded backbone region and at least 2 ranks"
    );
}

/// `(design, M) → (makespan, highest rank peak)`.
fn figures(encoder_s: f64) -> Vec<(Design, usize, f64, f64)> {
    let c = compare_designs(&model(encoder_s), &[8, 16, 32, 64], Default::default()).unwrap();
    assert!(c.refused.is_empty());
    c.points
        .iter()
        .map(|p| {
            (
                p.design,
                p.microbatches,
                p.makespan_s,
                p.peak_bytes.iter().copied().fold(0.0, f64::max),
            )
        })
        .collect()
}

fn at(f: &[(Design, usize, f64, f64)], design: Design, m: usize) -> (f64, f64) {
    let p = f.iter().find(|p| p.0 == design && p.1 == m).unwrap();
    (p.2, p.3)
}

#[test]
fn a_light_encoder_nested_beats_its_own_stage_and_keeps_memory_flat() {
    // Encoder forwards of 0.1 s a layer (a tenth of the backbone's): the post's claims hold —
    // nested is faster than the encoder as its own stage at every M, and within 2 % of the
    // compute-efficient design; its peak memory does not grow with M, compute-efficient's
    // (every encoder forward first) grows by M/P encoder activations a rank.
    let f = figures(0.1);
    for m in [8, 16, 32, 64] {
        let (nested, nested_peak) = at(&f, Design::Nested, m);
        let (memory, _) = at(&f, Design::MemoryEfficient, m);
        let (compute, _) = at(&f, Design::ComputeEfficient, m);
        assert!(
            nested <= memory,
            "M={m}: nested {nested} s, own stage {memory} s"
        );
        assert!(
            nested <= 1.02 * compute,
            "M={m}: nested {nested} s, compute-efficient {compute} s"
        );
        assert_eq!(nested_peak, at(&f, Design::Nested, 8).1, "M={m}");
    }
    let peaks: Vec<f64> = [8, 16, 32, 64]
        .iter()
        .map(|&m| at(&f, Design::ComputeEfficient, m).1)
        .collect();
    // +M/P microbatches of 4 encoder layers at 1 GB each per doubling.
    assert_eq!(
        peaks.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>(),
        [8e9, 16e9, 32e9]
    );
}

#[test]
fn a_heavy_encoder_nested_falls_well_behind_compute_efficient() {
    // Encoder forwards of 2 s a layer (8 s a microbatch, four times a backbone stage's): the
    // claim does not hold. A uniform 1F1B backbone has no idle time in its steady state, so
    // every encoder action that must run there (memory bounds how early a forward may run and
    // how late a backward) delays the pipeline behind it: nested is more than 15 % slower than
    // running every encoder forward first, though still faster than the encoder as its own
    // stage, which is four times the others (README, "The three designs").
    let f = figures(2.0);
    for m in [8, 16, 32, 64] {
        let (nested, _) = at(&f, Design::Nested, m);
        let (memory, _) = at(&f, Design::MemoryEfficient, m);
        let (compute, _) = at(&f, Design::ComputeEfficient, m);
        assert!(
            nested > 1.15 * compute,
            "M={m}: nested {nested} s, compute-efficient {compute} s"
        );
        assert!(
            nested < memory,
            "M={m}: nested {nested} s, own stage {memory} s"
        );
    }
}

#[test]
fn on_the_mllm_understanding_sample_the_posts_claims_hold() {
    // The sample (a Qwen3-30B-A3B-like backbone, a 1.3B ViT, 8 ranks): nested is no slower than
    // the encoder as its own stage and within 6 % of compute-efficient at every M, and its peak
    // memory stays flat while compute-efficient's grows with M.
    let text = include_str!("../../samples/mllm-understanding.json");
    let s = mpipe::Scenario::from_json_str(text, "mllm-understanding.json").unwrap();
    let c = compare_designs(&s, &[8, 16, 32, 64], Default::default()).unwrap();
    let get = |design: Design, m: usize| {
        let p = c
            .points
            .iter()
            .find(|p| p.design == design && p.microbatches == m)
            .unwrap();
        (
            p.makespan_s,
            p.peak_bytes.iter().copied().fold(0.0, f64::max),
        )
    };
    for m in [8, 16, 32, 64] {
        let (nested, peak) = get(Design::Nested, m);
        let (memory, _) = get(Design::MemoryEfficient, m);
        let (compute, _) = get(Design::ComputeEfficient, m);
        assert!(nested <= memory, "M={m}: {nested} s vs {memory} s");
        assert!(nested <= 1.06 * compute, "M={m}: {nested} s vs {compute} s");
        if m >= 16 {
            assert_eq!(peak, get(Design::Nested, 16).1, "M={m}");
        }
    }
    assert!(get(Design::ComputeEfficient, 64).1 > 1.4 * get(Design::Nested, 64).1);
}

#[test]
fn compare_designs_prints_each_design_and_refuses_a_bad_count() {
    let dir = std::env::temp_dir().join(format!("mpipe-designs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("model.json");
    std::fs::write(&file, model(0.1).to_json_string()).unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = mpipe(&["compare-designs", path, "--microbatches", "8,16"]);
    assert_eq!(code, 0, "{err}");
    for design in ["compute-efficient", "memory-efficient", "nested"] {
        assert!(out.contains(&format!("\n{design} — ")), "{out}");
    }
    let (code, json, _) = mpipe(&["compare-designs", path, "--microbatches", "8,16", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 6);
    assert_eq!(v["points"][0]["design"], "compute-efficient");
    let (code, _, err) = mpipe(&["compare-designs", path, "--microbatches", "0"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: --microbatches: 0 is not between 1 and 100000\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn over_capacity_designs_are_fitted_under_it_and_say_what_it_costs() {
    // The MLLM-understanding sample on a 30 GB device: compute-efficient holds every encoder
    // activation across the backbone and goes over from M = 32; fitted under the cap it runs
    // at a cost (the encoder recomputed or offloaded) and holds at most 30 GB. Nested holds its
    // peak flat at 28 GB and needs no fit.
    let text = include_str!("../../samples/mllm-understanding.json");
    let mut s = mpipe::Scenario::from_json_str(text, "mllm-understanding.json").unwrap();
    s.hardware.as_mut().unwrap().memory_bytes = Some(30e9);
    let c = compare_designs(&s, &[16, 32, 64], Default::default()).unwrap();
    let mut fitted = 0;
    for p in &c.points {
        assert_eq!(p.fitted.is_some(), p.over_capacity, "{p:?}");
        if let Some(f) = &p.fitted {
            let t = f.makespan_s.unwrap();
            assert!(t > p.makespan_s, "{p:?}");
            assert!(f.peak_bytes <= 30e9, "{p:?}");
            assert!(!f.choices.is_empty());
            fitted += 1;
        }
    }
    let over: Vec<(Design, usize)> = c
        .points
        .iter()
        .filter(|p| p.over_capacity)
        .map(|p| (p.design, p.microbatches))
        .collect();
    assert_eq!(
        over,
        [
            (Design::ComputeEfficient, 32),
            (Design::ComputeEfficient, 64)
        ]
    );
    assert_eq!(fitted, 2);
    assert!(c.text().contains("(over capacity; fitted under it: "));
}

#[test]
fn the_designs_run_a_point_a_step_to_the_same_comparison() {
    // What the web build runs between frames: one design at one M per step, each step reporting
    // the fraction done before it, Cancel heard at the next step.
    use mpipe::tune::Stepped;
    use mpipe::tune::designs::DesignSteps;
    let scenario = model(0.5);
    let ms = [4, 8];
    let whole = compare_designs(&scenario, &ms, Default::default()).unwrap();
    let mut steps = DesignSteps::new(&scenario, &ms, Default::default()).unwrap();
    let mut fractions = Vec::new();
    let mut again = 0;
    let stepped = loop {
        match steps
            .step(&mut |f| {
                fractions.push(f);
                true
            })
            .unwrap()
        {
            Stepped::Again => again += 1,
            Stepped::Done(c) => break c,
            Stepped::Cancelled => panic!("not cancelled"),
        }
    };
    assert_eq!(stepped, whole);
    // Three designs at two numbers of microbatches, less any design refused.
    let points = 2 * (3 - whole.refused.len());
    assert_eq!(again, points);
    assert_eq!(whole.points.len(), points);
    let expected: Vec<f32> = (0..points).map(|i| i as f32 / 6.0).collect();
    assert_eq!(fractions, expected);
    // Stopped after its first point, it says so.
    let mut steps = DesignSteps::new(&scenario, &ms, Default::default()).unwrap();
    assert_eq!(steps.step(&mut |_| true).unwrap(), Stepped::Again);
    assert_eq!(steps.step(&mut |_| false).unwrap(), Stepped::Cancelled);
}
