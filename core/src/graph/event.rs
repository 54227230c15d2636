//! Events and edges of the order graph, and PyTorch's action notation `<stage><F|B|I|W><mb>`
//! (four-phase schedules: `<stage><FE|FF|BF|BE><mb>`).

use crate::algebra::ids::{Mb, Rank, RegionId, Stage};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// What a compute action computes: the forward, the whole backward, or one of its halves (the
/// input gradient `I`, the weight gradient `W`) when a schedule splits it; or, in a second-order
/// schedule (JanusPipe), one of its four phases per microbatch: the energy forward `FE`, the
/// force forward `FF` (∂E/∂x, from the last stage back to the first), the force backward `BF`
/// (second-order, first stage to last) and the energy backward `BE` (last stage to first).
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    Forward,
    Backward,
    Input,
    Weight,
    EnergyForward,
    ForceForward,
    ForceBackward,
    EnergyBackward,
}

impl Phase {
    /// The four phases of a second-order microbatch, in their per-stage order FE → FF → BF → BE.
    pub const FOUR: [Phase; 4] = [
        Phase::EnergyForward,
        Phase::ForceForward,
        Phase::ForceBackward,
        Phase::EnergyBackward,
    ];

    /// `F`, `B`, `I`, `W`, `FE`, `FF`, `BF` or `BE`, as in the action notation.
    pub fn code(self) -> &'static str {
        match self {
            Phase::Forward => "F",
            Phase::Backward => "B",
            Phase::Input => "I",
            Phase::Weight => "W",
            Phase::EnergyForward => "FE",
            Phase::ForceForward => "FF",
            Phase::ForceBackward => "BF",
            Phase::EnergyBackward => "BE",
        }
    }

    /// What it computes, in words (the app's tooltips).
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Input => "backward, input half",
            Phase::Weight => "backward, weight half",
            Phase::EnergyForward => "energy forward",
            Phase::ForceForward => "force forward (∂E/∂x)",
            Phase::ForceBackward => "force backward (second order)",
            Phase::EnergyBackward => "energy backward",
        }
    }

    /// Any backward work: the whole backward or one of its halves; of the four phases, the two
    /// that compute parameter gradients (`BF`, `BE`).
    pub fn is_backward(self) -> bool {
        !matches!(
            self,
            Phase::Forward | Phase::EnergyForward | Phase::ForceForward
        )
    }

    /// The phase's data flows from the first stage to the last (`F`, `FE`, `BF`); the others
    /// flow from the last to the first.
    pub fn flows_down(self) -> bool {
        matches!(
            self,
            Phase::Forward | Phase::EnergyForward | Phase::ForceBackward
        )
    }

    /// Its index in [`Phase::FOUR`], for a four-phase phase.
    pub fn four_index(self) -> Option<usize> {
        Phase::FOUR.iter().position(|&p| p == self)
    }
}

/// Which part of a backward a `Bwd` event computes.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Half {
    /// The whole backward (`B`).
    Whole,
    /// The input gradient (`I`): what the previous stage waits for.
    Input,
    /// The weight gradient (`W`): no other stage waits for it.
    Weight,
}

impl Half {
    pub fn phase(self) -> Phase {
        match self {
            Half::Whole => Phase::Backward,
            Half::Input => Phase::Input,
            Half::Weight => Phase::Weight,
        }
    }
}

/// A collective on a seam (Table 2) or between two slabs of one Sharded region.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comm {
    Gather,
    Scatter,
    Send,
    RecvGrad,
}

/// Who takes part in a weight-gradient reduce.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    /// The replicas of a Replicated region.
    ReplicaGroup,
    /// The data-parallel copies of a Sharded slab.
    DataGroup,
}

/// A boundary crossed by a collective: `(from, to)` regions; `from == to` for two slabs of one region.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seam {
    pub from: RegionId,
    pub to: RegionId,
}

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
            | Event::Loss { rank, .. } => Some(rank.index()),
            Event::Coll { .. } | Event::StepBarrier => None,
        }
    }

    /// The microbatch, for events that have one.
    pub fn mb(&self) -> Option<usize> {
        match *self {
            Event::Fwd { mb, .. }
            | Event::Bwd { mb, .. }
            | Event::FourPhase { mb, .. }
            | Event::Coll { mb, .. }
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
            _ => return None,
        };
        Some(Action { stage, phase, mb })
    }

    /// A compute event: a forward, a backward (or half of one) or one of the four phases.
    pub fn is_compute(&self) -> bool {
        matches!(
            self,
            Event::Fwd { .. } | Event::Bwd { .. } | Event::FourPhase { .. }
        )
    }

    /// The region of a compute event or a reduce.
    pub fn region(&self) -> Option<RegionId> {
        match *self {
            Event::Fwd { region, .. }
            | Event::Bwd { region, .. }
            | Event::FourPhase { region, .. }
            | Event::DpReduce { region, .. } => Some(region),
            _ => None,
        }
    }

    /// A short human label: `4F0@r0`, `Gather(1→2) mb 3 r2→r0`, `Loss mb 0 @r3`.
    pub fn label(&self) -> String {
        match *self {
            Event::Fwd { rank, .. } | Event::Bwd { rank, .. } | Event::FourPhase { rank, .. } => {
                match self.action() {
                    Some(action) => format!("{action}@r{rank}"),
                    None => String::new(),
                }
            }
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
}

/// A compute action in PyTorch's notation: stage index, phase, microbatch (all 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Action {
    pub stage: Stage,
    pub phase: Phase,
    pub mb: Mb,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.stage, self.phase.code(), self.mb)
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why an action string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`")]
pub struct ActionParseError {
    pub text: String,
}

impl FromStr for Action {
    type Err = ActionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || ActionParseError {
            text: text.to_string(),
        };
        let at = text.find(['F', 'B', 'I', 'W']).ok_or_else(err)?;
        let (stage, rest) = text.split_at(at);
        // The longest code that matches: `FE` before `F`.
        let (phase, mb) = [
            Phase::EnergyForward,
            Phase::ForceForward,
            Phase::ForceBackward,
            Phase::EnergyBackward,
            Phase::Forward,
            Phase::Backward,
            Phase::Input,
            Phase::Weight,
        ]
        .into_iter()
        .find_map(|p| rest.strip_prefix(p.code()).map(|mb| (p, mb)))
        .ok_or_else(err)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(stage) || !digits(mb) {
            return Err(err());
        }
        let index = |s: &str| s.parse::<u32>().map(|i| i as usize).map_err(|_| err());
        Ok(Action {
            stage: Stage::new(index(stage)?),
            phase,
            mb: Mb::new(index(mb)?),
        })
    }
}

/// One compute slot of a rank's order: an action, or a forward and a backward run overlapped
/// (PyTorch's `(<action>;<action>)OVERLAP_F_B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    One(Action),
    Overlap(Action, Action),
}

impl Step {
    /// Its actions, in order.
    pub fn actions(&self) -> impl Iterator<Item = Action> {
        let (first, second) = match *self {
            Step::One(a) => (a, None),
            Step::Overlap(a, b) => (a, Some(b)),
        };
        std::iter::once(first).chain(second)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::One(a) => write!(f, "{a}"),
            Step::Overlap(a, b) => write!(f, "({a};{b})OVERLAP_F_B"),
        }
    }
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why a step string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepParseError {
    #[error(transparent)]
    Action(#[from] ActionParseError),
    #[error(
        "`{text}` is not an overlapped pair; expected (<forward>;<backward>)OVERLAP_F_B, e.g. `(0F3;3B1)OVERLAP_F_B`"
    )]
    Pair { text: String },
}

impl FromStr for Step {
    type Err = StepParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some(inner) = text.strip_prefix('(') else {
            return Ok(Step::One(text.parse()?));
        };
        let pair = || StepParseError::Pair {
            text: text.to_string(),
        };
        let (a, b) = inner
            .strip_suffix(")OVERLAP_F_B")
            .and_then(|body| body.split_once(';'))
            .ok_or_else(pair)?;
        let (a, b): (Action, Action) = (a.parse()?, b.parse()?);
        if a.phase != Phase::Forward || !matches!(b.phase, Phase::Backward | Phase::Input) {
            return Err(pair());
        }
        Ok(Step::Overlap(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_print_and_parse() {
        let pair: Step = "(0F3;3B1)OVERLAP_F_B".parse().unwrap();
        assert_eq!(pair.to_string(), "(0F3;3B1)OVERLAP_F_B");
        assert_eq!(
            pair.actions().map(|a| a.to_string()).collect::<Vec<_>>(),
            ["0F3", "3B1"]
        );
        assert_eq!(
            "2I0".parse::<Step>().map(|s| s.to_string()),
            Ok("2I0".into())
        );
        for bad in ["(0F3;3B1)", "(0F3,3B1)OVERLAP_F_B", "(3B1;0F3)OVERLAP_F_B"] {
            assert_eq!(
                bad.parse::<Step>().unwrap_err().to_string(),
                format!(
                    "`{bad}` is not an overlapped pair; expected (<forward>;<backward>)OVERLAP_F_B, e.g. `(0F3;3B1)OVERLAP_F_B`"
                )
            );
        }
        assert_eq!(
            "(0X3;3B1)OVERLAP_F_B"
                .parse::<Step>()
                .unwrap_err()
                .to_string(),
            "`0X3` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
    }

    #[test]
    fn actions_print_and_parse() {
        let a = Action {
            stage: Stage::new(4),
            phase: Phase::Forward,
            mb: Mb::new(0),
        };
        assert_eq!(a.to_string(), "4F0");
        assert_eq!("4F0".parse::<Action>(), Ok(a));
        assert_eq!(
            "12B31"
                .parse::<Action>()
                .map(|a| (a.stage.index(), a.phase, a.mb.index())),
            Ok((12, Phase::Backward, 31))
        );
        // The halves of a split backward.
        assert_eq!("3I1".parse::<Action>().map(|a| a.phase), Ok(Phase::Input));
        assert_eq!(
            "4W0".parse::<Action>().map(|a| a.to_string()),
            Ok("4W0".into())
        );
        for bad in ["", "F0", "4F", "4X0", "-1F0", "4F0x", "4Q0"] {
            assert!(bad.parse::<Action>().is_err(), "{bad}");
        }
        assert_eq!(
            "4X0".parse::<Action>().unwrap_err().to_string(),
            "`4X0` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
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
