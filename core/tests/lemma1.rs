//! Lemma 1 (backward footprint) and Corollary 1 (schedule invariance).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{scenario, vit_llm};
use mpipe::Derivation;
use mpipe::algebra::gates::gates;
use mpipe::graph::event::Event;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B, TRANSPOSE};
use mpipe::vocab::comm::Comm;
use mpipe::vocab::ids::{Mb, Rank, RegionId, Stage};
use mpipe::vocab::phase::Phase;
use std::collections::HashMap;

/// Events as a multiset keyed by a label that ignores node ids.
fn events(d: &Derivation) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for e in d.order.graph.node_weights() {
        *out.entry(format!("{e:?}")).or_insert(0) += 1;
    }
    out
}

fn forward_order(d: &Derivation, rank: usize) -> Vec<String> {
    d.order
        .actions(rank)
        .iter()
        .filter(|a| a.phase == Phase::Forward)
        .map(|a| a.to_string())
        .collect()
}

#[test]
fn freezing_the_encoder_deletes_exactly_its_backward_scatter_and_reduce() {
    let (p, m) = (4, 8);
    let trained = mpipe::derive(&scenario(
        vit_llm(4, 8, true),
        &[4],
        &[TRANSPOSE, ONE_F_ONE_B],
        p,
        m,
    ))
    .unwrap();
    let frozen = mpipe::derive(&scenario(
        vit_llm(4, 8, false),
        &[4],
        &[TRANSPOSE, ONE_F_ONE_B],
        p,
        m,
    ))
    .unwrap();

    // Placement and forward order do not change.
    assert_eq!(
        trained
            .plan
            .regions
            .iter()
            .map(|r| (&r.layers, &r.owner))
            .collect::<Vec<_>>(),
        frozen
            .plan
            .regions
            .iter()
            .map(|r| (&r.layers, &r.owner))
            .collect::<Vec<_>>()
    );
    for rank in 0..p {
        assert_eq!(forward_order(&trained, rank), forward_order(&frozen, rank));
    }

    // The difference is exactly: Bwd(enc, owner(m), m) and Coll(Scatter, (1,2), m) for every m,
    // and DpReduce(enc, r, ReplicaGroup) on every rank.
    let (a, b) = (events(&trained), events(&frozen));
    let mut deleted: HashMap<String, usize> = HashMap::new();
    for (k, &n) in &a {
        let left = n - b.get(k).copied().unwrap_or(0);
        if left > 0 {
            deleted.insert(k.clone(), left);
        }
    }
    assert!(
        b.iter().all(|(k, n)| a.get(k) >= Some(n)),
        "freezing added events"
    );
    let mut expected = HashMap::new();
    for mb in 0..m {
        let owner = mb % p;
        expected.insert(
            format!(
                "{:?}",
                Event::Bwd {
                    region: RegionId::new(1),
                    rank: Rank::new(owner),
                    mb: Mb::new(mb),
                    stage: Stage::new(owner),
                    half: mpipe::vocab::phase::Half::Whole,
                }
            ),
            1,
        );
        expected.insert(
            format!(
                "{:?}",
                Event::Coll {
                    comm: Comm::Scatter,
                    seam: mpipe::vocab::comm::Seam {
                        from: RegionId::new(1),
                        to: RegionId::new(2)
                    },
                    mb: Mb::new(mb),
                    from_rank: Rank::new(0),
                    to_rank: Rank::new(owner)
                }
            ),
            1,
        );
    }
    for rank in 0..p {
        expected.insert(
            format!(
                "{:?}",
                Event::DpReduce {
                    region: RegionId::new(1),
                    rank: Rank::new(rank),
                    group: mpipe::vocab::comm::Group::ReplicaGroup
                }
            ),
            1,
        );
    }
    assert_eq!(deleted, expected);

    assert_eq!(trained.collectives.seams[0].backward, Some(Comm::Scatter));
    assert_eq!(frozen.collectives.seams[0].backward, None);
    assert_eq!(trained.collectives.reduces.len(), 2);
    assert_eq!(frozen.collectives.reduces.len(), 1);
}

/// Which Bwd events exist per region, per microbatch.
fn backward_regions(d: &Derivation) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = d
        .order
        .graph
        .node_weights()
        .filter_map(|e| match *e {
            Event::Bwd { region, mb, .. } => Some((region.index(), mb.index())),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn gates_follow_trainability_for_every_mask_of_three_regions() {
    for mask in 0..8u8 {
        let trainable = [mask & 1 != 0, mask & 2 != 0, mask & 4 != 0];
        let layers: Vec<_> = trainable
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let mut l = mpipe::scenario::layer::LayerSpec::timed(
                    &format!("r{i}"),
                    mpipe::vocab::role::Role::Backbone,
                    4,
                    1.0,
                );
                l.trainable = t;
                l
            })
            .collect();
        for schedule in [
            [ONE_F_ONE_B, ONE_F_ONE_B, ONE_F_ONE_B],
            [TRANSPOSE, ONE_F_ONE_B, TRANSPOSE],
            [GPIPE, TRANSPOSE, GPIPE],
        ] {
            let d = mpipe::derive(&scenario(layers.clone(), &[4, 8], &schedule, 2, 4)).unwrap();
            let g = gates(&trainable);
            let with_bwd: Vec<usize> = backward_regions(&d).iter().map(|&(r, _)| r).collect();
            for j in 1..=3 {
                let runs = trainable[..j].iter().any(|&t| t);
                assert_eq!(g[j - 1].runs_backward, runs);
                assert_eq!(
                    with_bwd.contains(&j),
                    runs,
                    "mask {mask:03b} {schedule:?} region {j}"
                );
                let reduces = d.collectives.reduces.iter().any(|r| r.region == j);
                assert_eq!(reduces, trainable[j - 1]);
            }
            for (k, seam) in d.collectives.seams.iter().enumerate() {
                let sends = trainable[..=k].iter().any(|&t| t);
                assert_eq!(seam.backward.is_some(), sends, "mask {mask:03b} seam {k}");
            }
        }
    }
}

#[test]
fn encoder_backward_footprint_is_the_same_transposed_or_pipelined() {
    for trainable in [true, false] {
        let footprint = |skeleton: Skeleton| {
            let d = mpipe::derive(&scenario(
                vit_llm(4, 8, trainable),
                &[4],
                &[skeleton, ONE_F_ONE_B],
                4,
                8,
            ))
            .unwrap();
            let mbs_with_encoder_bwd: Vec<usize> = backward_regions(&d)
                .iter()
                .filter(|&&(r, _)| r == 1)
                .map(|&(_, m)| m)
                .collect();
            (
                mbs_with_encoder_bwd,
                d.collectives.seams[0].backward.is_some(),
                d.collectives.reduces.iter().any(|r| r.region == 1),
            )
        };
        let transposed = footprint(TRANSPOSE);
        assert_eq!(transposed, footprint(ONE_F_ONE_B));
        assert_eq!(transposed.1, trainable);
        assert_eq!(transposed.0.len(), if trainable { 8 } else { 0 });
    }
}

#[test]
fn a_frozen_prefix_runs_no_backward_but_passes_gradients_through_frozen_middles() {
    // Region 1 trainable, region 2 frozen, region 3 trainable: region 2 still runs backward
    // (it passes the gradient to region 1) but reduces nothing.
    let mut layers = Vec::new();
    for (name, t) in [("a", true), ("b", false), ("c", true)] {
        let mut l = mpipe::scenario::layer::LayerSpec::timed(
            name,
            mpipe::vocab::role::Role::Backbone,
            4,
            1.0,
        );
        l.trainable = t;
        layers.push(l);
    }
    let d = mpipe::derive(&scenario(
        layers,
        &[4, 8],
        &[ONE_F_ONE_B, ONE_F_ONE_B, ONE_F_ONE_B],
        4,
        8,
    ))
    .unwrap();
    let regions: Vec<usize> = d.collectives.reduces.iter().map(|r| r.region).collect();
    assert_eq!(regions, [1, 3]);
    assert_eq!(backward_regions(&d).len(), 3 * 8);
}
