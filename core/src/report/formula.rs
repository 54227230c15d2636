//! A schedule's textbook formula beside its simulation: the costs read off the simulation (one
//! stage's forward `t_F` and backward `t_B` of one microbatch), the formula's step, bubble and
//! activation memory at those costs, and — where the simulated step departs from the formula —
//! why, in the terms of the setting the formula assumes (uniform stages, free links, no
//! runtime overhead). `mpipe simulate` prints it; the app shows it under the summary.

use crate::graph::event::Event;
use crate::schedules::skeleton::Skeleton;
use crate::schedules::{Formula, Uniform};
use crate::sim::run::Simulation;
use crate::vocab::layout::Layout;
use crate::vocab::phase::Half;
use crate::vocab::units::secs;

/// The formula of the schedule a simulation ran, read against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub skeleton: Skeleton,
    pub formula: Formula,
    /// The costs the formula is evaluated at: the mean forward and backward of one stage and
    /// microbatch in the simulation (of a second-order schedule, its mean phase, in both).
    pub costs: Uniform,
    pub simulated_step_s: f64,
    pub simulated_bubble: f64,
    /// The most activations a rank holds in the simulation, in units of one stage's
    /// microbatch (`A`: the mean over the wavefront's stages), beside the formula's; `None`
    /// where a stage saves nothing, and with a transposed encoder (whose outputs and
    /// activations come on top of the backbone's).
    pub simulated_peak_activations: Option<f64>,
    /// Why the simulated step departs from the formula's; empty when the simulation is in the
    /// formula's setting.
    pub departures: Vec<String>,
    /// Mpipe's analytic spill over the backbone's formula, for a transposed encoder before the
    /// pipeline (`None` without one).
    pub spill: Option<Spill>,
}

/// Mpipe's closed form for a transposed encoder (the paper, §4.3): rank `r` runs its encodes,
/// `E_r` of work, in its warmup window `w_r` — the idle before its first backbone forward, which
/// under the formula's setting is `s_r·t_F`, `s_r` the forwards before its first stage on the
/// first microbatch's path — and exposes `spill_r = max(0, E_r − w_r)`; the step is the
/// backbone's formula plus the worst rank's spill. Where the backbone alone runs as its formula
/// says (the formula's setting: uniform stages, free links, its own order and placement, no
/// overlapped pairs), a lower bound of the step — a rank's first backbone forward waits for its
/// encodes, and what follows it takes `step − w_r` at least — and equal to it when the encoder is
/// frozen, no encode is late for the first backbone stage and each rank's first forward is on
/// the backbone's critical path (the textbook schedules' warmup diagonal).
#[derive(Debug, Clone, PartialEq)]
pub struct Spill {
    /// `w_r` of each rank.
    pub warmup_s: Vec<f64>,
    /// `E_r` of each rank: the encoder forwards it runs.
    pub work_s: Vec<f64>,
    /// `max_r spill_r`.
    pub max_s: f64,
    /// Of the ranks that encode, the one whose `E_r − w_r` is the largest (the first of
    /// equals): the worst spill, or, where no rank spills, the one closest to (0 where none
    /// encodes).
    pub worst_rank: usize,
    /// The backbone formula's bubble fraction with the encoder's work counted busy.
    pub bubble_fraction: f64,
}

impl Reading {
    /// The formula's step: the backbone's, plus Mpipe's spill where an encoder is transposed.
    pub fn step_s(&self) -> f64 {
        self.formula.step_s + self.spill.as_ref().map_or(0.0, |s| s.max_s)
    }

    /// The formula's bubble fraction (of the whole step, the encoder's work busy where there is
    /// one).
    pub fn bubble_fraction(&self) -> f64 {
        self.spill
            .as_ref()
            .map_or(self.formula.bubble_fraction, |s| s.bubble_fraction)
    }
}

/// Mpipe's spill over a backbone's step, as its formula is written.
pub const MPIPE_SPILL: &str = "max_r max(0, E_r − w_r)";

/// Relative spread below which costs count as equal.
const EQUAL: f64 = 1e-9;

/// Whether two costs differ beyond rounding.
fn differ(a: f64, b: f64) -> bool {
    (a - b).abs() > EQUAL * a.abs().max(b.abs()).max(1e-12)
}

/// The formula of `sim`'s schedule read against it, or why there is none: a schedule with a
/// Replicated region other than a transposed encoder before a one-directional pipeline (which
/// reads as Mpipe's spill over the backbone's formula, [`Spill`]), one without a wavefront, or a
/// schedule that gives no formula for this shape.
pub fn read(sim: &Simulation) -> Result<Reading, String> {
    let plan = &sim.derivation.plan;
    let wavefront = plan
        .wavefront
        .as_ref()
        .ok_or("no pipeline wavefront: no textbook formula applies")?;
    let skeleton = wavefront.skeleton;
    // A transposed encoder before a one-directional pipeline has Mpipe's spill on top of the
    // backbone's formula; any other Replicated region runs outside every formula.
    let transposed = crate::sim::encoder_free::spills(plan)
        .then(|| crate::sim::encoder_free::source_region(plan))
        .flatten();
    if let Some(r) = plan
        .regions
        .iter()
        .find(|r| r.layout() == Layout::Replicated && Some(r.index) != transposed)
    {
        return Err(format!(
            "no textbook formula: region {} ({}) runs outside the pipeline's formula{}",
            r.index,
            r.skeleton.name(),
            r.skeleton
                .schedule()
                .no_formula()
                .map_or(String::new(), |why| format!(" ({why})"))
        ));
    }
    // (DualPipe and Chimera stand alone today; the spill's windows are one direction's.)
    if transposed.is_some() && skeleton.schedule().bidirectional() {
        return Err(format!(
            "no textbook formula: Mpipe's spill is written for one direction's warmup, and {} runs two",
            skeleton.name()
        ));
    }
    if let Some(why) = skeleton.schedule().no_formula() {
        return Err(format!("no textbook formula: {} ({why})", skeleton.name()));
    }
    let ctx = plan.run_ctx(wavefront);
    let costs = Costs::of(sim, transposed);
    let uniform = costs.uniform(skeleton.second_order());
    let formula = skeleton.schedule().formula(&ctx, uniform).ok_or_else(|| {
        format!(
            "{} gives no textbook formula for this shape (P = {}, M = {}, v = {}) at these costs",
            skeleton.name(),
            ctx.ranks,
            ctx.microbatches,
            ctx.chunks
        )
    })?;
    let mut departures = Vec::new();
    // The formula is the schedule's own order on its own placement.
    let own_placement = plan.is_placed_as(skeleton.schedule().placement());
    if sim.derivation.order_note.is_some() {
        departures.push(match own_placement {
            false => "the order is not the schedule's own: it is list-scheduled over a placement the schedule's slots do not assume".to_string(),
            // Slots list-scheduled in units (Hanayo's), made again with the stages' times.
            true => "the order is not the schedule's own: it is list-scheduled again with each stage's own times".to_string(),
        });
    } else if !own_placement {
        departures.push("the placement is not the schedule's own".to_string());
    }
    let spreads: &[(&str, Spread)] = if skeleton.second_order() {
        &[("phases", costs.forward)]
    } else {
        &[("forwards", costs.forward), ("backwards", costs.backward)]
    };
    for (what, spread) in spreads {
        if let Some((lo, hi)) = spread.range()
            && differ(lo, hi)
        {
            departures.push(format!(
                "{what} differ between stages or microbatches ({}–{}; the formula takes their mean)",
                secs(lo),
                secs(hi)
            ));
        }
    }
    if costs.input.n > 0 && costs.weight.n > 0 {
        let (i, w) = (costs.input.mean(), costs.weight.mean());
        if differ(i, w) {
            departures.push(format!(
                "the backward's halves differ (I {}, W {} on average; the formula takes them equal)",
                secs(i),
                secs(w)
            ));
        }
    }
    let overlap = plan.hardware.fb_overlap.unwrap_or(0.0);
    if overlap > 0.0 && !sim.derivation.order.pairs.is_empty() {
        departures.push(format!(
            "overlapped pairs hide {overlap}·min(t_F, t_B) of each pair's slot (hardware.fb_overlap; the formula's F&B is t_F + t_B)"
        ));
    }
    if costs.transfer_s > 0.0 {
        departures.push(format!(
            "transfers take time (up to {} each; the formula's links are free)",
            secs(costs.transfer_s)
        ));
    }
    if costs.reduce_s > 0.0 {
        departures.push(format!(
            "the data-parallel gradient reduce takes {}",
            secs(costs.reduce_s)
        ));
    }
    if plan.layers.iter().any(|l| l.rerun_share > 0.0) {
        departures.push(
            "recomputed layers run their forward again (in the backward, or just before it where placed early) and keep less (the formula keeps every activation)".to_string(),
        );
    }
    if plan.layers.iter().any(|l| l.offload_share > 0.0) && !skeleton.second_order() {
        departures.push(
            "offloaded activations leave the device between forward and backward, and a backward waits for their copy back".to_string(),
        );
    }
    if sim.stage_comm.any() {
        let all: f64 = sim.stage_comm.total_s.iter().sum();
        let exposed: f64 = sim.stage_comm.exposed_s.iter().sum();
        departures.push(format!(
            "the stages run collectives inside them ({} in all, {} exposed; the formula's times hold the exposed part)",
            secs(all),
            secs(exposed)
        ));
    }
    let host_wait = sim.host_wait_s.iter().copied().fold(0.0, f64::max);
    if host_wait > 0.0 {
        departures.push(format!(
            "the host launches some actions slower than the device runs them (the device waits up to {} inside one)",
            secs(host_wait)
        ));
    }
    let overhead = sim.runtime_s.iter().copied().fold(0.0, f64::max);
    if overhead > 0.0 {
        departures.push(format!(
            "the runtime's own time per action (up to {})",
            secs(overhead)
        ));
    }
    let spill = transposed.map(|source| {
        departures.extend(encoder_departures(sim, source));
        spill(sim, &formula, uniform)
    });
    Ok(Reading {
        skeleton,
        formula,
        costs: uniform,
        simulated_step_s: sim.makespan_s,
        simulated_bubble: sim.bubble_fraction,
        // The encoder's outputs and activations come on top of the backbone's: not in `A`s.
        simulated_peak_activations: match spill {
            Some(_) => None,
            None => peak_activations(sim),
        },
        departures,
        spill,
    })
}

/// Mpipe's spill of `sim`'s transposed encoder over the backbone's `formula` at `costs`.
fn spill(sim: &Simulation, formula: &Formula, costs: Uniform) -> Spill {
    let plan = &sim.derivation.plan;
    let first = first_stages(plan);
    let warmup_s: Vec<f64> = first
        .iter()
        .map(|s| s.map_or(0.0, |s| s as f64 * costs.forward_s))
        .collect();
    let work_s: Vec<f64> = (0..plan.ranks)
        .map(|r| {
            sim.ranks
                .get(r)
                .and_then(|m| m.encoder_work_s)
                .unwrap_or(0.0)
        })
        .collect();
    // Of the ranks that encode (a rank that encodes nothing spills nothing).
    let (mut worst_rank, mut over) = (0, f64::NEG_INFINITY);
    for (r, (e, w)) in work_s.iter().zip(&warmup_s).enumerate() {
        if *e > 0.0 && e - w > over {
            (worst_rank, over) = (r, e - w);
        }
    }
    let max_s = over.max(0.0);
    // The backbone keeps `1 − b` of `P ×` its step busy; the encodes add theirs, over the
    // longer step.
    let p = plan.ranks.max(1) as f64;
    let step = formula.step_s + max_s;
    let busy = (1.0 - formula.bubble_fraction) * formula.step_s + work_s.iter().sum::<f64>() / p;
    Spill {
        warmup_s,
        work_s,
        max_s,
        worst_rank,
        bubble_fraction: if step > 0.0 { 1.0 - busy / step } else { 0.0 },
    }
}

/// Of each rank, how many forwards come before its first backbone stage on the first
/// microbatch's path through the wavefront's chunks (`None`: it holds none).
fn first_stages(plan: &crate::algebra::plan::Plan) -> Vec<Option<usize>> {
    let mut first = vec![None; plan.ranks];
    let chunks = plan.wavefront.iter().flat_map(|w| &w.regions);
    let path = chunks.flat_map(|&region| plan.placement.region_ranks(region));
    for (at, &rank) in path.enumerate() {
        if let Some(slot @ None) = first.get_mut(rank) {
            *slot = Some(at);
        }
    }
    first
}

/// Where the simulation of a transposed encoder (region `source`) leaves Mpipe's setting: an
/// encoder that trains (its backwards run in the cooldown, which the spill does not count), an
/// encode late for the first backbone stage (the gather, not the warmup window, set the start).
fn encoder_departures(sim: &Simulation, source: usize) -> Vec<String> {
    let order = &sim.derivation.order;
    let graph = &order.graph;
    let timeline = &sim.timeline;
    let mut out = Vec::new();
    let trains = graph
        .node_weights()
        .any(|e| matches!(e, Event::Bwd { region, .. } if region.index() == source));
    if trains {
        out.push(
            "the encoder trains: its backwards run in the cooldown, which Mpipe's spill (its forwards' against the warmup) does not count".to_string(),
        );
    }
    // The first backbone stage's forwards: each waits for its encode (over its gather) and for
    // its rank's previous event; where the encode itself ended after that event, it was late
    // (a gather's own time on the link is the transfers' departure).
    let plan = &sim.derivation.plan;
    let Some(&chunk) = plan.wavefront.as_ref().and_then(|w| w.regions.first()) else {
        return out;
    };
    let Some(&rank) = plan.placement.region_ranks(chunk).first() else {
        return out;
    };
    let (mut late, mut longest) = (0usize, None::<(f64, usize)>);
    let mut free_at = 0.0f64;
    for &n in order.nodes.get(rank).map(Vec::as_slice).unwrap_or_default() {
        let Some(end) = timeline.end_of(n) else {
            continue;
        };
        if let Some(&Event::Fwd { region, mb, .. }) = graph.node_weight(n)
            && region.index() == chunk
            && let Some(encoded) = encode_end(sim, n, source)
            && encoded > free_at
            && differ(encoded, free_at)
        {
            late += 1;
            let wait = encoded - free_at;
            if longest.is_none_or(|(w, _)| wait > w) {
                longest = Some((wait, mb.index()));
            }
        }
        free_at = free_at.max(end);
    }
    if let Some((wait, mb)) = longest {
        out.push(format!(
            "the first backbone stage waited for {late} encode{} (up to {}, microbatch {mb}'s, on rank {}): the encode, not the warmup window, set {} start",
            if late == 1 { "" } else { "s" },
            secs(wait),
            plan.owner_of(mb),
            if late == 1 { "its" } else { "their" }
        ));
    }
    out
}

/// When the encode that backbone forward `n` reads (over its gather from region `source`)
/// ended; `None` for a forward that reads none.
fn encode_end(sim: &Simulation, n: petgraph::graph::NodeIndex, source: usize) -> Option<f64> {
    use petgraph::Direction::Incoming;
    let graph = &sim.derivation.order.graph;
    let gather = graph.neighbors_directed(n, Incoming).find(|&c| {
        matches!(graph.node_weight(c), Some(Event::Coll { seam, .. }) if seam.from.index() == source)
    })?;
    let encode = graph.neighbors_directed(gather, Incoming).find(|&e| {
        matches!(graph.node_weight(e), Some(Event::Fwd { region, .. }) if region.index() == source)
    })?;
    sim.timeline.end_of(encode)
}

/// The most a rank holds above its static bytes, in one stage's microbatch's activations (the
/// mean over the wavefront's stages, microbatch 0).
fn peak_activations(sim: &Simulation) -> Option<f64> {
    let plan = &sim.derivation.plan;
    let w = plan.wavefront.as_ref()?;
    let (mut sum, mut n) = (0.0, 0usize);
    for region in w.all_regions() {
        for &rank in plan.placement.region_ranks(region) {
            sum += crate::sim::cost::activation_bytes(plan, region, rank, 0);
            n += 1;
        }
    }
    let a = sum / n.max(1) as f64;
    if a.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let held = sim
        .memory
        .iter()
        .map(|c| c.peak_bytes - c.static_bytes)
        .fold(0.0, f64::max);
    Some(held / a)
}

/// `2 A`, or `2.37 A` where the count is not whole.
fn activations(n: f64) -> String {
    if (n - n.round()).abs() < 1e-9 {
        format!("{} A", n.round())
    } else {
        format!("{n:.2} A")
    }
}

/// Smallest, largest and mean of some durations.
#[derive(Debug, Clone, Copy, Default)]
struct Spread {
    lo: f64,
    hi: f64,
    sum: f64,
    n: usize,
}

impl Spread {
    fn add(&mut self, v: f64) {
        if self.n == 0 {
            (self.lo, self.hi) = (v, v);
        } else {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
        self.sum += v;
        self.n += 1;
    }

    fn range(self) -> Option<(f64, f64)> {
        (self.n > 0).then_some((self.lo, self.hi))
    }

    fn mean(self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
}

/// What a simulation's events cost, gathered for the formula.
#[derive(Debug, Clone, Copy, Default)]
struct Costs {
    /// One stage's forward of one microbatch (of a second-order schedule: each phase).
    forward: Spread,
    /// One stage's whole backward of one microbatch (its halves together).
    backward: Spread,
    /// A split backward's input and weight halves.
    input: Spread,
    weight: Spread,
    transfer_s: f64,
    reduce_s: f64,
}

impl Costs {
    /// The costs of `sim`'s events, a transposed encoder's (region `transposed`) left out of the
    /// stages' (its work is Mpipe's `E_r`).
    fn of(sim: &Simulation, transposed: Option<usize>) -> Costs {
        let graph = &sim.derivation.order.graph;
        let plan = &sim.derivation.plan;
        let mut costs = Costs::default();
        // An overlapped pair's halves, as they would take apart (the overlap is named on its
        // own): their nominal time, the runtime's share and their collectives as exposed apart.
        let mut paired = vec![false; graph.node_count()];
        for n in sim.derivation.order.pairs.iter().flatten() {
            if let Some(p) = paired.get_mut(n.index()) {
                *p = true;
            }
        }
        // A split backward's halves add up per stage and microbatch: each part as (stage, mb,
        // time), summed below in a table of every stage's microbatches.
        let mut parts: Vec<(usize, usize, f64)> = Vec::new();
        for n in graph.node_indices() {
            let d = if paired.get(n.index()).copied().unwrap_or(false) {
                crate::sim::cost::duration(plan, graph, n)
                    + sim.runtime_s.get(n.index()).copied().unwrap_or(0.0)
                    + sim
                        .stage_comm
                        .alone_s
                        .get(n.index())
                        .copied()
                        .unwrap_or(0.0)
            } else {
                // Its work: what the device waited for its host is no cost of the schedule's.
                sim.durations().get(n.index()).copied().unwrap_or(0.0)
                    - sim.host_wait_s.get(n.index()).copied().unwrap_or(0.0)
            };
            let event = graph.node_weight(n);
            if transposed.is_some()
                && event.and_then(Event::region).map(|r| r.index()) == transposed
            {
                continue;
            }
            match event {
                Some(Event::Fwd { .. } | Event::FourPhase { .. }) => costs.forward.add(d),
                Some(Event::Bwd {
                    stage, mb, half, ..
                }) => {
                    parts.push((stage.index(), mb.index(), d));
                    match half {
                        Half::Input => costs.input.add(d),
                        Half::Weight => costs.weight.add(d),
                        Half::Whole => {}
                    }
                }
                // An early recomputation is its backward's rerun, run ahead of it.
                Some(Event::Recompute { stage, mb, .. }) => {
                    parts.push((stage.index(), mb.index(), d));
                }
                Some(Event::Coll { .. }) => costs.transfer_s = costs.transfer_s.max(d),
                Some(Event::DpReduce { .. }) => costs.reduce_s = costs.reduce_s.max(d),
                _ => {}
            }
        }
        // By stage, then microbatch; each sum in the order of its parts' nodes.
        let microbatches = parts.iter().map(|&(_, mb, _)| mb + 1).max().unwrap_or(0);
        let stages = parts
            .iter()
            .map(|&(stage, _, _)| stage + 1)
            .max()
            .unwrap_or(0);
        let mut sums: Vec<Option<f64>> = vec![None; stages.saturating_mul(microbatches)];
        for (stage, mb, d) in parts {
            if let Some(sum) = sums.get_mut(stage * microbatches + mb) {
                *sum = Some(sum.unwrap_or(0.0) + d);
            }
        }
        for d in sums.into_iter().flatten() {
            costs.backward.add(d);
        }
        costs
    }

    /// The uniform costs nearest these: the means (a second-order schedule's phases all take
    /// `t`: its forward and backward are both that).
    fn uniform(&self, second_order: bool) -> Uniform {
        let forward_s = self.forward.mean();
        Uniform {
            forward_s,
            backward_s: if second_order {
                forward_s
            } else {
                self.backward.mean()
            },
        }
    }
}

/// A [`Reading`] as `mpipe simulate --json` gives it (`formula`; keys in the README).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReadingJson {
    pub schedule: Skeleton,
    /// The costs the formula is evaluated at (of a second-order schedule, its one phase time
    /// in both).
    pub t_f_s: f64,
    pub t_b_s: f64,
    /// The step's closed form (with a transposed encoder: the backbone's plus Mpipe's spill)
    /// and its value.
    pub step: String,
    pub step_s: f64,
    pub bubble: String,
    pub bubble_fraction: f64,
    /// The activation memory's closed form and value in `A`, where the formula states one.
    pub activations: Option<&'static str>,
    pub peak_activations: Option<f64>,
    pub simulated_step_s: f64,
    pub simulated_bubble_fraction: f64,
    pub simulated_peak_activations: Option<f64>,
    /// Why the simulation departs from the formula (empty: it is in the formula's setting).
    pub departures: Vec<String>,
    /// Mpipe's spill, with a transposed encoder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spill: Option<SpillJson>,
}

/// [`Spill`] in `mpipe simulate --json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SpillJson {
    pub backbone_step_s: f64,
    pub max_s: f64,
    pub worst_rank: usize,
    pub warmup_s: Vec<f64>,
    pub work_s: Vec<f64>,
}

impl Reading {
    /// The reading as `mpipe simulate --json` gives it.
    pub fn json(&self) -> ReadingJson {
        let f = &self.formula;
        let (step, bubble) = match self.spill {
            Some(_) => (
                format!("{} + {MPIPE_SPILL}", f.step),
                format!("{}, the encodes busy over the whole step", f.bubble),
            ),
            None => (f.step.to_string(), f.bubble.to_string()),
        };
        ReadingJson {
            schedule: self.skeleton,
            t_f_s: self.costs.forward_s,
            t_b_s: self.costs.backward_s,
            step,
            step_s: self.step_s(),
            bubble,
            bubble_fraction: self.bubble_fraction(),
            activations: f.memory,
            peak_activations: f.peak_activations,
            simulated_step_s: self.simulated_step_s,
            simulated_bubble_fraction: self.simulated_bubble,
            simulated_peak_activations: self.simulated_peak_activations,
            departures: self.departures.clone(),
            spill: self.spill.as_ref().map(|s| SpillJson {
                backbone_step_s: f.step_s,
                max_s: s.max_s,
                worst_rank: s.worst_rank,
                warmup_s: s.warmup_s.clone(),
                work_s: s.work_s.clone(),
            }),
        }
    }

    /// The reading in lines: the formula at the costs beside the simulated figures, then why
    /// they differ.
    pub fn lines(&self) -> Vec<String> {
        let f = &self.formula;
        let c = &self.costs;
        let step_s = self.step_s();
        let off = if step_s > 0.0 {
            100.0 * (self.simulated_step_s - step_s) / step_s
        } else {
            0.0
        };
        let costs = if self.skeleton.second_order() {
            format!("t = {} a phase", secs(c.forward_s))
        } else {
            format!("t_F = {}, t_B = {}", secs(c.forward_s), secs(c.backward_s))
        };
        // With a transposed encoder: Mpipe's spill on the backbone's step, the encodes busy.
        let (name, step, bubble) = match &self.spill {
            Some(spill) => (
                format!("⟨transpose, {}⟩", self.skeleton.name()),
                format!(
                    "{} + {MPIPE_SPILL} = {} + {}",
                    f.step,
                    secs(f.step_s),
                    secs(spill.max_s)
                ),
                format!(
                    "{} of the backbone's step, the encodes busy over the whole",
                    f.bubble
                ),
            ),
            None => (
                self.skeleton.name().to_string(),
                f.step.to_string(),
                f.bubble.to_string(),
            ),
        };
        let mut lines = vec![format!(
            "formula ({name}, {costs}): step {step} = {} (simulated {}, {off:+.1} %); bubble {bubble} = {:.1} % (simulated {:.1} %){}",
            secs(step_s),
            secs(self.simulated_step_s),
            100.0 * self.bubble_fraction(),
            100.0 * self.simulated_bubble,
            match (
                f.memory,
                f.peak_activations,
                self.simulated_peak_activations
            ) {
                (Some(m), Some(want), Some(got)) => format!(
                    "; activations held {m} = {want} A (simulated {})",
                    activations(got)
                ),
                (Some(m), Some(want), None) if self.spill.is_some() => format!(
                    "; the backbone's activations held {m} = {want} A (the encoder's on top)"
                ),
                (Some(m), _, _) => format!("; activations held {m}"),
                _ => String::new(),
            },
        )];
        if let Some(spill) = &self.spill {
            let r = spill.worst_rank;
            let at = |list: &[f64]| secs(list.get(r).copied().unwrap_or(0.0));
            let worst = if spill.max_s > 0.0 {
                "the worst is"
            } else {
                "none passes its window; the closest is"
            };
            lines.push(format!(
                "Mpipe's spill: rank r's encodes (E_r) run in its warmup window w_r = s_r·t_F (s_r: the forwards before its first stage); {worst} rank {r}'s, E_{r} = {} against w_{r} = {}",
                at(&spill.work_s),
                at(&spill.warmup_s)
            ));
        }
        if self.departures.is_empty() {
            lines.push("the simulation is in the formula's setting (uniform stages, free links, no overhead)".into());
        } else {
            lines.push(format!(
                "the simulation departs from the formula: {}",
                self.departures.join("; ")
            ));
        }
        lines
    }
}
