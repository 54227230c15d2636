//! `placement`: which rank runs each pipeline stage, as a scenario file writes it — `default`,
//! `v_fold`, or the rank of every stage. The algebra checks it ([`crate::algebra::placement`]).

use crate::vocab::layout::PlacementKind;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The `placement` field of a scenario (absent: the skeleton's own placement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementSpec {
    /// Slab `i` of every region on rank `i`.
    Default,
    /// Every second chunk of the wavefront reversed: slab `i` on rank `P − 1 − i`.
    VFold,
    /// The rank of every stage, in stage order.
    Explicit(Vec<usize>),
}

impl PlacementSpec {
    pub fn name(&self) -> &'static str {
        match self {
            PlacementSpec::Default => "default",
            PlacementSpec::VFold => "v_fold",
            PlacementSpec::Explicit(_) => "explicit",
        }
    }
}

/// A schedule's own placement, as the scenario would write it.
impl From<PlacementKind> for PlacementSpec {
    fn from(kind: PlacementKind) -> Self {
        match kind {
            PlacementKind::Default => PlacementSpec::Default,
            PlacementKind::VFold => PlacementSpec::VFold,
        }
    }
}

const NAMES: &str = "`default`, `v_fold` or a list with the rank of every stage";

impl Serialize for PlacementSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PlacementSpec::Explicit(list) => list.serialize(serializer),
            other => serializer.serialize_str(other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for PlacementSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;
        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = PlacementSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(NAMES)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PlacementSpec, E> {
                match v {
                    "default" => Ok(PlacementSpec::Default),
                    "v_fold" => Ok(PlacementSpec::VFold),
                    other => Err(E::custom(format!(
                        "unknown placement `{other}`, expected {NAMES}"
                    ))),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PlacementSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(rank) = seq.next_element::<usize>()? {
                    list.push(rank);
                }
                Ok(PlacementSpec::Explicit(list))
            }
        }
        deserializer.deserialize_any(SpecVisitor)
    }
}
