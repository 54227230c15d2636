//! Memory per rank over time, read off placement and the timeline: static bytes (parameters of
//! every slab and replica placed on the rank × `static_memory_factor`) plus activations, each live
//! from its forward's start until its backward finishes (a split backward frees it in two parts,
//! at the end of each half) — or, when no backward runs, until the consumer of its output has
//! finished. A backward also holds its transient workspace (`workspace_bytes`) while it runs.
//! Recomputed activations are held from their backward's start; offloaded ones are off the
//! device from the end of their copy out to the start of their copy back.

use crate::algebra::plan::Plan;
use crate::graph::event::{EdgeKind, Event};
use crate::graph::order::Order;
use crate::graph::time::Timeline;
use crate::sim::cost::{
    PerUnit, activation_bytes, activation_input_bytes, force_activation_bytes, output_bytes,
    param_bytes, workspace_bytes,
};
use crate::vocab::phase::Half;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use serde::Serialize;

/// One rank's memory curve.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MemoryCurve {
    pub rank: usize,
    /// Static bytes (parameters, gradients, optimizer state).
    pub static_bytes: f64,
    /// `[t_s, bytes]` after each change, starting at `[0, static_bytes]`.
    pub points: Vec<[f64; 2]>,
    pub peak_bytes: f64,
    /// Time of the (first) peak.
    pub peak_at_s: f64,
    /// The peak exceeds `hardware.memory_bytes`.
    pub over_capacity: bool,
    /// Of `points`, the activations recomputation made again, `[t_s, bytes]` after each change
    /// from `[0, 0]` (empty when nothing is recomputed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recomputed_points: Vec<[f64; 2]>,
    /// The activations offloaded to the host (not in `points`), `[t_s, bytes]` after each change
    /// from `[0, 0]` (empty when nothing is offloaded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub offloaded_points: Vec<[f64; 2]>,
}

impl MemoryCurve {
    /// The curve with `sign ×` one of its parts added (`offloaded_points` with `+1`: what the
    /// rank would hold without offload; `recomputed_points` with `−1`: what it holds besides the
    /// recomputed bytes), as one step curve.
    pub fn with_part(&self, part: &[[f64; 2]], sign: f64) -> Vec<[f64; 2]> {
        let (mut a, mut b) = (self.points.iter().peekable(), part.iter().peekable());
        let (mut level_a, mut level_b) = (0.0, 0.0);
        let mut out: Vec<[f64; 2]> = Vec::with_capacity(self.points.len() + part.len());
        // Each turn takes at least one point (a NaN time is taken as it comes, never stuck on).
        for _ in 0..=self.points.len() + part.len() {
            let t = match (a.peek(), b.peek()) {
                (Some(p), Some(q)) => p[0].min(q[0]),
                (Some(p), None) => p[0],
                (None, Some(q)) => q[0],
                (None, None) => break,
            };
            let mut took = false;
            while let Some(p) = a.next_if(|p| p[0] <= t) {
                level_a = p[1];
                took = true;
            }
            while let Some(q) = b.next_if(|q| q[0] <= t) {
                level_b = q[1];
                took = true;
            }
            if !took {
                // A NaN time compares with nothing: skip the point that holds it.
                let _skipped = a.next().or_else(|| b.next());
            }
            out.push([t, level_a + sign * level_b]);
        }
        out
    }
}

/// Static bytes of rank `r`: its parameters × `static_memory_factor`, and what it holds
/// through the step beyond them (`hardware.resident_bytes`).
pub fn static_bytes(plan: &Plan, rank: usize) -> f64 {
    parameter_bytes(plan, rank) * plan.static_memory_factor + plan.hardware.resident_of(rank)
}

/// The parameter bytes of every slab and replica placed on rank `rank`.
pub fn parameter_bytes(plan: &Plan, rank: usize) -> f64 {
    plan.regions
        .iter()
        .map(|r| param_bytes(plan, r.index, rank))
        .sum::<f64>()
}

/// The first non-collective event downstream of `n` along Activation edges.
fn consumer(order: &Order, n: NodeIndex) -> Option<NodeIndex> {
    let g = &order.graph;
    let mut at = n;
    for _ in 0..4 {
        let next = g
            .edges_directed(at, Direction::Outgoing)
            .filter(|e| *e.weight() == EdgeKind::Activation)
            .map(|e| e.target())
            .find(|&t| !matches!(g.node_weight(t), Some(Event::Bwd { .. })))?;
        if !matches!(g.node_weight(next), Some(Event::Coll { .. })) {
            return Some(next);
        }
        at = next;
    }
    None
}

/// A second-order microbatch holds, per stage, what `FE` saves (`activation_bytes`) from FE's
/// start until `BE` ends (until `FF` ends when no backward runs: FF reads it too), and what `FF`
/// saves for `BF` (`force_activation_bytes`) from FF's start until BF ends (nothing without BF);
/// recomputed layers' activations from BF's start (it reruns their forwards) until BE ends.
fn four_phase_activations(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    places: &Places,
    nodes: &[NodeIndex],
    lists: &mut Lists,
) {
    // Only a second-order wavefront has four-phase events.
    if !plan
        .wavefront
        .as_ref()
        .is_some_and(|w| w.skeleton.second_order())
    {
        return;
    }
    let g = &order.graph;
    let recomputes = plan.layers.iter().any(|l| l.dropped_share > 0.0);
    let mut phases: rustc_hash::FxHashMap<(usize, usize, usize), [Option<NodeIndex>; 4]> =
        rustc_hash::FxHashMap::default();
    for &n in nodes {
        if let Some(&Event::FourPhase {
            region,
            rank,
            mb,
            phase,
            ..
        }) = g.node_weight(n)
            && let Some(i) = phase.four_index()
            && let Some(slot) = phases
                .entry((region.into(), rank.into(), mb.into()))
                .or_default()
                .get_mut(i)
        {
            *slot = Some(n);
        }
    }
    // `bytes` on `list` from `from`'s start until `until` ends (never before `from` does).
    let hold = |list: &mut Changes, from: NodeIndex, until: Option<NodeIndex>, bytes| {
        if let Some((start, from_end)) = timeline.span_of(from)
            && let Some(until) = until
            && let Some(until_end) = timeline.end_of(until)
            && bytes > 0.0
        {
            list.push(start, bytes, places.start(from));
            let (free_at, at) = later((until_end, places.end(until)), (from_end, places.end(from)));
            list.push(free_at, -bytes, at);
        }
    };
    let Lists {
        held: list,
        recomputed: part,
        ..
    } = lists;
    for ((region, rank, mb), [fe, ff, bf, be]) in phases {
        let key = (region, rank, mb);
        if let Some(fe) = fe {
            hold(
                list,
                fe,
                be.or(ff),
                activation_bytes(plan, region, rank, mb),
            );
        }
        if !recomputes {
            if let Some(ff) = ff {
                hold(list, ff, bf, force_activation_bytes(plan, region, rank, mb));
            }
            continue;
        }
        // Under recomputation FF still reads what FE made of the recomputed layers (held from
        // FE's start until FF ends), and keeps only the kept layers' part for BF; the force
        // backward reruns both forwards and holds what they make again — FE's until the energy
        // backward ends, FF's until it ends itself — drawn apart as recomputed.
        let (dropped, force_kept, force_dropped) = (
            crate::sim::cost::recomputed_bytes(plan, region, rank, mb),
            crate::sim::cost::force_activation_part(plan, key, false),
            crate::sim::cost::force_activation_part(plan, key, true),
        );
        if let Some(fe) = fe {
            hold(list, fe, ff.or(Some(fe)), dropped);
        }
        if let Some(ff) = ff {
            hold(list, ff, bf, force_kept);
            hold(list, ff, Some(ff), force_dropped);
        }
        if let Some(bf) = bf {
            for target in [&mut *list, &mut *part] {
                hold(target, bf, be.or(Some(bf)), dropped);
                hold(target, bf, Some(bf), force_dropped);
            }
        }
    }
}

/// Memory curves of every rank, one rank at a time (its changes gathered from its stream's
/// events, then put in order): the lists are one rank's long, reused.
pub fn memory(plan: &Plan, order: &Order, timeline: &Timeline) -> Vec<MemoryCurve> {
    let places = Places::new(order);
    let capacity = plan.hardware.memory_bytes;
    let mut scratch = Scratch::default();
    let mut lists = Lists::default();
    // What each forward saves, and its input half's part, per (region, rank): made once.
    let mut saved = Saved {
        saved: PerUnit::new(plan, activation_bytes),
        input_part: PerUnit::new(plan, activation_input_bytes),
    };
    (0..plan.ranks)
        .map(|rank| {
            let nodes = order.nodes.get(rank).map_or(&[][..], Vec::as_slice);
            lists.clear();
            // Read only where the step's gradient buffers are made (an empty map reads as none).
            let first = if plan.hardware.step_grad_bytes_per_param_byte.unwrap_or(0.0) > 0.0 {
                first_gradients(order, timeline, nodes)
            } else {
                FirstGradients::default()
            };
            workspaces(
                plan,
                order,
                timeline,
                &places,
                (nodes, &first),
                &mut lists.held,
            );
            step_gradients(plan, timeline, &places, rank, &first, &mut lists.held);
            held_outputs(plan, order, timeline, &places, rank, &mut lists.held);
            four_phase_activations(plan, order, timeline, &places, nodes, &mut lists);
            activations(
                plan,
                (order, timeline),
                &places,
                nodes,
                &mut lists,
                &mut saved,
            );
            let base = static_bytes(plan, rank);
            let (points, peak, peak_at) = curve(base, &lists.held, &mut scratch);
            let mut part = |list: &Changes| match list.is_empty() {
                true => Vec::new(),
                false => curve(0.0, list, &mut scratch).0,
            };
            MemoryCurve {
                rank,
                static_bytes: base,
                points,
                peak_bytes: peak,
                peak_at_s: peak_at,
                over_capacity: capacity.is_some_and(|c| peak > c),
                recomputed_points: part(&lists.recomputed),
                offloaded_points: part(&lists.offloaded),
            }
        })
        .collect()
}

/// What each forward saves and its input half's part of it ([`PerUnit`] memos, kept across the
/// ranks: made per rank they would cost each rank a table of every rank's).
struct Saved {
    saved: PerUnit,
    input_part: PerUnit,
}

/// One rank's change lists: what it holds, and the parts of its activations drawn apart.
#[derive(Default)]
struct Lists {
    held: Changes,
    recomputed: Changes,
    offloaded: Changes,
}

impl Lists {
    fn clear(&mut self) {
        for list in [&mut self.held, &mut self.recomputed, &mut self.offloaded] {
            list.clear();
        }
    }
}

/// Where a change happens: nowhere on a rank's compute stream.
const NOWHERE: u32 = u32::MAX;

/// Where each node's start and end fall on its rank's compute stream: `2·i` for the start of
/// the rank's `i`-th event, `2·i + 1` for its end. A rank's events run one after another (each
/// waits for the one before it), so these places order the instants they name as time does,
/// ties aside — the order a rank's changes are put in before they are sorted.
struct Places {
    /// Of each node (by index), the place of its start ([`NOWHERE`]: on no rank's stream).
    start: Vec<u32>,
    /// Of each rank, the place after its last event's end (where the step's end falls).
    after: Vec<u32>,
}

impl Places {
    fn new(order: &Order) -> Places {
        let mut start = vec![NOWHERE; order.graph.node_count()];
        for list in &order.nodes {
            for (i, n) in list.iter().enumerate() {
                if let Some(slot) = start.get_mut(n.index()) {
                    *slot = u32::try_from(2 * i).unwrap_or(NOWHERE);
                }
            }
        }
        let after = order
            .nodes
            .iter()
            .map(|list| u32::try_from(2 * list.len()).unwrap_or(NOWHERE))
            .collect();
        Places { start, after }
    }

    /// The place of `n`'s start.
    fn start(&self, n: NodeIndex) -> u32 {
        self.start.get(n.index()).copied().unwrap_or(NOWHERE)
    }

    /// The place of `n`'s end.
    fn end(&self, n: NodeIndex) -> u32 {
        match self.start(n) {
            NOWHERE => NOWHERE,
            at => at + 1,
        }
    }

    /// The place after rank `rank`'s last event.
    fn after(&self, rank: usize) -> u32 {
        self.after.get(rank).copied().unwrap_or(NOWHERE)
    }
}

/// One rank's changes of what it holds, `(t, delta)`, each with its place ([`Places`]).
#[derive(Default)]
struct Changes {
    list: Vec<(f64, f64)>,
    /// Of each change, its place (apart: 20 bytes a change rather than 24).
    at: Vec<u32>,
    /// Whether some change has no place ([`NOWHERE`]).
    unplaced: bool,
}

impl Changes {
    fn clear(&mut self) {
        self.list.clear();
        self.at.clear();
        self.unplaced = false;
    }

    #[inline]
    fn push(&mut self, t: f64, delta: f64, at: u32) {
        self.list.push((t, delta));
        self.at.push(at);
        self.unplaced |= at == NOWHERE;
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What the curves of every rank reuse: the changes in order, each place's next slot, the
/// points.
#[derive(Default)]
struct Scratch {
    ordered: Vec<(f64, f64)>,
    next: Vec<u32>,
    points: Vec<[f64; 2]>,
}

/// `changes` into `scratch.ordered`, by time (`total_cmp`'s order). Where every change has a
/// place they are put in place order (a counting sort), which is time order when the rank's
/// events run one after another: then nothing is left to sort.
fn by_time(changes: &Changes, scratch: &mut Scratch) {
    let (list, at) = (&changes.list, &changes.at);
    let ordered = &mut scratch.ordered;
    let key = total_order_key;
    let placed = at.len() == list.len() && !changes.unplaced;
    if placed {
        let places = at.iter().max().map_or(0, |&m| m as usize + 1);
        let next = &mut scratch.next;
        next.clear();
        next.resize(places + 1, 0);
        for &at in at {
            if let Some(c) = next.get_mut(at as usize + 1) {
                *c += 1;
            }
        }
        let mut sum = 0;
        for c in next.iter_mut() {
            sum += *c;
            *c = sum;
        }
        // Every slot is written once (the places' counts add up to the list's length), so
        // what a longer list left in them is never read.
        if ordered.len() < list.len() {
            ordered.resize(list.len(), (0.0, 0.0));
        }
        ordered.truncate(list.len());
        for (&change, &at) in list.iter().zip(at) {
            if let Some(c) = next.get_mut(at as usize)
                && let Some(slot) = ordered.get_mut(*c as usize)
            {
                *slot = change;
                *c += 1;
            }
        }
        if ordered.is_sorted_by_key(|&(t, _)| key(t)) {
            return;
        }
    }
    // As integers that order as `total_cmp` orders the floats, which sort several times faster
    // than the floats compared through a closure.
    let mut keyed: Vec<(u64, u64)> = list
        .iter()
        .map(|&(t, delta)| (key(t), key(delta)))
        .collect();
    keyed.sort_unstable_by_key(|&(t, _)| t);
    ordered.clear();
    ordered.extend(
        keyed
            .into_iter()
            .map(|(t, delta)| (from_total_order_key(t), from_total_order_key(delta))),
    );
}

/// The points of a curve from `base` and its changes, with its (first) peak and when.
fn curve(base: f64, changes: &Changes, scratch: &mut Scratch) -> (Vec<[f64; 2]>, f64, f64) {
    by_time(changes, scratch);
    // Frees before allocations at one instant (bit for bit): `total_cmp`'s order of the
    // changes, equal keys equal changes (the sort need not be stable). With the sort by time,
    // the order one sort by (time, change) gives.
    let key = total_order_key;
    for group in scratch
        .ordered
        .chunk_by_mut(|a, b| a.0.to_bits() == b.0.to_bits())
    {
        if group.len() > 1 {
            group.sort_unstable_by_key(|&(_, delta)| key(delta));
        }
    }
    // Built in the scratch list and copied out at its length: changes at one instant make one
    // point, so a curve holds at most one point more than its changes, often far fewer.
    let points = &mut scratch.points;
    points.clear();
    points.push([0.0, base]);
    let (mut current, mut peak, mut peak_at) = (base, base, 0.0);
    for &(t, delta) in &scratch.ordered {
        current += delta;
        let points_len = points.len();
        match points.last_mut() {
            Some(last) if last[0] == t && points_len > 1 => last[1] = current,
            _ => points.push([t, current]),
        }
        if current > peak {
            peak = current;
            peak_at = t;
        }
    }
    (points.clone(), peak, peak_at)
}

/// `x` as an integer that orders as [`f64::total_cmp`] orders the floats: the sign bit set for
/// the positives, every bit flipped for the negatives.
pub(crate) fn total_order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    // Without a branch: every bit for a negative (its sign bit's copies), the sign bit alone
    // for a positive.
    let flip = ((bits as i64 >> 63) as u64) | (1 << 63);
    bits ^ flip
}

/// The float [`total_order_key`] came from, bit for bit.
fn from_total_order_key(key: u64) -> f64 {
    // The sign bit alone where it is set (a positive's), every bit where it is not.
    let flip = ((!key as i64 >> 63) as u64) | (1 << 63);
    f64::from_bits(key ^ flip)
}

/// Gradient buffers of the step (`hardware.step_grad_bytes_per_param_byte`): each stage allocates
/// its parameters' gradients when its first whole backward or weight half of the step starts
/// (an input half computes no weight gradient, [`first_gradients`]), and holds them until the
/// step ends.
fn step_gradients(
    plan: &Plan,
    timeline: &Timeline,
    places: &Places,
    rank: usize,
    first: &FirstGradients,
    list: &mut Changes,
) {
    let factor = plan.hardware.step_grad_bytes_per_param_byte.unwrap_or(0.0);
    if factor <= 0.0 {
        return;
    }
    let end = timeline.makespan;
    for (&region, &(start, n)) in first {
        let bytes = factor * crate::sim::cost::param_bytes(plan, region, rank);
        if bytes > 0.0 {
            list.push(start, bytes, places.start(n));
            list.push(end.max(start), -bytes, places.after(rank));
        }
    }
}

/// Of each region on a rank, its first whole backward or weight half of the step and its start.
type FirstGradients = rustc_hash::FxHashMap<usize, (f64, NodeIndex)>;

/// Of each region on a rank (its stream `nodes`), the first whole backward or weight half of
/// the step — where a stage's gradients zeroed to `None` are made — with its start.
fn first_gradients(order: &Order, timeline: &Timeline, nodes: &[NodeIndex]) -> FirstGradients {
    let g = &order.graph;
    let mut first = FirstGradients::default();
    for &n in nodes {
        if let Some(&Event::Bwd { region, half, .. }) = g.node_weight(n)
            && half != Half::Input
            && let Some((start, _)) = timeline.span_of(n)
        {
            let at = first.entry(region.into()).or_insert((start, n));
            // `min`'s choice, bit for bit (a NaN start is replaced, as `min` replaces it).
            let earliest = at.0.min(start);
            if earliest.to_bits() != at.0.to_bits() {
                *at = (earliest, n);
            }
        }
    }
    first
}

/// What the pipeline's last stage keeps of each microbatch's output
/// (`hardware.output_held_share` of its last layer's `output_bytes`) once its backward has
/// freed what the forward saved, to the step's end (PyTorch's schedules keep every output to
/// merge them when the step returns). Until that backward the output is among what the forward
/// saved (the loss keeps its input), and is not counted twice.
fn held_outputs(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    places: &Places,
    rank: usize,
    list: &mut Changes,
) {
    let share = plan.hardware.output_held_share.unwrap_or(0.0);
    if share <= 0.0 {
        return;
    }
    let end = timeline.makespan;
    for (n, output) in outputs_kept(plan, order, rank) {
        let bytes = share * output;
        if let Some((_, freed)) = timeline.span_of(n)
            && bytes > 0.0
        {
            list.push(freed, bytes, places.end(n));
            list.push(end.max(freed), -bytes, places.after(rank));
        }
    }
}

/// The backwards of `rank` after which the last stage keeps its microbatch's output
/// ([`held_outputs`]), each with the output's bytes: a whole backward or a weight half (what
/// frees the rest of what the forward saved) of a unit holding the model's last layer — each
/// direction's, under a bidirectional schedule, for the microbatches it runs. A second-order
/// schedule's phases keep none (not modelled).
pub fn outputs_kept<'a>(
    plan: &'a Plan,
    order: &'a Order,
    rank: usize,
) -> impl Iterator<Item = (NodeIndex, f64)> + 'a {
    let model_end = plan.layers.len();
    let nodes = order.nodes.get(rank).map_or(&[][..], Vec::as_slice);
    nodes
        .iter()
        .filter_map(move |&n| match order.graph.node_weight(n) {
            Some(&Event::Bwd {
                region, mb, half, ..
            }) if half != crate::vocab::phase::Half::Input
                && model_end > 0
                && plan.unit_layers(region.into(), rank).end == model_end =>
            {
                Some((
                    n,
                    crate::sim::cost::output_bytes(plan, region.into(), rank, mb.into()),
                ))
            }
            _ => None,
        })
}

/// A backward (or either half of one) holds its transient workspace while it runs; a weight half
/// the larger of that and its stage's weight gradients before they are accumulated
/// (`hardware.weight_transient_bytes_per_param_byte`), made as it runs: the gradients beyond the
/// workspace half from its start, all from its middle (PyTorch computes one parameter group's
/// after another). Where the step's gradient buffers are made at a stage's first weight
/// gradient of the step ([`step_gradients`]), that first weight half's gradients become them:
/// it holds only what its transient exceeds them by.
fn workspaces(
    plan: &Plan,
    order: &Order,
    timeline: &Timeline,
    places: &Places,
    (nodes, first): (&[NodeIndex], &FirstGradients),
    list: &mut Changes,
) {
    let g = &order.graph;
    let transient = plan
        .hardware
        .weight_transient_bytes_per_param_byte
        .unwrap_or(0.0);
    // No layer with a workspace and no weight gradients held apart: no backward holds anything.
    let holds = |bytes: f64| bytes > 0.0;
    if !holds(transient) && !plan.layers.iter().any(|l| holds(l.workspace_bytes)) {
        return;
    }
    // What a stage's first weight gradient of the step puts into the gradient buffers, per
    // parameter byte ([`step_gradients`]).
    let buffers = plan.hardware.step_grad_bytes_per_param_byte.unwrap_or(0.0);
    for &n in nodes {
        let backward = match g.node_weight(n) {
            Some(&Event::Bwd {
                region, rank, half, ..
            }) => Some((region, rank, half)),
            Some(&Event::FourPhase {
                region,
                rank,
                phase,
                ..
            }) if phase.is_backward() => Some((region, rank, Half::Whole)),
            _ => None,
        };
        if let Some((region, rank, half)) = backward {
            let (region, rank) = (region.into(), rank.into());
            // The first stage's halves run whole in the weight half (`in_weight`): its input
            // half holds nothing, its weight half a whole backward's workspace.
            let whole_in_weight = half != Half::Whole && plan.unit_whole_in_weight(region, rank);
            if whole_in_weight && half == Half::Input {
                continue;
            }
            let workspace = workspace_bytes(plan, region, rank);
            // The weight gradients beyond the workspace (beyond the buffers, too, in the stage's
            // first weight gradient of the step, where they become the buffers).
            let gradients = if half == Half::Weight && !whole_in_weight && transient > 0.0 {
                let assigned = if first.get(&region).is_some_and(|&(_, f)| f == n) {
                    buffers
                } else {
                    0.0
                };
                ((transient - assigned).max(0.0)
                    * crate::sim::cost::param_bytes(plan, region, rank)
                    - workspace)
                    .max(0.0)
            } else {
                0.0
            };
            if workspace + gradients > 0.0
                && let Some((start, end)) = timeline.span_of(n)
            {
                list.push(start, workspace + gradients / 2.0, places.start(n));
                if gradients > 0.0 {
                    // At the end's place: every other change there falls at the end, after the
                    // middle, and is pushed after it.
                    list.push(start + (end - start) / 2.0, gradients / 2.0, places.end(n));
                }
                list.push(end, -(workspace + gradients), places.end(n));
            }
        }
    }
}

/// What each forward saves is held from its start until its backward ends (a split one frees
/// in two parts); a forward without a backward holds its output until what consumes it ends.
fn activations(
    plan: &Plan,
    (order, timeline): (&Order, &Timeline),
    places: &Places,
    nodes: &[NodeIndex],
    lists: &mut Lists,
    Saved { saved, input_part }: &mut Saved,
) {
    let g = &order.graph;
    let held_share = plan.hardware.input_half_held_share.unwrap_or(0.0);
    let recomputes = plan.layers.iter().any(|l| l.dropped_share > 0.0);
    let offloads = plan
        .layers
        .iter()
        .any(crate::algebra::model::Layer::offloads);
    let Lists {
        held: list,
        recomputed,
        offloaded,
    } = lists;
    for &n in nodes {
        let Some(&Event::Fwd {
            region, rank, mb, ..
        }) = g.node_weight(n)
        else {
            continue;
        };
        let backward = g.backward_of(n);
        let Some((start, end)) = timeline.span_of(n) else {
            continue;
        };
        let (bytes, free_at) = match backward {
            Some(b) => {
                let Some(free_at) = timeline.end_of(b) else {
                    continue;
                };
                let unit = (region.into(), rank.into(), mb.into());
                let bytes = saved.get(plan, unit);
                (bytes, (free_at, places.end(b)))
            }
            None => {
                // Held until what consumes the output ends (its own end without one).
                let until = match consumer(order, n) {
                    Some(c) => {
                        let Some(until) = timeline.end_of(c) else {
                            continue;
                        };
                        (until, places.end(c))
                    }
                    None => (end, places.end(n)),
                };
                (
                    output_bytes(plan, region.into(), rank.into(), mb.into()),
                    later(until, (end, places.end(n))),
                )
            }
        };
        // A split backward frees in two parts: what only its input half needs at that half's
        // end, the rest when its weight half ends (all at the input half's end without one).
        // Only an input half has a weight half after it: a whole backward's edges are not
        // walked.
        let input_half = |b: &NodeIndex| {
            matches!(
                g.node_weight(*b),
                Some(Event::Bwd {
                    half: Half::Input,
                    ..
                })
            )
        };
        let weight = backward.filter(input_half).and_then(|b| {
            g.edges_directed(b, Direction::Outgoing)
                .map(|e| e.target())
                .find(|&t| {
                    matches!(
                        g.node_weight(t),
                        Some(Event::Bwd {
                            half: Half::Weight,
                            ..
                        })
                    )
                })
        });
        let weight_end = weight.and_then(|w| Some((timeline.end_of(w)?, places.end(w))));
        let (region, rank, mb) = (region.into(), rank.into(), mb.into());
        // The input half's part is read only where there is a weight half to keep the rest,
        // and freed early only where the input half runs (not the first stage's `in_weight`).
        let whole_in_weight = weight_end.is_some() && plan.unit_whole_in_weight(region, rank);
        let early = match weight_end {
            Some(_) if !whole_in_weight => input_part.get(plan, (region, rank, mb)),
            _ => 0.0,
        };
        let start = (start, places.start(n));
        hold(list, (start, free_at, weight_end), bytes, early);
        // What the input half holds for its weight half (`hardware.input_half_held_share`).
        if let Some(weight_end) = weight_end.filter(|_| !whole_in_weight && held_share > 0.0) {
            let until = later(weight_end, free_at);
            hold(list, (free_at, until, None), held_share * bytes, 0.0);
        }
        // Offloaded bytes leave the device when their copy out ends and are back from the start
        // of their copy back.
        if offloads
            && let Some([out, back]) = crate::graph::offload::copies_of(g, n)
            && let (Some(gone), Some(again)) = (timeline.end_of(out), timeline.start_of(back))
        {
            let bytes = crate::sim::cost::offloaded_bytes(plan, region, rank, mb);
            if bytes > 0.0 {
                // The copies run on the copy stream: no place on the compute stream.
                list.push(gone, -bytes, NOWHERE);
                list.push(again.max(gone), bytes, NOWHERE);
                offloaded.push(gone, bytes, NOWHERE);
                offloaded.push(again.max(gone), -bytes, NOWHERE);
            }
        }
        // Recomputed layers make their activations again when the backward starts (its input
        // half) — those that recompute early when their `R` starts — and free them as a kept
        // layer's.
        if recomputes && let Some(b) = backward {
            // The first stage's split backward run whole in its weight half (`in_weight`): the
            // weight half makes them again, and frees them all at its end.
            // (`whole_in_weight` holds only where there is a weight half.)
            let (b, free_at, weight_end) = match weight.filter(|_| whole_in_weight) {
                Some(w) => (
                    w,
                    timeline
                        .end_of(w)
                        .map_or(free_at, |end| (end, places.end(w))),
                    None,
                ),
                None => (b, free_at, weight_end),
            };
            let split = weight_end.is_some();
            let key = (region, rank, mb);
            // With an early `R`: its layers from its start, the others from the backward's;
            // without, all of them from the backward's.
            let runs = match crate::graph::recompute::early_of(g, b) {
                Some(r) => [(Some(r), Some(true)), (Some(b), Some(false))],
                None => [(Some(b), None), (None, None)],
            };
            for (from, early) in runs {
                let Some((again, from)) = from.and_then(|n| Some((timeline.start_of(n)?, n)))
                else {
                    continue;
                };
                let again = (again, places.start(from));
                let (bytes, input) = crate::sim::cost::recomputed_placed(plan, key, early, split);
                hold(list, (again, free_at, weight_end), bytes, input);
                hold(recomputed, (again, free_at, weight_end), bytes, input);
            }
        }
    }
}

/// `bytes` held from `from` until `free_at` (a whole backward's or an input half's end), or, with
/// a weight half, `early` of them until then and the rest until `weight_end`.
/// Each instant is a time with its place ([`Places`]).
#[inline(always)]
fn hold(list: &mut Changes, (from, free_at, weight_end): Held, bytes: f64, early: f64) {
    if bytes <= 0.0 {
        return;
    }
    list.push(from.0, bytes, from.1);
    match weight_end {
        Some(weight_end) => {
            let early = early.min(bytes);
            list.push(free_at.0, -early, free_at.1);
            list.push(weight_end.0, early - bytes, weight_end.1);
        }
        None => list.push(free_at.0, -bytes, free_at.1),
    }
}

/// When held bytes are taken, freed, and (with a weight half) freed last: each a time and its
/// place.
type Held = ((f64, u32), (f64, u32), Option<(f64, u32)>);

/// The later of two instants (time, place): `a`'s time `max` `b`'s, with the place of the one
/// chosen (`a`'s on a tie).
fn later(a: (f64, u32), b: (f64, u32)) -> (f64, u32) {
    (a.0.max(b.0), if a.0 >= b.0 { a.1 } else { b.1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The changes `by_time` puts in order, as `(t, delta)` bits, with the curve's group sort.
    fn ordered(list: &[(f64, f64, u32)]) -> Vec<(u64, u64)> {
        let mut changes = Changes::default();
        for &(t, delta, at) in list {
            changes.push(t, delta, at);
        }
        let mut scratch = Scratch::default();
        let (points, ..) = curve(0.0, &changes, &mut scratch);
        assert_eq!(points.first(), Some(&[0.0, 0.0]));
        scratch
            .ordered
            .iter()
            .map(|&(t, d)| (t.to_bits(), d.to_bits()))
            .collect()
    }

    #[test]
    fn placed_changes_come_out_in_the_order_of_one_sort_by_time_and_change() {
        // Two events one after another: the first runs 0–2, the second 2–5 (places 0, 1, 2, 3),
        // their changes given out of order, two at the instant 2 (a free and an allocation).
        let placed = [
            (5.0, -3.0, 3),
            (2.0, 3.0, 2),
            (0.0, 1.0, 0),
            (2.0, -1.0, 1),
            (2.0, 0.5, 2),
        ];
        let mut want: Vec<(f64, f64)> = placed.iter().map(|&(t, d, _)| (t, d)).collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let want: Vec<(u64, u64)> = want
            .iter()
            .map(|&(t, d)| (t.to_bits(), d.to_bits()))
            .collect();
        assert_eq!(ordered(&placed), want);
        // Without places (a change on the copy stream): the same order, sorted.
        let mut unplaced = placed;
        if let Some(first) = unplaced.first_mut() {
            first.2 = NOWHERE;
        }
        assert_eq!(ordered(&unplaced), want);
        // Places that do not order the times (events that overlap): sorted all the same.
        let crossed = placed.map(|(t, d, at)| (t, d, 3 - at.min(3)));
        assert_eq!(ordered(&crossed), want);
    }

    #[test]
    fn total_order_keys_order_as_total_cmp_and_give_the_floats_back() {
        // NaNs of either sign and with payloads, subnormals, zeros and infinities of both signs.
        let xs = [
            f64::from_bits(0xfff8_0000_0000_1234),
            -f64::NAN,
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -f64::from_bits(1),
            -0.0,
            0.0,
            f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MIN_POSITIVE,
            1.0,
            3e9,
            f64::INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
        ];
        for a in xs {
            assert_eq!(
                from_total_order_key(total_order_key(a)).to_bits(),
                a.to_bits()
            );
            for b in xs {
                assert_eq!(
                    total_order_key(a).cmp(&total_order_key(b)),
                    a.total_cmp(&b),
                    "{a} against {b}"
                );
            }
        }
    }
}
