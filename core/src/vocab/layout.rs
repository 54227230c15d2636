//! Where a region's work runs.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a region's work runs: split by layer over the ranks, or whole on every rank.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    Sharded,
    Replicated,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Sharded => "Sharded",
            Layout::Replicated => "Replicated",
        })
    }
}

/// Where a schedule puts its stages when the scenario gives no `placement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlacementKind {
    /// Slab `i` of every region on rank `i` (Megatron-LM's and PyTorch's virtual stages).
    Default,
    /// Every second chunk of the wavefront reversed: chunk 1 of rank `r` is stage `2P − 1 − r`.
    VFold,
}

/// Under the V fold, the rank of slab `i` (its place along the chain) of Sharded chunk `chunk`:
/// even chunks run down the ranks, odd ones back up.
pub fn v_fold_rank(chunk: usize, i: usize, ranks: usize) -> usize {
    if chunk % 2 == 1 {
        ranks.saturating_sub(1 + i)
    } else {
        i
    }
}

/// How a Replicated schedule's work joins each rank's stream (its composition policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Composition {
    /// Mpipe's transpose: each microbatch's work on its owner, in the warmup bubble.
    Transpose,
    /// BigMac's nested pipeline: each encoder action just in time in the backbone's logical
    /// time, a generator's right after the last stage's forward.
    Nested,
}
