//! DualPipeV (DeepSeek-V3's DualPipe folded onto a V, arXiv 2412.19437; the open-source
//! `deepseek-ai/DualPipe`) as PyTorch's `ScheduleDualPipeV` runs it: two chunks per rank on a V
//! (rank `r` holds stages `r` and `2P − 1 − r`); in the steady state a forward of one chunk and a
//! backward of the other run overlapped as one compute slot, `(F;B)OVERLAP_F_B`, so one's
//! compute hides the other's communication; the ends use split backwards (`I` now, `W` into the
//! bubble) and whole ones. Needs `M ≥ 2P`.
//!
//! Rank `r`: `2(P − r − 1)` forwards of chunk 0; `r + 1` pairs of forwards (chunk 0, chunk 1);
//! `P − r − 1` times `I` of chunk 1, a pending `W`, `F` of chunk 1; then `M − 2P + r + 1` steps
//! of two overlapped pairs (F chunk 0 with B chunk 1, F chunk 1 with B chunk 0; the last rank's
//! first step runs its first pair apart); `P − r − 1` times `B` of chunk 1 and a pair (F chunk 1,
//! B chunk 0); `r + 1` backwards of chunk 1 and chunk 0, split (I) from the middle on; `P − r − 1`
//! times a pending `W` and a backward of chunk 0; the pending `W`s last, oldest first.

use crate::vocab::layout::PlacementKind;
use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::zbv::two_chunks;
use crate::schedules::{Formula, RunCtx, Schedule, Uniform, microbatches_at_least};
use crate::schedules::slot::take;
use crate::schedules::slot::Slot;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;
use std::collections::VecDeque;

/// `dualpipev`.
#[derive(Debug)]
pub struct DualPipeV;

pub const DUALPIPEV: Skeleton = Skeleton::of(&DualPipeV);

impl Schedule for DualPipeV {
    fn name(&self) -> &'static str {
        "dualpipev"
    }

    fn summary(&self) -> &'static str {
        "DualPipe on a V: a forward and a backward of the two chunks overlapped as one slot, hiding each other's communication"
    }

    fn reference(&self) -> &'static str {
        "PyTorch `ScheduleDualPipeV` (DeepSeek-V3 DualPipe, arXiv 2412.19437)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::Mixed
    }

    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        two_chunks(
            "dualpipev-chunks",
            "dualpipev",
            ctx,
            "the two arms of the V, as PyTorch's ScheduleDualPipeV",
        )?;
        microbatches_at_least(
            ctx,
            2 * ctx.ranks,
            "dualpipev-microbatches",
            "dualpipev",
            "M ≥ 2P, as PyTorch's ScheduleDualPipeV",
        )
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        slots(ctx.ranks, ctx.microbatches, position)
    }

    /// DualPipe's table, `(PP/2 − 1)·(F&B + B − 3W)`, read with `PP` the V's `2P` stages (read
    /// as ranks it would promise half this bubble, which PyTorch's order does not reach): with
    /// `t_F = t_I = t_W = t` of one chunk's stage (`F&B = 3t`, `B = 2t`) each rank works
    /// `2M·(t_F + t_B)` and idles `2(P − 1)·t`; `2P + 1` of a chunk stage's activations.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        let t = costs.forward_s;
        if self.check(ctx).is_err() || !costs.backward_is(2.0) {
            return None;
        }
        let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
        let step_s = 2.0 * m * (t + costs.backward_s) + 2.0 * (p - 1.0) * t;
        Some(Formula {
            step: "2M·(t_F + t_B) + (PP/2 − 1)·(F&B + B − 3W), PP = 2P stages, F&B = t_F + t_B, t_F = t_I = t_W = t of one chunk's stage: (6M + 2P − 2)·t, M ≥ 2P",
            step_s,
            bubble: "(2P − 2)/(6M + 2P − 2)",
            bubble_fraction: 2.0 * (p - 1.0) / (6.0 * m + 2.0 * p - 2.0),
            memory: Some("(PP + 1)·A = (2P + 1)·A, A of one chunk's stage"),
            peak_activations: Some(2.0 * p + 1.0),
        })
    }
}

/// The slots of one rank, with PyTorch's counters: one forward counter and one backward counter
/// per chunk (a whole `B` and an `I` both advance the backward one), and a queue of the weight
/// halves an `I` left pending.
struct Rank {
    slots: Vec<Slot>,
    forwards: [usize; 2],
    backwards: [usize; 2],
    pending: VecDeque<(usize, usize)>,
}

impl Rank {
    fn forward(&mut self, chunk: usize) -> Slot {
        Slot::forward(chunk, take(&mut self.forwards, chunk))
    }

    fn push_forward(&mut self, chunk: usize) {
        let s = self.forward(chunk);
        self.slots.push(s);
    }

    fn push_backward(&mut self, chunk: usize) {
        let s = Slot::backward(chunk, take(&mut self.backwards, chunk));
        self.slots.push(s);
    }

    fn push_input(&mut self, chunk: usize) {
        let mb = take(&mut self.backwards, chunk);
        self.slots.push(Slot::input(chunk, mb));
        self.pending.push_back((chunk, mb));
    }

    /// A whole backward, or its input half once the schedule splits.
    fn push_backward_or_input(&mut self, chunk: usize, split: bool) {
        if split {
            self.push_input(chunk);
        } else {
            self.push_backward(chunk);
        }
    }

    fn push_pending_weight(&mut self) {
        if let Some((chunk, mb)) = self.pending.pop_front() {
            self.slots.push(Slot::weight(chunk, mb));
        }
    }

    /// A forward of chunk `forward` overlapped with a whole backward of the other chunk.
    fn push_pair(&mut self, forward: usize) {
        let f = self.forward(forward).overlapped();
        self.slots.push(f);
        self.push_backward(1 - forward);
    }
}

/// DualPipeV's slots of the rank at `position` (chunk 0 is stage `position`, chunk 1 stage
/// `2P − 1 − position`); `M ≥ 2P` (checked by validity).
pub fn slots(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let (p, r) = (ranks, position);
    let mut rank = Rank {
        slots: Vec::with_capacity(6 * microbatches),
        forwards: [0; 2],
        backwards: [0; 2],
        pending: VecDeque::new(),
    };
    let before_last = p.saturating_sub(r + 1);
    for _ in 0..2 * before_last {
        rank.push_forward(0);
    }
    for _ in 0..=r {
        rank.push_forward(0);
        rank.push_forward(1);
    }
    for _ in 0..before_last {
        rank.push_input(1);
        rank.push_pending_weight();
        rank.push_forward(1);
    }
    let steady = (microbatches + r + 1).saturating_sub(2 * p);
    for i in 0..steady {
        if i == 0 && r + 1 == p {
            // The last rank runs its first pair apart, to shrink the bubble.
            rank.push_forward(0);
            rank.push_backward(1);
        } else {
            rank.push_pair(0);
        }
        rank.push_pair(1);
    }
    for _ in 0..before_last {
        rank.push_backward(1);
        rank.push_pair(1);
    }
    let ends = r + 1;
    let mut split = false;
    for i in 0..ends {
        if i == ends / 2 && r % 2 == 1 {
            split = true;
        }
        rank.push_backward_or_input(1, split);
        if i == ends / 2 && r % 2 == 0 {
            split = true;
        }
        rank.push_backward_or_input(0, split);
    }
    for _ in 0..before_last {
        rank.push_pending_weight();
        rank.push_backward_or_input(0, split);
    }
    for _ in 0..ends {
        rank.push_pending_weight();
    }
    rank.slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn dualpipev_by_hand() {
        // PyTorch's order for P = 2, M = 4 (rank 0: stages 0 and 3; rank 1: stages 1 and 2);
        // `+` joins an overlapped pair.
        assert_eq!(
            show(&slots(2, 4, 0)),
            "0F0 0F1 0F2 1F0 1I0 1W0 1F1 0F3+1B1 1F2+0B0 1B2 1F3+0B1 1B3 0I2 0W2 0I3 0W3"
        );
        assert_eq!(
            show(&slots(2, 4, 1)),
            "0F0 1F0 0F1 1F1 0F2 1B0 1F2+0B0 0F3+1B1 1F3+0B1 1B2 0B2 1I3 0I3 1W3 0W3"
        );
    }
}
