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
//!
//! Over `v ≥ 2` Sharded regions (⟨zb1p × v⟩) it is PyTorch's `ScheduleInterleavedZeroBubble`:
//! interleaved 1F1B's rounds and chunk rotation with one warmup forward per hop (not two), each
//! backward's input half in the steady state, and, from the `r`-th steady step of rank `r` on,
//! one weight half after each input half, oldest first; the rest close the step.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::one_f_one_b::{ONE_F_ONE_B, interleaved_rounds};
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::schedules::slot::{Rotation, Slot, take};
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;

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
        "ZB-H1 of the zero-bubble paper (Qi et al., ICLR 2024); v ≥ 2: PyTorch `ScheduleInterleavedZeroBubble`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn interleaves(&self) -> bool {
        true
    }

    /// Zero bubble bounds the activations a rank holds and defers the weight halves into the
    /// bubble: what the list-scheduled order does.
    fn lists_over_any_placement(&self) -> bool {
        true
    }

    fn splits_backward_of(&self) -> Option<Skeleton> {
        Some(ONE_F_ONE_B)
    }

    /// ZB-H1 with `M ≥ P`, the backward's halves equal (`t_I = t_W = t_B/2`): each rank works
    /// `vM·(t_F + t_B)` and idles `(P − 1)·max(t_F, t_I)` — the paper's `(P − 1)·(t_F + t_I −
    /// t_W) = (P − 1)·t_F` where the input half is no longer than the forward (the deferred `W`s
    /// fill the rest of 1F1B's bubble), and where it is longer the first input halves' wait on
    /// each other down the pipeline, `(P − 1)·t_I`; over `v` chunks (PyTorch's interleaved zero
    /// bubble) the same in one chunk's stage costs. Rank 0 holds `(v − 1)·R + P` stages'
    /// activations, `R = M/⌊M/P⌋` (1F1B's `P` with one chunk).
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        if ctx.microbatches < ctx.ranks {
            return None;
        }
        let lead = costs.forward_s.max(costs.backward_s / 2.0);
        let rounds = if ctx.chunks > 1 {
            interleaved_rounds("interleaved zero bubble", ctx.ranks, ctx.microbatches).ok()?
        } else {
            1
        };
        let r = ctx.microbatches / rounds.max(1);
        let (p, m, v) = (
            ctx.ranks as f64,
            ctx.microbatches as f64,
            ctx.chunks as f64,
        );
        let step_s = v * m * (costs.forward_s + costs.backward_s) + (p - 1.0) * lead;
        Some(Formula {
            step: "vM·(t_F + t_B) + (P − 1)·max(t_F, t_I), t_I = t_W = t_B/2, t of one chunk's stage, M ≥ P",
            step_s,
            bubble: "(P − 1)·max(t_F, t_I) / step",
            bubble_fraction: if step_s > 0.0 {
                (p - 1.0) * lead / step_s
            } else {
                0.0
            },
            memory: Some("((v − 1)·R + P)·A, R = M/⌊M/P⌋, A of one chunk's stage"),
            peak_activations: Some(((ctx.chunks - 1) * r + ctx.ranks) as f64),
        })
    }

    /// Interleaved zero bubble runs microbatches in rounds, as interleaved 1F1B does.
    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        if ctx.chunks > 1 {
            interleaved_rounds("interleaved zero bubble", ctx.ranks, ctx.microbatches)?;
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        if ctx.chunks > 1 {
            interleaved(ctx.ranks, ctx.microbatches, ctx.chunks, position)
        } else {
            zb_h1(ctx.ranks, ctx.microbatches, position)
        }
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

/// Interleaved zero bubble over `v = chunks ≥ 2`, as `ScheduleInterleavedZeroBubble` computes
/// it: rounds of `R = M / max(1, ⌊M/P⌋)` microbatches; rank `r` runs `min((v−1)·R + (P−1−r),
/// v·M)` warmup forwards, then per step a forward (while any remain) and an input half; from
/// steady step `r` on, each input half is followed by the oldest pending weight half. Forward
/// step `s` runs chunk `⌊s/R⌋ mod v`, backward step `s` chunk `v − 1 − ⌊(s − warmup)/R⌋ mod v`.
pub fn interleaved(ranks: usize, microbatches: usize, chunks: usize, position: usize) -> Vec<Slot> {
    let ctx = RunCtx {
        ranks,
        microbatches,
        chunks,
        wave_k: None,
        activation_limit: None,
    };
    let r = Rotation::new(&ctx, position, 1);
    // Next microbatch per chunk of the forwards, the input halves and the weight halves.
    let (mut next_f, mut next_i, mut next_w) = (
        vec![0usize; chunks],
        vec![0usize; chunks],
        vec![0usize; chunks],
    );
    let mut slots = Vec::with_capacity(3 * r.total);
    let mut backward_steps = Vec::with_capacity(r.total);
    let mut weights = 0;
    for step in 0..r.total + r.warmup {
        if step < r.total {
            let c = r.forward_chunk(step);
            slots.push(Slot::forward(c, take(&mut next_f, c)));
        }
        if step < r.warmup {
            continue;
        }
        let c = r.backward_chunk(step);
        slots.push(Slot::input(c, take(&mut next_i, c)));
        backward_steps.push(step);
        if step - r.warmup >= position
            && let Some(&oldest) = backward_steps.get(weights)
        {
            let c = r.backward_chunk(oldest);
            slots.push(Slot::weight(c, take(&mut next_w, c)));
            weights += 1;
        }
    }
    for &step in backward_steps.iter().skip(weights) {
        let c = r.backward_chunk(step);
        slots.push(Slot::weight(c, take(&mut next_w, c)));
    }
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

    #[test]
    fn interleaved_by_hand() {
        // PyTorch's order for P = 2, M = 4, v = 2 (chunk c of rank r is stage r + 2c).
        assert_eq!(
            show(&interleaved(2, 4, 2, 0)),
            "0F0 0F1 1F0 1F1 1I0 1W0 0F2 1I1 1W1 0F3 0I0 0W0 1F2 0I1 0W1 1F3 1I2 1W2 1I3 1W3 0I2 0W2 0I3 0W3"
        );
        assert_eq!(
            show(&interleaved(2, 4, 2, 1)),
            "0F0 0F1 1F0 1I0 1F1 1I1 1W0 0F2 0I0 1W1 0F3 0I1 0W0 1F2 1I2 0W1 1F3 1I3 1W2 0I2 1W3 0I3 0W2 0W3"
        );
    }
}
