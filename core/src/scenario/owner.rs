//! `ByMicrobatch` owner maps: which rank runs a Replicated region's work for each microbatch.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The `owner` field of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OwnerSpec {
    /// `m mod min(P, M)`.
    #[default]
    RoundRobin,
    /// Everything on rank 0: the naive baseline.
    FirstRank,
    /// The paper's greedy: heaviest encodes first, each to the rank with the most remaining
    /// warmup slack `w_r − E_r` (needs the cost model).
    GreedySlack,
    /// Minimises the simulated makespan by deterministic local search from `greedy_slack`.
    Optimized,
    /// An explicit rank per microbatch.
    Explicit(Vec<usize>),
}

impl OwnerSpec {
    pub fn is_default(&self) -> bool {
        *self == OwnerSpec::RoundRobin
    }

    pub fn name(&self) -> &'static str {
        match self {
            OwnerSpec::RoundRobin => "round_robin",
            OwnerSpec::FirstRank => "first_rank",
            OwnerSpec::GreedySlack => "greedy_slack",
            OwnerSpec::Optimized => "optimized",
            OwnerSpec::Explicit(_) => "explicit",
        }
    }

    /// Whether the map is computed from the cost model (after a first derivation).
    pub fn needs_costs(&self) -> bool {
        matches!(self, OwnerSpec::GreedySlack | OwnerSpec::Optimized)
    }

    /// The rank of each microbatch. Explicit lists must already be validated; cost-based maps
    /// start from round robin and are replaced once the cost model has run.
    pub fn resolve(&self, ranks: usize, microbatches: usize) -> Vec<usize> {
        match self {
            OwnerSpec::RoundRobin | OwnerSpec::GreedySlack | OwnerSpec::Optimized => {
                let width = ranks.min(microbatches).max(1);
                (0..microbatches).map(|m| m % width).collect()
            }
            OwnerSpec::FirstRank => vec![0; microbatches],
            OwnerSpec::Explicit(list) => list.clone(),
        }
    }
}

const NAMES: &str = "`round_robin`, `first_rank`, `greedy_slack`, `optimized` or a list with one rank per microbatch";

impl Serialize for OwnerSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            OwnerSpec::Explicit(list) => list.serialize(serializer),
            other => serializer.serialize_str(other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for OwnerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OwnerVisitor;
        impl<'de> Visitor<'de> for OwnerVisitor {
            type Value = OwnerSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(NAMES)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OwnerSpec, E> {
                match v {
                    "round_robin" => Ok(OwnerSpec::RoundRobin),
                    "first_rank" => Ok(OwnerSpec::FirstRank),
                    "greedy_slack" => Ok(OwnerSpec::GreedySlack),
                    "optimized" => Ok(OwnerSpec::Optimized),
                    other => Err(E::custom(format!(
                        "unknown owner map `{other}`, expected {NAMES}"
                    ))),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OwnerSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(rank) = seq.next_element::<usize>()? {
                    list.push(rank);
                }
                Ok(OwnerSpec::Explicit(list))
            }
        }
        deserializer.deserialize_any(OwnerVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_wraps_at_min_of_ranks_and_microbatches() {
        assert_eq!(OwnerSpec::RoundRobin.resolve(4, 6), [0, 1, 2, 3, 0, 1]);
        assert_eq!(OwnerSpec::RoundRobin.resolve(4, 2), [0, 1]);
        assert_eq!(OwnerSpec::FirstRank.resolve(4, 3), [0, 0, 0]);
    }

    #[test]
    fn parses_names_and_lists() {
        let spec: OwnerSpec = serde_json::from_str("[1, 0, 2]").unwrap();
        assert_eq!(spec, OwnerSpec::Explicit(vec![1, 0, 2]));
        let err = serde_json::from_str::<OwnerSpec>("\"fastest\"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown owner map `fastest`, expected `round_robin`, `first_rank`, `greedy_slack`, `optimized` or a list with one rank per microbatch at line 1 column 9"
        );
        assert_eq!(
            serde_json::to_string(&OwnerSpec::FirstRank).unwrap(),
            "\"first_rank\""
        );
    }
}
