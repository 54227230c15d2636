//! Events and edges of the order graph; a compute event reads as an action in PyTorch's
//! notation ([`Action`]).

use crate::vocab::action::Action;
use crate::vocab::comm::{Comm, Group, Seam};
use crate::vocab::ids::{Mb, Rank, RegionId, Stage};
use crate::vocab::phase::{Half, Phase};
use serde::Serialize;

/// A node of the order graph.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(tag = "event")]
pub enum Event {
    Fwd {
        region: RegionId,
        rank: Rank,
        mb: Mb,
        /// The pipeline stage the forward runs (placement: region and rank → stage).
        stage: Stage,
    },
    Bwd {
        region: RegionId,
        rank: Rank,
        mb: Mb,
        stage: Stage,
        /// The whole backward, or its input or weight half (split-backward schedules).
        half: Half,
    },
    Coll {
        comm: Comm,
        seam: Seam,
        mb: Mb,
        from_rank: Rank,
        to_rank: Rank,
    },
    /// One of the four phases of a second-order schedule (FE, FF, BF, BE).
    FourPhase {
        region: RegionId,
        rank: Rank,
        mb: Mb,
        stage: Stage,
        phase: Phase,
    },
    DpReduce {
        region: RegionId,
        rank: Rank,
        group: Group,
    },
    /// Recomputation placed early (Mario, DESIGN.md §3.1): the recomputed layers' forward run
    /// again on the rank's compute stream just before their backward (its first phase).
    Recompute {
        region: RegionId,
        rank: Rank,
        mb: Mb,
        stage: Stage,
    },
    /// Activation offload (DESIGN.md §3.1): a forward's offloaded activations copied to the host
    /// after it (`to_host`) or back before its backward, on the rank's copy stream.
    Copy {
        region: RegionId,
        rank: Rank,
        mb: Mb,
        stage: Stage,
        to_host: bool,
    },
    Loss {
        mb: Mb,
        rank: Rank,
    },
    StepBarrier,
}

impl Event {
    /// The rank whose compute stream runs the event (`None` for collectives and the barrier).
    pub fn rank(&self) -> Option<usize> {
        match *self {
            Event::Fwd { rank, .. }
            | Event::Bwd { rank, .. }
            | Event::FourPhase { rank, .. }
            | Event::DpReduce { rank, .. }
            | Event::Recompute { rank, .. }
            | Event::Loss { rank, .. } => Some(rank.index()),
            Event::Coll { .. } | Event::Copy { .. } | Event::StepBarrier => None,
        }
    }

    /// The microbatch, for events that have one.
    pub fn mb(&self) -> Option<usize> {
        match *self {
            Event::Fwd { mb, .. }
            | Event::Bwd { mb, .. }
            | Event::FourPhase { mb, .. }
            | Event::Coll { mb, .. }
            | Event::Copy { mb, .. }
            | Event::Recompute { mb, .. }
            | Event::Loss { mb, .. } => Some(mb.index()),
            Event::DpReduce { .. } | Event::StepBarrier => None,
        }
    }

    /// The compute action of a compute event: `<stage><F|B|I|W|FE|FF|BF|BE><mb>`.
    pub fn action(&self) -> Option<Action> {
        let (stage, mb, phase) = match *self {
            Event::Fwd { stage, mb, .. } => (stage, mb, Phase::Forward),
            Event::Bwd {
                stage, mb, half, ..
            } => (stage, mb, half.phase()),
            Event::FourPhase {
                stage, mb, phase, ..
            } => (stage, mb, phase),
            Event::Recompute { stage, mb, .. } => (stage, mb, Phase::Recompute),
            _ => return None,
        };
        Some(Action { stage, phase, mb })
    }

    /// A compute event: a forward, a backward (or half of one) or one of the four phases.
    pub fn is_compute(&self) -> bool {
        matches!(
            self,
            Event::Fwd { .. }
                | Event::Bwd { .. }
                | Event::FourPhase { .. }
                | Event::Recompute { .. }
        )
    }

    /// The region of a compute event or a reduce.
    pub fn region(&self) -> Option<RegionId> {
        match *self {
            Event::Fwd { region, .. }
            | Event::Bwd { region, .. }
            | Event::FourPhase { region, .. }
            | Event::Recompute { region, .. }
            | Event::DpReduce { region, .. } => Some(region),
            _ => None,
        }
    }

    /// A short human label: `4F0@r0`, `Gather(1→2) mb 3 r2→r0`, `Loss mb 0 @r3`.
    pub fn label(&self) -> String {
        match *self {
            Event::Fwd { rank, .. }
            | Event::Bwd { rank, .. }
            | Event::FourPhase { rank, .. }
            | Event::Recompute { rank, .. } => match self.action() {
                Some(action) => format!("{action}@r{rank}"),
                None => String::new(),
            },
            Event::Coll {
                comm,
                seam,
                mb,
                from_rank,
                to_rank,
            } => format!(
                "{comm:?}({}→{}) mb {mb} r{from_rank}→r{to_rank}",
                seam.from, seam.to
            ),
            Event::DpReduce {
                region,
                rank,
                group,
            } => format!("DpReduce(region {region}, {group:?})@r{rank}"),
            Event::Copy {
                rank,
                mb,
                stage,
                to_host,
                ..
            } => format!(
                "{} stage {stage} mb {mb} @r{rank}",
                if to_host { "Offload" } else { "Reload" }
            ),
            Event::Loss { mb, rank } => format!("Loss mb {mb} @r{rank}"),
            Event::StepBarrier => "StepBarrier".to_string(),
        }
    }
}

/// The typed arcs of the order graph.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    Activation,
    Gradient,
    Turnaround,
    Accumulate,
    Sequence,
    /// An overlapped pair starts as one slot: its forward waits for the backward's inputs too.
    Overlap,
    /// Activation offload: a forward to its copy out, the copy out to the copy back, the copy
    /// back to the backward (and the action whose end issues it).
    Offload,
    /// One copy after another on a rank's copy stream.
    CopyStream,
    /// Early recomputation: a forward to its recomputation, the recomputation to its backward.
    Recompute,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_twenty_bytes() {
        // A million-event order graph holds its events in one list: a 16-bit rank keeps the
        // largest variant (a collective's seam, microbatch and two ranks) in 20 bytes.
        assert_eq!(std::mem::size_of::<Event>(), 20);
    }

    #[test]
    fn fwd_event_maps_to_stage_index() {
        let e = Event::Fwd {
            region: RegionId::new(2),
            rank: Rank::new(1),
            mb: Mb::new(3),
            stage: Stage::new(5),
        };
        assert_eq!(e.action().map(|a| a.to_string()), Some("5F3".to_string()));
        assert_eq!(e.label(), "5F3@r1");
    }
}
