//! GPipe: all forwards, then all backwards.

use crate::algebra::skeleton::Skeleton;
use crate::schedules::{RunCtx, Schedule, Slot};
use crate::vocab::layout::Layout;

/// `gpipe`.
#[derive(Debug)]
pub struct GPipe;

pub const GPIPE: Skeleton = Skeleton::of(&GPipe);

impl Schedule for GPipe {
    fn name(&self) -> &'static str {
        "gpipe"
    }

    fn summary(&self) -> &'static str {
        "every forward, then every backward: simple, the most activation memory"
    }

    fn reference(&self) -> &'static str {
        "PyTorch `ScheduleGPipe` (Huang et al., GPipe, 2019)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn rank_slots(&self, ctx: &RunCtx, _rank: usize) -> Vec<Slot> {
        slots(ctx.microbatches, ctx.chunks)
    }
}

/// All forwards (microbatch-major, chunks in order), then all backwards (microbatch-major,
/// chunks in reverse). With one chunk this is `ScheduleGPipe`: `F0..F(M−1)`, `B0..B(M−1)`.
pub fn slots(microbatches: usize, chunks: usize) -> Vec<Slot> {
    let forwards = (0..microbatches).flat_map(|m| (0..chunks).map(move |c| Slot::forward(c, m)));
    let backwards =
        (0..microbatches).flat_map(|m| (0..chunks).rev().map(move |c| Slot::backward(c, m)));
    forwards.chain(backwards).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn gpipe_with_two_chunks() {
        assert_eq!(show(&slots(2, 2)), "0F0 1F0 0F1 1F1 1B0 0B0 1B1 0B1");
    }
}
