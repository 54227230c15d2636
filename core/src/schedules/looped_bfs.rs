//! Looped BFS (breadth-first pipeline parallelism, Lamy-Poirier, arXiv 2211.05953) as PyTorch's
//! `ScheduleLoopedBFS` runs it: over `v` chunks per rank, every forward of chunk 0, then of chunk
//! 1, …; then the backwards chunk by chunk in reverse, each chunk's microbatches last-first. With
//! one chunk (which PyTorch's multi-stage class does not build) it is GPipe with the backwards
//! run last-first.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::gpipe::{chunked_fill_drain, holding_every_microbatch};
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
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

    /// With one chunk GPipe's fill and drain, every microbatch held. Over `v` chunks with
    /// `M ≥ P`: interleaved 1F1B's step, `(vM + P − 1)·(t_F + t_B)` in one chunk's stage costs
    /// (a chunk's forwards follow on from the one before without a gap), and GPipe's memory: every
    /// chunk's every microbatch, `vM·A`.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        if ctx.chunks == 1 {
            return Some(holding_every_microbatch(ctx, costs));
        }
        let f = chunked_fill_drain(ctx, costs)?;
        Some(Formula {
            memory: Some("vM·A, A of one chunk's stage"),
            peak_activations: Some((ctx.chunks * ctx.microbatches) as f64),
            ..f
        })
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
