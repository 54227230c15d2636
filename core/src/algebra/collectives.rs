//! Seam collectives (Table 2 of the paper), gated by Lemma 1, and weight-gradient reduces:
//! computed once by `derive`, and the order graph is built from them.

use crate::algebra::plan::{Plan, Region};
use crate::vocab::comm::{Comm, Group, Seam};
use crate::vocab::layout::Layout;
use serde::Serialize;

/// Forward and backward collective across a seam of two layouts; `None` for Replicated →
/// Replicated, the identity seam the normal form removes.
pub fn seam_comms(from: Layout, to: Layout) -> Option<(Comm, Comm)> {
    match (from, to) {
        (Layout::Replicated, Layout::Sharded) => Some((Comm::Gather, Comm::Scatter)),
        (Layout::Sharded, Layout::Sharded) => Some((Comm::Send, Comm::RecvGrad)),
        (Layout::Sharded, Layout::Replicated) => Some((Comm::Scatter, Comm::Gather)),
        (Layout::Replicated, Layout::Replicated) => None,
    }
}

/// One seam's collectives: the forward one always, the backward one when gated on.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct SeamCollective {
    pub seam: Seam,
    pub forward: Comm,
    pub backward: Option<Comm>,
}

/// A weight-gradient reduce of a trainable region.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Reduce {
    pub region: usize,
    pub group: Group,
    /// Members of the group: `P × data_parallel` replicas, or `data_parallel` copies of a slab
    /// (twice that for a bidirectional schedule's region and its mirror).
    pub members: usize,
    /// A group of one member reduces nothing.
    pub noop: bool,
}

/// The `collectives` output of `derive`.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Collectives {
    /// Adjacent region pairs.
    pub seams: Vec<SeamCollective>,
    /// Slab-to-slab hops inside Sharded regions.
    pub internal: Vec<SeamCollective>,
    pub reduces: Vec<Reduce>,
}

impl Collectives {
    /// The collectives on the seam `from → to` (`from == to`: between two slabs of one region).
    pub fn on(&self, from: usize, to: usize) -> Option<&SeamCollective> {
        let list = if from == to {
            &self.internal
        } else {
            &self.seams
        };
        list.binary_search_by_key(&(from, to), |c| (c.seam.from.into(), c.seam.to.into()))
            .ok()
            .and_then(|i| list.get(i))
    }
}

/// Derives the collectives of a plan.
pub fn collectives(plan: &Plan) -> Collectives {
    let gates = &plan.gates;
    // Seams join the model's regions; a mirror joins nothing (its region's seams serve both).
    let model: Vec<&Region> = plan.model_regions().collect();
    let seams = model
        .windows(2)
        .zip(gates.iter().skip(1))
        .filter_map(|(pair, downstream)| {
            let (a, b) = (pair.first()?, pair.get(1)?);
            let (forward, backward) = seam_comms(a.layout(), b.layout())?;
            Some(SeamCollective {
                seam: Seam {
                    from: a.index.into(),
                    to: b.index.into(),
                },
                forward,
                backward: downstream.sends_upstream.then_some(backward),
            })
        })
        .collect();
    let internal = plan
        .regions
        .iter()
        .zip(gates.iter())
        .filter(|(r, _)| r.layout() == Layout::Sharded && r.sharded_ranks().len() > 1)
        .map(|(r, g)| SeamCollective {
            seam: Seam {
                from: r.index.into(),
                to: r.index.into(),
            },
            forward: Comm::Send,
            backward: g.runs_backward.then_some(Comm::RecvGrad),
        })
        .collect();
    let reduces = plan
        .regions
        .iter()
        .zip(gates.iter())
        .filter(|(_, g)| g.reduces)
        .map(|(r, _)| {
            let group = match r.layout() {
                Layout::Replicated => Group::ReplicaGroup,
                Layout::Sharded => Group::DataGroup,
            };
            let members = plan.reduce_members(r.index);
            Reduce {
                region: r.index,
                group,
                members,
                noop: members <= 1,
            }
        })
        .collect();
    Collectives {
        seams,
        internal,
        reduces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seam_table() {
        use Layout::*;
        assert_eq!(
            seam_comms(Replicated, Sharded),
            Some((Comm::Gather, Comm::Scatter))
        );
        assert_eq!(
            seam_comms(Sharded, Sharded),
            Some((Comm::Send, Comm::RecvGrad))
        );
        assert_eq!(
            seam_comms(Sharded, Replicated),
            Some((Comm::Scatter, Comm::Gather))
        );
        assert_eq!(seam_comms(Replicated, Replicated), None);
    }
}
