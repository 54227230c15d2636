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
