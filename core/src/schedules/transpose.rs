//! Mpipe's transpose: a Replicated region (the modality encoder) that runs whole on every rank,
//! each microbatch on its owner, inside the pipeline's warmup bubble. It has no slots of its own:
//! its composition policy ([`crate::graph::compose::transpose`]) joins its work to each rank's
//! stream.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::{RunCtx, Schedule};
use crate::schedules::slot::Slot;
use crate::vocab::layout::{Composition, Layout};

/// `transpose`.
#[derive(Debug)]
pub struct Transpose;

pub const TRANSPOSE: Skeleton = Skeleton::of(&Transpose);

impl Schedule for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }

    fn summary(&self) -> &'static str {
        "Mpipe: the encoder replicated on every rank, each microbatch encoded by its owner in the warmup bubble"
    }

    fn reference(&self) -> &'static str {
        "the Mpipe paper, §4 (⟨transpose, 1f1b⟩)"
    }

    fn layout(&self) -> Layout {
        Layout::Replicated
    }

    fn composition(&self) -> Option<Composition> {
        Some(Composition::Transpose)
    }

    fn rank_slots(&self, _ctx: &RunCtx, _rank: usize) -> Vec<Slot> {
        Vec::new()
    }
}
