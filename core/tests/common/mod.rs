//! Scenario builders and the CLI runner shared by the core's integration tests.
#![allow(dead_code)]

use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::{FORMAT, ModelSpec, Scenario};
use mpipe::schedules::skeleton::Skeleton;
use mpipe::vocab::role::Role;

/// A scenario over the given layer specs.
pub fn scenario(
    layers: Vec<LayerSpec>,
    cut: &[usize],
    schedule: &[Skeleton],
    ranks: usize,
    microbatches: usize,
) -> Scenario {
    Scenario {
        format: FORMAT.to_string(),
        name: String::new(),
        description: String::new(),
        model: ModelSpec { layers },
        cut: cut.to_vec(),
        schedule: schedule.to_vec(),
        ranks,
        microbatches,
        data_parallel: 1,
        slabs: None,
        hardware: None,
        workload: None,
        owner: Default::default(),
        orders: None,
        orders_csv: None,
        orders_from_csv: None,
        owner_budget: None,
        placement: None,
        wave_k: None,
        static_memory_factor: None,
    }
}

/// Mpipe's shape: `enc` encoder layers and `llm` backbone layers.
pub fn vit_llm(enc: usize, llm: usize, encoder_trainable: bool) -> Vec<LayerSpec> {
    let mut vit = LayerSpec::timed("vit", Role::Encoder, enc, 0.5);
    vit.trainable = encoder_trainable;
    vec![vit, LayerSpec::timed("llm", Role::Backbone, llm, 1.0)]
}

/// `n` uniform backbone layers.
pub fn uniform(n: usize) -> Vec<LayerSpec> {
    vec![LayerSpec::timed("layer", Role::Backbone, n, 1.0)]
}

/// Rank `rank`'s derived compute actions, space-separated (`0F0 0F1 0B0 …`).
pub fn rank_actions(s: &Scenario, rank: usize) -> String {
    let d = mpipe::derive(s).unwrap();
    let names: Vec<String> = d
        .order
        .actions(rank)
        .iter()
        .map(|a| a.to_string())
        .collect();
    names.join(" ")
}

/// Runs the `mpipe` binary: (exit status, stdout, stderr).
pub fn mpipe(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The actions of step `step` in a rank's `actions` of `mpipe trace --json`, in order (an
/// action that is not a string fails the test).
pub fn actions_of_step(actions: &[serde_json::Value], step: usize) -> Vec<&str> {
    actions
        .iter()
        .filter(|a| a["step"] == step)
        .map(|a| a["action"].as_str().unwrap())
        .collect()
}

/// A JSON array of strings (an `executed.json` step) as `&str`s; anything else fails the test.
pub fn strings(value: &serde_json::Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}
