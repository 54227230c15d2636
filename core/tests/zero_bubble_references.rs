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

#[test]
fn zb2p_is_the_authors_zb_h2() {
    let at = |p, m| scenario(ZB2P, p, m);
    let (cases, _) = common::compare_fixture("zb_h2/orders.txt", "zb_h2", "zb2p-", at);
    assert_eq!(cases, (2..=8).map(|p| p + 1).sum::<usize>());
}

#[test]
fn vhalf_and_vmin_are_the_controllable_memory_reference() {
    for (name, skeleton) in [("vhalf", VHALF), ("vmin", VMIN)] {
        let at = |p, m| scenario(skeleton, p, m);
        let (cases, _) = common::compare_fixture("v_schedules/orders.txt", name, name, at);
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

#[test]
fn the_orders_that_grow_faster_than_the_events_are_bounded_by_name() {
    // V-Half's greedy passes grow with P·(P + M), ZB-V's order with P·max(2P − 1, M): a hostile
    // shape is refused before any of it is computed.
    let v = |skeleton: Skeleton, p: usize, m: usize| {
        common::scenario(common::uniform(2 * p), &[p], &[skeleton; 2], p, m)
    };
    assert_eq!(
        mpipe::derive(&v(VHALF, 1024, 1)).unwrap_err().to_string(),
        "rule `vhalf-size`: vhalf orders the whole pipeline in greedy passes whose work grows with P·(P + M); here P·(P + M) = 1049600, more than this version orders (131072)"
    );
    assert_eq!(
        mpipe::derive(&v(VMIN, 300, 200)).unwrap_err().rule(),
        "vmin-size"
    );
    assert_eq!(
        mpipe::derive(&v(ZBV, 8192, 1)).unwrap_err().to_string(),
        "rule `zbv-size`: zbv writes its order for max(2P − 1, M) microbatches on every rank, as PyTorch; here P·max(2P − 1, M) = 134209536, more than this version orders (67108864)"
    );
    // The bound's edge: P = 64, M = 1984 is the largest M a 64-rank V-Half runs.
    let ctx = |m| v(VHALF, 64, m).run_ctx();
    assert!(VHALF.schedule().check(&ctx(1984)).is_ok());
    assert_eq!(
        VHALF.schedule().check(&ctx(1985)).unwrap_err().rule(),
        "vhalf-size"
    );
}
