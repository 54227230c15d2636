//! BigMac's nested encoder: a Replicated region (the modality encoder, the model's first) whose
//! work is embedded in the backbone pipeline just in time — each encoder forward as late as its
//! output can still reach the backbone's first stage, each encoder backward as soon as its
//! gradient is back — without moving any backbone event. It has no slots of its own: its
//! composition policy ([`crate::graph::compose::nested`]) places its work in the backbone's
//! order.

use crate::algebra::skeleton::Skeleton;
use crate::schedules::{RunCtx, Schedule, Slot};
use crate::vocab::layout::Layout;

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

    fn rank_slots(&self, _ctx: &RunCtx, _rank: usize) -> Vec<Slot> {
        Vec::new()
    }
}
