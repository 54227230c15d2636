//! The simulated timeline as a painter and a report read it: every compute event with its rank,
//! action and times (and which half of an overlapped pair it is), every transfer and reduce
//! that takes time.

use crate::graph::event::Event;
use crate::sim::run::Simulation;
use crate::vocab::action::Action;
use crate::vocab::comm::{Comm, Group, Seam};
use crate::vocab::ids::{Mb, Rank, RegionId};
use crate::vocab::units::is_zero;
use petgraph::graph::NodeIndex;
use serde::Serialize;

/// A compute event on the timeline (48 bytes: a scene holds one per compute event, so its ids
/// are the typed 32- and 16-bit ones, and its microbatch and direction are read off its action).
/// Written as JSON with `mb` and `backward` beside the action, as they always were.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTiming {
    pub rank: Rank,
    pub action: Action,
    pub region: RegionId,
    pub start_s: f64,
    pub end_s: f64,
    /// Which half of an overlapped pair `(F;B)OVERLAP_F_B` the event is, if it is one.
    pub pair: Option<PairHalf>,
    /// The event's node in the order graph (not written).
    pub node: u32,
    /// Seconds at its end its stage's collectives keep the rank waiting (exposed tensor-,
    /// expert- or context-parallel communication; 0 when hidden or none).
    pub exposed_comm_s: f64,
}

impl EventTiming {
    /// The microbatch (its action's).
    pub fn mb(&self) -> Mb {
        self.action.mb
    }

    /// Whether the event is a backward (or one of its halves, or a four-phase backward).
    pub fn backward(&self) -> bool {
        self.action.phase.is_backward()
    }
}

impl Serialize for EventTiming {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let written =
            7 + usize::from(self.pair.is_some()) + usize::from(!is_zero(&self.exposed_comm_s));
        let mut out = s.serialize_struct("EventTiming", written)?;
        out.serialize_field("rank", &self.rank)?;
        out.serialize_field("action", &self.action)?;
        out.serialize_field("region", &self.region)?;
        out.serialize_field("mb", &self.mb())?;
        out.serialize_field("backward", &self.backward())?;
        out.serialize_field("start_s", &self.start_s)?;
        out.serialize_field("end_s", &self.end_s)?;
        match &self.pair {
            Some(pair) => out.serialize_field("pair", pair)?,
            None => out.skip_field("pair")?,
        }
        if is_zero(&self.exposed_comm_s) {
            out.skip_field("exposed_comm_s")?;
        } else {
            out.serialize_field("exposed_comm_s", &self.exposed_comm_s)?;
        }
        out.end()
    }
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
    /// `Send`, `RecvGrad`, `Gather`, `Scatter`, `AllReduce(ReplicaGroup)`, … (written as its
    /// name).
    pub comm: CommName,
    pub seam: Option<Seam>,
    pub mb: Option<Mb>,
    pub from_rank: Rank,
    pub to_rank: Rank,
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
    // Room for exactly the events kept (counted first), not grown by copies: a scene of a million
    // events would leave its outgrown lists behind.
    let kept = |n: &&NodeIndex| {
        g.node_weight(**n).is_some_and(Event::is_compute) && sim.timeline.span_of(**n).is_some()
    };
    let mut out = Vec::with_capacity(d.order.nodes.iter().flatten().filter(kept).count());
    for &n in d.order.nodes.iter().flatten().filter(kept) {
        let Some(e) = g.node_weight(n) else { continue };
        let (Some(region), Some(rank), Some(action), Some((start_s, end_s))) =
            (e.region(), e.rank(), e.action(), sim.timeline.span_of(n))
        else {
            continue;
        };
        out.push(EventTiming {
            rank: Rank::new(rank),
            action,
            region,
            start_s,
            end_s,
            pair: halves.get(&n.index()).copied(),
            node: u32::try_from(n.index()).unwrap_or(u32::MAX),
            exposed_comm_s: sim.stage_comm.of(n.index()).1,
        });
    }
    out
}

/// Transfers and reduces that take time, in a list of their number (counted first).
pub fn comm_timings(sim: &Simulation) -> Vec<CommTiming> {
    let g = &sim.derivation.order.graph;
    let timed = |n: NodeIndex| {
        let t = sim.timeline.span_of(n).filter(|(s, e)| e > s)?;
        let event = g
            .node_weight(n)
            .filter(|e| matches!(e, Event::Coll { .. } | Event::DpReduce { .. }))?;
        Some((t, *event))
    };
    let mut out = Vec::with_capacity(g.node_indices().filter_map(timed).count());
    out.extend(
        g.node_indices()
            .filter_map(timed)
            .filter_map(|(t, event)| match event {
                Event::Coll {
                    comm,
                    seam,
                    mb,
                    from_rank,
                    to_rank,
                } => Some(CommTiming {
                    comm: CommName::Transfer(comm),
                    seam: Some(seam),
                    mb: Some(mb),
                    from_rank,
                    to_rank,
                    start_s: t.0,
                    end_s: t.1,
                }),
                Event::DpReduce { rank, group, .. } => Some(CommTiming {
                    comm: CommName::AllReduce(group),
                    seam: None,
                    mb: None,
                    from_rank: rank,
                    to_rank: rank,
                    start_s: t.0,
                    end_s: t.1,
                }),
                _ => None,
            }),
    );
    out
}

/// What a [`CommTiming`] does: a transfer of a seam's collective, or a weight-gradient reduce of
/// a group (two bytes, written as its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommName {
    Transfer(Comm),
    AllReduce(Group),
}

impl CommName {
    /// `Send`, `RecvGrad`, `Gather`, `Scatter`, `AllReduce(ReplicaGroup)`, `AllReduce(DataGroup)`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommName::Transfer(Comm::Gather) => "Gather",
            CommName::Transfer(Comm::Scatter) => "Scatter",
            CommName::Transfer(Comm::Send) => "Send",
            CommName::Transfer(Comm::RecvGrad) => "RecvGrad",
            CommName::AllReduce(Group::ReplicaGroup) => "AllReduce(ReplicaGroup)",
            CommName::AllReduce(Group::DataGroup) => "AllReduce(DataGroup)",
        }
    }
}

impl std::fmt::Display for CommName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name compared with its text (`c.comm == "Send"`).
impl PartialEq<&str> for CommName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for CommName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scene_holds_its_timings_in_48_bytes_each() {
        // A million-event scene holds one of each per compute event and per transfer.
        assert_eq!(std::mem::size_of::<EventTiming>(), 48);
        assert_eq!(std::mem::size_of::<CommTiming>(), 48);
    }

    #[test]
    fn an_event_timing_is_written_with_its_microbatch_and_direction() {
        use crate::vocab::ids::Stage;
        use crate::vocab::phase::Phase;
        let mut e = EventTiming {
            rank: Rank::new(1),
            action: Action {
                stage: Stage::new(5),
                phase: Phase::Input,
                mb: Mb::new(3),
            },
            region: RegionId::new(2),
            start_s: 0.5,
            end_s: 1.0,
            pair: None,
            node: 9,
            exposed_comm_s: 0.0,
        };
        let written = |e: &EventTiming| serde_json::to_value(e).unwrap();
        let text = serde_json::to_string(&e).unwrap();
        assert!(
            text.starts_with(r#"{"rank":1,"action":"#)
                && text
                    .ends_with(r#","region":2,"mb":3,"backward":true,"start_s":0.5,"end_s":1.0}"#),
            "{text}"
        );
        e.pair = Some(PairHalf::Backward);
        e.exposed_comm_s = 0.25;
        let v = written(&e);
        assert_eq!(v["pair"], "backward");
        assert_eq!(v["exposed_comm_s"], 0.25);
        assert!(v.get("node").is_none());
    }
}
