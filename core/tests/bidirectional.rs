//! Bidirectional schedules (DualPipe): the model's region and its mirror (the same layers on the
//! ranks in reverse, for the second half of the microbatches). The derived orders equal the
//! reference orders of `tests/fixtures/dualpipe/orders.txt`, written by an independent
//! reimplementation of `deepseek-ai/DualPipe`'s `DualPipe.step` (generator beside it; P = 2..8,
//! M = 2P..4P); the mirror doubles the parameters, reduces with its region, and the rules name
//! what DualPipe refuses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{CHIMERA, DUALPIPE};

/// `P` one-layer stages in one region of `skeleton`.
fn scenario(skeleton: Skeleton, p: usize, m: usize) -> mpipe::Scenario {
    common::scenario(common::uniform(p), &[], &[skeleton], p, m)
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

/// Compares every `<name> <P> <M> ok <rank 0> | …` line of `fixture`, and has every
/// `<name> <P> <M> fails <why>` refused by one of the schedule's rules; returns how many of
/// each.
fn compare(fixture: &str, name: &str, skeleton: Skeleton) -> (usize, usize) {
    let path = format!("{}/../tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut cases, mut refused) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with(&format!("{name} "))) {
        if let Some((head, why)) = line.split_once(" fails ") {
            let mut words = head.split(' ').skip(1);
            let p: usize = words.next().unwrap().parse().unwrap();
            let m: usize = words.next().unwrap().parse().unwrap();
            let err = mpipe::derive(&scenario(skeleton, p, m))
                .err()
                .unwrap_or_else(|| panic!("{line}: derived"));
            assert!(err.rule().starts_with(name), "{line}: {err} ({why})");
            refused += 1;
            continue;
        }
        let (head, ranks) = line.split_once(" ok ").unwrap_or_else(|| panic!("{line}"));
        let mut words = head.split(' ').skip(1);
        let p: usize = words.next().unwrap().parse().unwrap();
        let m: usize = words.next().unwrap().parse().unwrap();
        let want: Vec<&str> = ranks.split(" | ").collect();
        assert_eq!(derived(skeleton, p, m), want, "{skeleton} P = {p}, M = {m}");
        cases += 1;
    }
    (cases, refused)
}

#[test]
fn dualpipe_is_deepseeks_step() {
    assert_eq!(
        compare("dualpipe/orders.txt", "dualpipe", DUALPIPE),
        (24, 0)
    );
}

#[test]
fn chimera_is_the_authors_direct_concatenation() {
    assert_eq!(compare("chimera/orders.txt", "chimera", CHIMERA), (16, 76));
    // Where the authors' definition does not reach, a named rule.
    let err = |p: usize, m: usize| mpipe::derive(&scenario(CHIMERA, p, m)).unwrap_err();
    assert_eq!(
        err(4, 6).to_string(),
        "rule `chimera-microbatches`: chimera needs the number of microbatches to be a multiple of 4 (basic units of P microbatches, concatenated); M = 6"
    );
    assert_eq!(err(3, 6).rule(), "chimera-ranks");
}

#[test]
fn dualpipe_refuses_what_deepseek_refuses_by_name() {
    let err = |p: usize, m: usize| mpipe::derive(&scenario(DUALPIPE, p, m)).unwrap_err();
    assert_eq!(
        err(3, 6).to_string(),
        "rule `dualpipe-ranks`: dualpipe needs the number of ranks to be a multiple of 2 (as DeepSeek's DualPipe); P = 3"
    );
    assert_eq!(err(3, 6).field(), "ranks");
    assert_eq!(
        err(4, 9).to_string(),
        "rule `dualpipe-microbatches`: dualpipe needs the number of microbatches to be a multiple of 2 (half of them runs each direction); M = 9"
    );
    assert_eq!(err(4, 9).field(), "microbatches");
    assert_eq!(
        err(4, 6).to_string(),
        "rule `dualpipe-microbatches`: dualpipe needs at least as many microbatches as stages (M ≥ 2P, as DeepSeek's DualPipe): M = 6 < 8"
    );
    // It runs the whole model: no second region beside it.
    let two = common::scenario(common::uniform(8), &[4], &[DUALPIPE, DUALPIPE], 4, 8);
    assert_eq!(
        mpipe::derive(&two).unwrap_err().to_string(),
        "rule `dualpipe-alone`: region 1 is `dualpipe`, which is defined for a model of one region (it runs the whole pipeline in two directions)"
    );
}

#[test]
fn the_mirror_holds_a_second_copy_of_the_parameters_and_reduces_with_its_region() {
    // Stage s's layer holds (s + 1) GB of parameters; rank r holds stage r down and stage
    // P − 1 − r up.
    let p = 4;
    let layers: Vec<_> = (0..p)
        .map(|s| {
            let mut l = mpipe::scenario::layer::LayerSpec::timed(
                &format!("l{s}"),
                mpipe::vocab::role::Role::Backbone,
                1,
                1.0,
            );
            l.param_bytes = Some((s + 1) as f64 * 1e9);
            l
        })
        .collect();
    let mut s = common::scenario(layers, &[], &[DUALPIPE], p, 8);
    s.data_parallel = 3;
    let d = mpipe::derive(&s).unwrap();
    for r in 0..p {
        assert_eq!(
            mpipe::sim::memory::static_bytes(&d.plan, r),
            ((r + 1) + (p - r)) as f64 * 1e9,
            "rank {r}"
        );
    }
    // The region (1) and its mirror (2): the stage's two copies in each of the 3 data-parallel
    // replicas reduce together.
    let members: Vec<(usize, usize)> = d
        .collectives
        .reduces
        .iter()
        .map(|r| (r.region, r.members))
        .collect();
    assert_eq!(members, [(1, 6), (2, 6)]);
    // No seam joins a region to its mirror; each keeps its slab-to-slab hops.
    assert!(d.collectives.seams.is_empty());
    assert_eq!(d.collectives.internal.len(), 2);
    // The scenario's schedule is still one region's.
    assert_eq!(d.plan.schedule(), [DUALPIPE]);
    assert_eq!(d.plan.placement.ranks_of_stages(), [0, 1, 2, 3, 3, 2, 1, 0]);
}

#[test]
fn dualpipe_idles_half_of_1f1b_and_holds_p_plus_one() {
    // t_F = t_I = t_W = 1: DualPipe's (3M + P − 2) against 1F1B's 3(M + P − 1), P + 1
    // microbatches' activations against 1F1B's P.
    for p in [2, 4, 6, 8] {
        for m in (2 * p..=4 * p).step_by(2) {
            let sim = |skeleton| {
                mpipe::tune::pipeline::simulate_scenario(
                    &scenario(skeleton, p, m),
                    Default::default(),
                )
                .unwrap()
            };
            let (dual, one) = (sim(DUALPIPE), sim(mpipe::schedules::ONE_F_ONE_B));
            assert_eq!(dual.makespan_s, (3 * m + p - 2) as f64, "P = {p}, M = {m}");
            assert_eq!(one.makespan_s, (3 * (m + p - 1)) as f64, "P = {p}, M = {m}");
            let a = one.peak_memory_bytes() / p as f64;
            assert_eq!(
                dual.peak_memory_bytes(),
                (p + 1) as f64 * a,
                "P = {p}, M = {m}"
            );
        }
    }
}

#[test]
fn chimera_with_backwards_twice_the_forwards() {
    // t_F = 1, t_B = 2: the makespans the fixture's generator simulated on its own (direct
    // concatenation idles (P − 2)·t_B per unit, more than the paper's (P/2 − 1)·(t_F + t_B)),
    // against 1F1B's 3(M + P − 1).
    for (p, m, chimera, one) in [
        (4, 4, 16.0, 21.0),
        (4, 8, 30.0, 33.0),
        (8, 8, 36.0, 45.0),
        (8, 16, 66.0, 69.0),
    ] {
        let step = |skeleton| {
            mpipe::tune::pipeline::simulate_scenario(&scenario(skeleton, p, m), Default::default())
                .unwrap()
                .makespan_s
        };
        assert_eq!(step(CHIMERA), chimera, "P = {p}, M = {m}");
        assert_eq!(step(mpipe::schedules::ONE_F_ONE_B), one, "P = {p}, M = {m}");
    }
}
