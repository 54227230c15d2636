//! Per-rank order of one Sharded wavefront: a maximal run of adjacent Sharded regions woven over
//! `v` virtual stages (chunks) per rank. These are the orders PyTorch's `ScheduleGPipe`,
//! `Schedule1F1B` and `ScheduleInterleaved1F1B` execute.

use crate::graph::event::Phase;

/// One compute slot of a rank: chunk `c` (the run's `c`-th region), forward or backward, microbatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub chunk: usize,
    pub phase: Phase,
    pub mb: usize,
}

fn fwd(chunk: usize, mb: usize) -> Slot {
    Slot {
        chunk,
        phase: Phase::Forward,
        mb,
    }
}

fn bwd(chunk: usize, mb: usize) -> Slot {
    Slot {
        chunk,
        phase: Phase::Backward,
        mb,
    }
}

/// GPipe: all forwards (microbatch-major, chunks in order), then all backwards (microbatch-major,
/// chunks in reverse). With one chunk this is `ScheduleGPipe`: `F0..F(M−1)`, `B0..B(M−1)`.
pub fn gpipe(microbatches: usize, chunks: usize) -> Vec<Slot> {
    let forwards = (0..microbatches).flat_map(|m| (0..chunks).map(move |c| fwd(c, m)));
    let backwards = (0..microbatches).flat_map(|m| (0..chunks).rev().map(move |c| bwd(c, m)));
    forwards.chain(backwards).collect()
}

/// 1F1B with one chunk per rank: `min(P−1−r, M)` warmup forwards, then one forward / one backward
/// until the forwards run out, then the remaining backwards. Equal to Megatron-LM's order and to
/// what PyTorch's `Schedule1F1B` executes (its warmup loop counts `P−r` forwards and then runs
/// backward-first, which is the same sequence); defined for `M < P` too.
pub fn one_f_one_b(ranks: usize, microbatches: usize, rank: usize) -> Vec<Slot> {
    let warmup = (ranks.saturating_sub(1 + rank)).min(microbatches);
    let mut slots: Vec<Slot> = (0..warmup).map(|m| fwd(0, m)).collect();
    let mut next_bwd = 0;
    for m in warmup..microbatches {
        slots.push(fwd(0, m));
        slots.push(bwd(0, next_bwd));
        next_bwd += 1;
    }
    slots.extend((next_bwd..microbatches).map(|m| bwd(0, m)));
    slots
}

/// Interleaved 1F1B with `v = chunks > 1`, as PyTorch's `ScheduleInterleaved1F1B` computes it:
/// microbatches go in rounds of `R = M / max(1, ⌊M/P⌋)` per chunk; rank `r` runs
/// `min((v−1)·R + 2·(P−1−r), v·M)` warmup forwards, then one forward / one backward, then the
/// drain. Forward step `s` runs chunk `⌊s/R⌋ mod v`; backward step `s` runs chunk
/// `v − 1 − ⌊(s − warmup)/R⌋ mod v`. `M` must be a multiple of the rounds (checked by validity).
pub fn interleaved(ranks: usize, microbatches: usize, chunks: usize, rank: usize) -> Vec<Slot> {
    let rounds = (microbatches / ranks.max(1)).max(1);
    let per_round = (microbatches / rounds).max(1);
    let total = chunks * microbatches;
    let warmup =
        (chunks.saturating_sub(1) * per_round + 2 * ranks.saturating_sub(1 + rank)).min(total);
    let mut next_fwd = vec![0usize; chunks];
    let mut next_bwd = vec![0usize; chunks];
    let take = |counters: &mut Vec<usize>, chunk: usize| {
        let slot = counters.get_mut(chunk).map_or(0, |n| {
            *n += 1;
            *n - 1
        });
        (chunk, slot)
    };
    let fwd_chunk = |step: usize| (step / per_round) % chunks;
    let bwd_chunk = |step: usize| chunks - 1 - ((step - warmup) / per_round) % chunks;
    let mut slots = Vec::with_capacity(2 * total);
    for step in 0..total + warmup {
        if step < total {
            let (c, m) = take(&mut next_fwd, fwd_chunk(step));
            slots.push(fwd(c, m));
        }
        if step >= warmup {
            let (c, m) = take(&mut next_bwd, bwd_chunk(step));
            slots.push(bwd(c, m));
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(slots: &[Slot]) -> String {
        slots
            .iter()
            .map(|s| format!("{}{}{}", s.chunk, s.phase.letter(), s.mb))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_f_one_b_small() {
        // P = 2, M = 3: rank 0 warms up with one forward.
        assert_eq!(show(&one_f_one_b(2, 3, 0)), "0F0 0F1 0B0 0F2 0B1 0B2");
        assert_eq!(show(&one_f_one_b(2, 3, 1)), "0F0 0B0 0F1 0B1 0F2 0B2");
        // M < P: rank 0 of 4 with M = 2 runs every forward first.
        assert_eq!(show(&one_f_one_b(4, 2, 0)), "0F0 0F1 0B0 0B1");
    }

    #[test]
    fn gpipe_with_two_chunks() {
        assert_eq!(show(&gpipe(2, 2)), "0F0 1F0 0F1 1F1 1B0 0B0 1B1 0B1");
    }
}
