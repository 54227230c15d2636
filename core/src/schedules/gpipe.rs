//! GPipe: all forwards, then all backwards.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::schedules::slot::Slot;
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

    /// With one chunk: fill and drain, `(M + P − 1)·(t_F + t_B)`, every microbatch's activation
    /// held on the first rank at the turn.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        (ctx.chunks == 1).then(|| holding_every_microbatch(ctx, costs))
    }
}

/// GPipe's formula (also Looped BFS's with one chunk): fill and drain, every microbatch held.
pub(crate) fn holding_every_microbatch(ctx: &RunCtx, costs: Uniform) -> Formula {
    Formula {
        memory: Some("M·A"),
        peak_activations: Some(ctx.microbatches as f64),
        ..fill_drain(ctx, costs)
    }
}

/// Fill and drain over `v` chunks a rank with `M ≥ P` (interleaved 1F1B, Looped BFS): one
/// chunk's stage fills and drains, `(vM + P − 1)·(t_F + t_B)` in a chunk's costs — the bubble of
/// one chunk, `/v` of the whole model's; `None` with `M < P`. The memory is the caller's.
pub(crate) fn chunked_fill_drain(ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
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
        memory: None,
        peak_activations: None,
    })
}

/// A pipeline that fills and drains once per step over `P` stages (GPipe, 1F1B with one chunk):
/// each rank computes `M·(t_F + t_B)` and idles `(P − 1)·(t_F + t_B)`.
pub(crate) fn fill_drain(ctx: &RunCtx, costs: Uniform) -> Formula {
    let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
    Formula {
        step: "(M + P − 1)·(t_F + t_B)",
        step_s: (m + p - 1.0) * (costs.forward_s + costs.backward_s),
        bubble: "(P − 1)/(M + P − 1)",
        bubble_fraction: (p - 1.0) / (m + p - 1.0),
        memory: None,
        peak_activations: None,
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
