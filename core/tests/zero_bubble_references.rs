//! The zero-bubble family beyond PyTorch's classes, against their authors' code: ZB-H2 (`zb2p`)
//! and V-Half / V-Min (`vhalf`, `vmin`, "Pipeline Parallelism with Controllable Memory"). The
//! derived orders equal the reference orders of `tests/fixtures/zb_h2/orders.txt` (the authors'
//! `get_hand_schedule`, P = 2..8, M = 2P..3P) and `tests/fixtures/v_schedules/orders.txt`
//! (`zbv_greedy.py`, P = 2..8, M = 1..3P), each written by an independent standard-library
//! reimplementation committed beside it; the memory is what the papers promise.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{VHALF, VMIN, ZB2P, ZBV};
use mpipe::tune::pipeline::simulate_scenario;

/// `P` one-layer stages a chunk; two chunks (the V's arms) for a V schedule.
fn scenario(skeleton: Skeleton, p: usize, m: usize) -> mpipe::Scenario {
    let chunks = if skeleton == ZB2P { 1 } else { 2 };
    let cut: Vec<usize> = (1..chunks).map(|c| c * p).collect();
    common::scenario(
        common::uniform(chunks * p),
        &cut,
        &vec![skeleton; chunks],
        p,
        m,
    )
}

fn derived(skeleton: Skeleton, p: usize, m: usize) -> Vec<String> {
    let d = mpipe::derive(&scenario(skeleton, p, m))
        .unwrap_or_else(|e| panic!("{skeleton} P={p} M={m}: {e}"));
    (0..p)
        .map(|r| {
            d.order
                .steps(r)
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Compares every `<name> <P> <M> ok <rank 0> | <rank 1> | …` line of a fixture, with `name`
/// read as `skeleton`; returns how many.
fn compare(fixture: &str, name: &str, skeleton: Skeleton) -> usize {
    let path = format!("{}/../tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut cases = 0;
    for line in text.lines().filter(|l| l.starts_with(&format!("{name} "))) {
        let (head, ranks) = line.split_once(" ok ").unwrap_or_else(|| panic!("{line}"));
        let mut words = head.split(' ').skip(1);
        let p: usize = words.next().unwrap().parse().unwrap();
        let m: usize = words.next().unwrap().parse().unwrap();
        let want: Vec<&str> = ranks.split(" | ").collect();
        assert_eq!(derived(skeleton, p, m), want, "{skeleton} P = {p}, M = {m}");
        cases += 1;
    }
    cases
}

#[test]
fn zb2p_is_the_authors_zb_h2() {
    let cases = compare("zb_h2/orders.txt", "zb_h2", ZB2P);
    assert_eq!(cases, (2..=8).map(|p| p + 1).sum::<usize>());
}

#[test]
fn vhalf_and_vmin_are_the_controllable_memory_reference() {
    for (name, skeleton) in [("vhalf", VHALF), ("vmin", VMIN)] {
        let cases = compare("v_schedules/orders.txt", name, skeleton);
        assert_eq!(cases, (2..=8).map(|p| 3 * p).sum::<usize>(), "{name}");
    }
}

#[test]
fn zb2p_below_2p_microbatches_is_refused_by_name() {
    let err = mpipe::derive(&scenario(ZB2P, 4, 7)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule `zb2p-microbatches`: zb2p needs at least as many microbatches as stages (M ≥ 2P, as the zero-bubble authors' ZB-H2): M = 7 < 8"
    );
}

/// The peak bytes one rank holds, with `common::uniform`'s activations (`A` a stage).
fn peak(skeleton: Skeleton, p: usize, m: usize) -> f64 {
    simulate_scenario(&scenario(skeleton, p, m), Default::default())
        .unwrap()
        .peak_memory_bytes()
}

#[test]
fn the_v_schedules_hold_a_half_and_a_third_of_zb_v() {
    // ZB-V holds 1F1B's P microbatches of both chunks, 2P·A; V-Half about half of that and V-Min
    // about a third, each within the two activations its building block's ends add.
    let a = peak(ZBV, 1, 1) / 2.0;
    for p in 2..=8 {
        for m in 2 * p..=3 * p {
            let (zbv, half, min) = (peak(ZBV, p, m), peak(VHALF, p, m), peak(VMIN, p, m));
            let at = format!("P = {p}, M = {m}: ZB-V {zbv}, V-Half {half}, V-Min {min}");
            assert_eq!(zbv, 2.0 * p as f64 * a, "{at}");
            assert!(half <= zbv / 2.0 + 2.0 * a, "{at}");
            assert!(min <= zbv / 3.0 + 2.0 * a, "{at}");
            assert!(min <= half && half <= zbv, "{at}");
        }
    }
}

#[test]
fn the_v_schedules_pay_for_their_memory_in_step_time() {
    // The README's figures: P = 8, M = 16 at t_F = t_I = t_W = 1 (ZB-V's 6M + P − 1).
    let step = |skeleton| {
        simulate_scenario(&scenario(skeleton, 8, 16), Default::default())
            .unwrap()
            .makespan_s
    };
    assert_eq!([step(ZBV), step(VHALF), step(VMIN)], [103.0, 113.0, 123.0]);
}
