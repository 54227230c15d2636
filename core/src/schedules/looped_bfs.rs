//! Looped BFS (breadth-first pipeline parallelism, Lamy-Poirier, arXiv 2211.05953) as PyTorch's
//! `ScheduleLoopedBFS` runs it: over `v` chunks per rank, every forward of chunk 0, then of chunk
//! 1, …; then the backwards chunk by chunk in reverse, each chunk's microbatches last-first. With
//! one chunk (which PyTorch's multi-stage class does not build) it is GPipe with the backwards
//! run last-first.

use crate::schedules::skeleton::Skeleton;
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
            return Some(Formula {
                memory: Some("M·A"),
                peak_activations: Some(ctx.microbatches as f64),
                ..crate::schedules::gpipe::fill_drain(ctx, costs)
            });
        }
        if ctx.microbatches < ctx.ranks {
            return None;
        }
        let (p, m, v) = (
            ctx.ranks as f64,
            ctx.microbatches as f64,
            ctx.chunks as f64,
        );
        Some(Formula {
            step: "(vM + P − 1)·(t_F + t_B), t of one chunk's stage, M ≥ P",
            step_s: (v * m + p - 1.0) * (costs.forward_s + costs.backward_s),
            bubble: "(P − 1)/(vM + P − 1)",
            bubble_fraction: (p - 1.0) / (v * m + p - 1.0),
            memory: Some("vM·A, A of one chunk's stage"),
            peak_activations: Some(v * m),
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
