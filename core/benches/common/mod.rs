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

/// How a [`fold`]'s stages and links are timed.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // each benchmark builds the folds it times
pub enum Fold {
    /// Every layer 1 s forward, 2 s backward; transfers too short to count.
    Uniform,
    /// Forwards 1.0–1.4 s and backwards 1.5–2.4 s, varying layer by layer: the lists are made
    /// again with each stage's own times.
    Uneven,
    /// Uniform layers whose 0.5 GB outputs cross 1 GB/s links: the lists weigh the transfers.
    SlowLinks,
}

/// `skeleton` over `2p` one-layer stages on the V fold (`placement: v_fold`): the order is
/// list-scheduled, not taken from the slots.
#[allow(dead_code)] // each benchmark builds the folds it times
pub fn fold(
    p: usize,
    m: usize,
    skeleton: mpipe::schedules::skeleton::Skeleton,
    kind: Fold,
) -> Scenario {
    let layer = |name: String, fwd: f64, bwd: f64, output: f64| {
        let mut l = LayerSpec::timed(&name, Role::Backbone, 1, fwd);
        l.bwd_s = Some(bwd);
        l.activation_bytes = Some(1e9);
        l.param_bytes = Some(1e9);
        l.output_bytes = Some(output);
        l
    };
    let layers = (0..2 * p)
        .map(|i| match kind {
            Fold::Uniform => layer(format!("l{i}"), 1.0, 2.0, 3.3e7),
            Fold::SlowLinks => layer(format!("l{i}"), 1.0, 2.0, 5e8),
            Fold::Uneven => layer(
                format!("l{i}"),
                1.0 + 0.04 * ((4 * i) % 11) as f64,
                1.5 + (i % 12) as f64 / 12.0,
                3.3e7,
            ),
        })
        .collect();
    let mut s = scenario(p, m, 2, false);
    s.name = format!("fold {kind:?}");
    s.model = ModelSpec { layers };
    s.cut = vec![p];
    s.schedule = vec![skeleton; 2];
    s.placement = Some(mpipe::scenario::placement::PlacementSpec::VFold);
    s.hardware = match kind {
        Fold::SlowLinks => Some(mpipe::scenario::hardware::Hardware {
            link_alpha_s: Some(0.0),
            link_bytes_per_s: Some(1e9),
            ..Default::default()
        }),
        Fold::Uniform | Fold::Uneven => None,
    };
    s
}

pub fn run(s: &Scenario) -> usize {
    let sim = mpipe::tune::pipeline::simulate_scenario(s, SimOptions::default())
        .expect("valid benchmark scenario");
    sim.derivation.order.graph.node_count()
}
