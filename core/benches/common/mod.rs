//! The benchmark scenarios, shared by the timing and the memory benchmarks.

#![allow(clippy::expect_used)] // a benchmark scenario that does not derive is a bug in the benchmark

use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::{FORMAT, ModelSpec, Scenario};
use mpipe::sim::engine::SimOptions;
use mpipe::vocab::role::Role;

/// ⟨transpose, 1f1b, …⟩: a replicated encoder and `v` Sharded backbone regions over `p` ranks.
pub fn scenario(p: usize, m: usize, v: usize, transpose: bool) -> Scenario {
    let mut layers = Vec::new();
    let mut cut = Vec::new();
    let mut schedule = Vec::new();
    let mut at = 0;
    if transpose {
        let mut vit = LayerSpec::timed("vit", Role::Encoder, 2, 0.5);
        vit.activation_bytes = Some(1e8);
        vit.output_bytes = Some(1e7);
        layers.push(vit);
        schedule.push(mpipe::schedules::TRANSPOSE);
        at = 2;
    }
    for _ in 0..v {
        if at > 0 {
            cut.push(at);
        }
        let mut llm = LayerSpec::timed("llm", Role::Backbone, p, 1.0);
        llm.activation_bytes = Some(1e9);
        llm.output_bytes = Some(3e7);
        layers.push(llm);
        schedule.push(mpipe::schedules::ONE_F_ONE_B);
        at += p;
    }
    Scenario {
        format: FORMAT.into(),
        name: String::new(),
        description: String::new(),
        model: ModelSpec { layers },
        cut,
        schedule,
        ranks: p,
        microbatches: m,
        data_parallel: 1,
        slabs: None,
        hardware: Some(mpipe::scenario::hardware::Hardware {
            link_alpha_s: Some(1e-5),
            link_bytes_per_s: Some(5e10),
            ..Default::default()
        }),
        workload: None,
        owner: Default::default(),
        static_memory_factor: None,
        orders: None,
        orders_csv: None,
        orders_from_csv: None,
        owner_budget: None,
        placement: None,
        wave_k: None,
        activation_limit: None,
        width: None,
        jitter: None,
    }
}

pub fn run(s: &Scenario) -> usize {
    let sim = mpipe::tune::pipeline::simulate_scenario(s, SimOptions::default())
        .expect("valid benchmark scenario");
    sim.derivation.order.graph.node_count()
}
