//! Hanayo's waves (issue 26, item 2): the wave placement, the list-scheduled order (the same as a
//! fold's, checked against a solver's proven optima), the formula of one to four waves over a
//! grid, and the rule that a wave is two chunks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{scenario, uniform};
use mpipe::Scenario;
use mpipe::scenario::placement::PlacementSpec;
use mpipe::schedules::{HANAYO, ONE_F_ONE_B};
use mpipe::tune::pipeline::simulate_scenario;

/// `W` waves (`2W` regions) over `p` ranks, one layer a stage (forward 1 s, backward 2 s).
fn waves(w: usize, p: usize, m: usize) -> Scenario {
    let v = 2 * w;
    let cut: Vec<usize> = (1..v).map(|c| c * p).collect();
    scenario(uniform(p * v), &cut, &vec![HANAYO; v], p, m)
}

/// [`waves`] with one byte of activations a stage, its simulation and the most stages'
/// activations a rank holds (its peak bytes).
fn counted(w: usize, p: usize, m: usize) -> (mpipe::sim::run::Simulation, usize) {
    let mut s = waves(w, p, m);
    for l in &mut s.model.layers {
        l.activation_bytes = Some(1.0);
    }
    let sim = simulate_scenario(&s, Default::default()).unwrap();
    let held = sim.memory.iter().map(|c| c.peak_bytes).fold(0.0, f64::max);
    (sim, held as usize)
}

/// Each case of the solver's `optimum_waves.txt` with `v` chunks, `(P, M, step, optimum, held)`:
/// the optimum checked to be the bound the ranks' work gives, the step and held activations the
/// derived order's ([`counted`]).
fn against_the_solver(v: usize) -> Vec<(usize, usize, f64, f64, f64)> {
    let mut seen = Vec::new();
    for (p, chunks, m, optimum) in common::fold_optima("optimum_waves.txt") {
        if chunks != v {
            continue;
        }
        assert_eq!(optimum, ((v * m + p - 1) * 3) as f64, "P={p} M={m}");
        let (sim, held) = counted(v / 2, p, m);
        seen.push((p, m, sim.makespan_s, optimum, held as f64));
    }
    seen
}

fn step(s: &Scenario) -> f64 {
    simulate_scenario(s, Default::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .makespan_s
}

#[test]
fn two_waves_zigzag_over_the_ranks() {
    let d = mpipe::derive(&waves(2, 4, 8)).unwrap();
    assert_eq!(
        d.plan.placement.ranks_of_stages(),
        [0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0]
    );
    // The order is the schedule's own (no note of a fold it does not assume).
    assert_eq!(d.order_note, None);
}

/// One wave is a V fold: Hanayo's order is the one derived for interleaved 1F1B folded as a V,
/// and on the solver's cases (`tests/fixtures/fold_optimum`, two chunks) the proven optimum.
#[test]
fn one_wave_is_the_folds_order_and_the_proven_optimum() {
    let mut checked = 0;
    for (p, v, m, optimum) in common::fold_optima("optimum.txt") {
        if v != 2 {
            continue;
        }
        let hanayo = waves(1, p, m);
        let mut folded = scenario(uniform(2 * p), &[p], &[ONE_F_ONE_B, ONE_F_ONE_B], p, m);
        folded.placement = Some(PlacementSpec::VFold);
        let (a, b) = (
            mpipe::derive(&hanayo).unwrap(),
            mpipe::derive(&folded).unwrap(),
        );
        for r in 0..p {
            assert_eq!(
                a.order.actions(r),
                b.order.actions(r),
                "P={p} M={m} rank {r}"
            );
        }
        assert_eq!(step(&hanayo), optimum, "P={p} M={m}");
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// With `M ≥ 2P` one wave runs `(2M + P − 1)·(t_F + t_B)`: every P from 2 to 12, every M from
/// 2P to 5P, and the formula the reading states is that step.
#[test]
fn one_wave_runs_its_formula_from_two_p_microbatches() {
    for p in 2..=12 {
        for m in 2 * p..=5 * p {
            let s = waves(1, p, m);
            let sim = simulate_scenario(&s, Default::default()).unwrap();
            let want = ((2 * m + p - 1) * 3) as f64;
            assert_eq!(sim.makespan_s, want, "P={p} M={m}");
            let reading = mpipe::report::formula::read(&sim).unwrap();
            assert_eq!(reading.formula.step_s, want, "P={p} M={m}");
        }
    }
}

/// With `M ≥ 2P` two waves run `(4M + P − 1)·(t_F + t_B)`, the bound no order beats, and the
/// formula the reading states is that step: every P from 2 to 12, every M from 2P to 5P. Each
/// rank holds at most `(v + 2)·P − 1` stages' activations, `P` more than 1F1B's bound, no more
/// than 1F1B's bound on 41 of the 242 shapes, and 666 stages' activations above it summed over
/// all (1,814 and 36 shapes before the bounds between 1F1B's and the round that reached the step
/// were tried). (Under 1F1B's bound alone the runs were 0.95–3.5 % above the step on P 3, 4, 6
/// and M 2P–4P, and up to 1.9 % once made again with their finishes.)
#[test]
fn two_waves_run_their_formula_from_two_p_microbatches() {
    let (mut within_1f1b, mut above) = (0, 0);
    for p in 2..=12 {
        for m in 2 * p..=5 * p {
            let (sim, held) = counted(2, p, m);
            let want = ((4 * m + p - 1) * 3) as f64;
            assert_eq!(sim.makespan_s, want, "P={p} M={m}");
            let reading = mpipe::report::formula::read(&sim).unwrap();
            assert_eq!(reading.formula.step_s, want, "P={p} M={m}");
            // At most `(v + 2)·P − 1`, within 1F1B's `(v + 1)·P − 1` or not.
            assert!(held < 6 * p, "P={p} M={m}: {held}");
            within_1f1b += usize::from(held < 5 * p);
            above += (held + 1).saturating_sub(5 * p);
        }
    }
    assert_eq!((within_1f1b, above), (41, 666));
}

/// With `M ≥ 2P` three and four waves run `(vM + P − 1)·(t_F + t_B)` too, and the formula the
/// reading states is that step: every P from 2 to 8, every M from 2P to 5P. They reach it under
/// looser bounds on held activations than two waves do (the runs made again `P` looser each time
/// while short of it, then under bounds between): each rank holds at most `(v + 5)·P − 1`
/// stages' activations with three waves and `(v + 8)·P − 1` with four (1F1B's bound is
/// `(v + 1)·P − 1`), and summed over the 112 shapes of each, 990 and 2,416 above 1F1B's bound
/// (1,323 and 2,977 before the bounds between were tried). Before those rounds, three waves ran
/// 0.4–1.8 % above the step on six of nine shapes (P 3, 4, 6; M 2P–4P).
#[test]
fn three_and_four_waves_run_their_formula_from_two_p_microbatches() {
    let mut most_rounds = Vec::new();
    for w in [3, 4] {
        let v = 2 * w;
        let (mut most, mut above) = (0, 0);
        for p in 2..=8 {
            for m in 2 * p..=5 * p {
                let (sim, held) = counted(w, p, m);
                let want = ((v * m + p - 1) * 3) as f64;
                assert_eq!(sim.makespan_s, want, "W={w} P={p} M={m}");
                let reading = mpipe::report::formula::read(&sim).unwrap();
                assert_eq!(reading.formula.step_s, want, "W={w} P={p} M={m}");
                // The least k with held ≤ (v + k)·P − 1.
                most = most.max((held + 1).div_ceil(p).saturating_sub(v));
                above += (held + 1).saturating_sub((v + 1) * p);
            }
        }
        most_rounds.push((w, most, above));
    }
    assert_eq!(most_rounds, [(3, 5, 990), (4, 8, 2416)]);
}

/// Two waves against a constraint solver's optimum under 1F1B's bound on the activations a rank
/// holds, `(v + 1)·P − 1` stages (`tests/fixtures/fold_optimum/optimum_waves.txt`, proven
/// optimal): the order derived reaches it on all three cases, within that bound on two, one
/// stage's activations above it on the third (P = 3, M = 9: 15 against 14; 17 before the bounds
/// between 1F1B's and `P` looser were tried; under 1F1B's bound alone it ran one unit above).
#[test]
fn two_waves_reach_the_order_the_solver_finds_one_stage_above_its_memory_at_most() {
    assert_eq!(
        against_the_solver(4),
        [
            (3, 6, 78.0, 78.0, 14.0),
            (3, 9, 114.0, 114.0, 15.0),
            (4, 8, 105.0, 105.0, 19.0)
        ]
    );
}

#[test]
fn a_wave_is_two_chunks() {
    let cut = [3, 6];
    let s = scenario(uniform(9), &cut, &[HANAYO; 3], 3, 6);
    let e = mpipe::derive(&s).unwrap_err();
    assert_eq!(
        (e.rule(), e.field(), e.to_string()),
        (
            "hanayo-waves",
            "schedule".to_string(),
            "rule `hanayo-waves`: hanayo needs the number of its Sharded regions (chunks a rank) to be a multiple of 2 (a wave is two chunks, down the ranks and back up); v = 3".to_string()
        )
    );
}

/// Hanayo's slots are list-scheduled in units of time (a backward twice a forward); where the
/// stages' times differ from that, the pipeline lists them again with those times and keeps the
/// shorter order (issue 26). Two waves, P = 4, M = 8, one layer a stage of 1 s forward and 3 s
/// backward: 145 s in units, 140 s with the stages' times; under the units' own times nothing is
/// listed again.
#[test]
fn hanayo_with_backwards_three_times_a_forward_is_listed_with_those_times() {
    let mut s = waves(2, 4, 8);
    for l in &mut s.model.layers {
        l.bwd_s = Some(3.0);
    }
    let units = mpipe::sim::run::run(mpipe::derive(&s).unwrap(), Default::default());
    let sim = simulate_scenario(&s, Default::default()).unwrap();
    assert!(common::executes(&sim.derivation));
    assert_eq!((units.makespan_s, sim.makespan_s), (145.0, 140.0));
    let note = sim.derivation.order_note.unwrap();
    assert!(
        note.starts_with(
            "list-scheduled over this placement with each stage's own times (the cost model's) — "
        ) && note.ends_with("; it takes 140.000 s where the schedule's own slots take 145.000 s"),
        "{note}"
    );
    let uniform = simulate_scenario(&waves(2, 4, 8), Default::default()).unwrap();
    assert_eq!(uniform.derivation.order_note, None);
}

/// Hanayo's waves with transfers as long as a forward (the sample's 32 layers, P = 4, M = 8, each
/// stage's output 1 GB over links of 1 GB/s): its slots, listed in units with free links, run
/// 242 s; listed again with the transfers, 216 s, the bound the ranks' work gives.
#[test]
fn hanayo_with_slow_links_is_listed_with_its_transfers() {
    let text = include_str!("../../samples/hanayo.json");
    let mut s = Scenario::from_json_str(text, "hanayo.json").unwrap();
    for l in &mut s.model.layers {
        l.output_bytes = Some(1e9);
    }
    s.hardware = Some(mpipe::scenario::hardware::Hardware {
        link_bytes_per_s: Some(1e9),
        link_alpha_s: Some(0.0),
        ..Default::default()
    });
    let units = mpipe::sim::run::run(mpipe::derive(&s).unwrap(), Default::default());
    let sim = simulate_scenario(&s, Default::default()).unwrap();
    assert!(common::executes(&sim.derivation));
    assert_eq!((units.makespan_s, sim.makespan_s), (242.0, 216.0));
    let note = sim.derivation.order_note.unwrap();
    assert!(
        note.starts_with(
            "list-scheduled over this placement with each stage's own times and the transfers between them (the cost model's) — "
        ) && note.ends_with("; it takes 216.000 s where the schedule's own slots take 242.000 s"),
        "{note}"
    );
}

/// One wave of uneven stages whose backwards are twice their forwards on average (1 s forwards,
/// backwards of 1 s and 3 s in turn): the formula is read at the mean costs, and its reading
/// says the order departs from the schedule's own because it was listed again with the stages'
/// own times (not, as on a fold, because of the placement).
#[test]
fn a_wave_listed_again_with_its_stages_times_says_so_beside_the_formula() {
    let layers = (0..8)
        .map(|i| {
            let mut l = mpipe::scenario::layer::LayerSpec::timed(
                &format!("l{i}"),
                mpipe::vocab::role::Role::Backbone,
                1,
                1.0,
            );
            l.bwd_s = Some(if i % 2 == 0 { 1.0 } else { 3.0 });
            l
        })
        .collect();
    let s = scenario(layers, &[4], &[HANAYO; 2], 4, 8);
    let sim = simulate_scenario(&s, Default::default()).unwrap();
    assert!(common::executes(&sim.derivation));
    // The formula's 57 s at the mean costs (58 s before the runs under a looser bound).
    assert_eq!(sim.makespan_s, 57.0);
    assert!(sim.derivation.order_note.is_some());
    let reading = mpipe::report::formula::read(&sim).unwrap();
    assert!(
        reading.departures.first().is_some_and(|d| d
            == "the order is not the schedule's own: it is list-scheduled again with each stage's own times"),
        "{:?}",
        reading.departures
    );
}

/// The sample (`samples/hanayo.json`: 32 layers, two a stage, P = 4, M = 8) runs at the bound,
/// `(4M + P − 1)·(t_F + t_B)` = 210 s (212 s before the list runs were made again with their
/// microbatches due when they finished them): the README's screenshot.
#[test]
fn the_hanayo_sample_runs_at_its_bound() {
    let text = include_str!("../../samples/hanayo.json");
    let s = Scenario::from_json_str(text, "hanayo.json").unwrap();
    assert_eq!(step(&s), 210.0);
}

/// Three waves against the solver's optimum under 1F1B's bound, `(v + 1)·P − 1` stages' activations
/// (`tests/fixtures/fold_optimum/optimum_waves.txt`, proven): the bound the ranks' work gives on
/// every case, and the order derived reaches it, holding more than the solver needed (made under
/// bounds looser than 1F1B's: 22 stages' activations against 20 on P = 3, 30 against 27 on
/// P = 4; 26, 23 and 30 before the bounds between the rounds of `P` were tried).
#[test]
fn three_waves_reach_the_solvers_optimum_holding_more_than_it_needed() {
    let seen: Vec<_> = against_the_solver(6)
        .into_iter()
        .map(|(p, m, step, optimum, held)| (p, m, step, optimum, held, (7 * p - 1) as f64))
        .collect();
    // (P, M, step, optimum, held, the solver's cap).
    assert_eq!(
        seen,
        [
            (3, 6, 114.0, 114.0, 22.0, 20.0),
            (3, 9, 168.0, 168.0, 22.0, 20.0),
            (4, 8, 153.0, 153.0, 30.0, 27.0)
        ]
    );
}
