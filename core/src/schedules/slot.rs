//! What a schedule's order is made of: a rank's compute slots, and the chunk rotation and
//! counters that PyTorch's interleaved schedules share.

use crate::schedules::RunCtx;
use crate::vocab::ids::{Chunk, Mb};
use crate::vocab::phase::Phase;

/// One compute slot of a rank: chunk `c` (the wavefront's `c`-th region), its phase (`F`, a
/// whole backward `B`, the halves `I`/`W` of a split one, or one of the four phases of a
/// second-order schedule), microbatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub chunk: Chunk,
    pub phase: Phase,
    pub mb: Mb,
    /// This slot and the next one run overlapped, as one compute slot (DualPipeV's
    /// `(F;B)OVERLAP_F_B`: a forward first, then a backward).
    pub overlaps_next: bool,
}

impl Slot {
    fn new(chunk: usize, phase: Phase, mb: usize) -> Slot {
        Slot {
            chunk: Chunk::new(chunk),
            phase,
            mb: Mb::new(mb),
            overlaps_next: false,
        }
    }

    pub fn forward(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Forward, mb)
    }

    /// A whole backward `B`.
    pub fn backward(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Backward, mb)
    }

    /// The input half `I` of a split backward.
    pub fn input(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Input, mb)
    }

    /// The weight half `W` of a split backward.
    pub fn weight(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Weight, mb)
    }

    /// One of the four phases of a second-order schedule.
    pub fn four(phase: Phase, mb: usize) -> Slot {
        Slot::new(0, phase, mb)
    }

    /// This slot, run overlapped with the slot that follows it.
    pub fn overlapped(self) -> Slot {
        Slot {
            overlaps_next: true,
            ..self
        }
    }
}

/// The next microbatch of `chunk` from a per-chunk counter, advancing it (0 for a chunk out of
/// range).
pub(crate) fn take(counters: &mut [usize], chunk: usize) -> usize {
    counters.get_mut(chunk).map_or(0, |n| {
        *n += 1;
        *n - 1
    })
}

/// The chunk rotation of PyTorch's interleaved schedules (`_get_1f1b_rank_ops`): microbatches go
/// in rounds of `R = M / max(1, ⌊M/P⌋)` per chunk; the rank at `position` runs
/// `min((v−1)·R + hop·(P−1−position), v·M)` warmup forwards (`hop` = 2 for 1F1B, 1 for zero
/// bubble); forward step `s` runs chunk `⌊s/R⌋ mod v`, backward step `s` chunk
/// `v − 1 − ⌊(s − warmup)/R⌋ mod v`.
pub(crate) struct Rotation {
    pub(crate) chunks: usize,
    per_round: usize,
    /// Forwards of every chunk: `v·M`.
    pub(crate) total: usize,
    pub(crate) warmup: usize,
}

impl Rotation {
    pub(crate) fn new(ctx: &RunCtx, position: usize, hop: usize) -> Rotation {
        let (p, m, v) = (ctx.ranks, ctx.microbatches, ctx.chunks);
        let rounds = (m / p.max(1)).max(1);
        let per_round = (m / rounds).max(1);
        let total = v * m;
        let warmup =
            (v.saturating_sub(1) * per_round + hop * p.saturating_sub(1 + position)).min(total);
        Rotation {
            chunks: v,
            per_round,
            total,
            warmup,
        }
    }

    pub(crate) fn forward_chunk(&self, step: usize) -> usize {
        (step / self.per_round) % self.chunks
    }

    /// For a step at or after the warmup.
    pub(crate) fn backward_chunk(&self, step: usize) -> usize {
        self.chunks - 1 - ((step - self.warmup) / self.per_round) % self.chunks
    }
}
