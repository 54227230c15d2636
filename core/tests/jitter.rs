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
        pace: Vec::new(),
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

/// A rank's pace moves all its compute together: one measured step at twice every rank's
/// pace doubles the 1F1B step exactly, `(M + P − 1)·2·(F + B)`; two steps in which rank 0 and
/// rank 3 in turn run a fifth slow and rank 3 and rank 0 a fifth fast (each rank's mean pace 1)
/// lengthen every draw, the step waiting for its slow rank, though no rank's mean moved.
#[test]
fn a_ranks_pace_moves_its_whole_step_and_the_step_waits_for_the_slow_rank() {
    let sim = sample(serde_json::json!({}));
    // 4 ranks, 8 microbatches, 2 s forward and 4 s backward per stage, free links.
    assert_eq!(sim.makespan_s, 66.0);
    let doubled = Jitter {
        compute: constant(1.0),
        pace: vec![vec![2.0; 4]],
        ..Jitter::default()
    };
    let e = expected(&sim, &doubled, Default::default(), &mut |_| true).unwrap();
    assert_eq!((e.low_s, e.median_s, e.high_s), (132.0, 132.0, 132.0));
    let turns = Jitter {
        compute: constant(1.0),
        pace: vec![vec![1.2, 1.0, 1.0, 0.8], vec![0.8, 1.0, 1.0, 1.2]],
        ..Jitter::default()
    };
    let e = expected(&sim, &turns, Default::default(), &mut |_| true).unwrap();
    // Each draw is one step or the other: rank 0 slow, 69.6 s; rank 3 slow, 74.4 s (its fill
    // 1.6 + 2 + 2, its eight microbatches at 2.4 + 4.8, the drain 4 + 4 + 3.2).
    assert!((e.low_s - 69.6).abs() < 1e-9, "{e:?}");
    assert!((e.high_s - 74.4).abs() < 1e-9, "{e:?}");
}

/// A draw is a point of the stored curve less the curve's own mean: the samples' mean a file
/// states never enters it, so a hostile one (the largest float) draws what a true one does.
#[test]
fn a_stated_mean_never_enters_a_draw() {
    let sim = sample(serde_json::json!({"action_overhead_s": 0.25}));
    let with_mean = |mean: f64| Jitter {
        gap_s: Quantiles {
            points: (0..=32).map(|i| f64::from(i) / 32.0).collect(),
            mean,
        },
        ..Jitter::default()
    };
    let honest = expected(&sim, &with_mean(0.5), Default::default(), &mut |_| true).unwrap();
    assert!(
        honest.median_s.is_finite() && honest.high_s > honest.low_s,
        "{honest:?}"
    );
    assert_eq!(
        expected(&sim, &with_mean(f64::MAX), Default::default(), &mut |_| {
            true
        }),
        Some(honest)
    );
}

/// The what-if over every schedule ranks by the expected step, a candidate a step — what the
/// web build runs between frames: each step simulates one schedule (its progress within that
/// candidate's share), the steps come to what the whole what-if gives, and a stop is heard at
/// the next step.
#[test]
fn the_what_if_over_every_schedule_runs_a_candidate_a_step() {
    use mpipe::trace::whatif::{MemoryBasis, RunShape, WhatIfSteps, what_if_all};
    use mpipe::tune::Stepped;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/1f1b.json");
    let s = mpipe::Scenario::from_json_str(&std::fs::read_to_string(path).unwrap(), "1f1b.json")
        .unwrap();
    let jitter = Jitter {
        compute: Quantiles::of((0..=100).map(|i| 0.5 + f64::from(i) / 100.0).collect()),
        ..Jitter::default()
    };
    let run = RunShape {
        chunks: 1,
        microbatches: None,
        ran: Some("⟨1f1b⟩"),
        basis: MemoryBasis::Total,
        jitter: Some(&jitter),
        split_range: None,
    };
    let whole = what_if_all(&s, &s, &run, Default::default());
    assert!(whole.len() > 5, "{}", whole.len());
    assert_eq!(whole.iter().filter(|p| p.ran).count(), 1);
    assert!(whole.windows(2).all(|w| w[0].step_s <= w[1].step_s));
    let mut steps = WhatIfSteps::new(&s, &s, &run, Default::default());
    let (mut again, mut starts) = (0, Vec::new());
    let stepped = loop {
        let mut seen: Vec<f32> = Vec::new();
        let step = steps.step(&mut |f| {
            seen.push(f);
            true
        });
        // A step's fractions rise (the skeletons that do not fit the model are passed over in
        // the same step, then one candidate's draws), and each step's reach past the last's.
        if let Some(&last) = seen.last() {
            starts.push(seen.iter().copied().fold(f32::NAN, f32::max));
            assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
            assert!(last <= 1.0, "{last}");
        }
        match step {
            Stepped::Again => again += 1,
            Stepped::Done(p) => break p,
            Stepped::Cancelled => panic!("not cancelled"),
        }
    };
    assert_eq!(stepped, whole);
    assert_eq!(again, whole.len());
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    // Stopped after its first candidate, it says so.
    let mut steps = WhatIfSteps::new(&s, &s, &run, Default::default());
    assert_eq!(steps.step(&mut |_| true), Stepped::Again);
    assert_eq!(steps.step(&mut |_| false), Stepped::Cancelled);
}
