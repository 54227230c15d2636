//! Every number a scenario gives goes through one check (issue 24, item 2: `bf_s`, `ff_s` and
//! `force_activation_bytes` of 1e308 passed `validate` and gave `makespan inf`). The layer's and
//! the hardware's numeric fields are enumerated from the file format itself: a field added to
//! either struct must be added to the literals below (they name every field, so the test does not
//! compile until it is), and from there to the list the checks go through, or this test fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use mpipe::scenario::hardware::{FirstStageBackward, Hardware, P2p, PhaseSeconds};
use mpipe::scenario::layer::LayerSpec;
use mpipe::vocab::role::Role;
use std::collections::BTreeSet;
mod common;

fn some() -> Option<f64> {
    Some(1.0)
}

/// A layer with every field given (no `..`: a new field must be listed here).
fn every_layer_field() -> LayerSpec {
    LayerSpec {
        name: "l".into(),
        role: Role::Backbone,
        count: 2,
        trainable: true,
        recompute: Some(mpipe::scenario::layer::Recompute::Selective),
        recompute_activation_share: some(),
        recompute_cost_share: some(),
        offload_share: some(),
        recompute_early: true,
        fwd_s: some(),
        bwd_s: some(),
        fwd_flops: some(),
        bwd_flops: some(),
        fwd_bytes: some(),
        bwd_bytes: some(),
        param_bytes: some(),
        activation_bytes: some(),
        output_bytes: some(),
        workspace_bytes: some(),
        workload_varies: false,
        bwd_input_s: some(),
        bwd_weight_s: some(),
        bwd_input_flops: some(),
        bwd_weight_flops: some(),
        activation_input_share: some(),
        fe_s: some(),
        ff_s: some(),
        bf_s: some(),
        be_s: some(),
        force_activation_bytes: some(),
        width: None,
        tp_collectives: some(),
        moe_dispatch_bytes: some(),
        expert_param_bytes: some(),
        cp_exchange_bytes: some(),
    }
}

/// The hardware with every field given (no `..`).
fn every_hardware_field() -> Hardware {
    let phases = PhaseSeconds {
        forward: some(),
        backward: some(),
        input: some(),
        weight: some(),
    };
    Hardware {
        peak_flops: some(),
        hbm_bytes_per_s: some(),
        link_alpha_s: some(),
        link_bytes_per_s: some(),
        memory_bytes: some(),
        fb_overlap: some(),
        action_overhead_s: some(),
        step_grad_bytes_per_param_byte: some(),
        weight_transient_bytes_per_param_byte: some(),
        p2p: Some(P2p::Blocking),
        first_stage_backward: Some(FirstStageBackward::InWeight),
        p2p_post_s: some(),
        input_half_held_share: some(),
        input_half_factor: some(),
        output_held_share: some(),
        weight_half_factor: some(),
        host_bytes_per_s: some(),
        action_switch_s: Some(phases),
        action_overhead_by_phase_s: Some(phases),
        host_launch_per_layer_s: Some(phases),
        resident_bytes: Some(vec![1.0, 2.0]),
        intra_link_alpha_s: some(),
        intra_link_bytes_per_s: some(),
        node_devices: Some(8),
    }
}

/// The paths of every number in `value`'s JSON (`a.b.F`).
fn numeric_paths(value: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Number(_) => {
            out.insert(prefix.to_string());
        }
        serde_json::Value::Array(list) => {
            for (i, v) in list.iter().enumerate() {
                numeric_paths(v, &format!("{prefix}[{i}]"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                numeric_paths(v, &path, out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_numeric_field_of_the_format_is_in_the_list_the_checks_go_through() {
    let layer = every_layer_field();
    let mut in_file = BTreeSet::new();
    numeric_paths(&serde_json::to_value(&layer).unwrap(), "", &mut in_file);
    in_file.remove("count");
    let listed: BTreeSet<String> = layer.numbers().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(in_file, listed);
    let hardware = every_hardware_field();
    let mut in_file = BTreeSet::new();
    numeric_paths(
        &serde_json::to_value(&hardware).unwrap(),
        "hardware",
        &mut in_file,
    );
    let listed: BTreeSet<String> = hardware.numbers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(in_file, listed);
}

/// A valid scenario of `layer` (a second-order one when the layer gives second-order figures,
/// so that they are used), with `hardware`.
fn scenario(layer: serde_json::Value, hardware: serde_json::Value, second_order: bool) -> String {
    let schedule = if second_order { "wavek" } else { "zb1p" };
    serde_json::json!({
        "format": "mpipe-scenario/1",
        "model": {"layers": [layer]},
        "schedule": [schedule],
        "ranks": 2,
        "microbatches": 4,
        "hardware": hardware,
    })
    .to_string()
}

/// Each numeric field at 1e308 (every other one as a valid scenario gives it) is refused by
/// validation with an error that names it — or, for a rate or a capacity (larger only makes the
/// step faster or roomier) and a rank's resident bytes (added once), accepted with every figure
/// of the simulation finite.
#[test]
fn every_numeric_field_at_1e308_is_refused_at_its_field_or_stays_finite() {
    let explicit = serde_json::json!({"name": "l", "count": 2, "fwd_s": 1.0, "param_bytes": 1e3});
    let roofline = serde_json::json!({"name": "l", "count": 2, "fwd_flops": 1.0, "fwd_bytes": 1.0});
    let hardware =
        serde_json::json!({"peak_flops": 1.0, "hbm_bytes_per_s": 1.0, "link_alpha_s": 0.1});
    let mut accepted = Vec::new();
    for (name, _) in every_layer_field().numbers() {
        let roofline_field = name.ends_with("_flops") || name == "fwd_bytes" || name == "bwd_bytes";
        let mut layer = if roofline_field {
            roofline.clone()
        } else {
            explicit.clone()
        };
        layer[name] = serde_json::json!(1e308);
        let second_order = matches!(
            name,
            "fe_s" | "ff_s" | "bf_s" | "be_s" | "force_activation_bytes"
        );
        if let Some(error) = refused(&scenario(layer, hardware.clone(), second_order)) {
            assert!(error.contains(name), "{name}: {error}");
        } else {
            accepted.push(name.to_string());
        }
    }
    for (path, _) in every_hardware_field().numbers() {
        let mut hw = hardware.clone();
        let segs: Vec<&str> = path.split('.').skip(1).collect();
        match segs.as_slice() {
            // A list's entry (`resident_bytes[1]`): the list up to it.
            [entry] if entry.ends_with(']') => {
                let (field, index) = entry.trim_end_matches(']').split_once('[').unwrap();
                let at: usize = index.parse().unwrap();
                let mut list = vec![serde_json::json!(0.0); at];
                list.push(serde_json::json!(1e308));
                hw[field] = serde_json::Value::Array(list);
            }
            [field] => hw[*field] = serde_json::json!(1e308),
            [field, phase] => hw[*field] = serde_json::json!({ *phase: 1e308 }),
            _ => unreachable!("{path}"),
        }
        if let Some(error) = refused(&scenario(explicit.clone(), hw, false)) {
            assert!(error.contains(&path), "{path}: {error}");
        } else {
            accepted.push(path);
        }
    }
    assert_eq!(
        accepted,
        [
            "hardware.peak_flops",
            "hardware.hbm_bytes_per_s",
            "hardware.link_bytes_per_s",
            "hardware.memory_bytes",
            // A share of the saved activations, which this layer has none of: nothing held.
            "hardware.input_half_held_share",
            "hardware.host_bytes_per_s",
            "hardware.intra_link_bytes_per_s",
            // A rank's resident bytes are added once to its static bytes: a peak of 1e308, finite.
            "hardware.resident_bytes[0]",
            "hardware.resident_bytes[1]"
        ]
    );
}

/// The message `text` is refused with (`field …: …`), or `None` when it derives — then its
/// simulation's makespan and memory peaks must be finite.
fn refused(text: &str) -> Option<String> {
    let s = match mpipe::Scenario::from_json_str(text, "x.json") {
        Err(e) => return Some(e.to_string()),
        Ok(s) => s,
    };
    if let Err(e) = mpipe::derive(&s) {
        return Some(format!("field `{}`: {e}", e.field()));
    }
    let sim = mpipe::simulate_scenario(&s, Default::default()).unwrap();
    assert!(sim.makespan_s.is_finite(), "{text}");
    assert!(sim.peak_memory_bytes().is_finite(), "{text}");
    assert!(sim.bubble_fraction.is_finite(), "{text}");
    None
}

#[test]
fn a_bad_resident_entry_is_named_where_it_stands() {
    // A list's entry is found in the file by its index: the line and column of the entry itself.
    let text = "{\"format\":\"mpipe-scenario/1\",\"model\":{\"layers\":[{\"name\":\"l\",\"count\":2,\"fwd_s\":1}]},\n\"schedule\":[\"1f1b\"],\"ranks\":2,\"microbatches\":2,\n\"hardware\":{\"resident_bytes\":[1,\n -2]}}\n";
    let dir = std::env::temp_dir().join(format!("mpipe-resident-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("x.json");
    std::fs::write(&file, text).unwrap();
    let (code, _, err) = common::mpipe(&["validate", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 2);
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}:4:2: field `hardware.resident_bytes[1]`: rule `hardware`: `hardware.resident_bytes[1]` = -2 must be a finite number ≥ 0",
            file.display()
        )
    );
}

#[test]
fn a_held_share_that_overflows_the_saved_activations_is_named() {
    let layer =
        serde_json::json!({"name": "l", "count": 2, "fwd_s": 1.0, "activation_bytes": 1e10});
    let hw = serde_json::json!({"input_half_held_share": 1e308});
    let error = refused(&scenario(layer, hw, false)).unwrap();
    assert!(error.contains("hardware.input_half_held_share"), "{error}");
}

#[test]
fn a_split_backwards_half_factor_of_zero_is_refused_at_its_field() {
    let layer = serde_json::json!({"name": "l", "count": 2, "fwd_s": 1.0});
    for field in ["input_half_factor", "weight_half_factor"] {
        let error = refused(&scenario(
            layer.clone(),
            serde_json::json!({ field: 0.0 }),
            false,
        ))
        .unwrap();
        assert_eq!(
            error,
            format!(
                "field `hardware.{field}`: rule `hardware`: `hardware.{field}` = 0 must be above 0 (what a split backward's half costs over its share of the whole backward; a half that costs nothing is one with no share: give the layers' `bwd_input_s` or `bwd_weight_s`)"
            )
        );
    }
    // Any factor above 0 derives.
    assert_eq!(
        refused(&scenario(
            layer,
            serde_json::json!({"input_half_factor": 1e-9, "weight_half_factor": 3.0}),
            false
        )),
        None
    );
}

#[test]
fn outputs_kept_that_overflow_are_named() {
    let layer = serde_json::json!({"name": "l", "count": 2, "fwd_s": 1.0, "output_bytes": 1e300});
    let hw = serde_json::json!({"output_held_share": 1e10});
    let error = refused(&scenario(layer, hw, false)).unwrap();
    assert!(error.contains("hardware.output_held_share"), "{error}");
}
