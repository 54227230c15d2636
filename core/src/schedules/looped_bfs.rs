//! Looped BFS (breadth-first pipeline parallelism, Lamy-Poirier, arXiv 2211.05953) as PyTorch's
//! `ScheduleLoopedBFS` runs it: over `v` chunks per rank, every forward of chunk 0, then of chunk
//! 1, …; then the backwards chunk by chunk in reverse, each chunk's microbatches last-first. With
//! one chunk (which PyTorch's multi-stage class does not build) it is GPipe with the backwards
//! run last-first.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::{RunCtx, Schedule};
use crate::schedules::slot::Slot;
use crate::vocab::layout::Layout;

/// `looped_bfs`.
#[derive(Debug)]
pub struct LoopedBfs;

pub const LOOPED_BFS: Skeleton = Skeleton::of(&LoopedBfs);

impl Schedule for LoopedBfs {
    fn name(&self) -> &'static str {
        "looped_bfs"
    }

    fn summary(&self) -> &'static str {
        "breadth first over the chunks: all forwards chunk by chunk, then the backwards in reverse; GPipe's memory, fewer chunk switches"
    }

    fn reference(&self) -> &'static str {
        "PyTorch `ScheduleLoopedBFS` (Lamy-Poirier, Breadth-First Pipeline Parallelism, 2022)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn rank_slots(&self, ctx: &RunCtx, _position: usize) -> Vec<Slot> {
        slots(ctx.microbatches, ctx.chunks)
    }
}

/// Chunk-major forwards, then chunk-major backwards in reverse, each chunk's last-first.
pub fn slots(microbatches: usize, chunks: usize) -> Vec<Slot> {
    let forwards = (0..chunks).flat_map(|c| (0..microbatches).map(move |m| Slot::forward(c, m)));
    let backwards = (0..chunks)
        .rev()
        .flat_map(|c| (0..microbatches).rev().map(move |m| Slot::backward(c, m)));
    forwards.chain(backwards).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn looped_bfs_by_hand() {
        // PyTorch's order for P = 2, M = 3, v = 2 on either rank (stages r and r + 2).
        assert_eq!(
            show(&slots(3, 2)),
            "0F0 0F1 0F2 1F0 1F1 1F2 1B2 1B1 1B0 0B2 0B1 0B0"
        );
    }
}
