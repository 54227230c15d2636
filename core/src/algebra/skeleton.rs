//! Skeletons (`1f1b`, `gpipe`, `transpose`) and the one property the algebra derives from them: the layout.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How one region's forwards and backwards are ordered.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skeleton {
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "gpipe")]
    GPipe,
    #[serde(rename = "transpose")]
    Transpose,
}

/// Where a region's work runs: split by layer over the ranks, or whole on every rank.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    Sharded,
    Replicated,
}

impl Skeleton {
    pub const ALL: [Skeleton; 3] = [Skeleton::OneFOneB, Skeleton::GPipe, Skeleton::Transpose];

    /// `layout(transpose) = Replicated`; `layout(1f1b) = layout(gpipe) = Sharded`.
    pub fn layout(self) -> Layout {
        match self {
            Skeleton::Transpose => Layout::Replicated,
            Skeleton::OneFOneB | Skeleton::GPipe => Layout::Sharded,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Skeleton::OneFOneB => "1f1b",
            Skeleton::GPipe => "gpipe",
            Skeleton::Transpose => "transpose",
        }
    }
}

impl fmt::Display for Skeleton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Sharded => "Sharded",
            Layout::Replicated => "Replicated",
        })
    }
}

/// `⟨1f1b, transpose⟩` style rendering of a schedule.
pub fn schedule_to_string(schedule: &[Skeleton]) -> String {
    let names: Vec<&str> = schedule.iter().map(|s| s.name()).collect();
    format!("⟨{}⟩", names.join(", "))
}
