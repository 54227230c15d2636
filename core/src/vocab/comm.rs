//! The kinds of communication: the collectives on a seam, who takes part in a reduce, and the
//! seam a collective crosses.

use crate::vocab::ids::RegionId;
use serde::Serialize;

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

/// A boundary crossed by a collective: `(from, to)` regions; `from == to` for two slabs of one
/// region.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seam {
    pub from: RegionId,
    pub to: RegionId,
}
