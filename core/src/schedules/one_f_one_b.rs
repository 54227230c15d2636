//! 1F1B: with one chunk per rank, Megatron-LM's and PyTorch's `Schedule1F1B`; with `v > 1`
//! chunks (⟨1f1b × v⟩), PyTorch's `ScheduleInterleaved1F1B`.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::schedules::slot::{Rotation, Slot, take};
use crate::vocab::layout::Layout;

/// `1f1b`.
#[derive(Debug)]
pub struct OneFOneB;

pub const ONE_F_ONE_B: Skeleton = Skeleton::of(&OneFOneB);

impl Schedule for OneFOneB {
    fn name(&self) -> &'static str {
        "1f1b"
    }

    fn summary(&self) -> &'static str {
        "warm up, then one forward / one backward: in-flight activations bounded by the depth; several regions interleave (VPP)"
    }

    fn reference(&self) -> &'static str {
        "PyTorch `Schedule1F1B` (v = 1) and `ScheduleInterleaved1F1B` (v > 1); Megatron-LM"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn interleaves(&self) -> bool {
        true
    }

    fn lists_over_any_placement(&self) -> bool {
        true
    }

    /// Interleaved 1F1B runs microbatches in rounds: `M` must be a multiple of them.
    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        if ctx.chunks > 1 {
            interleaved_rounds("interleaved 1F1B", ctx.ranks, ctx.microbatches)?;
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, rank: usize) -> Vec<Slot> {
        if ctx.chunks > 1 {
            interleaved(ctx.ranks, ctx.microbatches, ctx.chunks, rank)
        } else {
            one_chunk(ctx.ranks, ctx.microbatches, rank)
        }
    }

    /// With one chunk: GPipe's step and bubble, with at most `min(P, M)` microbatches in flight
    /// on the first rank (the point of 1F1B). Interleaved over `v` chunks, with `M ≥ P`: the
    /// fill and drain of one chunk's stage, `(vM + P − 1)·(t_F + t_B)` in a chunk's costs — the
    /// bubble of one chunk `/v` of the whole model's (Megatron-LM's interleaved schedule); rank 0
    /// holds its warmup's forwards.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        if ctx.chunks == 1 {
            return Some(Formula {
                memory: Some("min(P, M)·A"),
                peak_activations: Some(ctx.ranks.min(ctx.microbatches) as f64),
                ..crate::schedules::gpipe::fill_drain(ctx, costs)
            });
        }
        let f = crate::schedules::gpipe::chunked_fill_drain(ctx, costs)?;
        let rounds = interleaved_rounds("interleaved 1F1B", ctx.ranks, ctx.microbatches).ok()?;
        // Rank 0 holds its warmup's forwards and the first steady one: `(v − 1)·R + 2(P − 1) + 1`
        // with `R = M / ⌊M/P⌋` microbatches a round, at most every chunk's `vM`.
        let r = ctx.microbatches / rounds;
        let held = ((ctx.chunks - 1) * r + 2 * (ctx.ranks - 1) + 1).min(ctx.chunks * ctx.microbatches);
        Some(Formula {
            memory: Some("min((v − 1)·R + 2(P − 1) + 1, vM)·A, R = M/⌊M/P⌋, A of one chunk's stage"),
            peak_activations: Some(held as f64),
            ..f
        })
    }
}

/// The rounds of an interleaved schedule (1F1B, zero bubble), as PyTorch computes them: `⌊M/P⌋`
/// (at least 1); `M` must be a multiple of them.
pub fn interleaved_rounds(
    schedule: &'static str,
    ranks: usize,
    microbatches: usize,
) -> Result<usize, ScheduleRule> {
    let rounds = (microbatches / ranks.max(1)).max(1);
    if !microbatches.is_multiple_of(rounds) {
        let lower = microbatches / rounds * rounds;
        return Err(ScheduleRule::InterleavedRounds {
            schedule,
            microbatches,
            ranks,
            rounds,
            lower,
            upper: lower + rounds,
        });
    }
    Ok(rounds)
}

/// 1F1B with one chunk per rank: `min(P−1−r, M)` warmup forwards, then one forward / one backward
/// until the forwards run out, then the remaining backwards. Equal to Megatron-LM's order and to
/// what PyTorch's `Schedule1F1B` executes (its warmup loop counts `P−r` forwards and then runs
/// backward-first, which is the same sequence); defined for `M < P` too.
pub fn one_chunk(ranks: usize, microbatches: usize, rank: usize) -> Vec<Slot> {
    let warmup = (ranks.saturating_sub(1 + rank)).min(microbatches);
    let mut slots: Vec<Slot> = (0..warmup).map(|m| Slot::forward(0, m)).collect();
    let mut next_bwd = 0;
    for m in warmup..microbatches {
        slots.push(Slot::forward(0, m));
        slots.push(Slot::backward(0, next_bwd));
        next_bwd += 1;
    }
    slots.extend((next_bwd..microbatches).map(|m| Slot::backward(0, m)));
    slots
}

/// Interleaved 1F1B with `v = chunks > 1`, as PyTorch's `ScheduleInterleaved1F1B` computes it:
/// microbatches go in rounds of `R = M / max(1, ⌊M/P⌋)` per chunk; rank `r` runs
/// `min((v−1)·R + 2·(P−1−r), v·M)` warmup forwards, then one forward / one backward, then the
/// drain. Forward step `s` runs chunk `⌊s/R⌋ mod v`; backward step `s` runs chunk
/// `v − 1 − ⌊(s − warmup)/R⌋ mod v`. `M` must be a multiple of the rounds (checked by validity).
pub fn interleaved(ranks: usize, microbatches: usize, chunks: usize, rank: usize) -> Vec<Slot> {
    let ctx = RunCtx {
        ranks,
        microbatches,
        chunks,
        wave_k: None,
        activation_limit: None,
    };
    let r = Rotation::new(&ctx, rank, 2);
    let (mut next_fwd, mut next_bwd) = (vec![0usize; chunks], vec![0usize; chunks]);
    let mut slots = Vec::with_capacity(2 * r.total);
    for step in 0..r.total + r.warmup {
        if step < r.total {
            let c = r.forward_chunk(step);
            slots.push(Slot::forward(c, take(&mut next_fwd, c)));
        }
        if step >= r.warmup {
            let c = r.backward_chunk(step);
            slots.push(Slot::backward(c, take(&mut next_bwd, c)));
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn one_f_one_b_small() {
        // P = 2, M = 3: rank 0 warms up with one forward.
        assert_eq!(show(&one_chunk(2, 3, 0)), "0F0 0F1 0B0 0F2 0B1 0B2");
        assert_eq!(show(&one_chunk(2, 3, 1)), "0F0 0B0 0F1 0B1 0F2 0B2");
        // M < P: rank 0 of 4 with M = 2 runs every forward first.
        assert_eq!(show(&one_chunk(4, 2, 0)), "0F0 0F1 0B0 0B1");
    }

    #[test]
    fn interleaved_rounds_follow_pytorch() {
        assert_eq!(interleaved_rounds("interleaved 1F1B", 4, 10), Ok(2));
        assert_eq!(interleaved_rounds("interleaved 1F1B", 4, 3), Ok(1));
        assert_eq!(interleaved_rounds("interleaved 1F1B", 4, 8), Ok(2));
        assert_eq!(
            interleaved_rounds("interleaved 1F1B", 4, 9).map_err(|e| e.to_string()),
            Err("rule `interleaved-rounds`: interleaved 1F1B runs microbatches in rounds of M / max(1, ⌊M/P⌋); M = 9 is not a multiple of the 2 rounds that P = 4 gives (try M = 8 or M = 10)".to_string())
        );
    }
}
