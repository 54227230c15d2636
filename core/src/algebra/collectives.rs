//! Seam collectives (Table 2 of the paper), gated by Lemma 1, and weight-gradient reduces.

use crate::algebra::plan::Plan;
use crate::algebra::skeleton::Layout;
use crate::graph::event::{Comm, Group, Seam};
use serde::Serialize;

/// Lemma 1's three trainability gates for one region.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gates {
    /// (ii) the region receives a gradient, i.e. runs any backward: some `Π_i`, `i ≤ j`, is trainable.
    pub runs_backward: bool,
    /// (i) the region sends its input gradient upstream: some `Π_i`, `i < j`, is trainable.
    pub sends_upstream: bool,
    /// (iii) the region reduces weight gradients: it is trainable itself.
    pub reduces: bool,
}

/// The gates of every region, from the trainable bits alone (Corollary 1: never from the skeletons).
pub fn gates(trainable: &[bool]) -> Vec<Gates> {
    let mut any_before = false;
    trainable
        .iter()
        .map(|&t| {
            let g = Gates {
                runs_backward: any_before || t,
                sends_upstream: any_before,
                reduces: t,
            };
            any_before |= t;
            g
        })
        .collect()
}

/// Forward and backward collective across a seam of two layouts; `None` for Replicated → Replicated,
/// the identity seam the normal form removes.
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
    /// Members of the group: `P × data_parallel` replicas, or `data_parallel` copies of a slab.
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

/// Derives the collectives of a plan.
pub fn collectives(plan: &Plan) -> Collectives {
    let trainable: Vec<bool> = plan.regions.iter().map(|r| r.trainable).collect();
    let gates = gates(&trainable);
    let seams = plan
        .regions
        .windows(2)
        .zip(gates.iter().skip(1))
        .filter_map(|(pair, downstream)| {
            let (a, b) = (pair.first()?, pair.get(1)?);
            let (forward, backward) = seam_comms(a.layout(), b.layout())?;
            Some(SeamCollective {
                seam: Seam {
                    from: a.index,
                    to: b.index,
                },
                forward,
                backward: downstream.sends_upstream.then_some(backward),
            })
        })
        .collect();
    let internal = plan
        .regions
        .iter()
        .zip(&gates)
        .filter(|(r, _)| r.layout() == Layout::Sharded && r.sharded_ranks().len() > 1)
        .map(|(r, g)| SeamCollective {
            seam: Seam {
                from: r.index,
                to: r.index,
            },
            forward: Comm::Send,
            backward: g.runs_backward.then_some(Comm::RecvGrad),
        })
        .collect();
    let reduces = plan
        .regions
        .iter()
        .zip(&gates)
        .filter(|(_, g)| g.reduces)
        .map(|(r, _)| {
            let (group, members) = match r.layout() {
                Layout::Replicated => (Group::ReplicaGroup, plan.ranks * plan.data_parallel),
                Layout::Sharded => (Group::DataGroup, plan.data_parallel),
            };
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
    fn lemma_one_gates() {
        let g = gates(&[false, true, false]);
        assert_eq!(
            g,
            [
                Gates {
                    runs_backward: false,
                    sends_upstream: false,
                    reduces: false
                },
                Gates {
                    runs_backward: true,
                    sends_upstream: false,
                    reduces: true
                },
                Gates {
                    runs_backward: true,
                    sends_upstream: true,
                    reduces: false
                },
            ]
        );
    }

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
