//! `1f1b-2nd`: 1F1B expanded to second-order training (JanusPipe's baseline). Each microbatch's
//! forward block becomes its energy forward and force forward (`FE`, `FF`), its backward block
//! the force backward and energy backward (`BF`, `BE`). Every rank warms up with one forward
//! block, then alternates one backward-direction slot with one forward-direction slot — WaveK
//! with waves of one microbatch ([`crate::schedules::wavek`], which also says why every rank runs
//! the same order: a forward block is itself a round trip, so 1F1B's per-position warmup would
//! deadlock, and a longer warmup only holds more memory).

use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::wavek::{one_region, wave_formula, waves};
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::schedules::slot::Slot;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;

/// `1f1b-2nd`.
#[derive(Debug)]
pub struct OneFOneB2nd;

pub const ONE_F_ONE_B_2ND: Skeleton = Skeleton::of(&OneFOneB2nd);

impl Schedule for OneFOneB2nd {
    fn name(&self) -> &'static str {
        "1f1b-2nd"
    }

    fn summary(&self) -> &'static str {
        "second order (JanusPipe baseline): 1F1B with forward block FE, FF and backward block BF, BE per microbatch"
    }

    fn reference(&self) -> &'static str {
        "JanusPipe's 1F1B-2nd baseline (second-order MLIP training)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::FourPhase
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        one_region(self.name(), ctx)
    }

    fn rank_slots(&self, ctx: &RunCtx, _position: usize) -> Vec<Slot> {
        waves(ctx.microbatches, 1)
    }

    /// WaveK's with waves of one: `(4M + 2(P − 1)(M + 1))·t`.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        wave_formula(ctx, 1, costs).map(|f| Formula {
            step: "(4M + 2(P − 1)(M + 1))·t",
            bubble: "2(P − 1)(M + 1) / (4M + 2(P − 1)(M + 1))",
            ..f
        })
    }
}
