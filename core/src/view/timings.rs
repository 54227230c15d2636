//! The simulated timeline as a painter and a report read it: every compute event with its rank,
//! action and times (and which half of an overlapped pair it is), every transfer and reduce
//! that takes time.

use crate::graph::event::Event;
use crate::sim::run::Simulation;
use crate::vocab::action::Action;
use crate::vocab::comm::{Comm, Group, Seam};
use crate::vocab::phase::Phase;
use serde::Serialize;

/// A compute event on the timeline.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EventTiming {
    pub rank: usize,
    pub action: Action,
    pub region: usize,
    pub mb: usize,
    pub backward: bool,
    pub start_s: f64,
    pub end_s: f64,
    /// Which half of an overlapped pair `(F;B)OVERLAP_F_B` the event is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair: Option<PairHalf>,
    /// The event's node in the order graph.
    #[serde(skip)]
    pub node: usize,
    /// Seconds at its end its stage's collectives keep the rank waiting (exposed tensor-,
    /// expert- or context-parallel communication; 0 when hidden or none).
    #[serde(skip_serializing_if = "is_zero")]
    pub exposed_comm_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// The halves of an overlapped pair: they run as one compute slot, the forward first.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PairHalf {
    Forward,
    Backward,
}

/// A collective on the timeline (transfers and reduces).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct CommTiming {
    /// `Send`, `RecvGrad`, `Gather`, `Scatter`, `AllReduce(ReplicaGroup)`, … (a name, never
    /// built per transfer).
    pub comm: &'static str,
    pub seam: Option<Seam>,
    pub mb: Option<usize>,
    pub from_rank: usize,
    pub to_rank: usize,
    pub start_s: f64,
    pub end_s: f64,
}

/// Compute events of a simulation in rank order, then time order.
pub fn event_timings(sim: &Simulation) -> Vec<EventTiming> {
    let d = &sim.derivation;
    let g = &d.order.graph;
    let halves: rustc_hash::FxHashMap<usize, PairHalf> = d
        .order
        .pairs
        .iter()
        .flat_map(|&[f, b]| {
            [
                (f.index(), PairHalf::Forward),
                (b.index(), PairHalf::Backward),
            ]
        })
        .collect();
    let mut out = Vec::new();
    for nodes in &d.order.nodes {
        for &n in nodes {
            let Some(e) = g.node_weight(n) else { continue };
            let (region, rank, mb, phase) = match *e {
                Event::Fwd {
                    region, rank, mb, ..
                } => (region, rank, mb, Phase::Forward),
                Event::Bwd {
                    region,
                    rank,
                    mb,
                    half,
                    ..
                } => (region, rank, mb, half.phase()),
                Event::FourPhase {
                    region,
                    rank,
                    mb,
                    phase,
                    ..
                } => (region, rank, mb, phase),
                Event::Recompute {
                    region, rank, mb, ..
                } => (region, rank, mb, Phase::Recompute),
                _ => continue,
            };
            let (Some(action), Some((start_s, end_s))) = (e.action(), sim.timeline.span_of(n))
            else {
                continue;
            };
            out.push(EventTiming {
                rank: rank.into(),
                action,
                region: region.into(),
                mb: mb.into(),
                backward: phase.is_backward(),
                start_s,
                end_s,
                pair: halves.get(&n.index()).copied(),
                node: n.index(),
                exposed_comm_s: sim.stage_comm.of(n.index()).1,
            });
        }
    }
    out
}

/// Transfers and reduces that take time.
pub fn comm_timings(sim: &Simulation) -> Vec<CommTiming> {
    let g = &sim.derivation.order.graph;
    g.node_indices()
        .filter_map(|n| {
            let t = sim.timeline.span_of(n).filter(|(s, e)| e > s)?;
            match *g.node_weight(n)? {
                Event::Coll {
                    comm,
                    seam,
                    mb,
                    from_rank,
                    to_rank,
                } => Some(CommTiming {
                    comm: comm_name(comm),
                    seam: Some(seam),
                    mb: Some(mb.into()),
                    from_rank: from_rank.into(),
                    to_rank: to_rank.into(),
                    start_s: t.0,
                    end_s: t.1,
                }),
                Event::DpReduce { rank, group, .. } => Some(CommTiming {
                    comm: match group {
                        Group::ReplicaGroup => "AllReduce(ReplicaGroup)",
                        Group::DataGroup => "AllReduce(DataGroup)",
                    },
                    seam: None,
                    mb: None,
                    from_rank: rank.into(),
                    to_rank: rank.into(),
                    start_s: t.0,
                    end_s: t.1,
                }),
                _ => None,
            }
        })
        .collect()
}

fn comm_name(c: Comm) -> &'static str {
    match c {
        Comm::Gather => "Gather",
        Comm::Scatter => "Scatter",
        Comm::Send => "Send",
        Comm::RecvGrad => "RecvGrad",
    }
}
