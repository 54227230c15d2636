//! `zb1p` with one Sharded region: ZB-H1 of the zero-bubble paper (Qi et al., "Zero Bubble
//! Pipeline Parallelism", ICLR 2024). The backward is split into its input half `I`, which the
//! previous stage waits for, and its weight half `W`, which nobody waits for; `W` is deferred into
//! what would be the bubble. With `t_F = t_I = t_W` and uniform stages, the step takes
//! `(3M + P − 1)·t` against 1F1B's `3(M + P − 1)·t` (for `M ≥ P`).
//!
//! Rank `r` (its position along the pipeline) runs `min(P − r, M)` warmup forwards, then for each
//! microbatch `k` in turn: `I(k)`, then — while forwards remain — the oldest pending `W` when
//! `P` microbatches already hold activations (forwards minus finished weight halves), then the
//! next forward; once the forwards are done, the oldest pending `W`; the remaining `W`s close
//! the step. So at most `P − r` microbatches wait for their input half (1F1B's bound) and at
//! most `P` for their weight half.

use crate::algebra::skeleton::{Layout, Skeleton};
use crate::algebra::validity::ValidityError;
use crate::schedules::{OpSet, RunCtx, Schedule, Slot};

/// `zb1p`.
#[derive(Debug)]
pub struct Zb1p;

pub const ZB1P: Skeleton = Skeleton::of(&Zb1p);

impl Schedule for Zb1p {
    fn name(&self) -> &'static str {
        "zb1p"
    }

    fn summary(&self) -> &'static str {
        "zero bubble (ZB-H1): the backward split into I and W, the W's deferred into the bubble; 1F1B's memory for the input half"
    }

    fn reference(&self) -> &'static str {
        "ZB-H1 of the zero-bubble paper (Qi et al., ICLR 2024); v ≥ 2 (PyTorch `ScheduleInterleavedZeroBubble`) is not implemented yet"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ValidityError> {
        if ctx.chunks > 1 {
            return Err(ValidityError::Chunks {
                rule: "zb1p-chunks",
                skeleton: "zb1p",
                chunks: ctx.chunks,
                what: "PyTorch's ScheduleInterleavedZeroBubble",
            });
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        zb_h1(ctx.ranks, ctx.microbatches, position)
    }
}

/// ZB-H1's slots of the rank at `position` of `ranks`, for `microbatches` microbatches.
pub fn zb_h1(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let (p, m) = (ranks, microbatches);
    let mut slots = Vec::with_capacity(3 * m);
    let (mut forwards, mut weights) = (0, 0);
    while forwards < p.saturating_sub(position).min(m) {
        slots.push(Slot::forward(0, forwards));
        forwards += 1;
    }
    for k in 0..m {
        slots.push(Slot::input(0, k));
        if forwards < m {
            if forwards - weights >= p {
                slots.push(Slot::weight(0, weights));
                weights += 1;
            }
            slots.push(Slot::forward(0, forwards));
            forwards += 1;
        } else if weights < k + 1 {
            slots.push(Slot::weight(0, weights));
            weights += 1;
        }
    }
    slots.extend((weights..m).map(|w| Slot::weight(0, w)));
    slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn zb_h1_by_hand() {
        // P = 4, M = 5: the orders a search over all unit-time schedules finds optimal.
        let want = [
            "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4",
            "0F0 0F1 0F2 0I0 0F3 0I1 0W0 0F4 0I2 0W1 0I3 0W2 0I4 0W3 0W4",
            "0F0 0F1 0I0 0F2 0I1 0F3 0I2 0W0 0F4 0I3 0W1 0I4 0W2 0W3 0W4",
            "0F0 0I0 0F1 0I1 0F2 0I2 0F3 0I3 0W0 0F4 0I4 0W1 0W2 0W3 0W4",
        ];
        for (r, want) in want.iter().enumerate() {
            assert_eq!(show(&zb_h1(4, 5, r)), *want, "rank {r}");
        }
    }
}
