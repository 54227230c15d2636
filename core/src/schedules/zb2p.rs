//! ZB-2P as the zero-bubble paper's handcrafted ZB-H2 (Qi et al., "Zero Bubble Pipeline
//! Parallelism", ICLR 2024, §2.2; the order of the authors' `get_hand_schedule(…, warmup_c=2)`,
//! `megatron/core/pipeline_parallel/efficiency.py` of their `arxiv` branch): one chunk per rank,
//! the backward split into `I` and `W`, twice ZB-H1's warmup so that no rank waits for its first
//! input half, at `2P − 1` microbatches' activations on every rank.
//!
//! Rank `r` runs `2(P − 1 − r)` warmup forwards, then for each microbatch `i`: the next forward
//! while forwards remain, `I(i)`, and from `i = 2r` on the oldest pending `W`; the `2r` pending
//! weight halves close the step. With `t_F = t_I = t_W = t` every rank is busy from `r·t` for
//! `3M·t` without a gap: the paper's "parallelogram", whose `(P − 1)·t` of fill it hides by
//! overlapping steps (post-update validation); one step alone, as simulated here, takes
//! `(3M + P − 1)·t` — ZB-H1's — at twice the memory; ZB-H2 gains where `t_W < t_F + t_I`'s
//! share would leave ZB-H1 a bubble. Needs `M ≥ 2P` (the authors assert it).

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::{Formula, RunCtx, Schedule, ScheduleRule, Uniform, microbatches_at_least};
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;

/// `zb2p`.
#[derive(Debug)]
pub struct Zb2p;

pub const ZB2P: Skeleton = Skeleton::of(&Zb2p);

impl Schedule for Zb2p {
    fn name(&self) -> &'static str {
        "zb2p"
    }

    fn summary(&self) -> &'static str {
        "zero bubble at twice ZB-H1's memory (ZB-H2): 2(P−1−r) warmup forwards, W's held to the end — no rank waits for its first I"
    }

    fn reference(&self) -> &'static str {
        "ZB-H2 of the zero-bubble paper (Qi et al., ICLR 2024, §2.2), the authors' `get_hand_schedule`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        if ctx.chunks != 1 {
            return Err(ScheduleRule::Chunks {
                rule: "zb2p-chunks",
                skeleton: "zb2p",
                want: 1,
                chunks: ctx.chunks,
                why: "ZB-H2 is written for one stage per rank",
            });
        }
        microbatches_at_least(
            ctx,
            2 * ctx.ranks,
            "zb2p-microbatches",
            "zb2p",
            "M ≥ 2P, as the zero-bubble authors' ZB-H2",
        )
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        slots(ctx.ranks, ctx.microbatches, position)
    }

    /// With `t_I = t_W` and `M ≥ 2P`: each rank works `M·(t_F + t_B)` without a gap after the
    /// `r·t_F` its first forward takes to arrive — the step `M·(t_F + t_B) + (P − 1)·t_F` (for
    /// `t_F ≤ t_I`, where no input half waits); `2P − 1` microbatches' activations on every rank.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        if self.check(ctx).is_err() || costs.forward_s > costs.backward_s / 2.0 * (1.0 + 1e-9) {
            return None;
        }
        let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
        let step_s = m * (costs.forward_s + costs.backward_s) + (p - 1.0) * costs.forward_s;
        Some(Formula {
            step: "M·(t_F + t_B) + (P − 1)·t_F, t_I = t_W = t_B/2 ≥ t_F, M ≥ 2P",
            step_s,
            bubble: "(P − 1)·t_F / step",
            bubble_fraction: if step_s > 0.0 {
                (p - 1.0) * costs.forward_s / step_s
            } else {
                0.0
            },
            memory: Some("(2P − 1)·A"),
            peak_activations: Some(2.0 * p - 1.0),
        })
    }
}

/// ZB-H2's slots of the rank at `position`.
fn slots(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let m = microbatches;
    let warmup = (2 * ranks.saturating_sub(position + 1)).min(m);
    let held = 2 * position;
    let mut out: Vec<Slot> = (0..warmup).map(|k| Slot::forward(0, k)).collect();
    for i in 0..m {
        if warmup + i < m {
            out.push(Slot::forward(0, warmup + i));
        }
        out.push(Slot::input(0, i));
        if i >= held {
            out.push(Slot::weight(0, i - held));
        }
    }
    out.extend((m.saturating_sub(held)..m).map(|k| Slot::weight(0, k)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn the_authors_order_p2_m4() {
        assert_eq!(
            show(&slots(2, 4, 0)),
            "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3"
        );
        assert_eq!(
            show(&slots(2, 4, 1)),
            "0F0 0I0 0F1 0I1 0F2 0I2 0W0 0F3 0I3 0W1 0W2 0W3"
        );
    }
}
