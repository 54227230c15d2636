//! Hand-written per-rank orders (`orders` in a scenario) and the deadlock check.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{scenario, uniform};
use mpipe::Scenario;
use mpipe::schedules::ONE_F_ONE_B;

fn two_rank_1f1b(orders: &[&[&str]]) -> Scenario {
    let mut s = scenario(uniform(2), &[], &[ONE_F_ONE_B], 2, 2);
    s.orders = Some(
        orders
            .iter()
            .map(|r| r.iter().map(|a| a.to_string()).collect())
            .collect(),
    );
    s
}

#[test]
fn a_valid_hand_order_is_used_as_given() {
    // GPipe-like order on rank 0 of a 1F1B scenario: legal, just different.
    let s = two_rank_1f1b(&[&["0F0", "0F1", "0B0", "0B1"], &["1F0", "1B0", "1F1", "1B1"]]);
    let d = mpipe::derive(&s).unwrap();
    let rank0: Vec<String> = d.order.actions(0).iter().map(|a| a.to_string()).collect();
    assert_eq!(rank0, ["0F0", "0F1", "0B0", "0B1"]);
}

#[test]
fn a_cyclic_order_is_reported_with_its_cycle() {
    // Rank 0 wants the backward of microbatch 0 before its forward: 0B0 needs the activation
    // 0F0 saved, and rank 0 only runs 0F0 after 0B0.
    let s = two_rank_1f1b(&[&["0B0", "0F0", "0F1", "0B1"], &["1F0", "1B0", "1F1", "1B1"]]);
    let e = mpipe::derive(&s).unwrap_err();
    assert_eq!(e.rule(), "deadlock-free");
    assert_eq!(e.field(), "orders");
    assert_eq!(
        e.to_string(),
        "rule `deadlock-free`: the per-rank order deadlocks; each event waits for the next: 0B0@r0 → 0F0@r0 → 0B0@r0"
    );
}

#[test]
fn a_cross_rank_wait_cycle_is_found() {
    // Rank 1 insists on microbatch 1 first; rank 0 only sends it after the backward of
    // microbatch 0, which needs rank 1's backward of microbatch 0.
    let s = two_rank_1f1b(&[&["0F0", "0B0", "0F1", "0B1"], &["1F1", "1F0", "1B0", "1B1"]]);
    let e = mpipe::derive(&s).unwrap_err();
    assert_eq!(
        e.to_string(),
        "rule `deadlock-free`: the per-rank order deadlocks; each event waits for the next: 0B0@r0 → 1B0@r1 → 1F0@r1 → Loss mb 1 @r1 → 1F1@r1 → 0F1@r0 → 0B0@r0"
    );
}

#[test]
fn hand_orders_must_hold_exactly_the_ranks_events() {
    let cases: [(&[&[&str]], &str); 6] = [
        (
            &[&["0F0", "0F1", "0B0", "0B1"]],
            "rule `orders`: `orders`: gives 1 rank orders for 2 ranks",
        ),
        (
            &[&["0F0", "0F1", "0B0"], &["1F0", "1B0", "1F1", "1B1"]],
            "rule `orders`: `orders[0]`: misses `0B1`",
        ),
        (
            &[
                &["0F0", "0F1", "0B0", "0B1", "0F0"],
                &["1F0", "1B0", "1F1", "1B1"],
            ],
            "rule `orders`: `orders[0][4]`: `0F0` appears twice",
        ),
        (
            &[&["0F0", "1F1", "0B0", "0B1"], &["1F0", "1B0", "1F1", "1B1"]],
            "rule `orders`: `orders[0][1]`: `1F1` is stage 1 of rank 1, not of rank 0",
        ),
        (
            &[&["0F0", "0F9", "0B0", "0B1"], &["1F0", "1B0", "1F1", "1B1"]],
            "rule `orders`: `orders[0][1]`: `0F9` is not an event of this schedule",
        ),
        (
            &[&["0F0", "0X1", "0B0", "0B1"], &["1F0", "1B0", "1F1", "1B1"]],
            "rule `orders`: `orders[0][1]`: `0X1` is not an action; expected <stage><F|B|I|W><microbatch>, e.g. `4F0`",
        ),
    ];
    for (orders, message) in cases {
        let e = mpipe::derive(&two_rank_1f1b(orders)).unwrap_err();
        assert_eq!(e.to_string(), message);
    }
}
