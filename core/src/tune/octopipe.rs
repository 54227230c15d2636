//! OctoPipe's bubble-aware tuner (Algorithm 1, `octopipe-paper` §VI): each iteration simulates
//! the current pipeline, measures its bubbles and picks the phase to tune —
//!
//! - **partitioning** while the bubble time of the ranks differs by more than the cheapest
//!   layer's forward (`Δb > t_layer`): a layer migrates from the most loaded rank's stage to
//!   another rank's, in each Sharded region (per-stage layer counts, zero allowed);
//! - else **placement** while boundary bubbles (before a rank's first backbone forward and after
//!   its last backward) outweigh the residual ones: stage dispersion (a Sharded backbone cut into
//!   more, finer virtual stages, interleaved over the ranks) and layer exchange (a layer moved
//!   across a boundary between virtual stages);
//! - else **scheduling**: over the memory cap, selective `W` advancing (weight halves on the
//!   peak's rank moved before its peak); the split-backward sibling of the skeleton (`1f1b` →
//!   `zb1p`: `F` and the input half `I` of the backward advanced, the weight half `W` delayed
//!   into bubbles); other schedules of the registry.
//!
//! The best candidate of the phase (the shortest step within the memory cap) is taken when it
//! shortens the step; when it does not, the phase is spent until something else changes, and the
//! next one by priority is tried. The search ends when every phase is spent or after `budget`
//! iterations. So the result is never slower than the start, and never above the cap unless the
//! start is (then fitting the cap comes first).

use crate::algebra::budget::{MEMORY_LIMIT_BYTES, Use, check_use};
use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::schedules::skeleton::Skeleton;
use crate::sim::engine::SimOptions;
use crate::sim::run::Simulation;
use crate::tune::pipeline::simulate_scenario;
use crate::vocab::layout::Layout;
use crate::vocab::units::{bytes, secs};
use petgraph::graph::NodeIndex;
use serde::Serialize;
use std::sync::Arc;

/// The three phases, in the tuner's priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Partitioning,
    Placement,
    Scheduling,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Partitioning => "partitioning",
            Phase::Placement => "placement",
            Phase::Scheduling => "scheduling",
        }
    }
}

/// What the tuner may spend and must respect.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Iterations at most.
    pub budget: usize,
    /// Peak memory per rank, bytes (`None`: no cap).
    pub memory_cap: Option<f64>,
    pub sim: SimOptions,
    /// Events one iteration may simulate in all (default [`WORK_BUDGET`]): the candidates are
    /// tried most promising first
    /// and, on a large pipeline, only as many as that allows — so an iteration is bounded in
    /// time and memory whatever the rank count.
    pub work_budget: usize,
    /// Whether the scheduling phase also tries every other first-order Sharded schedule of the
    /// registry on the same cut (false: OctoPipe's own move only, the split-backward sibling,
    /// as the paper's Algorithm 1).
    pub every_schedule: bool,
}

/// Events one iteration of the tuner simulates at most by default (a few seconds on one core).
pub const WORK_BUDGET: usize = 20_000_000;

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            budget: 50,
            memory_cap: None,
            sim: SimOptions::default(),
            work_budget: WORK_BUDGET,
            every_schedule: true,
        }
    }
}

/// A candidate, built only when it is tried: what it changes, and the scenario; with its place
/// in the phase's natural order (ties between equally good candidates go to the earlier one
/// there, whatever order they are tried in).
type Candidate = (usize, Box<dyn Fn() -> (String, Scenario) + Send>);

/// The bubble measures Algorithm 1 chooses its phase by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bubbles {
    /// `Δb`: the largest difference of two ranks' bubble time.
    pub gap_s: f64,
    /// Before each rank's first backbone forward and after its last backward, summed.
    pub boundary_s: f64,
    /// The rest of the ranks' idle time, summed.
    pub residual_s: f64,
    /// `t_layer`: the cheapest layer's forward.
    pub layer_s: f64,
    /// `Σ bubble_r / (P · makespan)`.
    pub fraction: f64,
}

/// One iteration of the search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Iteration {
    /// 1 for the first.
    pub index: usize,
    pub phase: Phase,
    /// The change tried (the best candidate of the phase), or why there was none.
    pub change: String,
    /// Whether it was taken.
    pub taken: bool,
    /// Step time and highest rank's peak after the iteration (of the pipeline kept).
    pub makespan_s: f64,
    pub peak_bytes: f64,
    /// The bubbles the phase was chosen by (before the change).
    pub bubbles: Bubbles,
    /// Of the phase's candidates, how many were simulated (the work budget, or the memory
    /// limit for a candidate that grows the pipeline, may leave some untried).
    pub tried: usize,
    pub candidates: usize,
}

/// What the tuner found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tuned {
    /// The tuned scenario (cut, schedule and per-stage layer counts changed).
    #[serde(skip)]
    pub scenario: Scenario,
    pub start_makespan_s: f64,
    pub start_peak_bytes: f64,
    pub start_bubble_fraction: f64,
    pub makespan_s: f64,
    pub peak_bytes: f64,
    pub bubble_fraction: f64,
    pub iterations: Vec<Iteration>,
    /// Stopped by the caller before the search ended.
    pub stopped: bool,
}

/// A candidate pipeline and what it measures.
struct Measured {
    /// Shared with the candidates built from it.
    scenario: Arc<Scenario>,
    sim: Simulation,
}

impl Measured {
    /// Lower is better: first the bytes over the cap, then the step.
    fn key(&self, cap: Option<f64>) -> (f64, f64) {
        let over = cap.map_or(0.0, |c| (self.sim.peak_memory_bytes() - c).max(0.0));
        (over, self.sim.makespan_s)
    }
}

/// Simulates a candidate; `keep_going` is asked between the simulation's passes (and the
/// owner search's candidates), so Stop is heard inside one.
fn measure(
    scenario: Scenario,
    options: SimOptions,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<Measured> {
    let sim = crate::tune::pipeline::simulate_scenario_cancellable(&scenario, options, &mut |_| {
        keep_going()
    })
    .ok()?;
    sim.makespan_s.is_finite().then_some(Measured {
        scenario: Arc::new(scenario),
        sim,
    })
}

/// Algorithm 1's measures of a simulation.
fn bubbles(m: &Measured) -> Bubbles {
    let ranks = &m.sim.ranks;
    let bubble = |r: &crate::sim::metrics::RankMetrics| r.bubble_s;
    let most = ranks.iter().map(bubble).fold(f64::NEG_INFINITY, f64::max);
    let least = ranks.iter().map(bubble).fold(f64::INFINITY, f64::min);
    let boundary: f64 = ranks
        .iter()
        .map(|r| r.bubble.warmup_s + r.bubble.cooldown_s)
        .sum();
    let total: f64 = ranks.iter().map(bubble).sum();
    let plan = &m.sim.derivation.plan;
    let layer_s = (0..plan.layers.len())
        .map(|l| {
            crate::sim::cost::compute_time(plan, l..l + 1, 0, crate::vocab::phase::Phase::Forward)
        })
        .filter(|t| *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    Bubbles {
        gap_s: if ranks.is_empty() { 0.0 } else { most - least },
        boundary_s: boundary,
        residual_s: (total - boundary).max(0.0),
        layer_s: if layer_s.is_finite() { layer_s } else { 0.0 },
        fraction: m.sim.bubble_fraction,
    }
}

/// The phase Algorithm 1 picks, then the others by priority (partitioning, placement,
/// scheduling).
fn phases(b: &Bubbles) -> [Phase; 3] {
    use Phase::*;
    if b.gap_s > b.layer_s {
        [Partitioning, Placement, Scheduling]
    } else if b.boundary_s > b.residual_s {
        [Placement, Partitioning, Scheduling]
    } else {
        [Scheduling, Partitioning, Placement]
    }
}

/// Per-stage layer counts of every Sharded region (the scenario's, or balanced ones).
fn slabs_of(s: &Scenario, plan: &crate::algebra::plan::Plan) -> Vec<Option<Vec<usize>>> {
    plan.model_regions()
        .map(|r| {
            (r.layout() == Layout::Sharded).then(|| crate::scenario::edit::stage_counts(s, r.index))
        })
        .collect()
}

/// One partitioning move: the destination's busy time, the region, the slabs it moves a layer
/// from and to, and the destination rank.
type Move = (f64, usize, usize, usize, usize);

/// Partitioning: one layer of a Sharded region from the most loaded rank's stage to each other
/// rank's, the least loaded destinations first.
fn partition_candidates(m: &Measured) -> Vec<Candidate> {
    let s = &m.scenario;
    let plan = &m.sim.derivation.plan;
    let Some(most) = m
        .sim
        .ranks
        .iter()
        .max_by(|a, b| a.busy_s.total_cmp(&b.busy_s).then(b.rank.cmp(&a.rank)))
        .map(|r| r.rank)
    else {
        return Vec::new();
    };
    let busy = |rank: usize| m.sim.ranks.get(rank).map_or(0.0, |r| r.busy_s);
    let slabs = Arc::new(slabs_of(s, plan));
    // (busy of the destination, region, from, to): cheap to list and sort for any rank count.
    let mut moves: Vec<Move> = Vec::new();
    for (i, counts) in slabs.iter().enumerate() {
        let Some(counts) = counts else { continue };
        // Slab `k` of a region runs on its `k`-th rank in stage order.
        let Some(region) = plan.regions.get(i) else {
            continue;
        };
        let ranks = region.sharded_ranks();
        let Some(from) = ranks.iter().position(|&r| r == most) else {
            continue;
        };
        if counts.get(from).is_none_or(|&c| c == 0) {
            continue;
        }
        for to in (0..counts.len()).filter(|&to| to != from) {
            let rank = ranks.get(to).copied().unwrap_or(to);
            moves.push((busy(rank), i, from, to, rank));
        }
    }
    let mut moves: Vec<(usize, Move)> = moves.into_iter().enumerate().collect();
    moves.sort_by(|a, b| a.1.0.total_cmp(&b.1.0).then(a.0.cmp(&b.0)));
    moves
        .into_iter()
        .map(|(order, (_, i, from, to, rank))| {
            let (slabs, s) = (slabs.clone(), s.clone());
            let build = Box::new(move || {
                let mut all = (*slabs).clone();
                let mut what = String::new();
                if let Some(Some(counts)) = all.get_mut(i) {
                    let mut now = [0; 2];
                    for (slot, (at, delta)) in now.iter_mut().zip([(from, -1isize), (to, 1)]) {
                        if let Some(c) = counts.get_mut(at) {
                            *c = c.saturating_add_signed(delta);
                            *slot = *c;
                        }
                    }
                    // Every stage's count while it reads at a glance; past that, the two changed
                    // (a line of 65,536 counts says nothing).
                    what = if counts.len() <= 16 {
                        format!("layers per stage {counts:?}")
                    } else {
                        format!("now {} and {} layers", now[0], now[1])
                    };
                }
                let mut c = Scenario::clone(&s);
                c.slabs = Some(all);
                (
                    format!(
                        "region {}: a layer from rank {most} to rank {rank} ({what})",
                        i + 1
                    ),
                    c,
                )
            });
            (order, build as Box<dyn Fn() -> (String, Scenario) + Send>)
        })
        .collect()
}

/// The Sharded backbone's skeleton, when every region is Sharded with that one skeleton (what
/// dispersion and layer exchange re-cut).
fn uniform_backbone(s: &Scenario) -> Option<Skeleton> {
    let first = *s.schedule.first()?;
    (first.layout() == Layout::Sharded && s.schedule.iter().all(|&k| k == first)).then_some(first)
}

/// Placement: stage dispersion (the backbone cut into one more chunk of virtual stages, layers
/// spread evenly) and layer exchange (a boundary between chunks moved by one layer).
fn placement_candidates(m: &Measured) -> Vec<Candidate> {
    let s = &m.scenario;
    let Some(skeleton) = uniform_backbone(s) else {
        return Vec::new();
    };
    let layers = crate::scenario::edit::layer_count(s);
    let chunks = s.schedule.len();
    let mut out: Vec<Candidate> = Vec::new();
    // Finer virtual stages: every chunk count up to one layer a stage (at most 8 a rank).
    let most = (layers / s.ranks.max(1)).min(8);
    if skeleton.schedule().interleaves() {
        for more in chunks + 1..=most {
            let s = s.clone();
            out.push((
                out.len(),
                Box::new(move || {
                    let mut c = Scenario::clone(&s);
                    c.cut = (1..more).map(|k| k * layers / more).collect();
                    c.schedule = vec![skeleton; more];
                    crate::scenario::edit::carry_widths(&mut c, &s.cut);
                    c.slabs = None;
                    (format!("stage dispersion: {more} virtual stages a rank"), c)
                }),
            ));
        }
    }
    for i in 0..s.cut.len() {
        for delta in [-1isize, 1] {
            let Some(to) = s.cut.get(i).and_then(|at| at.checked_add_signed(delta)) else {
                continue;
            };
            let s = s.clone();
            out.push((out.len(), Box::new(move || {
                let mut c = Scenario::clone(&s);
                if let Some(x) = c.cut.get_mut(i) {
                    *x = to;
                }
                // The two regions' stages are rebalanced over their new layers.
                if let Some(slabs) = c.slabs.as_mut() {
                    for r in [i, i + 1] {
                        if let Some(slot) = slabs.get_mut(r) {
                            *slot = None;
                        }
                    }
                }
                (
                    format!(
                        "layer exchange: the boundary between virtual stages {} and {} to layer {to}",
                        i + 1,
                        i + 2
                    ),
                    c,
                )
            })));
        }
    }
    out
}

/// A derivation's per-rank orders as written (action notation) and its owner map: what a move
/// that makes the orders hand-written starts from.
fn written_orders(
    d: &crate::graph::derive::Derivation,
) -> (Arc<Vec<Vec<String>>>, Arc<Vec<usize>>) {
    (
        Arc::new(d.order.written(d.plan.ranks)),
        Arc::new(d.plan.owner.clone()),
    )
}

/// Each of `rank`'s `steps`' compute nodes (an overlapped pair's two), by `nodes`
/// ([`crate::graph::order::Order::nodes_by_action`]).
fn step_nodes(
    nodes: &rustc_hash::FxHashMap<(usize, crate::vocab::action::Action), NodeIndex>,
    rank: usize,
    steps: &[crate::vocab::action::Step],
) -> Vec<Vec<NodeIndex>> {
    steps
        .iter()
        .map(|s| {
            s.actions()
                .filter_map(|a| nodes.get(&(rank, a)).copied())
                .collect()
        })
        .collect()
}

/// When the first of a step's `nodes` starts and the last ends (±∞ for none).
fn step_span(timeline: &crate::graph::time::Timeline, nodes: &[NodeIndex]) -> (f64, f64) {
    nodes
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(s, e), &n| {
            (
                timeline.start_of(n).map_or(s, |t| s.min(t)),
                timeline.end_of(n).map_or(e, |t| e.max(t)),
            )
        })
}

/// Weight halves [`w_advancing_candidates`] advances at most at once.
const W_ADVANCES: usize = 16;

/// Selective `W` advancing (the paper's third scheduling policy): when the pipeline's peak is
/// over the memory cap, the weight halves on the peak's rank whose input half ran before the
/// peak and which themselves run after it, moved — the earliest `k` of them, for each `k` — to
/// run, in their order, just before the step the peak falls in (the first of the rank's steps
/// to end after it), so what they keep is freed before the peak. The paper advances one `W` an
/// iteration, the earliest where no advance is free of bubbles; one at a time stalls where the
/// rank holds its peak more than once (each advance lowers one of them), so here each prefix is
/// a candidate and the tuner takes the one that leaves the fewest bytes over the cap, then the
/// shortest step, then the fewest moved, as it weighs every candidate. Where more than one rank
/// is over the cap, the same candidates follow with every such rank advancing its own earliest
/// `k` at once (one rank's advance cannot lower a peak another rank holds as high). The orders
/// become hand-written (`orders`), which later iterations keep.
fn w_advancing_candidates(m: &Measured, cap: Option<f64>) -> Vec<Candidate> {
    let Some(cap) = cap else {
        return Vec::new();
    };
    let over: Vec<&crate::sim::memory::MemoryCurve> =
        m.sim.memory.iter().filter(|c| c.peak_bytes > cap).collect();
    // The peak's rank (of equal peaks, the last), then every rank over the cap.
    let Some(peak) = over
        .iter()
        .max_by(|a, b| a.peak_bytes.total_cmp(&b.peak_bytes))
    else {
        return Vec::new();
    };
    let d = &m.sim.derivation;
    let nodes = d.order.nodes_by_action();
    let plan = |curve: &crate::sim::memory::MemoryCurve| -> Option<Advance> {
        let (rank, at) = (curve.rank, curve.peak_at_s);
        let steps = d.order.steps(rank);
        let of = step_nodes(&nodes, rank, &steps);
        let to = of
            .iter()
            .position(|ns| step_span(&m.sim.timeline, ns).1 > at)?;
        let movable = movable_weights(&steps, to);
        let peak_step = steps.get(to).map(ToString::to_string).unwrap_or_default();
        (!movable.is_empty()).then_some(Advance {
            rank,
            to,
            movable,
            peak_step,
        })
    };
    let alone: Vec<Advance> = plan(peak).into_iter().collect();
    let together: Vec<Advance> = match over.len() {
        0 | 1 => Vec::new(),
        _ => over.iter().filter_map(|c| plan(c)).collect(),
    };
    let (orders, owner) = written_orders(d);
    let mut out = Vec::new();
    for advances in [alone, together] {
        if advances.is_empty() {
            continue;
        }
        let advances = Arc::new(advances);
        let most = advances.iter().map(|a| a.movable.len()).max().unwrap_or(0);
        for c in 0..2 * most {
            // Candidate `c` moves the `k` earliest, before the peak's step or (odd `c`) each
            // right after its own input half (as early as it may run): fewer moved first.
            let (k, after_input) = (c / 2 + 1, c % 2 == 1);
            let (s, orders, owner, advances) = (
                Arc::clone(&m.scenario),
                Arc::clone(&orders),
                Arc::clone(&owner),
                Arc::clone(&advances),
            );
            let candidate: Candidate = (
                out.len(),
                Box::new(move || {
                    let mut orders = orders.to_vec();
                    let mut said = Vec::new();
                    for a in advances.iter() {
                        let Some(list) = orders.get_mut(a.rank) else {
                            continue;
                        };
                        let moved = a.apply(list, k, after_input);
                        let place = if after_input {
                            "each right after its input half".to_string()
                        } else {
                            format!("before {}", a.peak_step)
                        };
                        said.push(format!("{} {place} on rank {}", moved.join(" "), a.rank));
                    }
                    let mut c = Scenario::clone(&s);
                    crate::scenario::edit::Edit::Orders(Some(orders)).apply(&mut c);
                    // Hand orders name the rank of every Replicated action: a cost-based owner
                    // map is pinned to the one they were derived with.
                    if c.owner.needs_costs() {
                        c.owner = crate::scenario::owner::OwnerSpec::Explicit(owner.to_vec());
                    }
                    let whose = if advances.len() > 1 {
                        "their peaks"
                    } else {
                        "its peak"
                    };
                    (
                        format!(
                            "W advanced: {} ({whose} over the memory cap)",
                            said.join("; ")
                        ),
                        c,
                    )
                }),
            );
            out.push(candidate);
        }
    }
    out
}

/// Of a rank's `steps`, the weight halves after the step at `to` whose input half runs before
/// it (the earliest [`W_ADVANCES`]), by place.
fn movable_weights(steps: &[crate::vocab::action::Step], to: usize) -> Vec<usize> {
    use crate::vocab::action::Step;
    use crate::vocab::phase::Phase as Work;
    let before: Vec<_> = steps.iter().take(to).flat_map(Step::actions).collect();
    steps
        .iter()
        .enumerate()
        .skip(to + 1)
        .filter(|(_, step)| match step {
            Step::One(a) if a.phase == Work::Weight => before
                .iter()
                .any(|b| b.phase == Work::Input && b.stage == a.stage && b.mb == a.mb),
            _ => false,
        })
        .map(|(i, _)| i)
        .take(W_ADVANCES)
        .collect()
}

/// One rank's weight halves to advance: those at `movable` (places in its order), before its
/// peak's step at `to`.
struct Advance {
    rank: usize,
    to: usize,
    movable: Vec<usize>,
    /// The step the peak falls in, in action notation.
    peak_step: String,
}

impl Advance {
    /// Moves the `k` earliest in the rank's written order `list`, before the peak's step or
    /// (`after_input`) each right after its own input half; the moved steps, in order.
    fn apply(&self, list: &mut Vec<String>, k: usize, after_input: bool) -> Vec<String> {
        use crate::vocab::action::Step;
        let mut moved = Vec::new();
        // Taken out from the last, so the earlier ones keep their places.
        for &i in self.movable.iter().take(k).rev() {
            if i < list.len() {
                moved.push(list.remove(i));
            }
        }
        moved.reverse();
        for (j, step) in moved.iter().enumerate() {
            let at = if after_input {
                // Its input half's place (`3I0` for `3W0`), alone or in an overlapped pair,
                // before the peak's step.
                let input = step.replacen('W', "I", 1);
                list.iter()
                    .position(|x| {
                        x.parse::<Step>()
                            .is_ok_and(|s| s.actions().any(|a| a.to_string() == input))
                    })
                    .map_or(self.to + j, |p| p + 1)
            } else {
                self.to + j
            };
            list.insert(at.min(list.len()), step.clone());
        }
        moved
    }
}

/// Idle gaps [`insert_candidates`] fills at most, the longest first.
const INSERTS: usize = 16;

/// Later steps [`insert_candidates`] weighs for the one that fits a gap best.
const FIT_WINDOW: usize = 64;

/// Overlap-aware inserts (the paper's second scheduling policy, generalised): where a rank idles
/// before a step — waiting for a transfer, or for another rank — a later step of its own whose
/// inputs are all in when the gap opens is moved to run in it, so the wait overlaps work. Of
/// each gap two candidates: the first such step, and — where another — the longest of the next
/// [`FIT_WINDOW`] steps that fits the gap whole (as long as it ran), which hides all of itself
/// and delays nothing after the gap where the first may overrun it. The longest gaps first;
/// a move the derivation refuses (a wait that closes a cycle through the other ranks' orders)
/// drops out when it is measured. The orders become hand-written.
fn insert_candidates(m: &Measured) -> Vec<Candidate> {
    use crate::vocab::action::Step;
    let d = &m.sim.derivation;
    let (g, timeline) = (&d.order.graph, &m.sim.timeline);
    let nodes = d.order.nodes_by_action();
    let eps = 1e-9 * m.sim.makespan_s.abs().max(f64::MIN_POSITIVE);
    // (gap, rank, the step moved, where it goes, their names, whether it is the best fit)
    let mut found: Vec<(f64, usize, usize, usize, String, String, bool)> = Vec::new();
    for rank in 0..d.plan.ranks {
        let steps = d.order.steps(rank);
        let of = step_nodes(&nodes, rank, &steps);
        let span = |k: usize| {
            of.get(k).map_or((f64::INFINITY, f64::NEG_INFINITY), |ns| {
                step_span(timeline, ns)
            })
        };
        let (start, end) = (|k| span(k).0, |k| span(k).1);
        for to in 1..steps.len() {
            let opens = end(to - 1);
            if start(to) - opens <= eps {
                continue;
            }
            // Every input of the step (its graph edges: the rank's stream into it, from the step
            // before it, is no edge and is rewired by the move) must be in when the gap opens.
            let ready = |j: usize| {
                let Some(own) = of.get(j) else {
                    return false;
                };
                own.iter().all(|&n| {
                    g.edges_directed(n, petgraph::Direction::Incoming).all(|e| {
                        own.contains(&e.source())
                            || timeline
                                .end_of(e.source())
                                .is_some_and(|t| t <= opens + eps)
                    })
                })
            };
            let Some(first) = (to + 1..steps.len()).find(|&j| ready(j)) else {
                continue;
            };
            let gap = start(to) - opens;
            let name = |k: usize| steps.get(k).map(Step::to_string).unwrap_or_default();
            found.push((gap, rank, first, to, name(first), name(to), false));
            // The longest ready step that fits the gap (the earliest of equals), where it is not
            // the first: the first overruns the gap, or fits it with room to spare.
            let took_first = end(first) - start(first);
            let beats =
                |took: f64| took <= gap + eps && (took_first > gap + eps || took > took_first);
            let fits = (first + 1..steps.len().min(to + 1 + FIT_WINDOW))
                .map(|j| (j, end(j) - start(j)))
                .filter(|&(j, took)| beats(took) && ready(j))
                .fold(None::<(usize, f64)>, |best, (j, took)| match best {
                    Some((_, longest)) if longest >= took => best,
                    _ => Some((j, took)),
                });
            if let Some((fit, _)) = fits {
                found.push((gap, rank, fit, to, name(fit), name(to), true));
            }
        }
    }
    // The longest gaps first (the sort is stable: a gap's first ready step, then its fit),
    // [`INSERTS`] of them.
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut gaps = 0;
    found.retain(|&(.., fit)| {
        gaps += usize::from(!fit);
        gaps <= INSERTS
    });
    if found.is_empty() {
        return Vec::new();
    }
    let (orders, owner) = written_orders(d);
    found
        .into_iter()
        .enumerate()
        .map(|(k, (gap, rank, from, to, moved, before, fit))| {
            let (s, orders, owner) = (
                Arc::clone(&m.scenario),
                Arc::clone(&orders),
                Arc::clone(&owner),
            );
            let candidate: Candidate = (
                k,
                Box::new(move || {
                    let mut c = Scenario::clone(&s);
                    crate::scenario::edit::Edit::MoveStep {
                        orders: orders.to_vec(),
                        rank,
                        from,
                        to,
                        owner: owner.to_vec(),
                    }
                    .apply(&mut c);
                    (
                        format!(
                            "inserted: {moved} before {before} on rank {rank} (into its {} idle{})",
                            secs(gap),
                            if fit {
                                "; the longest ready step that fits it"
                            } else {
                                ""
                            }
                        ),
                        c,
                    )
                }),
            );
            candidate
        })
        .collect()
}

/// The memory limit of a schedule that reads one (`activation_limit`: the automatic
/// zero-bubble scheduler's): the most microbatches' activations a stage may hold, tried at 1,
/// `⌈P/2⌉`, `P − 1`, `P` (the default), `P + 1`, `⌈3P/2⌉` and `2P` (ZB-2p's) but the one it has —
/// below it where memory is short, above it where a stage may hold more to fill its bubbles.
fn activation_limit_candidates(m: &Measured) -> Vec<Candidate> {
    use crate::vocab::parameter::Parameter;
    let s = &m.scenario;
    let Some(reader) = s
        .schedule
        .iter()
        .find(|k| k.reads(Parameter::ActivationLimit))
        .map(|k| k.name())
    else {
        return Vec::new();
    };
    let p = s.ranks;
    let current = s.activation_limit.unwrap_or(p);
    let mut limits = vec![
        1,
        p.div_ceil(2),
        p,
        p.saturating_sub(1),
        p + 1,
        (3 * p).div_ceil(2),
        2 * p,
    ];
    limits.retain(|&l| l >= 1 && l != current);
    limits.sort_unstable();
    limits.dedup();
    limits
        .into_iter()
        .enumerate()
        .map(|(k, limit)| {
            let s = Arc::clone(s);
            let candidate: Candidate = (
                k,
                Box::new(move || {
                    let mut c = Scenario::clone(&s);
                    crate::scenario::edit::Edit::ActivationLimit(Some(limit)).apply(&mut c);
                    (
                        format!(
                            "activation limit: {current} → {limit} microbatches a stage ({reader})"
                        ),
                        c,
                    )
                }),
            );
            candidate
        })
        .collect()
}

/// Scheduling: over the memory cap, [`w_advancing_candidates`]; [`insert_candidates`];
/// [`activation_limit_candidates`]; then the split-backward sibling
/// (`1f1b` → `zb1p`), which advances `F` and `I` and delays `W` into the bubbles; then every
/// other first-order Sharded schedule of the registry on the same cut (the zero-bubble family,
/// the V and bidirectional schedules, the automatic scheduler: those whose rules the shape
/// breaks fall out when measured). Hand-written orders are kept: of these, only the advances
/// and the inserts.
fn scheduling_candidates(m: &Measured, every_schedule: bool, cap: Option<f64>) -> Vec<Candidate> {
    let s = &m.scenario;
    let mut out: Vec<Candidate> = w_advancing_candidates(m, cap);
    let base = out.len();
    out.extend(insert_candidates(m).into_iter().map(|(k, c)| (base + k, c)));
    if s.explicit_orders().is_some() {
        return out;
    }
    let base = out.len();
    out.extend(
        activation_limit_candidates(m)
            .into_iter()
            .map(|(k, c)| (base + k, c)),
    );
    // The first schedule of the scenario that has a split-backward sibling.
    let sibling = s
        .schedule
        .iter()
        .find_map(|&k| k.with_split_backward().map(|split| (k, split)));
    if let Some((from, to)) = sibling {
        let s = s.clone();
        out.push((
            out.len(),
            Box::new(move || {
                let mut c = Scenario::clone(&s);
                for k in &mut c.schedule {
                    if *k == from {
                        *k = to;
                    }
                }
                (
                    format!(
                        "split backward: {from} → {to} (F and I advanced, W delayed into bubbles)"
                    ),
                    c,
                )
            }),
        ));
    }
    let Some(&current) = s
        .schedule
        .iter()
        .find(|k| k.layout() == Layout::Sharded)
        .filter(|_| every_schedule)
    else {
        return out;
    };
    let sharded: Vec<usize> = s
        .schedule
        .iter()
        .enumerate()
        .filter(|(_, k)| k.layout() == Layout::Sharded)
        .map(|(j, _)| j + 1)
        .collect();
    for &to in Skeleton::all() {
        if to == current
            || to.layout() != Layout::Sharded
            || to.second_order() != current.second_order()
            || sibling.is_some_and(|(_, split)| split == to)
        {
            continue;
        }
        let (regions, s) = (sharded.clone(), s.clone());
        out.push((
            out.len(),
            Box::new(move || {
                let mut c = Scenario::clone(&s);
                crate::scenario::edit::Edit::Skeletons {
                    regions: regions.clone(),
                    skeleton: to,
                }
                .apply(&mut c);
                (
                    format!("schedule: {current} → {to} ({})", to.schedule().summary()),
                    c,
                )
            }),
        ));
    }
    out
}

/// Runs Algorithm 1 from `scenario`. `progress` sees every iteration as it ends; when it returns
/// false the search stops with the best pipeline so far.
pub fn tune(
    scenario: &Scenario,
    options: TuneOptions,
    progress: &mut dyn FnMut(&Iteration) -> bool,
) -> Result<Tuned, DeriveError> {
    tune_cancellable(scenario, options, progress, &mut || true)
}

/// [`tune`] that also asks `keep_going` before each candidate it simulates: when it says stop,
/// the search ends within the iteration (the iteration is not recorded) with the best pipeline
/// so far.
pub fn tune_cancellable(
    scenario: &Scenario,
    options: TuneOptions,
    progress: &mut dyn FnMut(&Iteration) -> bool,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Tuned, DeriveError> {
    let mut steps = TuneSteps::new(scenario, options);
    loop {
        if let Some(tuned) = steps.step(progress, keep_going)? {
            return Ok(tuned);
        }
    }
}

/// Algorithm 1 run a simulation a step (what [`tune_cancellable`] loops over): the start, then
/// each candidate of each iteration (the step after an iteration's last candidate ends it, or,
/// when its work budget cuts it, the step that finds so), so a caller without threads (the web
/// build) draws the iterations as they end and hears Stop between candidates. Its steps are not
/// [`crate::tune::Stepped`]'s: the search is never cancelled, Stop ends it with the best so far.
pub struct TuneSteps {
    options: TuneOptions,
    state: TuneState,
}

enum TuneState {
    /// The scenario as given, simulated at the first step.
    Start(Box<Scenario>),
    Searching(Box<Search>),
    /// The result was given.
    Ended,
}

impl std::fmt::Debug for TuneSteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            TuneState::Start(_) => "start",
            TuneState::Searching(_) => "searching",
            TuneState::Ended => "ended",
        };
        f.debug_struct("TuneSteps").field("state", &state).finish()
    }
}

/// The search under way: the pipeline kept, the start's figures, the phases spent, the
/// iterations recorded and the one under way.
struct Search {
    current: Measured,
    start: (f64, f64, f64),
    spent: Vec<Phase>,
    iterations: Vec<Iteration>,
    iteration: Option<Trying>,
}

/// One iteration's candidates being tried, the best so far.
struct Trying {
    phase: Phase,
    bubbles: Bubbles,
    candidates: Vec<Candidate>,
    next: usize,
    /// The events simulated so far this iteration; the next candidate is guessed as large as
    /// the last one tried (the current pipeline, at first).
    used: usize,
    last: usize,
    best: Option<(usize, String, Measured)>,
    tried: usize,
}

impl TuneSteps {
    /// Algorithm 1 from `scenario`; nothing simulated yet.
    pub fn new(scenario: &Scenario, options: TuneOptions) -> TuneSteps {
        TuneSteps {
            options,
            state: TuneState::Start(Box::new(scenario.clone())),
        }
    }

    /// One simulation of the search — the start's, or one candidate's (`keep_going` asked
    /// before it and between its passes) — or the end of an iteration (`progress` sees it);
    /// the result (`Some`) once, when the search ends, stopped or not; `None` while it runs (and
    /// when asked again after the end).
    pub fn step(
        &mut self,
        progress: &mut dyn FnMut(&Iteration) -> bool,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Tuned>, DeriveError> {
        let search = match std::mem::replace(&mut self.state, TuneState::Ended) {
            TuneState::Ended => return Ok(None),
            TuneState::Start(scenario) => {
                let sim = simulate_scenario(&scenario, self.options.sim)?;
                let current = Measured {
                    scenario: Arc::new(*scenario),
                    sim,
                };
                let start = (
                    current.sim.makespan_s,
                    current.sim.peak_memory_bytes(),
                    current.sim.bubble_fraction,
                );
                self.state = TuneState::Searching(Box::new(Search {
                    current,
                    start,
                    spent: Vec::new(),
                    iterations: Vec::new(),
                    iteration: None,
                }));
                return Ok(None);
            }
            TuneState::Searching(search) => search,
        };
        Ok(self.search_step(search, progress, keep_going))
    }

    /// A step of the search proper: `Some` when it ends.
    fn search_step(
        &mut self,
        mut search: Box<Search>,
        progress: &mut dyn FnMut(&Iteration) -> bool,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Option<Tuned> {
        let options = self.options;
        let Some(mut trying) = search.iteration.take() else {
            // A new iteration: the phase its bubbles pick, and its candidates.
            if search.iterations.len() >= options.budget {
                return Some(search.finish(false));
            }
            let b = bubbles(&search.current);
            let Some(phase) = phases(&b).into_iter().find(|p| !search.spent.contains(p)) else {
                return Some(search.finish(false));
            };
            let candidates = match phase {
                Phase::Partitioning => partition_candidates(&search.current),
                Phase::Placement => placement_candidates(&search.current),
                Phase::Scheduling => scheduling_candidates(
                    &search.current,
                    options.every_schedule,
                    options.memory_cap,
                ),
            };
            search.iteration = Some(Trying {
                phase,
                bubbles: b,
                candidates,
                next: 0,
                used: 0,
                last: search.current.sim.derivation.order.graph.node_count(),
                best: None,
                tried: 0,
            });
            self.state = TuneState::Searching(search);
            return None;
        };
        // The next candidate, simulated while the iteration's work budget allows.
        if let Some((order, candidate)) = trying.candidates.get(trying.next) {
            if !keep_going() {
                return Some(search.finish(true));
            }
            if trying.used == 0 || trying.used.saturating_add(trying.last) <= options.work_budget {
                trying.next += 1;
                let (change, s) = candidate();
                // A candidate that grows the pipeline (finer virtual stages) past what the
                // tuner may hold is not tried.
                if check_use(&s, Use::Tune, MEMORY_LIMIT_BYTES, 0.0).is_ok()
                    && let Some(m) = measure(s, options.sim, &mut *keep_going)
                {
                    trying.tried += 1;
                    trying.last = m.sim.derivation.order.graph.node_count();
                    trying.used = trying.used.saturating_add(trying.last);
                    let cap = options.memory_cap;
                    let better = trying.best.as_ref().is_none_or(|(o, _, b)| {
                        let (ka, kb) = (m.key(cap), b.key(cap));
                        ka.0.total_cmp(&kb.0)
                            .then(ka.1.total_cmp(&kb.1))
                            .then(order.cmp(o))
                            .is_lt()
                    });
                    if better {
                        trying.best = Some((*order, change, m));
                    }
                }
                search.iteration = Some(trying);
                self.state = TuneState::Searching(search);
                return None;
            }
        }
        // The iteration ends: its best candidate taken when it shortens the step.
        let it = search.conclude(trying, options.memory_cap);
        let go_on = progress(&it);
        search.iterations.push(it);
        if !go_on {
            return Some(search.finish(true));
        }
        self.state = TuneState::Searching(search);
        None
    }
}

impl Search {
    /// The iteration `trying` ends: its best candidate is kept when it is better than the
    /// pipeline kept (then every phase may be tried again), else its phase is spent.
    fn conclude(&mut self, trying: Trying, cap: Option<f64>) -> Iteration {
        let Trying {
            phase,
            bubbles: b,
            candidates,
            best,
            tried,
            ..
        } = trying;
        let count = candidates.len();
        drop(candidates);
        let current = &self.current;
        let eps = 1e-9 * current.sim.makespan_s.abs().max(f64::MIN_POSITIVE);
        let (change, taken) = match best {
            Some((_, change, m)) => {
                let (new, old) = (m.key(cap), current.key(cap));
                let better = new.0 < old.0 - eps || (new.0 <= old.0 + eps && new.1 < old.1 - eps);
                let change = if better {
                    change
                } else if new.0 > 0.0 {
                    format!(
                        "{change}: over the memory cap ({} at its peak)",
                        bytes(m.sim.peak_memory_bytes())
                    )
                } else {
                    format!("{change}: no shorter ({})", secs(m.sim.makespan_s))
                };
                if better {
                    self.current = m;
                    self.spent.clear();
                } else {
                    self.spent.push(phase);
                }
                (change, better)
            }
            None => {
                self.spent.push(phase);
                ("no candidate".to_string(), false)
            }
        };
        Iteration {
            index: self.iterations.len() + 1,
            phase,
            change,
            taken,
            makespan_s: self.current.sim.makespan_s,
            peak_bytes: self.current.sim.peak_memory_bytes(),
            bubbles: b,
            tried,
            candidates: count,
        }
    }

    /// What the search found, `stopped` by its caller or not.
    fn finish(self, stopped: bool) -> Tuned {
        let (start_makespan_s, start_peak_bytes, start_bubble_fraction) = self.start;
        Tuned {
            makespan_s: self.current.sim.makespan_s,
            peak_bytes: self.current.sim.peak_memory_bytes(),
            bubble_fraction: self.current.sim.bubble_fraction,
            scenario: Arc::unwrap_or_clone(self.current.scenario),
            start_makespan_s,
            start_peak_bytes,
            start_bubble_fraction,
            iterations: self.iterations,
            stopped,
        }
    }
}
