//! BigMac's nested encoder: a Replicated region (the modality encoder, the model's first) whose
//! work is embedded in the backbone pipeline just in time — each encoder forward as late as its
//! output can still reach the backbone's first stage, each encoder backward as soon as its
//! gradient is back — without moving any backbone event. It has no slots of its own: its
//! composition policy ([`crate::graph::compose::nested`]) places its work in the backbone's
//! order.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::{CutPosition, RunCtx, Schedule, ScheduleRule};
use crate::schedules::slot::Slot;
use crate::vocab::layout::{Composition, Layout};

/// `nested`.
#[derive(Debug)]
pub struct Nested;

pub const NESTED: Skeleton = Skeleton::of(&Nested);

impl Schedule for Nested {
    fn name(&self) -> &'static str {
        "nested"
    }

    fn summary(&self) -> &'static str {
        "BigMac: the encoder replicated, each microbatch encoded by its owner just in time, in the backbone's idle slots"
    }

    fn reference(&self) -> &'static str {
        "the BigMac post (bigmac-blog-zh), the nested pipeline"
    }

    fn layout(&self) -> Layout {
        Layout::Replicated
    }

    fn composition(&self) -> Option<Composition> {
        Some(Composition::Nested)
    }

    /// The first region (an encoder) or the last (a generator), around a Sharded backbone.
    fn check_position(&self, at: &CutPosition) -> Result<(), ScheduleRule> {
        if at.backbone && (at.region == 1 || at.region == at.regions) {
            return Ok(());
        }
        Err(ScheduleRule::Position {
            rule: "nested-position",
            skeleton: self.name(),
            region: at.region,
            stands: "the first region (an encoder before the backbone) and the last (a generator after it), around a Sharded backbone",
        })
    }

    fn rank_slots(&self, _ctx: &RunCtx, _rank: usize) -> Vec<Slot> {
        Vec::new()
    }

    fn no_formula(&self) -> Option<&'static str> {
        Some("its encodes run just in time in the backbone's idle slots, placed by a greedy search, so its step has no closed form")
    }
}
