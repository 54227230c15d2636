//! V-Min (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, §4) as the
//! zero-bubble project's `zbv_greedy.py` builds it: V-Half's method ([`crate::schedules::vhalf`])
//! from the tighter building block — rank `r`'s ops of a microbatch at `r`, `2P − r − 1`,
//! `2P + g + r` and `4P + g − r − 1` (`g = 2` when `3 | P`, else 0), period six — whose lifespans
//! of about `2P` slots hold about a third of 1F1B's activation memory, for more bubble.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::vhalf::{Block, check_size, from_block};
use crate::schedules::zbv::two_chunks;
use crate::schedules::{Formula, RunCtx, Schedule, ScheduleRule, Uniform};
use crate::vocab::layout::{Layout, PlacementKind};
use crate::vocab::phase::OpSet;

/// `vmin`.
#[derive(Debug)]
pub struct VMin;

pub const VMIN: Skeleton = Skeleton::of(&VMin);

impl Schedule for VMin {
    fn name(&self) -> &'static str {
        "vmin"
    }

    fn summary(&self) -> &'static str {
        "V-Min: zero bubble's V with about a third of 1F1B's activation memory, for some bubble"
    }

    fn reference(&self) -> &'static str {
        "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), zero-bubble `zbv_greedy.py`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn listed_bound(&self, ctx: &RunCtx) -> Option<(&'static str, usize)> {
        Block::Min.listed_bound(ctx)
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        two_chunks(
            "vmin-chunks",
            "vmin",
            ctx,
            "the two arms of the V its building block is written for",
        )?;
        check_size("vmin-size", "vmin", ctx)
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        self.slots(ctx).into_iter().nth(position).unwrap_or_default()
    }

    fn slots(&self, ctx: &RunCtx) -> Vec<Vec<Slot>> {
        from_block(&Block::Min, ctx.ranks, ctx.microbatches)
    }

    /// [`Block::formula`] of V-Min's block.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        self.check(ctx).ok()?;
        Block::Min.formula(ctx, costs)
    }
}
