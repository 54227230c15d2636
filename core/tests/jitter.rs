#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking
//! The expected step under measured jitter (`mpipe::sim::jitter`): with nothing varying it is
//! the simulated step exactly; with costs that vary around their means it is longer on a
//! pipeline that waits (a maximum of varying paths is longer on average than the maximum of
//! their means); and it is the same every time.

use mpipe::sim::jitter::{Jitter, Quantiles, expected};

fn sample(hardware: serde_json::Value) -> mpipe::sim::run::Simulation {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/1f1b.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["hardware"] = hardware;
    let s = mpipe::Scenario::from_json_str(&v.to_string(), "1f1b.json").unwrap();
    mpipe::simulate_scenario(&s, Default::default()).unwrap()
}

fn constant(value: f64) -> Quantiles {
    Quantiles::of(vec![value; 40])
}

#[test]
fn a_jitter_that_does_not_vary_gives_the_simulated_step() {
    let sim = sample(serde_json::json!({"action_overhead_s": 0.25, "link_alpha_s": 0.5}));
    // 1F1B, 4 ranks, 8 microbatches of 2 s forward and 4 s backward per stage, every action
    // 0.25 s more, every transfer 0.5 s: at least (M + P − 1)·(2 + 4 + 2·0.25).
    assert!(sim.makespan_s >= 11.0 * 6.5, "{}", sim.makespan_s);
    let flat = Jitter {
        compute: constant(1.0),
        gap_s: constant(0.25),
        transfer_s: constant(0.5),
        stall_s: constant(0.0),
    };
    let e = expected(&sim, &flat, Default::default(), &mut |_| true).unwrap();
    assert_eq!(e.draws, 200);
    for got in [e.median_s, e.low_s, e.high_s] {
        assert!(
            (got - sim.makespan_s).abs() < 1e-9,
            "{got} vs {}",
            sim.makespan_s
        );
    }
    // Nothing measured: no expected step.
    assert_eq!(
        expected(&sim, &Jitter::default(), Default::default(), &mut |_| true),
        None
    );
}

#[test]
fn costs_that_vary_around_their_means_lengthen_the_step_and_draw_the_same_every_time() {
    let sim = sample(serde_json::json!({"link_alpha_s": 0.5}));
    // Each action's compute evenly between 0.5 and 1.5 of its mean: the mean is kept, the step
    // is not.
    let jitter = Jitter {
        compute: Quantiles::of((0..=100).map(|i| 0.5 + f64::from(i) / 100.0).collect()),
        ..Jitter::default()
    };
    let e = expected(&sim, &jitter, Default::default(), &mut |_| true).unwrap();
    assert!(e.low_s < e.median_s && e.median_s < e.high_s, "{e:?}");
    assert!(
        e.median_s > sim.makespan_s * 1.02,
        "{} vs {}",
        e.median_s,
        sim.makespan_s
    );
    assert_eq!(
        expected(&sim, &jitter, Default::default(), &mut |_| true),
        Some(e)
    );
    // Told to stop, it stops.
    let mut asked = 0;
    let stopped = expected(&sim, &jitter, Default::default(), &mut |_| {
        asked += 1;
        asked < 3
    });
    assert_eq!((stopped, asked), (None, 3));
}
