//! What a compute event computes (its phase), which part of a backward it is, and the op set a
//! schedule runs per stage and microbatch.

use serde::Serialize;

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
    /// Recomputation placed early (Mario): the forward of recomputed layers run again as its own
    /// action just before their backward, as soon as the rank is free — not a PyTorch action
    /// (never in the orders' action lists, CSVs or traces' recovered orders).
    Recompute,
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
            Phase::Recompute => "R",
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
            Phase::Recompute => "recomputation (the forward run again, early)",
        }
    }

    /// Any backward work: the whole backward or one of its halves; of the four phases, the two
    /// that compute parameter gradients (`BF`, `BE`).
    pub fn is_backward(self) -> bool {
        !matches!(
            self,
            Phase::Forward | Phase::EnergyForward | Phase::ForceForward | Phase::Recompute
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

/// The compute events a schedule runs per stage and microbatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpSet {
    /// `F` and a whole backward `B`.
    ForwardBackward,
    /// `F`, and the backward split into its input half `I` (on the gradient chain) and its
    /// weight half `W` (free of cross-rank dependencies).
    SplitBackward,
    /// `F`, and per stage and microbatch either a whole `B` or the halves `I` and `W`, as the
    /// slots say; a forward and a backward may run overlapped as one slot (DualPipeV).
    Mixed,
    /// A second-order microbatch's four phases per stage, FE → FF → BF → BE: FE and BF flow
    /// from the first stage to the last, FF and BE from the last to the first (JanusPipe).
    FourPhase,
}
