//! The cost model: a duration for every event of the order graph (Mpipe paper §4.3).
//!
//! Compute: explicit `fwd_s`/`bwd_s` summed over the slab, or the roofline `max(W/F, D/B)` of the
//! slab's FLOPs `W` and HBM bytes `D`; layers with `workload_varies` scale by the microbatch's
//! workload factor. Collectives: `α + β·n` for `n` payload bytes (`β = 1/link_bytes_per_s`), free
//! between two stages on the same rank. Weight-gradient reduces: ring all-reduce over `g` members,
//! `2(g−1)·α + 2(g−1)/g · β·n`; a group of one costs nothing. Without hardware, communication is
//! free.

use crate::algebra::plan::Plan;
use crate::graph::event::{EdgeKind, Event};
use crate::graph::order::Order;
use crate::graph::time::Launches;
use crate::scenario::hardware::{allreduce_time, host_copy_time, roofline, transfer_time};
use crate::scenario::layer::Cost;
use crate::sim::stage_comm::{self, StageComm};
use crate::vocab::phase::Phase;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use std::ops::Range;

/// The layers a rank runs for a region: its slab (Sharded) or the whole region (Replicated).
pub fn unit_layers(plan: &Plan, region: usize, rank: usize) -> Range<usize> {
    plan.unit_layers(region, rank)
}

pub use crate::scenario::layer::FOUR_PHASE_SHARES;

/// Seconds to run `layers` in `phase` for microbatch `mb`; the first backward phase (a whole
/// backward, an input half, a force backward) of recomputed layers runs their forward again
/// first (their energy and force forwards, for a second-order schedule) — all of it under full
/// recomputation, `recompute_cost_share` of it under selective. Layers that recompute early
/// (Mario) rerun in their own `R` action instead ([`Phase::Recompute`]: their forwards, and
/// nothing else), not in a first-order backward.
pub fn compute_time(plan: &Plan, layers: Range<usize>, mb: usize, phase: Phase) -> f64 {
    with_recomputation(plan, layers, phase, |layers, phase| {
        layer_time(plan, layers, mb, phase)
    })
}

/// Seconds the host takes to launch `layers`' work in `phase` ([`Hardware::host_launch_per_layer`]
/// per layer), recomputation included as [`compute_time`] includes it; 0 without a host model.
///
/// [`Hardware::host_launch_per_layer`]: crate::scenario::hardware::Hardware::host_launch_per_layer
pub fn host_launch_time(plan: &Plan, layers: Range<usize>, phase: Phase) -> f64 {
    let hw = &plan.hardware;
    if hw.host_launch_per_layer_s.is_none() {
        return 0.0;
    }
    with_recomputation(plan, layers, phase, |layers, phase| {
        layers.len() as f64 * hw.host_launch_per_layer(phase)
    })
}

/// How many layers' forwards the unit holding `layers` runs again in `phase` (each recomputed
/// layer's rerun share, where [`compute_time`] reruns it).
pub fn rerun_forwards(plan: &Plan, layers: Range<usize>, phase: Phase) -> f64 {
    // A forward reruns nothing (its own layers are no rerun).
    if plan.runs_as(&layers, phase) == Some(Phase::Forward) {
        return 0.0;
    }
    with_recomputation(plan, layers, phase, |layers, phase| match phase {
        Phase::Forward => layers.len() as f64,
        _ => 0.0,
    })
}

/// `time` of `layers` in `phase` as the unit runs it ([`Plan::runs_as`]), with the rerun of its
/// recomputed layers' forwards where [`compute_time`] says they rerun (`time` of each such
/// layer alone, in the forward phase, times its rerun share).
fn with_recomputation(
    plan: &Plan,
    layers: Range<usize>,
    phase: Phase,
    time: impl Fn(Range<usize>, Phase) -> f64,
) -> f64 {
    // The first stage's split backward, run whole in its weight half (PyTorch's pipelining).
    let Some(phase) = plan.runs_as(&layers, phase) else {
        return 0.0;
    };
    let rerun = |early: Option<bool>| {
        layers.clone().filter_map(move |i| {
            let l = plan.layers.get(i)?;
            (l.rerun_share > 0.0 && early.is_none_or(|e| l.recompute_early == e))
                .then_some((i, l.rerun_share))
        })
    };
    if phase == Phase::Recompute {
        return rerun(Some(true))
            .map(|(i, share)| share * time(i..i + 1, Phase::Forward))
            .sum();
    }
    let recomputed: f64 = match phase {
        Phase::Backward | Phase::Input | Phase::ForceBackward => {
            rerun((phase != Phase::ForceBackward).then_some(false))
                .map(|(i, share)| {
                    share
                        * match phase {
                            Phase::ForceBackward => {
                                time(i..i + 1, Phase::EnergyForward)
                                    + time(i..i + 1, Phase::ForceForward)
                            }
                            _ => time(i..i + 1, Phase::Forward),
                        }
                })
                .sum()
        }
        _ => 0.0,
    };
    recomputed + time(layers, phase)
}

/// Seconds of `layers`' own work in `phase` for microbatch `mb`, as the unit runs the phase
/// ([`Plan::runs_as`]) and without the rerun of recomputed forwards that [`compute_time`] adds.
pub fn work_time(plan: &Plan, layers: Range<usize>, mb: usize, phase: Phase) -> f64 {
    match plan.runs_as(&layers, phase) {
        Some(phase) => layer_time(plan, layers, mb, phase),
        None => 0.0,
    }
}

/// Seconds to run `layers` in `phase` for microbatch `mb`, recomputation left out.
fn layer_time(plan: &Plan, layers: Range<usize>, mb: usize, phase: Phase) -> f64 {
    let factor = plan.workload_of(mb);
    let (mut explicit, mut flops, mut bytes) = (0.0, 0.0, 0.0);
    for layer in plan.layers.get(layers).unwrap_or_default() {
        // Each of the stage's devices computes its part of the layer.
        let per_device = 1.0 / layer.width.devices.max(1) as f64;
        let workload = per_device * if layer.workload_varies { factor } else { 1.0 };
        if let Some(i) = phase.four_index() {
            // A second-order phase: its explicit time, else its share of forward and backward.
            if let Some(t) = layer.four_phase_s.get(i).copied().flatten() {
                explicit += t * workload;
                continue;
            }
            let [to_fwd, to_bwd] = FOUR_PHASE_SHARES.get(i).copied().unwrap_or([0.0, 0.0]);
            match layer.cost {
                Cost::Explicit { fwd_s, bwd_s } => {
                    explicit += (to_fwd * fwd_s + to_bwd * bwd_s) * workload
                }
                Cost::Roofline {
                    fwd_flops,
                    bwd_flops,
                    fwd_bytes,
                    bwd_bytes,
                } => {
                    flops += (to_fwd * fwd_flops + to_bwd * bwd_flops) * workload;
                    bytes += (to_fwd * fwd_bytes + to_bwd * bwd_bytes) * workload;
                }
            }
            continue;
        }
        // A half of a split backward takes its share of the whole backward, times what the
        // runtime's split costs beyond it.
        let half = plan.hardware.half_factor(phase);
        let (scale, phase) = match phase {
            Phase::Input => (workload * layer.input_share * half, Phase::Backward),
            Phase::Weight => (workload * (1.0 - layer.input_share) * half, Phase::Backward),
            _ => (workload, phase),
        };
        match (layer.cost, phase) {
            (Cost::Explicit { fwd_s, .. }, Phase::Forward) => explicit += fwd_s * scale,
            (Cost::Explicit { bwd_s, .. }, _) => explicit += bwd_s * scale,
            (
                Cost::Roofline {
                    fwd_flops,
                    fwd_bytes,
                    ..
                },
                Phase::Forward,
            ) => {
                flops += fwd_flops * scale;
                bytes += fwd_bytes * scale;
            }
            (
                Cost::Roofline {
                    bwd_flops,
                    bwd_bytes,
                    ..
                },
                _,
            ) => {
                flops += bwd_flops * scale;
                bytes += bwd_bytes * scale;
            }
        }
    }
    explicit + roofline(&plan.hardware, flops, bytes)
}

/// The activation a unit hands on (its last layer's `output_bytes`), scaled by the workload.
pub fn output_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    let layers = unit_layers(plan, region, rank);
    layers
        .end
        .checked_sub(1)
        .filter(|_| !layers.is_empty())
        .and_then(|last| plan.layers.get(last))
        .map_or(0.0, |l| {
            l.output_bytes * workload(plan, l, mb) * l.width.hidden_share()
        })
}

/// What a layer's figures are scaled by for microbatch `mb`: its workload factor where it varies.
fn workload(plan: &Plan, layer: &crate::algebra::model::Layer, mb: usize) -> f64 {
    if layer.workload_varies {
        plan.workload_of(mb)
    } else {
        1.0
    }
}

/// Saved-for-backward bytes of a unit for one microbatch: every kept layer's activations, and
/// the input of each run of recomputed layers (the output of the layer before it; nothing before
/// the model's first layer).
pub fn activation_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    activation_part(plan, region, rank, mb, |_| 1.0) + checkpoint_bytes(plan, region, rank, mb)
}

/// The bytes a unit copies to the host after its forward and back before its backward, for one
/// microbatch: each layer's `offload_share` of what it keeps (its activations less what
/// recomputation drops).
pub fn offloaded_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    layer_bytes(plan, region, rank, mb, |l| {
        l.activation_bytes * (1.0 - l.dropped_share) * l.offload_share
    })
}

/// The inputs a unit keeps for its recomputed layers, for one microbatch.
fn checkpoint_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    let layers = unit_layers(plan, region, rank);
    let start = layers.start;
    layers
        .filter(|&i| {
            let recomputed = |j: usize| plan.layers.get(j).is_some_and(|l| l.recompute_full);
            recomputed(i) && (i == start || i.checked_sub(1).is_none_or(|j| !recomputed(j)))
        })
        .filter_map(|i| Some((plan.layers.get(i.checked_sub(1)?)?, plan.layers.get(i)?)))
        .map(|(before, keeper)| {
            before.output_bytes * workload(plan, before, mb) * keeper.width.hidden_share()
        })
        .sum()
}

/// The activations a unit's recomputed layers make again in its backward, for one microbatch:
/// held from the backward's start (its input half's) as a kept layer's are from its forward's.
pub fn recomputed_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    recomputed_part(plan, region, rank, mb, None, |_| 1.0)
}

/// Of [`recomputed_bytes`], those of the layers that recompute early (`early`: `Some(true)`,
/// made again when their `R` starts), of the others (`Some(false)`) or of all (`None`), with the
/// part only a split backward's input half needs (0 where `split` is false).
pub fn recomputed_placed(
    plan: &Plan,
    (region, rank, mb): (usize, usize, usize),
    early: Option<bool>,
    split: bool,
) -> (f64, f64) {
    let input = |l: &crate::algebra::model::Layer| {
        if split { l.activation_input_share } else { 0.0 }
    };
    (
        recomputed_part(plan, region, rank, mb, early, |_| 1.0),
        recomputed_part(plan, region, rank, mb, early, input),
    )
}

/// `share` of each recomputed layer's activations (only those placed as `early` says, where it
/// says), summed over a unit ([`activation_part`]'s twin for the layers it leaves out).
fn recomputed_part(
    plan: &Plan,
    region: usize,
    rank: usize,
    mb: usize,
    early: Option<bool>,
    share: impl Fn(&crate::algebra::model::Layer) -> f64,
) -> f64 {
    layer_bytes(plan, region, rank, mb, |l| {
        if early.is_some_and(|e| l.recompute_early != e) {
            return 0.0;
        }
        l.activation_bytes * share(l) * l.dropped_share
    })
}

/// The transient bytes a unit's backward holds while it runs: the largest of its layers'.
pub fn workspace_bytes(plan: &Plan, region: usize, rank: usize) -> f64 {
    plan.layers
        .get(unit_layers(plan, region, rank))
        .unwrap_or_default()
        .iter()
        .map(|l| l.workspace_bytes / l.width.devices.max(1) as f64)
        .fold(0.0, f64::max)
}

/// The part of [`activation_bytes`] only a split backward's input half needs (freed at its end):
/// the kept layers' input shares and the recomputed runs' inputs.
pub fn activation_input_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    activation_part(plan, region, rank, mb, |l| l.activation_input_share)
        + checkpoint_bytes(plan, region, rank, mb)
}

/// What a unit's force forward `FF` saves for its force backward `BF`, for one microbatch.
pub fn force_activation_bytes(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    layer_bytes(plan, region, rank, mb, |l| l.force_activation_bytes)
}

/// Of [`force_activation_bytes`], the part recomputation drops (`dropped`: the force backward
/// makes it again, rerunning the force forward) or the part kept.
pub fn force_activation_part(
    plan: &Plan,
    (region, rank, mb): (usize, usize, usize),
    dropped: bool,
) -> f64 {
    layer_bytes(plan, region, rank, mb, |l| {
        l.force_activation_bytes
            * if dropped {
                l.dropped_share
            } else {
                1.0 - l.dropped_share
            }
    })
}

fn activation_part(
    plan: &Plan,
    region: usize,
    rank: usize,
    mb: usize,
    share: impl Fn(&crate::algebra::model::Layer) -> f64,
) -> f64 {
    layer_bytes(plan, region, rank, mb, |l| {
        l.activation_bytes * share(l) * (1.0 - l.dropped_share)
    })
}

/// `bytes` of each layer of a unit, summed, scaled by the microbatch's workload where it varies,
/// one device's part of them ([`StageWidth::activation_share`]).
///
/// [`StageWidth::activation_share`]: crate::algebra::model::StageWidth::activation_share
fn layer_bytes(
    plan: &Plan,
    region: usize,
    rank: usize,
    mb: usize,
    bytes: impl Fn(&crate::algebra::model::Layer) -> f64,
) -> f64 {
    plan.layers
        .get(unit_layers(plan, region, rank))
        .unwrap_or_default()
        .iter()
        .map(|l| bytes(l) * workload(plan, l, mb) * l.width.activation_share())
        .sum()
}

/// Parameter bytes of a unit, on one of its devices (dense ones split over `tp`, experts over
/// `tp × ep`).
pub fn param_bytes(plan: &Plan, region: usize, rank: usize) -> f64 {
    plan.layers
        .get(unit_layers(plan, region, rank))
        .unwrap_or_default()
        .iter()
        .map(|l| l.width.param_share(l.param_bytes, l.expert_param_bytes))
        .sum()
}

/// Members of a unit's gradient reduce: the region's replicas ([`Plan::reduce_members`]) times
/// the copies inside the stage (its context- and data-parallel devices).
pub fn reduce_members(plan: &Plan, region: usize, rank: usize) -> usize {
    let inside = plan
        .layers
        .get(unit_layers(plan, region, rank))
        .unwrap_or_default()
        .iter()
        .map(|l| l.width.replicas())
        .fold(1, usize::max);
    plan.reduce_members(region).saturating_mul(inside)
}

/// A unit's gradient reduce: ring all-reduces of its dense parameters' gradients over
/// [`reduce_members`] and of its experts' over the expert-data-parallel group, `ep` times fewer
/// (each expert lives on one of every `ep` of those devices).
pub fn reduce_time(plan: &Plan, region: usize, rank: usize) -> f64 {
    let layers = plan
        .layers
        .get(unit_layers(plan, region, rank))
        .unwrap_or_default();
    let members = reduce_members(plan, region, rank);
    let ep = layers.iter().map(|l| l.width.ep).fold(1, usize::max);
    let (mut dense, mut experts) = (0.0, 0.0);
    for l in layers {
        let all = l.width.param_share(l.param_bytes, l.expert_param_bytes);
        let expert = l
            .width
            .param_share(l.expert_param_bytes, l.expert_param_bytes);
        dense += all - expert;
        experts += expert;
    }
    let hw = &plan.hardware;
    let experts = if experts > 0.0 {
        allreduce_time(hw, (members / ep).max(1), experts)
    } else {
        0.0
    };
    allreduce_time(hw, members, dense) + experts
}

/// Whether a collective carries a gradient (it is on the backward chain).
pub fn is_backward_coll(graph: &crate::graph::order_graph::OrderGraph, node: NodeIndex) -> bool {
    graph.has_edge_into(node, EdgeKind::Gradient)
}

/// The bytes a cross-rank collective moves: the upstream unit's output (or the gradient of it,
/// the same size); `None` for anything else (a collective within one rank moves nothing).
pub fn transfer_bytes(
    plan: &Plan,
    graph: &crate::graph::order_graph::OrderGraph,
    node: NodeIndex,
) -> Option<f64> {
    let (region, rank, mb) = transfer_unit(graph, node)?;
    Some(output_bytes(plan, region, rank, mb))
}

/// The stage whose output (or the gradient of it) a cross-rank collective carries: its
/// [`transfer_unit`]'s; `None` for anything else.
pub(crate) fn transfer_stage(
    plan: &Plan,
    graph: &crate::graph::order_graph::OrderGraph,
    node: NodeIndex,
) -> Option<crate::vocab::ids::Stage> {
    let (region, rank, _) = transfer_unit(graph, node)?;
    plan.stage_index(region, rank)
}

/// The unit whose output a cross-rank collective carries, as `(region, rank, mb)`: the seam's
/// upstream region on the sending rank (on the receiving one for a gradient, which flows back);
/// `None` for anything else.
fn transfer_unit(
    graph: &crate::graph::order_graph::OrderGraph,
    node: NodeIndex,
) -> Option<(usize, usize, usize)> {
    let &Event::Coll {
        seam,
        mb,
        from_rank,
        to_rank,
        ..
    } = graph.node_weight(node)?
    else {
        return None;
    };
    if from_rank == to_rank {
        return None;
    }
    let upstream_rank = if is_backward_coll(graph, node) {
        to_rank
    } else {
        from_rank
    };
    Some((seam.from.into(), upstream_rank.into(), mb.into()))
}

/// The duration of one event.
pub fn duration(
    plan: &Plan,
    graph: &crate::graph::order_graph::OrderGraph,
    node: NodeIndex,
) -> f64 {
    let Some(event) = graph.node_weight(node) else {
        return 0.0;
    };
    let hw = &plan.hardware;
    // A compute event: its unit's layers in its phase.
    if let Some((layers, mb, phase)) = compute_of(plan, event) {
        return compute_time(plan, layers, mb, phase);
    }
    match *event {
        Event::Coll { .. } => {
            transfer_bytes(plan, graph, node).map_or(0.0, |bytes| transfer_time(hw, bytes))
        }
        Event::DpReduce { region, rank, .. } => reduce_time(plan, region.into(), rank.into()),
        Event::Copy {
            region, rank, mb, ..
        } => host_copy_time(
            hw,
            offloaded_bytes(plan, region.into(), rank.into(), mb.into()),
        ),
        Event::Fwd { .. }
        | Event::Bwd { .. }
        | Event::FourPhase { .. }
        | Event::Recompute { .. }
        | Event::Loss { .. }
        | Event::StepBarrier => 0.0,
    }
}

/// A compute event's work: its unit's layers, its microbatch and its phase.
fn compute_of(plan: &Plan, event: &Event) -> Option<(Range<usize>, usize, Phase)> {
    let (action, region, rank, mb) = (event.action()?, event.region()?, event.rank()?, event.mb()?);
    Some((unit_layers(plan, region.into(), rank), mb, action.phase))
}

/// Every microbatch has the same workload factor ([`Plan::workload_of`]: a microbatch past the
/// list has 1): a unit's figures are then the same for each of its microbatches, bit for bit.
pub(crate) fn one_workload_factor(plan: &Plan) -> bool {
    let factors = &plan.workload;
    factors
        .windows(2)
        .all(|w| matches!(w, [a, b] if a.to_bits() == b.to_bits()))
        && (factors.len() >= plan.microbatches
            || factors
                .first()
                .is_none_or(|f| f.to_bits() == 1.0f64.to_bits()))
}

/// One figure of each unit (region, rank) for a microbatch (`figure(plan, region, rank, mb)`),
/// computed once per unit when every microbatch has one workload factor
/// ([`one_workload_factor`]), else for each microbatch.
pub(crate) struct PerUnit {
    figure: fn(&Plan, usize, usize, usize) -> f64,
    ranks: usize,
    memo: Vec<Option<f64>>,
}

impl PerUnit {
    pub(crate) fn new(plan: &Plan, figure: fn(&Plan, usize, usize, usize) -> f64) -> Self {
        PerUnit {
            figure,
            ranks: plan.ranks,
            memo: if one_workload_factor(plan) {
                vec![None; (plan.regions.len() + 1) * plan.ranks]
            } else {
                Vec::new()
            },
        }
    }

    /// The figure of `(region, rank, mb)`, from the memo where the unit has one.
    pub(crate) fn get(&mut self, plan: &Plan, (region, rank, mb): (usize, usize, usize)) -> f64 {
        let slot = (rank < self.ranks)
            .then(|| self.memo.get_mut(region * self.ranks + rank))
            .flatten();
        match slot {
            Some(Some(v)) => *v,
            Some(free) => *free.insert((self.figure)(plan, region, rank, mb)),
            None => (self.figure)(plan, region, rank, mb),
        }
    }
}

/// The time of one cross-rank transfer of unit `(region, rank)`'s output for microbatch `mb`.
fn transfer_time_of(plan: &Plan, region: usize, rank: usize, mb: usize) -> f64 {
    transfer_time(&plan.hardware, output_bytes(plan, region, rank, mb))
}

/// Every node's [`duration`], a compute event's computed once per class: its time depends on
/// its microbatch only through the microbatch's workload factor, so the nodes of one unit's
/// layers, phase and factor (every microbatch of a stage and phase, without a workload) share
/// one value, bit for bit the one each would compute. With one factor for every microbatch the
/// classes are slots of a table by unit (region and rank) and phase; else hashed by the unit's
/// layers, phase and factor. A cross-rank transfer's time (of its upstream unit's output) is a
/// [`PerUnit`] figure.
fn durations_by_class(plan: &Plan, graph: &crate::graph::order_graph::OrderGraph) -> Vec<f64> {
    // `Recompute` is the last phase: one slot per phase.
    const PHASES: usize = Phase::Recompute as usize + 1;
    let slots = (plan.regions.len() + 1)
        .saturating_mul(plan.ranks)
        .saturating_mul(PHASES);
    let mut table: Vec<Option<f64>> = if one_workload_factor(plan) {
        vec![None; slots]
    } else {
        Vec::new()
    };
    let mut hashed: rustc_hash::FxHashMap<(usize, usize, Phase, u64), f64> =
        rustc_hash::FxHashMap::default();
    let mut transfers = PerUnit::new(plan, transfer_time_of);
    let (regions, ranks) = (plan.regions.len(), plan.ranks);
    let mut compute = |region: usize, rank: usize, mb: usize, phase: Phase| {
        // In range, the slot is below the table's length, the product of the same bounds (a
        // table that was made did not saturate), so the sum cannot overflow.
        let slot = (region <= regions && rank < ranks && !table.is_empty())
            .then(|| table.get_mut((region * ranks + rank) * PHASES + phase as usize))
            .flatten();
        match slot {
            Some(Some(t)) => *t,
            Some(free) => *free.insert(compute_time(
                plan,
                unit_layers(plan, region, rank),
                mb,
                phase,
            )),
            None => {
                let layers = unit_layers(plan, region, rank);
                *hashed
                    .entry((
                        layers.start,
                        layers.end,
                        phase,
                        plan.workload_of(mb).to_bits(),
                    ))
                    .or_insert_with(|| compute_time(plan, layers, mb, phase))
            }
        }
    };
    graph
        .node_weights()
        .enumerate()
        .map(|(i, event)| match *event {
            // A collective: a cross-rank transfer's time once per upstream unit.
            Event::Coll { .. } => transfer_unit(graph, NodeIndex::new(i))
                .map_or(0.0, |unit| transfers.get(plan, unit)),
            Event::Fwd {
                region, rank, mb, ..
            } => compute(region.into(), rank.into(), mb.into(), Phase::Forward),
            Event::Bwd {
                region,
                rank,
                mb,
                half,
                ..
            } => compute(region.into(), rank.into(), mb.into(), half.phase()),
            Event::FourPhase {
                region,
                rank,
                mb,
                phase,
                ..
            } => compute(region.into(), rank.into(), mb.into(), phase),
            Event::Recompute {
                region, rank, mb, ..
            } => compute(region.into(), rank.into(), mb.into(), Phase::Recompute),
            Event::DpReduce { .. }
            | Event::Copy { .. }
            | Event::Loss { .. }
            | Event::StepBarrier => duration(plan, graph, NodeIndex::new(i)),
        })
        .collect()
}

/// Of every node (by index), the switch it carries: a compute action whose rank ran another
/// stage or phase just before it (the first of a step included) carries its phase's
/// `hardware.action_switch_s`: what it reads is cold (a forward after a forward of its own stage
/// finds the stage's weights in cache), so it computes longer.
pub fn switch_shares(plan: &Plan, order: &Order) -> Vec<f64> {
    let mut shares = vec![0.0; order.graph.node_count()];
    add_switch_shares(plan, order, &mut shares);
    shares
}

/// Node `i`'s slot of a per-node list of the order's `n` nodes that stays empty until something
/// is added to it (every node reads 0 then).
fn added_to(list: &mut Vec<f64>, n: usize, i: usize) -> Option<&mut f64> {
    if list.is_empty() {
        *list = vec![0.0; n];
    }
    list.get_mut(i)
}

/// [`switch_shares`] added to `shares` (by node index, [`added_to`]); nothing to walk without a
/// switch.
fn add_switch_shares(plan: &Plan, order: &Order, shares: &mut Vec<f64>) {
    let count = order.graph.node_count();
    let Some(switch) = plan.hardware.action_switch_s else {
        return;
    };
    for nodes in &order.nodes {
        let mut previous = None;
        for &n in nodes {
            // An early recomputation is no action of the runtime's: it neither pays nor breaks
            // a run of one stage and phase.
            let Some(action) = order
                .graph
                .node_weight(n)
                .and_then(Event::action)
                .filter(|a| a.phase != Phase::Recompute)
            else {
                continue;
            };
            let key = (action.stage, action.phase);
            if previous != Some(key)
                && let Some(slot) = added_to(shares, count, n.index())
            {
                *slot += switch.of(action.phase);
            }
            previous = Some(key);
        }
    }
}

/// What point-to-point transfers cost their senders' own streams (DESIGN.md §3.1): a compute
/// event carries `hardware.p2p_post_s` per cross-rank transfer it sends (receives are posted
/// ahead of the action that needs them, while its rank waits anyway), and, under
/// `p2p: blocking`, each of its transfers' time too (the link still carries it to the
/// receiver).
fn p2p_on_ranks(plan: &Plan, order: &Order, runtime: &mut Vec<f64>) {
    let hw = &plan.hardware;
    let post = hw.p2p_post_s.unwrap_or(0.0);
    let blocking = hw.p2p == Some(crate::scenario::hardware::P2p::Blocking);
    if post <= 0.0 && !blocking {
        return;
    }
    let graph = &order.graph;
    for n in graph.node_indices() {
        let Some(&Event::Coll {
            from_rank, to_rank, ..
        }) = graph.node_weight(n)
        else {
            continue;
        };
        if from_rank == to_rank {
            continue;
        }
        let transfer = duration(plan, graph, n);
        let compute = |m: &NodeIndex| graph.node_weight(*m).is_some_and(Event::is_compute);
        for m in graph
            .neighbors_directed(n, Direction::Incoming)
            .filter(compute)
        {
            if let Some(slot) = added_to(runtime, graph.node_count(), m.index()) {
                *slot += post + if blocking { transfer } else { 0.0 };
            }
        }
    }
}

/// The runtime's per-action overhead of a compute action of `phase`: the phase's own where the
/// hardware gives one, else `hardware.action_overhead_s` (0 without).
pub fn action_overhead(plan: &Plan, phase: crate::vocab::phase::Phase) -> f64 {
    let hw = &plan.hardware;
    hw.action_overhead_by_phase_s
        .and_then(|b| b.given(phase))
        .unwrap_or(hw.action_overhead_s.unwrap_or(0.0))
}

/// Durations of every node of the order, indexed by node index. An overlapped pair runs as one
/// slot of `t_F + t_B − e·min(t_F, t_B)` (`e` = `hardware.fb_overlap`, default 0): each half
/// keeps its share of that slot, the forward first. Each compute action also runs the exposed
/// part of its stage's collectives ([`crate::sim::stage_comm`]).
pub fn durations(plan: &Plan, order: &Order) -> Vec<f64> {
    timed(plan, order).durations
}

/// Every node's duration, with the runtime's share of it and its stage's collectives.
#[derive(Debug, Clone, Default)]
pub struct Timed {
    pub durations: Vec<f64>,
    /// Empty when the runtime adds to no node (no overhead, posting or switch; every node reads
    /// 0).
    pub runtime_s: Vec<f64>,
    pub comm: StageComm,
    /// When each rank's host launches each action ([`launches`]; empty without a host model).
    pub launches: Launches,
}

/// When each rank's host launches each compute action (DESIGN.md §3.1, [`Launches`]): with a
/// host model (`hardware.host_launch_per_layer_s`) one host thread per rank launches the rank's
/// actions in its order, back to back from the step's start, each taking its layers' launch
/// ([`host_launch_time`]); empty without one.
pub fn launches(plan: &Plan, order: &Order) -> Launches {
    launches_without(plan, order, None)
}

/// [`launches`] with region `removed`'s actions launching nothing (the schedule with a
/// transposed encoder removed, [`crate::sim::encoder_free`]).
pub fn launches_without(plan: &Plan, order: &Order, removed: Option<usize>) -> Launches {
    if plan.hardware.host_launch_per_layer_s.is_none() {
        return Launches::default();
    }
    let graph = &order.graph;
    let n = graph.node_count();
    let (mut start, mut end) = (vec![0.0; n], vec![0.0; n]);
    for nodes in &order.nodes {
        let mut host = 0.0;
        for &node in nodes {
            let Some((layers, _, phase)) = graph
                .node_weight(node)
                .filter(|e| e.is_compute())
                .filter(|e| removed.is_none() || e.region().map(usize::from) != removed)
                .and_then(|e| compute_of(plan, e))
            else {
                continue;
            };
            if let (Some(s), Some(e)) = (start.get_mut(node.index()), end.get_mut(node.index())) {
                *s = host;
                host += host_launch_time(plan, layers, phase);
                *e = host;
            }
        }
    }
    Launches { start, end }
}

/// [`durations`], and of each node the runtime's own share of it (its per-action overhead, the
/// posting of its sends, its switch from another stage or phase: what a measured action's
/// compute ops do not hold), the collectives inside each stage (all of them and the part
/// exposed, which the duration holds) and when its host launches it ([`launches`]).
pub fn timed(plan: &Plan, order: &Order) -> Timed {
    let graph = &order.graph;
    let compute = durations_by_class(plan, graph);
    // Empty until the runtime adds to some node ([`added_to`]).
    let mut runtime = Vec::new();
    // Every compute action carries the runtime's per-action overhead (its phase's, where the
    // hardware gives one).
    if plan.hardware.action_overhead_s.unwrap_or(0.0) > 0.0
        || plan.hardware.action_overhead_by_phase_s.is_some()
    {
        for n in graph.node_indices() {
            let Some(action) = graph
                .node_weight(n)
                .filter(|e| e.is_compute())
                .and_then(Event::action)
                .filter(|a| a.phase != Phase::Recompute)
            else {
                continue;
            };
            if let Some(slot) = added_to(&mut runtime, compute.len(), n.index()) {
                *slot += action_overhead(plan, action.phase);
            }
        }
    }
    p2p_on_ranks(plan, order, &mut runtime);
    add_switch_shares(plan, order, &mut runtime);
    // Collectives inside a stage: none at all (every list empty, which reads as 0 for every
    // node) when every stage is one group of one.
    let comms = stage_comm::per_node(plan, graph);
    let total_s: Vec<f64> = comms.iter().map(|c| c.total_s).collect();
    let (alone_s, exposed_s) = if total_s.iter().any(|&t| t > 0.0) {
        let pairs: Vec<[usize; 2]> = order
            .pairs
            .iter()
            .map(|&[f, b]| [f.index(), b.index()])
            .collect();
        stage_comm::exposed(
            &comms,
            &compute,
            &pairs,
            plan.hardware.fb_overlap.unwrap_or(0.0),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut out = compute;
    for (d, r) in out.iter_mut().zip(&runtime) {
        *d += r;
    }
    let e = plan.hardware.fb_overlap.unwrap_or(0.0);
    if e > 0.0 {
        for &[f, b] in &order.pairs {
            let (Some(&tf), Some(&tb)) = (out.get(f.index()), out.get(b.index())) else {
                continue;
            };
            let sum = tf + tb;
            if sum > 0.0 {
                let scale = (sum - e * tf.min(tb)) / sum;
                for (n, t) in [(f, tf), (b, tb)] {
                    if let Some(slot) = out.get_mut(n.index()) {
                        *slot = t * scale;
                    }
                }
            }
        }
    }
    for (d, x) in out.iter_mut().zip(&exposed_s) {
        *d += x;
    }
    Timed {
        launches: launches(plan, order),
        durations: out,
        runtime_s: runtime,
        comm: StageComm {
            total_s,
            exposed_s,
            alone_s,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// A unit's figure from [`PerUnit`] is the one each microbatch computes, bit for bit: kept
    /// once per unit under one workload factor, computed per microbatch under several.
    #[test]
    fn per_unit_figures_are_each_microbatchs_own() {
        for (scale, memo) in [
            ("[1.5, 1.5, 1.5, 1.5]", true),
            ("[1.0, 0.3, 2.5, 0.0]", false),
        ] {
            let text = format!(
                r#"{{"format": "mpipe-scenario/1", "name": "t",
                "model": {{"layers": [{{"name": "l", "count": 4, "fwd_s": 1.0,
                    "output_bytes": 3e7, "activation_bytes": 1e9, "workload_varies": true}}]}},
                "schedule": ["1f1b"], "ranks": 2, "microbatches": 4,
                "workload": {{"encoder_scale": {scale}}}}}"#
            );
            let s = Scenario::from_json_str(&text, "t.json").unwrap();
            let plan = crate::algebra::validity::plan(&s).unwrap();
            let mut per_unit = PerUnit::new(&plan, activation_bytes);
            assert_eq!(!per_unit.memo.is_empty(), memo, "{scale}");
            let mut seen = Vec::new();
            for mb in 0..4 {
                for rank in 0..2 {
                    let own = activation_bytes(&plan, 1, rank, mb);
                    let got = per_unit.get(&plan, (1, rank, mb));
                    assert_eq!(got.to_bits(), own.to_bits(), "{scale} rank {rank} mb {mb}");
                    seen.push(got);
                }
            }
            // Several factors give several figures; one factor one (the ranks hold equal slabs).
            seen.sort_by(f64::total_cmp);
            seen.dedup();
            assert_eq!(seen.len(), if memo { 1 } else { 4 }, "{scale}: {seen:?}");
        }
    }
}
