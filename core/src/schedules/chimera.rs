//! Chimera (Li & Hoefler, "Chimera: Efficiently Training Large-Scale Neural Networks with
//! Bidirectional Pipelines", SC'21, §3; the order of the authors' `Shigangli/Chimera` runtime):
//! two pipelines in opposite directions, each a full replica of the model — the model's one
//! Sharded region runs the first half of the microbatches down from rank 0, its mirror the
//! second half up from rank `P − 1` — so every rank holds two stages and their parameters.
//! Whole backwards, no overlap; the two replicas' gradients are reduced together.
//!
//! The basic unit is `P` microbatches (`P/2` a direction). Rank `r`, with `h = P/2`, `i =
//! min(r, P − 1 − r)`, `a = h − i`, `b = i`, its primary direction the one whose stage on it is
//! among the first `h` (down for `r < h`, up otherwise) and the other secondary, runs `a`
//! forwards of primary, `b` times (F secondary, F primary), `a` times (F secondary, B
//! secondary), `b` times (B primary, B secondary), and `a` backwards of primary. For `M = kP`
//! the units are concatenated directly (the authors' `main_with_runtime_direct`): each later
//! unit opens with `a` times (B primary, F primary) — the previous unit's last backwards —
//! and the last unit closes with its `a` backwards of primary. Each direction's microbatches
//! run in order. With `t_F = t_B = t` a rank idles `(P − 2)·t` of a `(2M + P − 2)·t` step; its
//! activations peak at `P/2 + 1` (the end ranks) to `P` (the middle ones).

use crate::schedules::dualpipe::{Directions, ShapeRules, bidirectional_shape, whole_model};
use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::{CutPosition, Formula, RunCtx, Schedule, ScheduleRule, Uniform};
use crate::vocab::layout::{Layout, PlacementKind};

/// `chimera`.
#[derive(Debug)]
pub struct Chimera;

pub const CHIMERA: Skeleton = Skeleton::of(&Chimera);

impl Schedule for Chimera {
    fn name(&self) -> &'static str {
        "chimera"
    }

    fn summary(&self) -> &'static str {
        "Chimera: two pipelines in opposite directions, each a replica of the model (parameters twice), their bubbles filling each other"
    }

    fn reference(&self) -> &'static str {
        "Li & Hoefler, Chimera (SC'21), `Shigangli/Chimera` direct concatenation"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    /// The mirror's stages on the ranks in reverse: the V fold of ⟨region, mirror⟩.
    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn bidirectional(&self) -> bool {
        true
    }

    fn check_position(&self, at: &CutPosition) -> Result<(), ScheduleRule> {
        whole_model("chimera-alone", self.name(), at)
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        bidirectional_shape(
            &ShapeRules {
                skeleton: "chimera",
                chunks: "chimera-chunks",
                ranks: "chimera-ranks",
                microbatches: "chimera-microbatches",
                source: "one stage of each direction's first half a rank",
                microbatch_unit: (ctx.ranks, "basic units of P microbatches, concatenated"),
            },
            ctx,
        )
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        slots(ctx.ranks, ctx.microbatches, position)
    }

    /// The paper's setting, `t_F = t_B = t`: `D − 2` bubbles against 1F1B's `2(D − 1)`.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        let t = costs.forward_s;
        if self.check(ctx).is_err() || !costs.backward_is(1.0) {
            return None;
        }
        let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
        let step_s = (2.0 * m + p - 2.0) * t;
        Some(Formula {
            step: "(2M + P − 2)·t, t = t_F = t_B, M a multiple of P",
            step_s,
            bubble: "(P − 2)/(2M + P − 2)",
            bubble_fraction: (p - 2.0) / (2.0 * m + p - 2.0),
            memory: Some("P·A on the middle ranks, (P/2 + 1)·A on the end ones (parameters: two stages a rank)"),
            peak_activations: Some(p),
        })
    }
}

/// Chimera's slots of the rank at `position` (chunk 0: the region for the first half of the
/// microbatches, its mirror for the second).
fn slots(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let (p, r) = (ranks, position);
    let h = p / 2;
    let b = r.min(p.saturating_sub(1 + r));
    let a = h.saturating_sub(b);
    let primary = usize::from(r >= h);
    let secondary = 1 - primary;
    let units = microbatches / p.max(1);
    let mut d = Directions::new(microbatches);
    for unit in 0..units {
        for _ in 0..a {
            if unit > 0 {
                d.backward(primary, false);
            }
            d.forward(primary);
        }
        for _ in 0..b {
            d.forward(secondary);
            d.forward(primary);
        }
        for _ in 0..a {
            d.forward(secondary);
            d.backward(secondary, false);
        }
        for _ in 0..b {
            d.backward(primary, false);
            d.backward(secondary, false);
        }
    }
    for _ in 0..a {
        d.backward(primary, false);
    }
    d.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn chimera_by_hand_p4_m8() {
        // The authors' direct concatenation on rank 1 (stage 1 down, stage 6 = up's stage 2).
        assert_eq!(
            show(&slots(4, 8, 1)),
            "0F0 0F4 0F1 0F5 0B4 0B0 0B5 0B1 0F2 0F6 0F3 0F7 0B6 0B2 0B7 0B3"
        );
    }
}
