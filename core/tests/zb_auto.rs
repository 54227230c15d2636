//! The zero-bubble paper's automatic scheduler (`zb_auto`): with the stages' real costs (the
//! simulator's run of the scenario) its orders equal `tests/fixtures/zb_auto/cases.txt`, written
//! by an independent reimplementation of the heuristic of the authors' `zb.py` (generator beside
//! it): P = 2..6, M ∈ {P, P + 1, 2P, 3P}, five cost settings, memory limits P, 2P and 3M; and
//! its step never beats the exhaustive optimum the same file gives for 100 small cases (and, on
//! every one of them, reaches it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::scenario::layer::LayerSpec;
use mpipe::schedules::ZB_AUTO;
use mpipe::tune::pipeline::simulate_scenario;
use mpipe::vocab::role::Role;
use std::collections::BTreeMap;

/// One case's `key=value` words (`P`, `M`, `f`, `b`, `w`, `c`, `L`, `time`, `makespan`).
fn fields(head: &str) -> BTreeMap<String, usize> {
    head.split(' ')
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// `P` one-layer stages: forward `f`, input half `b`, weight half `w`; a stage's activations
/// freed half by each half (the fixture's memory), a memory limit of `L` microbatches.
fn scenario(c: &BTreeMap<String, usize>) -> mpipe::Scenario {
    assert_eq!(c["c"], 0, "free transfers only");
    let (p, m) = (c["P"], c["M"]);
    let mut layer = LayerSpec::timed("stage", Role::Backbone, p, c["f"] as f64);
    layer.bwd_s = Some((c["b"] + c["w"]) as f64);
    layer.bwd_input_s = Some(c["b"] as f64);
    layer.activation_bytes = Some(1.0);
    let mut s = common::scenario(vec![layer], &[], &[ZB_AUTO], p, m);
    s.activation_limit = Some(c["L"]);
    s
}

fn cases() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/zb_auto/cases.txt"
    ))
    .unwrap()
}

#[test]
fn the_orders_by_costs_are_the_authors_heuristic() {
    let mut checked = 0;
    for line in cases().lines().filter(|l| l.starts_with("zb_auto ")) {
        let (head, ranks) = line.split_once(" ok ").unwrap_or_else(|| panic!("{line}"));
        let c = fields(head);
        let sim = simulate_scenario(&scenario(&c), Default::default()).unwrap();
        let got: Vec<String> = (0..c["P"])
            .map(|r| {
                sim.derivation
                    .order
                    .steps(r)
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let want: Vec<&str> = ranks.split(" | ").collect();
        assert_eq!(got, want, "{head}");
        // The same order timed by the simulator: the makespan the fixture's own timing gives.
        assert_eq!(sim.makespan_s, c["makespan"] as f64, "{head}");
        checked += 1;
    }
    // The grid's 300 and P = 3, M = 2 (fewer microbatches than stages) for its optimum.
    assert_eq!(checked, 310);
}

#[test]
fn the_heuristic_never_beats_the_exhaustive_optimum() {
    let text = cases();
    let mut equal = 0;
    let mut worst: f64 = 0.0;
    let mut count = 0;
    for line in text.lines().filter(|l| l.starts_with("optimum ")) {
        let c = fields(line);
        let sim = simulate_scenario(&scenario(&c), Default::default()).unwrap();
        let optimum = c["makespan"] as f64;
        assert!(sim.makespan_s >= optimum, "{line}: {}", sim.makespan_s);
        if sim.makespan_s == optimum {
            equal += 1;
        }
        worst = worst.max(sim.makespan_s / optimum - 1.0);
        count += 1;
    }
    assert_eq!(count, 100);
    // The README's figure: on every small case the heuristic finds an optimal order.
    assert_eq!(equal, 100, "worst +{:.1} %", worst * 100.0);
}

#[test]
fn the_stages_costs_change_the_order_and_the_limit_is_a_named_parameter() {
    // t_F = 3, t_I = 2, t_W = 1 at L = 2P: `derive` alone orders at unit costs; the simulation
    // orders by the real ones, and that order is no slower than the unit-cost one run at them.
    let c: BTreeMap<String, usize> = [
        ("P", 4),
        ("M", 12),
        ("f", 3),
        ("b", 2),
        ("w", 1),
        ("c", 0),
        ("L", 8),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let s = scenario(&c);
    let unit = mpipe::derive(&s).unwrap();
    let costed = simulate_scenario(&s, Default::default()).unwrap();
    let orders = |d: &mpipe::Derivation| -> Vec<Vec<String>> {
        (0..4)
            .map(|r| d.order.steps(r).iter().map(|a| a.to_string()).collect())
            .collect()
    };
    assert_ne!(orders(&unit), orders(&costed.derivation));
    let mut by_hand = s.clone();
    by_hand.orders = Some(orders(&unit));
    let unit_run = simulate_scenario(&by_hand, Default::default()).unwrap();
    assert_eq!(costed.makespan_s, 81.0);
    assert!(
        unit_run.makespan_s >= costed.makespan_s,
        "{}",
        unit_run.makespan_s
    );
    // The limit: at least one microbatch, and only where zb_auto reads it.
    let mut zero = s.clone();
    zero.activation_limit = Some(0);
    assert_eq!(
        mpipe::derive(&zero).unwrap_err().to_string(),
        "rule `activation-limit`: `activation_limit` = 0; a stage must be able to hold at least one microbatch's activations"
    );
    let mut other = s.clone();
    other.schedule = vec![mpipe::schedules::ZB1P];
    let err = mpipe::derive(&other).unwrap_err();
    assert_eq!(
        (err.rule(), err.field()),
        ("activation-limit", "activation_limit".to_string())
    );
    // Over two chunks the automatic scheduler is refused by name.
    let two = common::scenario(common::uniform(8), &[4], &[ZB_AUTO, ZB_AUTO], 4, 8);
    assert_eq!(mpipe::derive(&two).unwrap_err().rule(), "zb_auto-chunks");
}
