//! The derived per-rank orders equal what PyTorch's pipelining schedules execute.
//!
//! The reference orders below are written from the published algorithms, in their own shape
//! (PyTorch's executor loops and its slot-based `_get_1f1b_rank_ops` with its no-op padding), not
//! from our implementation; hand-written tables pin small cases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::schedules::skeleton::Skeleton;

/// A model of `P·v` one-layer stages cut into `v` regions of the given skeleton.
fn scenario(
    skeleton: Skeleton,
    ranks: usize,
    microbatches: usize,
    chunks: usize,
) -> mpipe::Scenario {
    let cut: Vec<usize> = (1..chunks).map(|c| c * ranks).collect();
    common::scenario(
        common::uniform(ranks * chunks),
        &cut,
        &vec![skeleton; chunks],
        ranks,
        microbatches,
    )
}

/// Rank orders as PyTorch prints them: every compute slot, an overlapped pair as one.
fn derived(skeleton: Skeleton, p: usize, m: usize, v: usize) -> Vec<Vec<String>> {
    let d = mpipe::derive(&scenario(skeleton, p, m, v))
        .unwrap_or_else(|e| panic!("{skeleton} P={p} M={m} v={v}: {e}"));
    (0..p)
        .map(|r| d.order.steps(r).iter().map(|s| s.to_string()).collect())
        .collect()
}

/// `ScheduleGPipe._step_microbatches`: forward every microbatch, then backward every microbatch.
fn pytorch_gpipe(p: usize, m: usize) -> Vec<Vec<String>> {
    (0..p)
        .map(|stage| {
            let mut ops: Vec<String> = (0..m).map(|i| format!("{stage}F{i}")).collect();
            ops.extend((0..m).map(|i| format!("{stage}B{i}")));
            ops
        })
        .collect()
}

/// `Schedule1F1B._step_microbatches`: `min(M, P − stage)` warmup forwards, then the `1B1F` loop
/// (backward first, break once every forward ran), then the cooldown backwards.
fn pytorch_1f1b(p: usize, m: usize) -> Vec<Vec<String>> {
    (0..p)
        .map(|stage| {
            let warmup_chunks = m.min(p - stage);
            let mut ops = Vec::new();
            let (mut fwd, mut bwd) = (0, 0);
            for _ in 0..warmup_chunks {
                ops.push(format!("{stage}F{fwd}"));
                fwd += 1;
            }
            loop {
                ops.push(format!("{stage}B{bwd}"));
                bwd += 1;
                if fwd == m {
                    break;
                }
                ops.push(format!("{stage}F{fwd}"));
                fwd += 1;
            }
            while bwd < m {
                ops.push(format!("{stage}B{bwd}"));
                bwd += 1;
            }
            ops
        })
        .collect()
}

/// `ScheduleInterleaved1F1B._calculate_single_rank_operations` with `_get_1f1b_rank_ops`
/// (no-op slots kept as `None`, then dropped, as the runtime skips them).
fn pytorch_interleaved(p: usize, m: usize, v: usize) -> Vec<Vec<String>> {
    let number_of_rounds = (m / p).max(1);
    let microbatches_per_round = m / number_of_rounds;
    (0..p)
        .map(|rank| {
            let warmup_ops_last_stage = (v - 1) * microbatches_per_round;
            let warmup_ops = (warmup_ops_last_stage + 2 * ((p - 1) - rank)).min(m * v);
            let microbatch_ops = v * m;
            let fwd_bwd_ops = microbatch_ops - warmup_ops;
            let cooldown_ops = microbatch_ops - fwd_bwd_ops;
            let total_ops = warmup_ops + fwd_bwd_ops + cooldown_ops;
            let forward_stage_index =
                |step: usize| ((step / microbatches_per_round) % v) * p + rank;
            let backward_stage_index = |step: usize| {
                (v - 1 - ((step - warmup_ops) / microbatches_per_round) % v) * p + rank
            };
            let mut fwd_mb = std::collections::HashMap::<usize, usize>::new();
            let mut bwd_mb = std::collections::HashMap::<usize, usize>::new();
            let mut rank_ops: Vec<Option<String>> = vec![None; rank];
            let post_warmup_ops = (v * p + 2 * (p - 1 - rank)).saturating_sub(warmup_ops + rank);
            for op in 0..total_ops {
                if op < warmup_ops {
                    let s = forward_stage_index(op);
                    let mb = *fwd_mb.entry(s).or_default();
                    fwd_mb.insert(s, mb + 1);
                    rank_ops.push(Some(format!("{s}F{mb}")));
                    if op == warmup_ops - 1 {
                        rank_ops.extend(std::iter::repeat_n(None, post_warmup_ops));
                    }
                } else if op < warmup_ops + fwd_bwd_ops {
                    let s = forward_stage_index(op);
                    let mb = *fwd_mb.entry(s).or_default();
                    fwd_mb.insert(s, mb + 1);
                    rank_ops.push(Some(format!("{s}F{mb}")));
                    let s = backward_stage_index(op);
                    let mb = *bwd_mb.entry(s).or_default();
                    bwd_mb.insert(s, mb + 1);
                    rank_ops.push(Some(format!("{s}B{mb}")));
                } else {
                    rank_ops.push(None);
                    let s = backward_stage_index(op);
                    let mb = *bwd_mb.entry(s).or_default();
                    bwd_mb.insert(s, mb + 1);
                    rank_ops.push(Some(format!("{s}B{mb}")));
                }
            }
            rank_ops.into_iter().flatten().collect()
        })
        .collect()
}

fn table(rows: &[&str]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn one_f_one_b_four_ranks_eight_microbatches_by_hand() {
    assert_eq!(
        derived(mpipe::schedules::ONE_F_ONE_B, 4, 8, 1),
        table(&[
            "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7",
            "1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1F6 1B4 1F7 1B5 1B6 1B7",
            "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2F6 2B5 2F7 2B6 2B7",
            "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7",
        ])
    );
}

#[test]
fn one_f_one_b_with_fewer_microbatches_than_ranks_by_hand() {
    // M < P: ranks far from the loss run every forward first.
    assert_eq!(
        derived(mpipe::schedules::ONE_F_ONE_B, 4, 2, 1),
        table(&[
            "0F0 0F1 0B0 0B1",
            "1F0 1F1 1B0 1B1",
            "2F0 2F1 2B0 2B1",
            "3F0 3B0 3F1 3B1"
        ])
    );
}

#[test]
fn interleaved_two_ranks_four_microbatches_two_chunks_by_hand() {
    assert_eq!(
        derived(mpipe::schedules::ONE_F_ONE_B, 2, 4, 2),
        table(&[
            "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3",
            "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3",
        ])
    );
}

#[test]
fn gpipe_two_chunks_is_microbatch_major_by_hand() {
    assert_eq!(
        derived(mpipe::schedules::GPIPE, 2, 2, 2),
        table(&[
            "0F0 2F0 0F1 2F1 2B0 0B0 2B1 0B1",
            "1F0 3F0 1F1 3F1 3B0 1B0 3B1 1B1"
        ])
    );
}

#[test]
fn gpipe_equals_schedule_gpipe_over_a_grid() {
    for p in 1..=8 {
        for m in 1..=16 {
            assert_eq!(
                derived(mpipe::schedules::GPIPE, p, m, 1),
                pytorch_gpipe(p, m),
                "P={p} M={m}"
            );
        }
    }
}

#[test]
fn one_f_one_b_equals_schedule_1f1b_over_a_grid() {
    for p in 1..=8 {
        for m in 1..=20 {
            assert_eq!(
                derived(mpipe::schedules::ONE_F_ONE_B, p, m, 1),
                pytorch_1f1b(p, m),
                "P={p} M={m}"
            );
        }
    }
}

#[test]
fn interleaved_equals_schedule_interleaved_1f1b_over_a_grid() {
    let mut checked = 0;
    for p in 1..=6 {
        for v in 2..=4 {
            for m in 1..=24 {
                let rounds = (m / p).max(1);
                if m % rounds != 0 {
                    // PyTorch rejects these; so do we, naming the rule (see validity tests).
                    let err = mpipe::derive(&scenario(mpipe::schedules::ONE_F_ONE_B, p, m, v))
                        .unwrap_err();
                    assert_eq!(err.rule(), "interleaved-rounds", "P={p} M={m} v={v}");
                    continue;
                }
                assert_eq!(
                    derived(mpipe::schedules::ONE_F_ONE_B, p, m, v),
                    pytorch_interleaved(p, m, v),
                    "P={p} M={m} v={v}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 294, "the grid shrank");
}

#[test]
fn stage_index_is_rank_plus_region_times_p() {
    let d = mpipe::derive(&scenario(mpipe::schedules::ONE_F_ONE_B, 4, 8, 3)).unwrap();
    for rank in 0..4 {
        let mut stages: Vec<usize> = d
            .order
            .actions(rank)
            .iter()
            .map(|a| a.stage.index())
            .collect();
        stages.sort_unstable();
        stages.dedup();
        assert_eq!(stages, [rank, rank + 4, rank + 8]);
    }
}

/// One recorded case of `tests/fixtures/pytorch_orders/orders.txt.gz` (written by PyTorch's own
/// `get_schedule_ops`; see `generate.py` beside it).
struct Recorded {
    schedule: String,
    p: usize,
    m: usize,
    v: usize,
    /// Per-rank actions, or why PyTorch refused the case.
    orders: Result<Vec<Vec<String>>, String>,
}

fn recorded() -> Vec<Recorded> {
    use std::io::Read;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/pytorch_orders/orders.txt.gz"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let mut parts = line.splitn(6, ' ');
            let mut next = || parts.next().unwrap().to_string();
            let (schedule, p, m, v, outcome) = (next(), next(), next(), next(), next());
            let rest = parts.next().unwrap_or_default().to_string();
            let orders = match outcome.as_str() {
                "ok" => Ok(rest
                    .split('|')
                    .map(|r| r.split_whitespace().map(str::to_string).collect())
                    .collect()),
                "refused" => Err(rest),
                other => panic!("bad fixture line: {other}"),
            };
            Recorded {
                schedule,
                p: p.parse().unwrap(),
                m: m.parse().unwrap(),
                v: v.parse().unwrap(),
                orders,
            }
        })
        .collect()
}

/// Every recorded (P, M, v) of one PyTorch schedule: where PyTorch builds the schedule, the
/// derived per-rank orders are PyTorch's; where it refuses, derive refuses with the named rule.
fn equals_recorded(pytorch: &str, skeleton: Skeleton, refusal_rule: &str) -> usize {
    let mut checked = 0;
    for case in recorded().iter().filter(|c| c.schedule == pytorch) {
        let (p, m, v) = (case.p, case.m, case.v);
        match &case.orders {
            Ok(want) => {
                assert_eq!(
                    &derived(skeleton, p, m, v),
                    want,
                    "{pytorch} P={p} M={m} v={v}"
                );
                checked += 1;
            }
            Err(why) => {
                let err = mpipe::derive(&scenario(skeleton, p, m, v))
                    .expect_err(&format!("{pytorch} refuses P={p} M={m} v={v}: {why}"));
                assert_eq!(err.rule(), refusal_rule, "P={p} M={m} v={v}: {err}");
            }
        }
    }
    checked
}

#[test]
fn zb1p_over_several_chunks_equals_schedule_interleaved_zero_bubble() {
    assert_eq!(
        equals_recorded(
            "InterleavedZeroBubble",
            mpipe::schedules::ZB1P,
            "interleaved-rounds"
        ),
        318
    );
}

#[test]
fn zbv_equals_schedule_zbv_zero_bubble() {
    assert_eq!(
        equals_recorded("ZBVZeroBubble", mpipe::schedules::ZBV, "-"),
        192
    );
}

#[test]
fn dualpipev_equals_schedule_dualpipev() {
    assert_eq!(
        equals_recorded(
            "DualPipeV",
            mpipe::schedules::DUALPIPEV,
            "dualpipev-microbatches"
        ),
        128
    );
}

#[test]
fn looped_bfs_equals_schedule_looped_bfs() {
    assert_eq!(
        equals_recorded("LoopedBFS", mpipe::schedules::LOOPED_BFS, "-"),
        384
    );
}

#[test]
fn recorded_orders_by_hand() {
    // P = 2, M = 4 from PyTorch 2.15 (tests/fixtures/pytorch_orders), stage indices as PyTorch's.
    assert_eq!(
        derived(mpipe::schedules::ZBV, 2, 4, 2),
        table(&[
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3",
            "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3",
        ])
    );
    assert_eq!(
        derived(mpipe::schedules::DUALPIPEV, 2, 4, 2),
        table(&[
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 (0F3;3B1)OVERLAP_F_B (3F2;0B0)OVERLAP_F_B 3B2 (3F3;0B1)OVERLAP_F_B 3B3 0I2 0W2 0I3 0W3",
            "1F0 2F0 1F1 2F1 1F2 2B0 (2F2;1B0)OVERLAP_F_B (1F3;2B1)OVERLAP_F_B (2F3;1B1)OVERLAP_F_B 2B2 1B2 2I3 1I3 2W3 1W3",
        ])
    );
}
