//! Fitting a schedule under the device's capacity (`mpipe fit-memory`, issue 27): the fit never
//! returns a choice above the cap, returns none when nothing fits (naming the smallest peak it
//! reached), leaves a scenario that fits alone, and on one stage picks what an exhaustive search
//! of every choice picks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::scenario;
use mpipe::Scenario;
use mpipe::scenario::hardware::Hardware;
use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B};
use mpipe::sim::engine::SimOptions;
use mpipe::tune::fit_memory::{MemoryChoice, MemoryFit, StageChoice, fit_memory, with_choices};
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::role::Role;

const GB: f64 = 1e9;

/// `P` stages of two layers each (1 s forward, 2 s backward, 1 GB of activations, 0.1 GB
/// handed on, 1 GB of parameters per layer), copies to the host at `host` bytes per second.
fn model(skeleton: Skeleton, p: usize, m: usize, host: Option<f64>) -> Scenario {
    let mut l = LayerSpec::timed("l", Role::Backbone, 2 * p, 1.0);
    l.activation_bytes = Some(GB);
    l.output_bytes = Some(0.1 * GB);
    l.param_bytes = Some(GB);
    let mut s = scenario(vec![l], &[], &[skeleton], p, m);
    s.hardware = Some(Hardware {
        host_bytes_per_s: host,
        ..Default::default()
    });
    s
}

fn fit(s: &Scenario, cap: f64) -> MemoryFit {
    fit_memory(s, Some(cap), SimOptions::default(), &mut |_| true).unwrap()
}

fn peaks(s: &Scenario) -> (f64, Vec<f64>) {
    let sim = simulate_scenario(s, SimOptions::default()).unwrap();
    (
        sim.makespan_s,
        sim.memory.iter().map(|c| c.peak_bytes).collect(),
    )
}

/// Over a sweep of caps, every fit it returns is under its cap — as it reports and as the fitted
/// scenario simulates on its own — and costs no less time than the given schedule.
#[test]
fn a_fit_is_never_above_its_cap() {
    for host in [None, Some(20.0 * GB), Some(2.0 * GB)] {
        let s = model(ONE_F_ONE_B, 4, 8, host);
        let (given_step, given) = peaks(&s);
        let top = given.iter().copied().fold(0.0, f64::max);
        let mut fitted = 0;
        for i in 1..=12 {
            let cap = top * (0.3 + 0.06 * i as f64);
            let f = fit(&s, cap);
            let (Some(after), Some(fitted_scenario)) = (&f.after, &f.scenario) else {
                assert!(
                    f.smallest_peak.is_some(),
                    "cap {cap}: no fit and no peak named"
                );
                continue;
            };
            fitted += 1;
            assert!(
                after.peaks_bytes.iter().all(|&p| p <= cap),
                "cap {cap}: {after:?}"
            );
            let (step, again) = peaks(fitted_scenario);
            assert_eq!((step, &again), (after.makespan_s, &after.peaks_bytes));
            assert!(step >= given_step - 1e-9, "{step} < {given_step}");
        }
        assert!(fitted >= 6, "host {host:?}: only {fitted} caps fitted");
    }
}

/// Under a cap below what the parameters alone take, nothing fits: no scenario, and the smallest
/// peak reached is named, above the cap.
#[test]
fn nothing_fits_below_the_static_bytes_and_the_smallest_peak_is_named() {
    let s = model(ONE_F_ONE_B, 4, 8, Some(20.0 * GB));
    let f = fit(&s, 1.5 * GB);
    assert_eq!(f.after, None);
    assert_eq!(f.scenario, None);
    let (_, peak) = f.smallest_peak.unwrap();
    assert!(peak > 1.5 * GB, "{peak}");
    assert!(!f.budget_reached);
}

/// A schedule that fits is left as it is.
#[test]
fn a_schedule_that_fits_is_left_alone() {
    let s = model(ONE_F_ONE_B, 4, 8, None);
    let f = fit(&s, 1000.0 * GB);
    assert_eq!(f.after.as_ref(), Some(&f.before));
    assert!(f.stages.iter().all(|st| st.choice == MemoryChoice::Keep));
    assert_eq!(f.scenario.as_ref(), Some(&s));
    assert_eq!(f.simulations, 1);
}

/// On one stage, the fit is what trying every choice finds: the fastest one under the cap. With
/// free copies that is an offload (no time); with slow ones, recomputation.
#[test]
fn on_one_stage_the_fit_is_the_fastest_choice_under_the_cap() {
    for (host, want) in [
        (None, "offload"),
        (Some(100.0 * GB), "offload"),
        (Some(0.1 * GB), "recompute"),
    ] {
        let s = model(GPIPE, 1, 4, host);
        let cap = 2.0 * GB + 0.8 * 8.0 * GB; // parameters, and 80 % of the held activations
        let f = fit(&s, cap);
        let stage = f.stages[0].clone();
        let exhaustive = MemoryChoice::LADDER
            .iter()
            .map(|&choice| {
                let tried = StageChoice {
                    choice,
                    ..stage.clone()
                };
                let (step, peaks) = peaks(&with_choices(&s, &[tried]));
                (step, peaks[0], choice)
            })
            .filter(|&(_, peak, _)| peak <= cap)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap();
        let after = f.after.unwrap();
        assert_eq!(after.makespan_s, exhaustive.0, "host {host:?}");
        assert_eq!(f.stages[0].choice, exhaustive.2, "host {host:?}");
        assert!(
            f.stages[0].choice.label().starts_with(want),
            "host {host:?}"
        );
    }
}

/// The fitted scenario splits a layer entry where its stages chose differently, naming the parts
/// after the layers they hold, and keeps every other field.
#[test]
fn choices_split_a_layer_entry_at_the_stage_boundaries() {
    let s = model(ONE_F_ONE_B, 2, 4, None);
    let stages = [
        StageChoice {
            region: 1,
            ranks: vec![0],
            layers: 0..2,
            choice: MemoryChoice::Recompute,
        },
        StageChoice {
            region: 1,
            ranks: vec![1],
            layers: 2..4,
            choice: MemoryChoice::Keep,
        },
    ];
    let out = with_choices(&s, &stages);
    let names: Vec<(&str, usize)> = out
        .model
        .layers
        .iter()
        .map(|l| (l.name.as_str(), l.count))
        .collect();
    assert_eq!(names, [("l[0..2]", 2), ("l[2..4]", 2)]);
    assert_eq!(
        out.model.layers[0].recompute,
        Some(mpipe::scenario::layer::Recompute::Full)
    );
    assert_eq!(out.model.layers[1], {
        let mut l = s.model.layers[0].clone();
        l.name = "l[2..4]".into();
        l.count = 2;
        l
    });
    assert_eq!(
        (out.cut.clone(), out.hardware.clone()),
        (s.cut.clone(), s.hardware.clone())
    );
}

/// The search stops when told, and says so.
#[test]
fn the_fit_can_be_cancelled() {
    let s = model(ONE_F_ONE_B, 4, 8, Some(2.0 * GB));
    let mut asked = 0;
    let r = fit_memory(&s, Some(6.0 * GB), SimOptions::default(), &mut |_| {
        asked += 1;
        asked < 3
    });
    assert_eq!(r.err(), Some(mpipe::tune::fit_memory::FitError::Cancelled));
    assert_eq!(asked, 3);
}

/// The WaveK sweep tries to fit each unit size over the capacity under it. A second-order
/// schedule can only recompute (its phases are not offloaded), and recomputation cannot lower
/// WaveK's peak: it comes while a wave's energy forwards wait for their force forwards, which read
/// what they made. So each such `k` says nothing fits, at its own peak.
#[test]
fn the_wave_sweep_fits_the_unit_sizes_over_capacity() {
    let text = include_str!("../../samples/uma-1.2b.json");
    let mut s = Scenario::from_json_str(text, "uma-1.2b.json").unwrap();
    let cap = 20.48e9;
    s.hardware.as_mut().unwrap().memory_bytes = Some(cap);
    let w = mpipe::tune::wave_sweep::sweep(&s, 2..=6, SimOptions::default(), &mut |_| true)
        .unwrap()
        .unwrap();
    for p in &w.points {
        assert_eq!(p.fitted.is_some(), p.over_capacity, "k = {}", p.k);
        if let Some(f) = &p.fitted {
            assert_eq!(f.makespan_s, None, "k = {}", p.k);
            assert_eq!(f.peak_bytes, p.peak_memory_bytes, "k = {}", p.k);
            assert!(!f.budget_reached);
            // What the search reached on other ranks: recomputation only.
            assert!(
                f.choices.iter().all(|c| c.ends_with("recompute")),
                "{:?}",
                f.choices
            );
        }
    }
    assert!(w.points.iter().any(|p| p.fitted.is_some()));
}

/// What the web build runs between frames: the fit a simulation a step, each step's progress
/// within that one simulation's share of the budget, the same fit as the whole search, and a
/// stop heard at the next step.
#[test]
fn the_fit_runs_a_simulation_a_step_to_the_same_fit() {
    use mpipe::tune::Stepped;
    use mpipe::tune::fit_memory::{FitSteps, Means, SIMULATION_BUDGET};
    let s = model(ONE_F_ONE_B, 4, 8, Some(2.0 * GB));
    let whole = fit(&s, 6.0 * GB);
    assert!(whole.simulations > 3, "{}", whole.simulations);
    let mut steps = FitSteps::new(&s, Some(6.0 * GB), Means::Both, SimOptions::default()).unwrap();
    // The simulation each step ran (its share of the budget), `None` for a step that only
    // took a round's best choice.
    let mut ran: Vec<Option<usize>> = Vec::new();
    let stepped = loop {
        let mut seen: Vec<f32> = Vec::new();
        let step = steps
            .step(&mut |f| {
                seen.push(f * SIMULATION_BUDGET as f32);
                true
            })
            .unwrap();
        // A simulation reports from its share's start to its end.
        let k = seen.first().map(|f| (f + 1e-3).floor() as usize);
        if let Some(k) = k {
            assert!(
                seen.iter()
                    .all(|&f| f >= k as f32 - 1e-3 && f <= (k + 1) as f32 + 1e-3),
                "one simulation a step: {seen:?}"
            );
        }
        ran.push(k);
        match step {
            Stepped::Again => {}
            Stepped::Done(fit) => break fit,
            Stepped::Cancelled => panic!("not cancelled"),
        }
    };
    assert_eq!(stepped, whole);
    let simulations: Vec<usize> = ran.iter().flatten().copied().collect();
    assert_eq!(simulations, (0..whole.simulations).collect::<Vec<_>>());
    // Stopped after the given scenario's simulation, it says so.
    let mut steps = FitSteps::new(&s, Some(6.0 * GB), Means::Both, SimOptions::default()).unwrap();
    assert_eq!(steps.step(&mut |_| true).unwrap(), Stepped::Again);
    assert_eq!(steps.step(&mut |_| false).unwrap(), Stepped::Cancelled);
}
