//! The timeline scene: everything a Gantt chart of a simulation shows, computed once, which both
//! the SVG renderer and the app paint. One lane per rank with its compute events in time order,
//! the transfers arriving there, the warmup window, the encoder spill and the idle stretches
//! (bubbles) classified by where they fall; each region's colour from the role of its layers;
//! and the dependencies of any event, looking through the collectives between them.

use crate::graph::event::{EdgeKind, Event};
use crate::schedules::skeleton::Skeleton;
use crate::sim::metrics::{Gap, idle_gaps, wavefront_span};
use crate::sim::run::Simulation;
use crate::view::palette::{self, Rgb};
use crate::view::timings::{CommTiming, EventTiming, comm_timings, event_timings};
use crate::vocab::phase::Phase;
use crate::vocab::role::Role;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use serde::Serialize;
use std::ops::Range;

/// How one region is drawn.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RegionStyle {
    /// 1-based.
    pub region: usize,
    /// The role most of its layers have (the first such role on a tie).
    pub role: Role,
    pub skeleton: Skeleton,
    /// For a bidirectional schedule's mirror: its region, and the first microbatch it runs
    /// (the second direction runs `M/2..M`).
    pub mirror_of: Option<(usize, usize)>,
    pub forward: Rgb,
    /// The whole backward, and the input half `I` of a split one.
    pub backward: Rgb,
    /// The weight half `W` of a split backward.
    pub weight: Rgb,
}

impl RegionStyle {
    /// `region 1 · encoder · transpose`; a mirror says whose and which microbatches it runs
    /// (`region 2 · backbone · dualpipe, region 1's mirror (microbatches from 4, upwards)`).
    pub fn label(&self) -> String {
        let mut label = format!(
            "region {} · {} · {}",
            self.region,
            self.role.name(),
            self.skeleton
        );
        if let Some((of, from)) = self.mirror_of {
            label.push_str(&format!(
                ", region {of}'s mirror (microbatches from {from}, upwards)"
            ));
        }
        label
    }

    /// Whether the region's schedule may split its backward into `I` and `W`.
    pub fn split(&self) -> bool {
        self.skeleton.may_split_backward()
    }

    /// The fill of a compute event of this region.
    pub fn colour(&self, phase: Phase) -> Rgb {
        match phase {
            Phase::Forward | Phase::EnergyForward => self.forward,
            Phase::Backward | Phase::Input | Phase::EnergyBackward => self.backward,
            Phase::Weight | Phase::ForceBackward => self.weight,
            // A forward run again: the forward's colour, lighter (a second-order schedule's FF
            // never shares a timeline with it).
            Phase::ForceForward | Phase::Recompute => {
                crate::view::palette::light_shade(self.forward)
            }
        }
    }
}

/// A stretch of time `[start_s, end_s)`.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub start_s: f64,
    pub end_s: f64,
}

/// One rank's lane.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Lane {
    pub rank: usize,
    /// The wavefront stages the rank holds, chunk by chunk (`[r, P + r, …]` by default; the V
    /// fold gives `[r, 2P − 1 − r]`).
    pub stages: Vec<crate::vocab::ids::Stage>,
    /// Its compute events: a range of [`Scene::events`], in time order.
    pub events: Range<usize>,
    /// Indices into [`Scene::transfers`] of the transfers arriving on this rank, by start.
    pub transfers: Vec<u32>,
    /// The warmup window: `w_r` with a transposed encoder, else the idle time before the rank's
    /// first backbone (wavefront) forward.
    pub warmup: Option<Interval>,
    /// From the first backbone (wavefront) forward's start to the last backbone event's end.
    pub wavefront: Option<Interval>,
    /// Encoder spill: from the end of `w_r` to the first backbone forward, when that is later.
    pub spill: Option<Interval>,
    /// Idle stretches of the compute stream, in time order.
    pub bubbles: Vec<Gap>,
}

/// A data dependency between two compute events, possibly through a collective.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    /// Index into [`Scene::events`] of the producer.
    pub from: usize,
    /// Index into [`Scene::events`] of the consumer.
    pub to: usize,
    pub kind: EdgeKind,
}

/// The chart of one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub ranks: usize,
    /// Whether stages sit on their default ranks (`stage = rank + (region − 1)·P`); when not,
    /// the lanes say which stages each rank holds.
    pub default_placement: bool,
    pub makespan_s: f64,
    pub regions: Vec<RegionStyle>,
    /// Compute events, rank by rank, each rank's in time order.
    pub events: Vec<EventTiming>,
    /// Transfers and reduces that take time.
    pub transfers: Vec<CommTiming>,
    pub lanes: Vec<Lane>,
    /// The event of each node of the order graph (`u32::MAX`: not a compute event).
    event_of_node: Vec<u32>,
}

/// Pixels a chip label of `chars` characters needs (11 px text: 7 px a character, 4 px margin).
pub fn label_width(chars: usize) -> f64 {
    7.0 * chars as f64 + 4.0
}

/// The label a chip `width_px` wide shows: the action (`4F0`, which names the stage, so the
/// encoder's events read differently from the backbone's) when it fits, else its phase and
/// microbatch (`F0`, `I3`, `FE2`: what a lesson is about — lanes of digits alone said nothing of
/// forward or backward at the default zoom of VPP-3, ZB or UMA), else the microbatch, else
/// nothing.
pub fn chip_label(e: &EventTiming, width_px: f64) -> Option<String> {
    chip_text(
        e.action.stage.index(),
        e.action.phase,
        e.mb().index(),
        width_px,
        false,
    )
}

/// Pixels a two-line chip label needs (9 px monospace text, 5.5 px a character, 2 px margin):
/// its longer line of `chars` characters.
pub fn stacked_label_width(chars: usize) -> f64 {
    5.5 * chars as f64 + 2.0
}

/// [`chip_label`] of an event of stage `stage`, phase `phase`, microbatch `mb`; with `stacked`
/// (a lane tall enough for two lines of small text), before the microbatch alone, the phase
/// over the microbatch (`F\n0`). Nothing is formatted for a chip too narrow for any label (the
/// chart asks this of every visible box).
pub fn chip_text(
    stage: usize,
    phase: Phase,
    mb: usize,
    width_px: f64,
    stacked: bool,
) -> Option<String> {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let code = phase.code();
    if width_px >= label_width(digits(stage) + code.len() + digits(mb)) {
        Some(format!("{stage}{code}{mb}"))
    } else if width_px >= label_width(code.len() + digits(mb)) {
        Some(format!("{code}{mb}"))
    } else if stacked && width_px >= stacked_label_width(code.len().max(digits(mb))) {
        Some(format!("{code}\n{mb}"))
    } else if width_px >= label_width(digits(mb)) {
        Some(mb.to_string())
    } else {
        None
    }
}

/// The role most of `roles` have; the first such role on a tie; `Other` when empty.
fn majority(roles: &[Role]) -> Role {
    let mut best = (0usize, Role::Other);
    for role in Role::ALL {
        let n = roles.iter().filter(|&&r| r == role).count();
        let first = roles.iter().position(|&r| r == role);
        let best_first = roles.iter().position(|&r| r == best.1);
        if n > best.0 || (n == best.0 && n > 0 && first < best_first) {
            best = (n, role);
        }
    }
    best.1
}

/// The role of each region of a model whose expanded layers have `layer_roles`, cut at `cut`.
pub fn region_roles(layer_roles: &[Role], cut: &[usize]) -> Vec<Role> {
    let mut bounds = vec![0];
    bounds.extend(cut.iter().copied());
    bounds.push(layer_roles.len());
    bounds
        .windows(2)
        .map(|w| match *w {
            [a, b] => majority(layer_roles.get(a..b.max(a)).unwrap_or_default()),
            _ => Role::Other,
        })
        .collect()
}

/// The forward colour of each region, given their roles: the `n`-th region of a role takes the
/// `n`-th hue of that role's family.
pub fn region_colours(roles: &[Role]) -> Vec<Rgb> {
    roles
        .iter()
        .enumerate()
        .map(|(i, &role)| {
            let nth = roles.iter().take(i).filter(|&&r| r == role).count();
            palette::region_hue(role, nth)
        })
        .collect()
}

impl Scene {
    /// Lays out the simulation.
    pub fn new(sim: &Simulation) -> Scene {
        let d = &sim.derivation;
        let plan = &d.plan;
        let layer_roles: Vec<Role> = plan.layers.iter().map(|l| l.role).collect();
        let roles: Vec<Role> = plan
            .regions
            .iter()
            .map(|r| majority(layer_roles.get(r.layers.clone()).unwrap_or_default()))
            .collect();
        let regions = plan
            .regions
            .iter()
            .zip(region_colours(&roles))
            .zip(&roles)
            .map(|((r, forward), &role)| RegionStyle {
                region: r.index,
                role,
                skeleton: r.skeleton,
                mirror_of: r.mirror_of.zip(plan.second_direction_from()),
                forward,
                backward: palette::backward_shade(forward),
                weight: palette::weight_shade(forward),
            })
            .collect();

        let events = event_timings(sim);
        let transfers = comm_timings(sim);
        let mut event_of_node = vec![u32::MAX; d.order.graph.node_count()];
        for (i, e) in events.iter().enumerate() {
            if let Some(slot) = event_of_node.get_mut(e.node as usize) {
                *slot = u32::try_from(i).unwrap_or(u32::MAX);
            }
        }
        // Each rank's list at its length (counted first).
        let mut counts = vec![0usize; plan.ranks];
        for c in &transfers {
            if let Some(count) = counts.get_mut(c.to_rank.index()) {
                *count += 1;
            }
        }
        let mut arriving: Vec<Vec<u32>> = counts.into_iter().map(Vec::with_capacity).collect();
        for (i, c) in transfers.iter().enumerate() {
            if let (Some(list), Ok(i)) = (arriving.get_mut(c.to_rank.index()), u32::try_from(i)) {
                list.push(i);
            }
        }
        let mut lanes = Vec::with_capacity(plan.ranks);
        let mut at = 0;
        for (rank, mut arriving) in arriving.into_iter().enumerate() {
            let count = events.get(at..).map_or(0, |rest| {
                rest.iter().take_while(|e| e.rank.index() == rank).count()
            });
            arriving.sort_by(|&a, &b| {
                let start = |i: u32| transfers.get(i as usize).map_or(0.0, |c| c.start_s);
                start(a).total_cmp(&start(b))
            });
            let metrics = sim.ranks.get(rank);
            let wavefront = wavefront_span(plan, &d.order, &sim.timeline, rank);
            let first = wavefront.map(|s| s.0);
            let window = metrics.and_then(|m| m.warmup_window_s).or(first);
            // Spill is transpose's (its metric is `None` under a nested encoder, whose delay of
            // the backbone is no spill).
            let spill = match (
                metrics
                    .filter(|m| m.spill_s.is_some())
                    .and_then(|m| m.warmup_window_s),
                first,
            ) {
                (Some(w), Some(s)) if s > w => Some(Interval {
                    start_s: w,
                    end_s: s,
                }),
                _ => None,
            };
            let stages = plan
                .wavefront
                .as_ref()
                .map(|w| {
                    w.all_regions()
                        .filter_map(|region| plan.stage_index(region, rank))
                        .collect()
                })
                .unwrap_or_default();
            lanes.push(Lane {
                rank,
                stages,
                events: at..at + count,
                transfers: arriving,
                warmup: window.filter(|&w| w > 0.0).map(|w| Interval {
                    start_s: 0.0,
                    end_s: w,
                }),
                wavefront: wavefront.map(|(start_s, end_s)| Interval { start_s, end_s }),
                spill,
                bubbles: idle_gaps(plan, &d.order, &sim.timeline, rank),
            });
            at += count;
        }
        Scene {
            ranks: plan.ranks,
            default_placement: plan.placement.is_default(),
            makespan_s: sim.makespan_s,
            regions,
            events,
            transfers,
            lanes,
            event_of_node,
        }
    }

    /// Region `j`'s style (1-based).
    pub fn region(&self, region: usize) -> Option<&RegionStyle> {
        region.checked_sub(1).and_then(|i| self.regions.get(i))
    }

    /// The fill of a compute event of `region`.
    pub fn colour(&self, region: usize, phase: Phase) -> Rgb {
        self.region(region)
            .map_or((0x80, 0x80, 0x80), |r| r.colour(phase))
    }

    /// Rank `rank`'s compute events, in time order.
    pub fn lane_events(&self, rank: usize) -> &[EventTiming] {
        self.lanes
            .get(rank)
            .and_then(|l| self.events.get(l.events.clone()))
            .unwrap_or_default()
    }

    /// The index into [`Scene::events`] of the compute event at `node`, if it is one.
    pub fn event_at_node(&self, node: usize) -> Option<usize> {
        self.event_of_node
            .get(node)
            .filter(|&&i| i != u32::MAX)
            .map(|&i| i as usize)
    }

    /// The compute event rank `rank` runs at `t` (events are half-open `[start, end)`), by
    /// binary search.
    pub fn running(&self, rank: usize, t: f64) -> Option<&EventTiming> {
        let lane = self.lane_events(rank);
        let i = lane.partition_point(|e| e.start_s <= t);
        lane.get(i.checked_sub(1)?)
            .filter(|e| e.start_s <= t && t < e.end_s)
    }

    /// Each rank's compute events, in time order (starts and ends are both non-decreasing: a
    /// rank's stream runs one event at a time).
    fn lane_slices(&self) -> impl Iterator<Item = &[EventTiming]> {
        self.lanes
            .iter()
            .filter_map(|l| self.events.get(l.events.clone()))
    }

    /// The first instant after `t` at which a compute event starts or ends (stepping a cursor).
    pub fn next_boundary(&self, t: f64) -> Option<f64> {
        self.lane_slices()
            .flat_map(|lane| {
                let start = lane.get(lane.partition_point(|e| e.start_s <= t));
                let end = lane.get(lane.partition_point(|e| e.end_s <= t));
                start
                    .map(|e| e.start_s)
                    .into_iter()
                    .chain(end.map(|e| e.end_s))
            })
            .min_by(f64::total_cmp)
    }

    /// The last instant before `t` at which a compute event starts or ends (stepping back).
    pub fn previous_boundary(&self, t: f64) -> Option<f64> {
        fn last(lane: &[EventTiming], n: usize) -> Option<&EventTiming> {
            lane.get(n.checked_sub(1)?)
        }
        self.lane_slices()
            .flat_map(|lane| {
                let start = last(lane, lane.partition_point(|e| e.start_s < t));
                let end = last(lane, lane.partition_point(|e| e.end_s < t));
                start
                    .map(|e| e.start_s)
                    .into_iter()
                    .chain(end.map(|e| e.end_s))
            })
            .max_by(f64::total_cmp)
    }

    /// The compute events one data hop up- and downstream of event `index` (looking through
    /// collectives and the loss): what it waited for and what waits for it.
    pub fn dependencies(&self, sim: &Simulation, index: usize) -> Vec<Dependency> {
        let g = &sim.derivation.order.graph;
        let Some(e) = self.events.get(index) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for dir in [Direction::Incoming, Direction::Outgoing] {
            // (node, kind of the first edge) frontier, through at most two collectives.
            let mut frontier: Vec<(NodeIndex, Option<EdgeKind>)> =
                vec![(NodeIndex::new(e.node as usize), None)];
            for _ in 0..3 {
                let mut next = Vec::new();
                for (n, kind) in frontier {
                    for edge in g.edges_directed(n, dir) {
                        let m = if dir == Direction::Incoming {
                            edge.source()
                        } else {
                            edge.target()
                        };
                        let kind = kind.unwrap_or(*edge.weight());
                        match g.node_weight(m) {
                            // Look through transfers, offload's copies and the (instant) loss.
                            Some(Event::Coll { .. } | Event::Copy { .. } | Event::Loss { .. }) => {
                                next.push((m, Some(kind)))
                            }
                            _ => {
                                if let Some(j) = self.event_at_node(m.index()) {
                                    let (from, to) = if dir == Direction::Incoming {
                                        (j, index)
                                    } else {
                                        (index, j)
                                    };
                                    out.push(Dependency { from, to, kind });
                                }
                            }
                        }
                    }
                }
                frontier = next;
            }
        }
        out.sort_by_key(|d| (d.from, d.to));
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_takes_the_role_most_of_its_layers_have() {
        use Role::*;
        assert_eq!(majority(&[Encoder, Backbone, Backbone]), Backbone);
        assert_eq!(majority(&[Encoder, Backbone]), Encoder);
        assert_eq!(majority(&[]), Other);
        let roles = region_roles(&[Encoder, Encoder, Backbone, Backbone, Backbone], &[2]);
        assert_eq!(roles, [Encoder, Backbone]);
        // Three backbone chunks take three different hues; the encoder stays amber.
        let colours = region_colours(&[Encoder, Backbone, Backbone, Backbone]);
        assert_eq!(colours[0], palette::region_hue(Encoder, 0));
        assert_eq!(colours[1], palette::region_hue(Backbone, 0));
        assert_ne!(colours[2], colours[1]);
        assert_ne!(colours[3], colours[2]);
    }
}
