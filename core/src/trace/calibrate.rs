//! Fitting the cost model to a measurement, from what was measured and nothing else (DESIGN.md
//! §5). Compute: for every stage and phase (`F`, `B`, `I`, `W`) the factor is the fit step's
//! matched actions' measured compute (from the first op inside the span to the last, not its
//! wait), summed, over their predicted compute, summed (a sum, not a median of ratios: what the
//! step spends, skew and all); the calibrated scenario scales the stage's layers by it (layer
//! groups that straddle a stage are split), and a layer no measured stage covers takes its
//! region's pooled factor. Links: every cross-rank transfer of the derived order whose consumer
//! was waiting for it (its rank had nothing else to do since the producer finished) gives one
//! transfer time, from the producer's last compute op to the consumer's first; `α` (their mean,
//! and `β` when they have different sizes) is fitted to those, less the consumer's own share:
//! the runtime's per-action overhead, fitted apart as the mean gap before actions no transfer
//! from another rank feeds (`hardware.action_overhead_s`), and what the scenario models apart
//! (posting, a switch). The step time is never fitted: the calibrated
//! prediction's step time is reported against the fit step (the fit's residual) and validated on
//! every other step of the run.

use super::align::Alignment;
use super::compare::{Comparison, StepAction, Steps, compare, measured_step, predicted_compute};
use super::recover::Measurement;
use super::rules::ActionKind;
use crate::algebra::plan::{Plan, RegionOwner};
use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::scenario::hardware::FirstStageBackward;
use crate::scenario::jitter::{MAX_PACE_ENTRIES, MAX_PACE_STEPS};
use crate::scenario::layer::LayerSpec;
use crate::sim::engine::SimOptions;
use crate::sim::jitter::{Expected, Jitter, Quantiles};
use crate::sim::run::Simulation;
use crate::tune::pipeline::{SimulationError, simulate_scenario};
use crate::vocab::action::Action;
use crate::vocab::ids::Stage;
use crate::vocab::phase::OpSet;
use crate::vocab::phase::Phase;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

/// The phases a factor is fitted for, in report order.
const PHASES: [Phase; 8] = [
    Phase::Forward,
    Phase::Backward,
    Phase::Input,
    Phase::Weight,
    Phase::EnergyForward,
    Phase::ForceForward,
    Phase::ForceBackward,
    Phase::EnergyBackward,
];

/// One fitted factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factor {
    /// 1-based, as in `mpipe derive`.
    pub region: usize,
    /// The stage the factor was fitted on (`None`: the region's pooled factor, for layers no
    /// measured stage covers).
    pub stage: Option<usize>,
    /// `F`, `B`, `I` or `W`.
    pub phase: &'static str,
    /// Measured compute over predicted compute, each summed over `samples` actions (1, not
    /// fitted, when nothing was measured: `samples` is 0).
    pub factor: f64,
    /// Actions the factor was fitted on.
    pub samples: usize,
}

/// The link cost `α + β·n` fitted to the measured transfers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkFit {
    /// Seconds per transfer; `None` when no transfer was measured (the scenario's is kept).
    pub alpha_s: Option<f64>,
    /// Bytes per second, fitted only when the measured transfers have different sizes (with one
    /// size `α` and `β` cannot be told apart: the scenario's bandwidth is kept).
    pub bytes_per_s: Option<f64>,
    /// Transfers (dependencies whose consumer waited for them) the fit used.
    pub samples: usize,
    /// Distinct transfer sizes among them.
    pub sizes: usize,
    /// Median measured transfer time.
    pub median_s: Option<f64>,
    /// What a transfer loses on average to its ends stalling in the call ([`fit_stall`]),
    /// added to `α` in the calibrated scenario.
    pub stall_s: Option<f64>,
}

/// The runtime's own time per compute action (`hardware.action_overhead_s`), fitted from the gaps
/// between a rank's consecutive actions where the second needed nothing from another rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverheadFit {
    /// The mean gap (what the step spends, skew and all); `None` when no such pair was measured
    /// (the scenario's is kept).
    pub action_overhead_s: Option<f64>,
    pub samples: usize,
    /// Per phase of the action after the gap (`F`, `B`, `I`, `W`): the median of its gaps and
    /// how many (`None` from fewer than [`MIN_PHASE_SAMPLES`]).
    pub by_phase: Vec<(&'static str, Option<f64>, usize)>,
}

/// The per-action overhead of the steps fitted (the fit step, or every step): on each rank, the gap from one action's last compute
/// op to the next action's first, for every next action whose inputs come from its own rank in
/// the derived order (no transfer from another rank feeds it: a first stage's forward, a weight
/// half, a stage whose neighbour is on the same rank): the rank was free and its input ready, so
/// the gap is the runtime's own work (dispatch, posting sends and receives, bookkeeping), which
/// the layers' costs do not hold.
fn fit_overhead(
    sim: &Simulation,
    kept: &[f64],
    steps: &[Vec<(usize, Vec<StepAction>)>],
    hosted: bool,
) -> (OverheadFit, Vec<f64>) {
    let graph = &sim.derivation.order.graph;
    let plan = &sim.derivation.plan;
    let nodes = compute_nodes(sim);
    // The actions some transfer from another rank feeds.
    let fed: FxHashSet<NodeIndex> = graph
        .node_indices()
        .filter(|&t| crate::sim::cost::transfer_bytes(plan, graph, t).is_some())
        .flat_map(|t| graph.neighbors_directed(t, Direction::Outgoing))
        .collect();
    let mut gaps = Vec::new();
    let mut by_phase: FxHashMap<&'static str, Vec<f64>> = FxHashMap::default();
    for (rank, actions) in steps.iter().flatten() {
        let mut order: Vec<&StepAction> = actions.iter().filter(|a| a.action.is_some()).collect();
        order.sort_by_key(|a| a.compute_start_ns);
        for pair in order.windows(2) {
            let [prev, next] = pair else { continue };
            let Some(action) = next.action else { continue };
            // An action the derived order does not have on this rank (another placement, a
            // half the schedule does not split) cannot be told local: it is left out.
            let Some(&node) = nodes.get(&(*rank, action)) else {
                continue;
            };
            // With a host model, a gap the host had not yet launched the next action in is the
            // host's (the launches model it), not the runtime's on the device.
            if hosted && next.host_start_ns > prev.compute_end_ns {
                continue;
            }
            if fed.contains(&node) {
                continue;
            }
            // What the scenario models apart in the gap (posting) is kept, not fitted.
            let gap = next.compute_start_ns.saturating_sub(prev.compute_end_ns) as f64 * 1e-9
                - kept.get(node.index()).copied().unwrap_or(0.0);
            if gap >= 0.0 {
                gaps.push(gap);
                by_phase.entry(action.phase.code()).or_default().push(gap);
            }
        }
    }
    let by_phase = PHASES
        .iter()
        .filter_map(|p| {
            let values = by_phase.remove(p.code())?;
            let n = values.len();
            Some((p.code(), phase_median(values), n))
        })
        .collect();
    (
        OverheadFit {
            samples: gaps.len(),
            action_overhead_s: mean(gaps.iter().copied()),
            by_phase,
        },
        gaps,
    )
}

/// Every compute action of the derived order, by its rank and action.
fn compute_nodes(sim: &Simulation) -> FxHashMap<(usize, Action), NodeIndex> {
    let graph = &sim.derivation.order.graph;
    graph
        .node_indices()
        .filter_map(|n| {
            let e = graph.node_weight(n).filter(|e| e.is_compute())?;
            Some(((e.rank()?, e.action()?), n))
        })
        .collect()
}

/// Of every predicted action's runtime share (by node index), what sits in the gap before its
/// compute and the calibration keeps from the scenario: the posting of its sends — all of it less
/// the per-action overhead (fitted) and the switch (cold reads: slower compute, read from the
/// compute ops).
fn kept_shares(sim: &Simulation) -> Vec<f64> {
    let plan = &sim.derivation.plan;
    let order = &sim.derivation.order;
    let switch = crate::sim::cost::switch_shares(plan, order);
    order
        .graph
        .node_indices()
        .map(|n| {
            let overhead = order
                .graph
                .node_weight(n)
                .and_then(|e| e.action())
                .map_or(0.0, |a| crate::sim::cost::action_overhead(plan, a.phase));
            let runtime = sim.runtime_s.get(n.index()).copied().unwrap_or(0.0);
            (runtime - overhead - switch.get(n.index()).copied().unwrap_or(0.0)).max(0.0)
        })
        .collect()
}

/// What posting a send costs the sender's own stream (`hardware.p2p_post_s`): the median thread
/// time of the fitted steps' send spans (PyTorch's `PP:<s>SEND_F<mb>`, a `c10d::send`). The median,
/// not the mean: a send that now and then blocks on the transport does not set it. Reported, not
/// applied (see `calibrate_with`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct P2pFit {
    pub post_s: Option<f64>,
    pub samples: usize,
}

/// Where launching an action's work takes the host longer than the device takes to run it (a
/// host-bound runtime: the device idles inside the action, waiting for its kernels): of the
/// actions timed by their kernels (an accelerator's run), per stage and phase, the median CPU span
/// that launched them against the median of their kernels' busy time, on the fitted steps.
/// Reported; the host model applied is [`HostFit`]'s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostLaunch {
    pub stage: usize,
    pub phase: &'static str,
    pub actions: usize,
    pub host_s: f64,
    pub device_s: f64,
}

impl HostLaunch {
    /// The host's time over the device's (above 1: host-bound).
    pub fn ratio(&self) -> f64 {
        if self.device_s > 0.0 {
            self.host_s / self.device_s
        } else {
            f64::INFINITY
        }
    }
}

/// [`HostLaunch`] of every stage and phase of the fitted steps' actions timed by their kernels
/// (their CPU span is not their compute's extent), in stage and phase order. The halves of an
/// overlapped pair are left out: one CPU span launches both, on two threads.
fn fit_host_launch(sim: &Simulation, steps: &[Vec<(usize, Vec<StepAction>)>]) -> Vec<HostLaunch> {
    let paired = paired_actions(sim);
    // By (stage, phase): the phase's code and each action's host and device seconds.
    type Launches = (&'static str, Vec<f64>, Vec<f64>);
    let mut by: std::collections::BTreeMap<(usize, usize), Launches> =
        std::collections::BTreeMap::new();
    for (rank, a) in steps
        .iter()
        .flatten()
        .flat_map(|(rank, actions)| actions.iter().map(move |a| (*rank, a)))
    {
        let Some(action) = a.action.filter(|&x| !paired.contains(&(rank, x))) else {
            continue;
        };
        if !timed_by_kernels(a) {
            continue;
        }
        let host = a.host_end_ns.saturating_sub(a.host_start_ns).max(0) as f64 * 1e-9;
        let device = a.compute_ns.max(0) as f64 * 1e-9;
        let entry = by
            .entry((action.stage.into(), action.phase as usize))
            .or_insert_with(|| (action.phase.code(), Vec::new(), Vec::new()));
        entry.1.push(host);
        entry.2.push(device);
    }
    by.into_iter()
        .filter_map(|((stage, _), (phase, host, device))| {
            Some(HostLaunch {
                stage,
                phase,
                actions: host.len(),
                host_s: median(host)?,
                device_s: median(device)?,
            })
        })
        .collect()
}

/// The host that launched an accelerator's run ([`Hardware::host_launch_per_layer_s`]): per
/// phase, the CPU time of its actions timed by their kernels over their units' layers — the
/// mean (the sum of their spans over the sum of their layers), not the median: a host-bound
/// step is the sum of its launches, and the mean is what adds up to it. The first stage's weight
/// halves under `in_weight` are samples of its whole backward and its input halves none (they
/// launch nothing); an overlapped pair's halves are left out (one span launches both). A
/// backward that reruns recomputed forwards launched them too: the forwards' launch per layer
/// is taken off it first, as the model adds it apart.
///
/// [`Hardware::host_launch_per_layer_s`]: crate::scenario::hardware::Hardware::host_launch_per_layer_s
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostFit {
    pub per_layer_s: crate::scenario::hardware::PhaseSeconds,
    /// Per phase (`F`, `B`, `I`, `W`): how many actions were fitted.
    pub actions: Vec<(&'static str, usize)>,
}

/// What the run's split backward cost beyond the whole backward
/// ([`Hardware::input_half_factor`], [`Hardware::weight_half_factor`]): the input and weight
/// halves' compute factors over the whole backwards' (each the run's measured over the
/// scenario's predicted, pooled over the fitted steps and weighted by actions), times the
/// scenario's own factor. From the regions that ran both (at least [`MIN_PHASE_SAMPLES`] of
/// each), else from every region's (the scenario's costs taken as off by one factor across its
/// regions). A region's whole backwards are its own (DualPipeV's, beside its halves), else its
/// first stage's run whole in its weight half (`in_weight`: a zero-bubble schedule's only
/// whole backwards — they skip the model input's gradient, so factors from them read a little
/// high).
///
/// [`Hardware::input_half_factor`]: crate::scenario::hardware::Hardware::input_half_factor
/// [`Hardware::weight_half_factor`]: crate::scenario::hardware::Hardware::weight_half_factor
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitFit {
    pub input: f64,
    pub weight: f64,
    /// The input halves, weight halves and whole backwards fitted from.
    pub input_actions: usize,
    pub weight_actions: usize,
    pub whole_actions: usize,
    /// The whole backwards were the first stage's, run whole in its weight half.
    pub first_stage_whole: bool,
}

/// [`SplitFit`] from the compute factors; `None` where no region ran enough of both halves and
/// of whole backwards.
fn fit_split(
    plan: &Plan,
    by_stage: &Ratios,
    by_region: &Ratios,
    in_weight: bool,
) -> Option<SplitFit> {
    let hw = &plan.hardware;
    let given = (hw.half_factor(Phase::Input), hw.half_factor(Phase::Weight));
    let enough = |fit: Option<&(usize, f64)>| {
        fit.copied()
            .filter(|&(n, f)| n >= MIN_PHASE_SAMPLES && f > 0.0)
    };
    // A region's own halves against its own whole backwards; where no region has both, every
    // region's halves against every region's whole backwards (the scenario's costs off by the
    // same factor across its regions).
    let whole_of = |r: usize| {
        let first_whole = || {
            (0..plan.ranks)
                .filter_map(|rank| plan.stage_index(r, rank))
                .find(|&s| first_stage(plan, s))
                .and_then(|s| enough(by_stage.get(&(s.into(), "B"))))
        };
        enough(by_region.get(&(r, "B")))
            .map(|w| (w, false))
            .or_else(|| in_weight.then(first_whole).flatten().map(|w| (w, true)))
    };
    let halves_of =
        |r: usize| enough(by_region.get(&(r, "I"))).zip(enough(by_region.get(&(r, "W"))));
    let regions: Vec<usize> = plan.regions.iter().map(|r| r.index).collect();
    let matched: Vec<usize> = regions
        .iter()
        .copied()
        .filter(|&r| halves_of(r).is_some() && whole_of(r).is_some())
        .collect();
    let used = if matched.is_empty() { regions } else { matched };
    // Sample-weighted means of the factors.
    let mut wholes = (0usize, 0.0, false);
    for ((n, f), first) in used.iter().filter_map(|&r| whole_of(r)) {
        wholes = (wholes.0 + n, wholes.1 + n as f64 * f, wholes.2 | first);
    }
    let mut fit = SplitFit {
        input: 0.0,
        weight: 0.0,
        input_actions: 0,
        weight_actions: 0,
        whole_actions: wholes.0,
        first_stage_whole: wholes.2,
    };
    for ((ni, fi), (nw, fw)) in used.iter().filter_map(|&r| halves_of(r)) {
        fit.input += ni as f64 * fi;
        fit.weight += nw as f64 * fw;
        fit.input_actions += ni;
        fit.weight_actions += nw;
    }
    if wholes.0 == 0 || fit.input_actions == 0 || fit.weight_actions == 0 {
        return None;
    }
    // The halves' mean factors over the whole backwards', times the scenario's own.
    let whole_factor = wholes.1 / wholes.0 as f64;
    fit.input *= given.0 / (fit.input_actions as f64 * whole_factor);
    fit.weight *= given.1 / (fit.weight_actions as f64 * whole_factor);
    (fit.input > 0.0 && fit.weight > 0.0 && fit.input.is_finite() && fit.weight.is_finite())
        .then_some(fit)
}

/// Sets the calibrated scenario's split-backward factors: the fitted ones, else PyTorch's where
/// the run split no backward (`run_split` false: the layers' fits then hold no half's time the
/// factors would scale twice) and the scenario gives no factor, else the scenario's.
fn price_split(
    calibrated: &mut Scenario,
    split: Option<&SplitFit>,
    run_split: bool,
) -> SplitPricing {
    let given = calibrated
        .hardware
        .as_ref()
        .is_some_and(|h| h.half_factor_fields().iter().any(|(_, f)| f.is_some()));
    let ([input, weight], pricing) = match split {
        Some(fit) => ([fit.input, fit.weight], SplitPricing::Fitted),
        None if !given && !run_split => (PYTORCH_HALF_FACTORS, SplitPricing::PytorchPrior),
        None => return SplitPricing::Scenario,
    };
    let hw = calibrated.hardware.get_or_insert_with(Default::default);
    hw.input_half_factor = Some(input);
    hw.weight_half_factor = Some(weight);
    pricing
}

/// [`HostFit`] of the fitted steps; `None` where no action was timed by its kernels (a CPU run:
/// its host is its device).
fn fit_host(
    sim: &Simulation,
    steps: &[Vec<(usize, Vec<StepAction>)>],
    in_weight: bool,
) -> Option<HostFit> {
    let plan = &sim.derivation.plan;
    let paired = paired_actions(sim);
    // By phase: seconds of CPU, layers launched, actions, and forwards launched again (the
    // recomputed layers' reruns, in layers).
    let mut by: [(f64, usize, usize, f64); 4] = [(0.0, 0, 0, 0.0); 4];
    let mut launched: Vec<(&StepAction, Action)> = Vec::new();
    for (rank, actions) in steps.iter().flatten() {
        launched.clear();
        launched.extend(actions.iter().filter_map(|a| Some((a, a.action?))));
        launched.sort_by_key(|(a, _)| a.host_start_ns);
        // What no layer's launch explains (as the switch fit leaves it out): a rank's first
        // action of the step (the host's time before its first kernel is not the step's as
        // measured) and a stage's first weight gradient (the allocator's first allocations).
        let mut weights_touched: FxHashSet<Stage> = FxHashSet::default();
        for (i, &(a, action)) in launched.iter().enumerate() {
            let first_weights = matches!(action.phase, Phase::Backward | Phase::Weight)
                && weights_touched.insert(action.stage);
            if i == 0 || first_weights || paired.contains(&(*rank, action)) || !timed_by_kernels(a)
            {
                continue;
            }
            // The host's time for it: from its launch to the next one's (its own gap after it
            // included), the last one's span.
            let until = launched
                .get(i + 1)
                .map_or(a.host_end_ns, |(next, _)| next.host_start_ns);
            let Some((region, unit)) = plan.stage_to_region_rank(action.stage) else {
                continue;
            };
            let layers = plan.unit_layers(region, unit);
            let whole_in_weight = in_weight && Plan::holds_first_layer(&layers);
            let phase = match action.phase {
                Phase::Input if whole_in_weight => continue,
                Phase::Weight if whole_in_weight => Phase::Backward,
                p => p,
            };
            let Some(slot) = PHASES
                .iter()
                .position(|&p| p == phase)
                .and_then(|i| by.get_mut(i))
            else {
                continue;
            };
            slot.0 += until.saturating_sub(a.host_start_ns).max(0) as f64 * 1e-9;
            slot.3 += crate::sim::cost::rerun_forwards(plan, layers.clone(), action.phase);
            slot.1 += layers.len();
            slot.2 += 1;
        }
    }
    if by.iter().all(|&(_, _, n, _)| n == 0) {
        return None;
    }
    // A forward's launch first: a backward that reruns recomputed forwards launched them too,
    // which the model adds apart.
    let forward = by.first().filter(|f| f.1 > 0).map(|f| f.0 / f.1 as f64);
    let per = |i: usize| {
        by.get(i)
            .filter(|&&(_, layers, _, _)| layers > 0)
            .map(|&(s, layers, _, rerun)| {
                ((s - rerun * forward.unwrap_or(0.0)) / layers as f64).max(0.0)
            })
    };
    Some(HostFit {
        per_layer_s: crate::scenario::hardware::PhaseSeconds {
            forward: per(0),
            backward: per(1),
            input: per(2),
            weight: per(3),
        },
        actions: PHASES
            .iter()
            .zip(&by)
            .filter(|(_, (_, _, n, _))| *n > 0)
            .map(|(p, (_, _, n, _))| (p.code(), *n))
            .collect(),
    })
}

/// The halves of the order's overlapped pairs, by rank and action.
fn paired_actions(sim: &Simulation) -> FxHashSet<(usize, Action)> {
    let graph = &sim.derivation.order.graph;
    sim.derivation
        .order
        .pairs
        .iter()
        .flatten()
        .filter_map(|&n| {
            let event = graph.node_weight(n)?;
            Some((event.rank()?, event.action()?))
        })
        .collect()
}

/// Whether an action was timed by its kernels (an accelerator's): its CPU span is not its
/// compute's extent.
fn timed_by_kernels(a: &StepAction) -> bool {
    a.host_start_ns != a.compute_start_ns || a.host_end_ns != a.compute_end_ns
}

/// Each rank's transfer spans of the steps `steps` whose kind `keep` accepts, on the aligned
/// clock, in time order.
fn transfer_spans(
    m: &Measurement,
    alignment: &Alignment,
    steps: &std::ops::Range<usize>,
    keep: impl Fn(ActionKind) -> bool,
) -> FxHashMap<usize, Vec<(i64, i64)>> {
    m.ranks
        .iter()
        .map(|r| {
            let offset = alignment.offset(r.rank);
            let mut spans: Vec<(i64, i64)> = r
                .transfers
                .iter()
                .filter(|t| steps.contains(&t.step) && keep(t.kind))
                .map(|t| {
                    (
                        t.start_ns.saturating_add(offset),
                        t.end_ns.saturating_add(offset),
                    )
                })
                .collect();
            spans.sort_unstable();
            (r.rank, spans)
        })
        .collect()
}

/// The seconds of each span.
fn span_seconds(spans: &FxHashMap<usize, Vec<(i64, i64)>>) -> Vec<f64> {
    spans
        .values()
        .flatten()
        .map(|&(s, e)| e.saturating_sub(s).max(0) as f64 * 1e-9)
        .collect()
}

/// What a transfer loses, on average, to its ends' threads stalling in the call (a send or a
/// receive that now and then waits milliseconds for the transport — a scheduler tick on a host
/// whose cores the ranks fill): per end, the excess of the transfer spans' mean over their
/// median (a span is a tenth of a millisecond but for its stalls), twice (a sender and a
/// receiver). `None` without a transfer span.
fn fit_stall(spans: &FxHashMap<usize, Vec<(i64, i64)>>) -> Option<f64> {
    let seconds = span_seconds(spans);
    let mean = mean(seconds.iter().copied())?;
    let median = median(seconds)?;
    Some(2.0 * (mean - median).max(0.0))
}

fn fit_p2p(transfers: &FxHashMap<usize, Vec<(i64, i64)>>) -> P2pFit {
    let spans = span_seconds(transfers);
    P2pFit {
        samples: spans.len(),
        post_s: median(spans),
    }
}

/// One step of the run against the calibrated prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepCheck {
    pub step: usize,
    pub measured_s: f64,
    /// `(predicted − measured) / measured`.
    pub error: f64,
}

/// The calibrated prediction against the steps it was not fitted on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The other steps' measured times: median, lowest, highest.
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// `(predicted − median) / median`.
    pub error: f64,
    /// The run's own step-to-step spread: the largest distance of another step from their
    /// median, over the median.
    pub spread: f64,
}

impl Validation {
    /// Whether the calibrated prediction misses the other steps by no more than they differ
    /// among themselves.
    pub fn within_spread(&self) -> bool {
        self.error.abs() <= self.spread
    }
}

#[derive(Debug, Clone)]
pub struct Calibration {
    /// How the run's costs varied on the steps fitted ([`Jitter`]).
    pub jitter: Jitter,
    /// The calibrated scenario's expected step under that jitter (`None`: nothing measured
    /// varies): what the validation compares with the measured steps' median.
    pub expected: Option<Expected>,
    pub fit_step: usize,
    /// Fitted on every step of the run ([`Fit::every_step`]).
    pub every_step: bool,
    pub check_step: usize,
    pub factors: Vec<Factor>,
    pub link: LinkFit,
    pub overhead: OverheadFit,
    pub p2p: P2pFit,
    /// Where launching an action took the host longer than the device ran it (measured).
    pub host_launch: Vec<HostLaunch>,
    /// The host model fitted from an accelerator's run and applied (`None` on a CPU run).
    pub host: Option<HostFit>,
    /// What the run's split backward cost beyond the whole backward, fitted and applied.
    pub split: Option<SplitFit>,
    /// Where the calibrated scenario's split-backward factors come from.
    pub split_pricing: SplitPricing,
    /// Whether the fitted steps split a backward (beyond the first stage's run whole in its
    /// weight half).
    pub run_split: bool,
    pub switch: SwitchFit,
    /// Per rank, the memory measured on the fit step (ranks with `[memory]` events).
    pub memory: Vec<MemoryFit>,
    pub scenario: Scenario,
    pub simulation: Simulation,
    /// The prediction against the check step.
    pub before: Comparison,
    /// The calibrated prediction against the check step.
    pub after: Comparison,
    /// The calibrated prediction against the fit step: what the fit leaves unexplained.
    pub fit: Comparison,
    /// Every step of the run against the calibrated prediction (the fit step among them).
    pub steps: Vec<StepCheck>,
}

impl Calibration {
    /// `|predicted − measured| / measured` on the check step, before and after calibration.
    pub fn errors(&self) -> (f64, f64) {
        let err = |c: &Comparison| relative(c.makespan_predicted_s, c.makespan_measured_s).abs();
        (err(&self.before), err(&self.after))
    }

    /// `(calibrated − measured) / measured` on the fit step: the expected step's.
    pub fn fit_residual(&self) -> f64 {
        relative(self.predicted_step_s(), self.fit.makespan_measured_s)
    }

    /// The step the calibration predicts: the expected step under the measured jitter (its
    /// median), or the simulated step when nothing varies.
    pub fn predicted_step_s(&self) -> f64 {
        self.expected
            .map_or(self.simulation.makespan_s, |e| e.median_s)
    }

    /// The calibrated step (the expected one under the jitter where there is one) against every
    /// step but the fit step — fitted on every step, against every step, in-sample; `None` with
    /// one step.
    pub fn validation(&self) -> Option<Validation> {
        // Every step but the fit step; fitted on every step, every step (in-sample).
        let others: Vec<f64> = self
            .steps
            .iter()
            .filter(|s| (self.every_step || s.step != self.fit_step) && s.measured_s > 0.0)
            .map(|s| s.measured_s)
            .collect();
        let median_s = median(others.clone())?;
        let min_s = others.iter().copied().fold(f64::INFINITY, f64::min);
        let max_s = others.iter().copied().fold(0.0, f64::max);
        Some(Validation {
            median_s,
            min_s,
            max_s,
            error: relative(self.predicted_step_s(), median_s),
            spread: (max_s - median_s).max(median_s - min_s) / median_s,
        })
    }
}

/// `(value − reference) / reference`, 0 without a reference.
fn relative(value: f64, reference: f64) -> f64 {
    if reference > 0.0 {
        (value - reference) / reference
    } else {
        0.0
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => values.get(n / 2).copied(),
        _ => Some((values.get(n / 2 - 1)? + values.get(n / 2)?) / 2.0),
    }
}

/// The step a calibration fitted on `fit` is checked on: the next one, else the one before;
/// never the fit step itself (that would only measure the fit). `None` with a single step.
pub fn check_step(fit: usize, steps: usize) -> Option<usize> {
    if fit + 1 < steps {
        Some(fit + 1)
    } else if fit > 0 && fit < steps {
        Some(fit - 1)
    } else {
        None
    }
}

/// What a calibration fits: a scenario, its prediction, the measured run (aligned) and which
/// steps to fit on and check on.
#[derive(Debug, Clone, Copy)]
pub struct Fit<'a> {
    pub scenario: &'a Scenario,
    /// The scenario simulated.
    pub predicted: &'a Simulation,
    pub measurement: &'a Measurement,
    pub alignment: &'a Alignment,
    pub fit_step: usize,
    /// Another step, to check the fit on ([`check_step`]).
    pub check_step: usize,
    /// Fit the costs on every step of the run (`--fit-step all`), not `fit_step` alone: compute,
    /// overhead, links and switch pooled over the steps (memory stays `fit_step`'s); the
    /// validation is then in-sample.
    pub every_step: bool,
    /// How the calibrated scenario is simulated.
    pub options: SimOptions,
}

/// Fits the scenario to step `fit_step` of the measurement and checks the result on
/// `check_step` and every other step.
pub fn calibrate(fit: &Fit) -> Result<Calibration, DeriveError> {
    calibrate_with(fit, |_| Ok(()))
}

/// [`calibrate`] that reports how far it got and can be stopped: between its parts (the fit,
/// the simulation, the comparison with each step) it calls `keep_going` with the fraction done
/// and stops with [`SimulationError::Cancelled`] when that returns false.
pub fn calibrate_cancellable(
    fit: &Fit,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Calibration, SimulationError> {
    calibrate_with(fit, |f| {
        if keep_going(f) {
            Ok(())
        } else {
            Err(SimulationError::Cancelled)
        }
    })
}

/// The stage of every layer a `ByLayer` region places (`None` for Replicated regions' layers).
fn stage_of_layers(plan: &Plan) -> Vec<Option<Stage>> {
    let mut out = vec![None; plan.layers.len()];
    // (A mirror's stages run the same layers: the model's region names them.)
    for region in plan.model_regions() {
        if let RegionOwner::ByLayer { slabs, .. } = &region.owner {
            for (rank, slab) in slabs.iter().enumerate() {
                let stage = plan.stage_index(region.index, rank);
                for layer in slab.clone() {
                    if let Some(slot) = out.get_mut(layer) {
                        *slot = stage;
                    }
                }
            }
        }
    }
    out
}

/// Measured compute over predicted compute, as `(samples, factor)`, by (stage, phase) and pooled by
/// (region, phase).
type Ratios = FxHashMap<(usize, &'static str), (usize, f64)>;

/// What a compute action of each phase costs when its rank ran another stage or phase just
/// before it (`hardware.action_switch_s`), fitted on the fit step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchFit {
    /// Per phase, the median over its actions that followed another stage or phase of their
    /// measured compute beyond what their stage and phase compute when they follow themselves
    /// (a rank's first action of the step and a stage's first weight gradient, which allocates
    /// the step's gradient buffers, left out); a phase with fewer than [`MIN_PHASE_SAMPLES`] such
    /// actions is not fitted (`None`: the scenario's kept).
    pub fitted: Vec<PhaseSwitch>,
}

impl SwitchFit {
    /// The switch applied to `phase` (its code), if it is.
    pub fn applied(&self, phase: &str) -> Option<f64> {
        self.fitted
            .iter()
            .find(|p| p.phase == phase && p.applied)
            .and_then(|p| p.switch_s)
    }
}

/// One phase's switch cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSwitch {
    /// `F`, `B`, `I` or `W`.
    pub phase: &'static str,
    pub switch_s: Option<f64>,
    /// The actions it was fitted on, and those of the phase that followed their own stage.
    pub cold: usize,
    pub warm: usize,
    /// Whether the calibrated scenario charges it (`hardware.action_switch_s`): fitted from at
    /// least [`MIN_APPLIED_SWITCH_SAMPLES`] actions.
    pub applied: bool,
}

/// The fewest actions after another stage or phase a switch is applied from. From one step the
/// few such actions (4–15 on the seven-schedule runs) gave costs that moved other schedules'
/// predictions further from their runs; fitted over every step of a run (`--fit-step all`:
/// 40–190) they give the cold-cache cost that orders the schedules (README "Diagnosis").
pub const MIN_APPLIED_SWITCH_SAMPLES: usize = 16;

/// The fewest samples a per-phase figure (a switch, an overhead by phase) is fitted from: one
/// or two are what happened to those actions, not a cost.
pub const MIN_PHASE_SAMPLES: usize = 4;

/// What PyTorch's weight half holds while it runs, per parameter byte of its stage
/// (`hardware.weight_transient_bytes_per_param_byte`) — its stage's weight gradients, which
/// `torch.autograd.grad` returns all at once before they are accumulated (measured 0.98 on the
/// seven-schedule runs). A calibration from a run whose memory was measured and that ran no
/// weight half (one that never splits its backward) takes it, so the split schedules' what-ifs
/// hold what they will; a run with weight halves measures its own (and keeps the scenario's
/// where it cannot), and a scenario that gives one keeps it.
pub const PYTORCH_WEIGHT_HALF_TRANSIENT: f64 = 1.0;

/// What PyTorch's pipeline schedules keep of each microbatch's output on the last stage until
/// the step returns (`hardware.output_held_share`): all of it (`output_chunks`, merged into the
/// step's return value). A calibration from a run whose memory was measured takes it unless the
/// scenario gives its own, and leaves it out of the gradient buffers it fits.
pub const PYTORCH_OUTPUT_HELD_SHARE: f64 = 1.0;

/// What PyTorch's split backward costs (`hardware.input_half_factor`, `weight_half_factor`): an
/// input half ×0.9 and a weight half ×1.5 of its share of the whole backward. Its code makes the
/// split dearer than the whole — `stage_backward_input` walks the autograd graph in Python to
/// group the parameters and runs autograd with `retain_graph=True`, `stage_backward_weight` runs
/// autograd again once per parameter group, later, on operands no longer in cache — and the
/// recorded runs measure it ([`PYTORCH_HALF_FACTORS_MEASURED`]); these are the rounded medians of
/// the seven-schedule and GPU runs' (input 0.84, 0.90, 0.93, 0.90; weight 1.84, 1.68, 1.14,
/// 1.39). A run that splits no backward cannot show it: its calibration takes these unless the
/// scenario gives its own, so a split schedule's what-if pays the split the runtime charges
/// rather than none; the report says so ([`SplitPricing::PytorchPrior`]).
pub const PYTORCH_HALF_FACTORS: [f64; 2] = [0.9, 1.5];

/// The lowest and highest of [`PYTORCH_HALF_FACTORS`] measured, input then weight, each run
/// fitted on every step: the interleaved zero-bubble, ZB-V and DualPipeV runs on CPU, the GPU's
/// ZB-V run and the older diagnosis ZB-V run (×0.73/×1.96; with it the medians are ×0.9/×1.7).
pub const PYTORCH_HALF_FACTORS_MEASURED: [[f64; 2]; 2] = [[0.73, 0.93], [1.14, 1.96]];

/// Where the calibrated scenario's split-backward factors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitPricing {
    /// Fitted from the run's halves against its whole backwards ([`SplitFit`]).
    Fitted,
    /// PyTorch's measured split ([`PYTORCH_HALF_FACTORS`]), the traces taken to be PyTorch's
    /// pipelining: the run split no backward and the scenario gave no factor.
    PytorchPrior,
    /// The scenario's own (1 where it gives none): the scenario gives a factor, or the run's
    /// split backwards met too few whole ones to fit them.
    Scenario,
}

/// The median of `values` when there are at least [`MIN_PHASE_SAMPLES`] of them.
fn phase_median(values: Vec<f64>) -> Option<f64> {
    (values.len() >= MIN_PHASE_SAMPLES)
        .then(|| median(values))
        .flatten()
}

/// One matched action of a fitted step, for the compute fit.
struct ComputeSample {
    /// The fitted step (its index among them) and the rank that ran it.
    step: usize,
    rank: usize,
    stage: usize,
    region: usize,
    /// The phase it is fitted as: its own, or a whole backward for the first stage's weight half
    /// under `in_weight`.
    phase: &'static str,
    /// Its own phase, which a switch is charged by.
    own_phase: &'static str,
    measured_s: f64,
    predicted_s: f64,
    /// Of `predicted_s`, the recomputed layers' forwards run again (a backward's first phase on
    /// a unit that recomputes; 0 elsewhere).
    rerun_s: f64,
    /// Its rank ran another stage or phase just before it.
    cold: bool,
    /// Its rank's first action of the step, or its stage's first weight gradient.
    first: bool,
}

/// The matched actions of one fitted step with their predicted compute (the prediction's duration
/// less the runtime's own share) and whether each followed another stage or phase on its rank.
fn compute_samples(
    sim: &Simulation,
    predicted: &FxHashMap<(usize, Action), (f64, f64, f64)>,
    (step, measured): (usize, &Vec<(usize, Vec<StepAction>)>),
    in_weight: bool,
) -> Vec<ComputeSample> {
    let plan = &sim.derivation.plan;
    let mut samples = Vec::new();
    for (rank, actions) in measured {
        let mut order: Vec<(&StepAction, Action)> = actions
            .iter()
            .filter_map(|a| Some((a, a.action?)))
            .collect();
        order.sort_by_key(|(a, _)| a.compute_start_ns);
        let mut previous = None;
        let mut weights_touched: FxHashSet<Stage> = FxHashSet::default();
        for (a, action) in order {
            let key = (action.stage, action.phase);
            let cold = previous != Some(key);
            // A rank's first action of the step, and a stage's first weight gradient (it
            // allocates the step's gradient buffers), cost what no switch explains.
            let first_weights = matches!(action.phase, Phase::Backward | Phase::Weight)
                && weights_touched.insert(action.stage);
            let first = previous.is_none() || first_weights;
            previous = Some(key);
            // The first stage's split backward run whole in its weight half (`in_weight`): its
            // input half is no sample, its weight half one of its whole backward, against the
            // whole backward's prediction (where the scenario splits it, the cost model's whole
            // backward of the unit: its halves' predictions carry the split's factors).
            let Some((region, unit_rank)) = plan.stage_to_region_rank(action.stage) else {
                continue;
            };
            let layers = plan.unit_layers(region, unit_rank);
            let halves = matches!(action.phase, Phase::Input | Phase::Weight);
            let whole_in_weight = in_weight && halves && Plan::holds_first_layer(&layers);
            if whole_in_weight && action.phase == Phase::Input {
                continue;
            }
            let predicted_whole = plan.whole_in_weight(&layers);
            // A half the scenario runs whole that the run split is no sample of either.
            if !whole_in_weight && predicted_whole && halves {
                continue;
            }
            let predicted_of = |phase: Phase| {
                predicted
                    .get(&(*rank, Action { phase, ..action }))
                    .map(|&(_, _, p)| p)
            };
            let predicted_s = match (whole_in_weight, predicted_whole) {
                (true, true) => predicted_of(Phase::Weight)
                    .map(|w| w + predicted_of(Phase::Input).unwrap_or(0.0)),
                (true, false) => predicted_of(Phase::Weight).map(|_| {
                    crate::sim::cost::compute_time(
                        plan,
                        layers.clone(),
                        action.mb.into(),
                        Phase::Backward,
                    )
                }),
                (false, _) => predicted_of(action.phase),
            };
            let Some(predicted_s) = predicted_s else {
                continue;
            };
            let phase = match whole_in_weight {
                true => Phase::Backward,
                false => action.phase,
            };
            // What of the prediction is the recomputed forwards' rerun: all of it beyond the
            // layers' own work in the phase it runs as.
            let recomputes = plan
                .layers
                .get(layers.clone())
                .is_some_and(|l| l.iter().any(|l| l.rerun_share > 0.0));
            let rerun_s = if recomputes && phase != Phase::Forward {
                (predicted_s - crate::sim::cost::work_time(plan, layers, action.mb.into(), phase))
                    .max(0.0)
            } else {
                0.0
            };
            if predicted_s > 0.0 {
                samples.push(ComputeSample {
                    step,
                    rank: *rank,
                    stage: action.stage.into(),
                    region,
                    phase: phase.code(),
                    own_phase: action.phase.code(),
                    measured_s: a.compute_ns as f64 * 1e-9,
                    predicted_s,
                    rerun_s,
                    cold,
                    first,
                });
            }
        }
    }
    samples
}

/// The compute factors of the fitted steps: for every matched action, measured compute (the span's
/// wait is not the action's cost, nor the runtime's per-action overhead) over predicted compute;
/// summed by (stage, phase) and by (region, phase). And the switch cost ([`SwitchFit`]):
/// what the actions that followed another stage or phase on their rank computed beyond the
/// factors of those that followed their own.
fn compute_ratios(
    sim: &Simulation,
    steps: &[Vec<(usize, Vec<StepAction>)>],
    in_weight: bool,
) -> ComputeFit {
    let predicted = predicted_compute(sim);
    let samples: Vec<ComputeSample> = steps
        .iter()
        .enumerate()
        .flat_map(|measured| compute_samples(sim, &predicted, measured, in_weight))
        .collect();
    let mut warm: FxHashMap<(usize, &'static str), Vec<f64>> = FxHashMap::default();
    // The switch is fitted and charged by each action's own phase, as the simulator charges it.
    for s in samples.iter().filter(|s| !s.cold) {
        warm.entry((s.stage, s.own_phase))
            .or_default()
            .push(s.measured_s / s.predicted_s);
    }
    let warm: FxHashMap<(usize, &'static str), f64> = warm
        .into_iter()
        .filter_map(|(key, values)| Some((key, median(values)?)))
        .collect();
    let fitted: Vec<PhaseSwitch> = PHASES
        .iter()
        .map(|phase| {
            let code = phase.code();
            let extra: Vec<f64> = samples
                .iter()
                .filter(|s| s.own_phase == code && s.cold && !s.first)
                .filter_map(|s| {
                    Some(s.measured_s - warm.get(&(s.stage, s.own_phase))? * s.predicted_s)
                })
                .collect();
            let cold = extra.len();
            let switch_s = phase_median(extra).map(|x| x.max(0.0));
            PhaseSwitch {
                phase: code,
                cold,
                warm: samples
                    .iter()
                    .filter(|s| s.own_phase == code && !s.cold)
                    .count(),
                applied: switch_s.is_some() && cold >= MIN_APPLIED_SWITCH_SAMPLES,
                switch_s,
            }
        })
        .filter(|p| p.cold + p.warm > 0)
        .collect();
    let switch = SwitchFit { fitted };
    // What the calibrated scenario charges an action after another stage or phase (the step's
    // first included, as the simulator charges it): the switch fitted where it is applied, the
    // scenario's own elsewhere (kept). Left out of the compute factors, so it is not counted
    // twice.
    let given = sim
        .derivation
        .plan
        .hardware
        .action_switch_s
        .unwrap_or_default();
    let charged = |s: &ComputeSample| {
        if !s.cold {
            return 0.0;
        }
        switch.applied(s.own_phase).unwrap_or_else(|| {
            PHASES
                .iter()
                .find(|p| p.code() == s.own_phase)
                .map_or(0.0, |&p| given.of(p))
        })
    };
    // Per (stage or region, phase): the measured compute of its actions over their predicted
    // compute, summed — what a step spends, not what a typical action does: an action's compute
    // is skewed (a backward now and then takes half again as long), and a median would drop the
    // time the step really spends on it.
    // Summed per (stage, phase) and per (region, phase), each sample's measured and predicted
    // compute as `of` gives them.
    let pool = |of: &dyn Fn(&ComputeSample) -> (f64, f64)| -> (Ratios, Ratios) {
        let mut by_stage: FxHashMap<(usize, &'static str), (usize, f64, f64)> =
            FxHashMap::default();
        let mut by_region: FxHashMap<(usize, &'static str), (usize, f64, f64)> =
            FxHashMap::default();
        for s in &samples {
            // A first stage's whole backward run in its weight half is its stage's own: pooled
            // into its region's backward it would set the other stages' whole backwards.
            let pooled = (s.phase == s.own_phase).then_some((&mut by_region, (s.region, s.phase)));
            let (measured, predicted) = of(s);
            for (map, key) in std::iter::once((&mut by_stage, (s.stage, s.phase))).chain(pooled) {
                let entry = map.entry(key).or_default();
                *entry = (entry.0 + 1, entry.1 + measured, entry.2 + predicted);
            }
        }
        let factors = |by: FxHashMap<(usize, &'static str), (usize, f64, f64)>| -> Ratios {
            by.into_iter()
                .filter(|(_, (_, _, predicted))| *predicted > 0.0)
                .map(|(key, (n, measured, predicted))| (key, (n, measured / predicted)))
                .collect()
        };
        (factors(by_stage), factors(by_region))
    };
    let (by_stage, by_region) = pool(&|s| ((s.measured_s - charged(s)).max(0.0), s.predicted_s));
    // The same with the recomputed forwards' rerun taken out of a backward (measured as its
    // stage's forwards ran): what the layers' own backward work and its halves cost, which the
    // calibrated layers and the split's factors are set from (the rerun is the forwards').
    let forward_of = |stage: usize| by_stage.get(&(stage, "F")).map_or(1.0, |f| f.1);
    let (net_by_stage, net_by_region) = pool(&|s| {
        let measured = (s.measured_s - charged(s)).max(0.0);
        (
            (measured - s.rerun_s * forward_of(s.stage)).max(0.0),
            s.predicted_s - s.rerun_s,
        )
    });
    // Each action's compute over what its stage and phase's factor makes of it; on every
    // fitted step, each rank's summed (its pace that step), and each action's over its rank's
    // pace (how much one action varies around the mean its step ran at: the jitter's compute).
    let expected_s = |s: &ComputeSample| {
        let factor = by_stage.get(&(s.stage, s.phase)).map_or(0.0, |f| f.1);
        ((s.measured_s - charged(s)).max(0.0), factor * s.predicted_s)
    };
    let mut paces: FxHashMap<(usize, usize), (f64, f64)> = FxHashMap::default();
    for s in &samples {
        let (measured, expected) = expected_s(s);
        if expected > 0.0 {
            let entry = paces.entry((s.step, s.rank)).or_default();
            *entry = (entry.0 + measured, entry.1 + expected);
        }
    }
    let pace_of = |step: usize, rank: usize| {
        paces
            .get(&(step, rank))
            .filter(|(_, expected)| *expected > 0.0)
            .map_or(1.0, |(measured, expected)| measured / expected)
    };
    // One pace for each traced rank of the plan's (a trace's rank beyond them is none of the
    // run's).
    let ranks = sim.derivation.plan.ranks;
    let last_rank = samples.iter().map(|s| s.rank).filter(|&r| r < ranks).max();
    let pace = rank_paces(steps.len(), &pace_of, last_rank);
    // The actions' own variation, around their rank's pace where the paces are kept (else
    // around the mean: the step's variation stays in the actions').
    let multipliers = samples
        .iter()
        .filter_map(|s| {
            let (measured, expected) = expected_s(s);
            let pace = if pace.is_empty() {
                1.0
            } else {
                pace_of(s.step, s.rank)
            };
            (expected > 0.0 && pace > 0.0).then(|| measured / (expected * pace))
        })
        .collect();
    ComputeFit {
        by_stage,
        by_region,
        net_by_stage,
        net_by_region,
        switch,
        multipliers,
        pace,
    }
}

/// What [`compute_ratios`] fits.
struct ComputeFit {
    by_stage: Ratios,
    by_region: Ratios,
    /// The same less the recomputed forwards' rerun in a backward (equal to them where nothing
    /// is recomputed).
    net_by_stage: Ratios,
    net_by_region: Ratios,
    switch: SwitchFit,
    /// Each action's compute over its stage and phase's mean at its rank's pace that step.
    multipliers: Vec<f64>,
    /// Per fitted step, each rank's pace ([`Jitter::pace`]); empty from one step.
    pace: Vec<Vec<f64>>,
}

/// Per fitted step, each rank's (0 to `last_rank`) pace over its mean pace across the steps
/// (`pace_of(step, rank)`: its compute that step over what the fitted factors make of it); empty
/// from fewer than two steps (one step's pace is what its factors were fitted to), and beyond
/// what a scenario's `jitter.pace` may give ([`MAX_PACE_STEPS`] steps, [`MAX_PACE_ENTRIES`] in
/// all): the run's variation is then drawn per action alone.
fn rank_paces(
    steps: usize,
    pace_of: &dyn Fn(usize, usize) -> f64,
    last_rank: Option<usize>,
) -> Vec<Vec<f64>> {
    let Some(last_rank) = last_rank.filter(|&r| {
        (2..=MAX_PACE_STEPS).contains(&steps)
            && steps.saturating_mul(r.saturating_add(1)) <= MAX_PACE_ENTRIES
    }) else {
        return Vec::new();
    };
    let mean: Vec<f64> = (0..=last_rank)
        .map(|rank| (0..steps).map(|step| pace_of(step, rank)).sum::<f64>() / steps as f64)
        .collect();
    (0..steps)
        .map(|step| {
            (0..=last_rank)
                .zip(&mean)
                .map(|(rank, &m)| {
                    if m > 0.0 {
                        pace_of(step, rank) / m
                    } else {
                        1.0
                    }
                })
                .collect()
        })
        .collect()
}

/// The factor table: every stage of a `ByLayer` region, in stage order, then every Replicated
/// region (its pooled factors), each with the phases its schedule has (whole backwards where it
/// does not always split them, halves where it may split) or that were measured.
fn factor_table(
    plan: &Plan,
    by_stage: &Ratios,
    by_region: &Ratios,
    in_weight: bool,
) -> Vec<Factor> {
    let mut units: Vec<(usize, Option<Stage>)> = plan
        .regions
        .iter()
        .flat_map(|r| match &r.owner {
            RegionOwner::ByLayer { slabs, .. } => slabs
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .filter_map(|(rank, _)| Some((r.index, Some(plan.stage_index(r.index, rank)?))))
                .collect(),
            RegionOwner::ByMicrobatch => Vec::new(),
        })
        .collect();
    units.sort_by_key(|&(_, s)| s);
    units.extend(
        plan.regions
            .iter()
            .filter(|r| matches!(r.owner, RegionOwner::ByMicrobatch))
            .map(|r| (r.index, None)),
    );
    let relevant = |region: usize, phase: Phase, measured: bool| {
        let skeleton = plan.region(region).map(|r| r.skeleton);
        let four = skeleton.is_some_and(|s| s.schedule().ops() == OpSet::FourPhase);
        measured
            || match phase {
                // A second-order schedule runs its four phases only.
                _ if four => phase.four_index().is_some(),
                Phase::Forward => true,
                Phase::Backward => !skeleton.is_some_and(|s| s.splits_backward()),
                Phase::Input | Phase::Weight => skeleton.is_some_and(|s| s.may_split_backward()),
                _ => false,
            }
    };
    let mut factors = Vec::new();
    for &(region, stage) in &units {
        for phase in PHASES {
            let fit = match stage {
                Some(s) => by_stage.get(&(s.into(), phase.code())),
                None => by_region.get(&(region, phase.code())),
            };
            // The first stage's halves under `in_weight` are fitted as its whole backward.
            let halves_whole = in_weight
                && matches!(phase, Phase::Input | Phase::Weight)
                && stage.is_some_and(|s| first_stage(plan, s));
            if halves_whole || !relevant(region, phase, fit.is_some()) {
                continue;
            }
            let &(samples, factor) = fit.unwrap_or(&(0, 1.0));
            factors.push(Factor {
                region,
                stage: stage.map(usize::from),
                phase: phase.code(),
                factor,
                samples,
            });
        }
    }
    factors
}

/// The fit of one layer: its stage's factors where fitted, else its region's pooled ones; its
/// memory: its rank's, shared evenly by the layers of its stage.
struct LayerFits<'a> {
    plan: &'a Plan,
    stages: Vec<Option<Stage>>,
    stage_layers: FxHashMap<Stage, usize>,
    by_stage: &'a Ratios,
    by_region: &'a Ratios,
    memory: &'a [MemoryFit],
    /// What a fitted half's factor is multiplied by for its layers: the scenario's
    /// [`Hardware::half_factor`] over the fitted one (the runtime's split now carries that part).
    ///
    /// [`Hardware::half_factor`]: crate::scenario::hardware::Hardware::half_factor
    halves: (f64, f64),
}

impl LayerFits<'_> {
    fn of(&self, layer: usize) -> LayerFit {
        let plan = self.plan;
        let region = plan
            .regions
            .iter()
            .find(|r| r.layers.contains(&layer))
            .map_or(0, |r| r.index);
        let stage = self.stages.get(layer).copied().flatten();
        let pick = |phase: Phase| {
            let letter = phase.code();
            stage
                .and_then(|s| self.by_stage.get(&(s.into(), letter)))
                .or_else(|| self.by_region.get(&(region, letter)))
                .map(|&(_, factor)| factor)
        };
        let (f, b, i, w) = (
            pick(Phase::Forward),
            pick(Phase::Backward),
            pick(Phase::Input).map(|i| i * self.halves.0),
            pick(Phase::Weight).map(|w| w * self.halves.1),
        );
        let fit = stage
            .and_then(|s| plan.stage_to_region_rank(s))
            .and_then(|(_, rank)| self.memory.iter().find(|m| m.rank == rank));
        let layers = stage
            .and_then(|s| self.stage_layers.get(&s))
            .copied()
            .unwrap_or(1)
            .max(1) as f64;
        LayerFit {
            forward: f.unwrap_or(1.0),
            // A whole backward scales as its halves when only they were measured.
            backward: b.or(i.zip(w).map(|(i, w)| 0.5 * (i + w))).unwrap_or(1.0),
            whole_measured: b.is_some(),
            // Halves keep their share of the backward unless they were measured.
            input: i,
            weight: w,
            four_phase: Phase::FOUR.map(pick),
            activation_bytes: fit.and_then(|f| f.activation_bytes).map(|a| a / layers),
            workspace_bytes: fit.and_then(|f| f.workspace_bytes),
        }
    }
}

/// The calibrated prediction's step against every step of the run.
fn step_checks<E>(
    m: &Measurement,
    alignment: &Alignment,
    makespan_s: f64,
    pass: &mut impl FnMut(f32) -> Result<(), E>,
) -> Result<Vec<StepCheck>, E> {
    let count = m.common_steps();
    let mut steps = Vec::with_capacity(count);
    let by_step = Steps::new(m);
    for step in 0..count {
        pass(0.5 + 0.5 * step as f32 / count.max(1) as f32)?;
        let (t0, t1, _) = by_step.step(alignment, step);
        let measured_s = t1.saturating_sub(t0) as f64 * 1e-9;
        steps.push(StepCheck {
            step,
            measured_s,
            error: relative(makespan_s, measured_s),
        });
    }
    Ok(steps)
}

/// The calibration, calling `pass` with the fraction done between its parts and stopping with
/// the error it returns.
fn calibrate_with<E: From<DeriveError>>(
    fit: &Fit,
    mut pass: impl FnMut(f32) -> Result<(), E>,
) -> Result<Calibration, E> {
    let &Fit {
        scenario,
        predicted: sim,
        measurement: m,
        alignment,
        fit_step,
        check_step,
        every_step,
        options,
    } = fit;
    pass(0.0)?;
    let plan = &sim.derivation.plan;
    let (_, _, measured) = measured_step(m, alignment, fit_step);
    let fit_steps = if every_step {
        0..m.common_steps()
    } else {
        fit_step..fit_step + 1
    };
    // Each fitted step's actions (a Cancel is heard between steps: fitting every step of a long
    // run reads each of them).
    let count = fit_steps.len().max(1) as f32;
    let mut steps: Vec<Vec<(usize, Vec<StepAction>)>> = Vec::with_capacity(fit_steps.len());
    let by_step = Steps::new(m);
    for (i, k) in fit_steps.clone().enumerate() {
        steps.push(by_step.step(alignment, k).2);
        pass(0.1 * (i + 1) as f32 / count)?;
    }
    // Where the first stage's split backward runs (PyTorch: whole in its weight half): as the
    // run's first-stage halves show, else as the scenario says, else PyTorch's.
    let first_stage = first_stage_backward(plan, &steps).or_else(|| {
        scenario
            .hardware
            .as_ref()
            .and_then(|h| h.first_stage_backward)
    });
    let first_stage = first_stage.unwrap_or(FirstStageBackward::InWeight);
    let in_weight = first_stage == FirstStageBackward::InWeight;
    let ComputeFit {
        by_stage,
        by_region,
        net_by_stage,
        net_by_region,
        switch,
        multipliers,
        pace,
    } = compute_ratios(sim, &steps, in_weight);
    let factors = factor_table(plan, &by_stage, &by_region, in_weight);
    let split = fit_split(plan, &net_by_stage, &net_by_region, in_weight);
    let memory = fit_memory(plan, m, alignment, &measured, in_weight);
    let stages = stage_of_layers(plan);
    let mut stage_layers: FxHashMap<Stage, usize> = FxHashMap::default();
    for stage in stages.iter().flatten() {
        *stage_layers.entry(*stage).or_default() += 1;
    }
    let fits = LayerFits {
        plan,
        stages,
        stage_layers,
        by_stage: &net_by_stage,
        by_region: &net_by_region,
        memory: &memory,
        halves: split.as_ref().map_or((1.0, 1.0), |f| {
            (
                plan.hardware.half_factor(Phase::Input) / f.input,
                plan.hardware.half_factor(Phase::Weight) / f.weight,
            )
        }),
    };
    let mut calibrated = scaled(scenario, &|layer| fits.of(layer));
    // Halves measured as halves (the first stage's run whole in its weight half are whole
    // backwards' samples).
    let run_split = net_by_stage
        .keys()
        .any(|&(_, phase)| matches!(phase, "I" | "W"));
    let split_pricing = price_split(&mut calibrated, split.as_ref(), run_split);
    pass(0.2)?;
    let transfers = transfer_spans(m, alignment, &fit_steps, |k| k == ActionKind::Send);
    // What the scenario models apart in the gaps and transfers, kept from it ([`kept_shares`]).
    let kept = kept_shares(sim);
    let host = fit_host(sim, &steps, in_weight);
    // With a host model, a gap before an action its host had not yet launched is the host's:
    // the per-action overhead and the link are fitted from the others.
    let (overhead, gaps) = fit_overhead(sim, &kept, &steps, host.is_some());
    let p2p = fit_p2p(&transfers);
    let host_launch = fit_host_launch(sim, &steps);
    match &host {
        Some(fit) => {
            let hw = calibrated.hardware.get_or_insert_with(Default::default);
            hw.host_launch_per_layer_s = Some(fit.per_layer_s);
        }
        // A run whose every action is timed by its own span (a CPU's): its host is its device,
        // and a host model the scenario had is dropped. (An accelerator's run with no action to
        // fit one from keeps the scenario's.)
        None if !steps
            .iter()
            .flatten()
            .flat_map(|(_, actions)| actions)
            .any(timed_by_kernels) =>
        {
            if let Some(hw) = calibrated.hardware.as_mut() {
                hw.host_launch_per_layer_s = None;
            }
        }
        None => {}
    }
    // Between a producer's last op and its consumer's first: the link (with what posting the
    // send costs, since that is not applied apart) and the receiver's per-action overhead.
    let (link, transfer_times) = fit_link(
        sim,
        &kept,
        &steps,
        overhead.action_overhead_s.unwrap_or(0.0),
        host.is_some(),
    );
    if overhead.action_overhead_s.is_some() {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.action_overhead_s = overhead.action_overhead_s;
    }
    // The overhead by phase is measured and reported, not applied, for the reason the switch
    // is not (README "Diagnosis": fitted on one step it moved other schedules' predictions
    // further from their runs); `hardware.action_overhead_by_phase_s` stays the user's.
    // The switch is applied where it was fitted from enough actions (MIN_APPLIED_SWITCH_SAMPLES:
    // over every step of a run, not the few of one step); a phase not applied keeps the
    // user's.
    // The posting of sends is measured and reported, not applied: on the seven-schedule runs,
    // carried by the senders it moved the step's time between schedules the wrong way (their
    // ranking against the measured one fell; README "Diagnosis"), so where the runtime spends
    // it is not yet modelled right. `hardware.p2p_post_s` stays the user's.
    // What a weight half holds: measured where weight halves ran; where memory was measured
    // and none ran, PyTorch's (the runtime that recorded the trace), unless the scenario says.
    let measured_transient = median(
        memory
            .iter()
            .filter_map(|f| f.weight_transient_per_param_byte)
            .collect(),
    );
    let weight_half_ran = steps.iter().flatten().any(|(_, actions)| {
        actions
            .iter()
            .any(|a| a.action.is_some_and(|x| x.phase == Phase::Weight))
    });
    let given = calibrated
        .hardware
        .as_ref()
        .and_then(|h| h.weight_transient_bytes_per_param_byte);
    let transient = measured_transient.or_else(|| {
        (!memory.is_empty() && !weight_half_ran && given.is_none())
            .then_some(PYTORCH_WEIGHT_HALF_TRANSIENT)
    });
    if let Some(k) = transient {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.weight_transient_bytes_per_param_byte = Some(k);
    }
    calibrated
        .hardware
        .get_or_insert_with(Default::default)
        .first_stage_backward = Some(first_stage);
    // What the last stage keeps of its outputs: the scenario's, else PyTorch's where memory was
    // measured.
    let outputs_held = calibrated
        .hardware
        .as_ref()
        .and_then(|h| h.output_held_share)
        .or_else(|| (!memory.is_empty()).then_some(PYTORCH_OUTPUT_HELD_SHARE));
    if let Some(share) = outputs_held {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.output_held_share = Some(share);
    }
    if let Some(factor) = step_grad_factor(sim, &memory, outputs_held.unwrap_or(0.0)) {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.step_grad_bytes_per_param_byte = Some(factor);
        // The gradients are the step's now: a static factor that held them (above the
        // parameters' own 1) gives them up, so they are not counted twice — once: a scenario
        // whose gradients were the step's already gave them up before (calibrating again
        // keeps its factor).
        let had_step_grads = scenario
            .hardware
            .as_ref()
            .is_some_and(|h| h.step_grad_bytes_per_param_byte.is_some());
        if let Some(f) = calibrated
            .static_memory_factor
            .filter(|&f| f > 1.0 && !had_step_grads)
        {
            calibrated.static_memory_factor = Some((f - factor).max(1.0));
        }
    }
    // What the input halves free and hold: from their measured net change (PyTorch's free
    // nothing and hold the weight operations' output gradients for the weight half).
    if let Some(net) = median(
        memory
            .iter()
            .filter_map(|f| f.input_half_net_per_activation)
            .collect(),
    ) {
        let (freed, held) = if net >= 0.0 {
            (0.0, net)
        } else {
            ((-net).min(1.0), 0.0)
        };
        for layer in &mut calibrated.model.layers {
            layer.activation_input_share = Some(freed);
        }
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.input_half_held_share = (held > 0.0).then_some(held);
    }
    if let Some(resident) = resident_bytes(plan, &calibrated, &memory) {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.resident_bytes = Some(resident);
    }
    let mut link = link;
    let every_span = transfer_spans(m, alignment, &fit_steps, |_| true);
    link.stall_s = fit_stall(&every_span);
    let spans = span_seconds(&every_span);
    let typical_span = median(spans.clone()).unwrap_or(0.0);
    let jitter = Jitter {
        compute: Quantiles::of(multipliers),
        gap_s: Quantiles::of(gaps),
        transfer_s: Quantiles::of(transfer_times),
        stall_s: Quantiles::of(spans.iter().map(|s| s - typical_span).collect()),
        pace,
    };
    if link.alpha_s.is_some() {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        // The link's mean time on a critical path: the waited-for transfers' own, and the
        // stalls those (chosen where a consumer idled, so rarely a stalled one) do not show.
        hw.link_alpha_s = link.alpha_s.map(|a| a + link.stall_s.unwrap_or(0.0));
        if link.bytes_per_s.is_some() {
            hw.link_bytes_per_s = link.bytes_per_s;
        }
    }
    if switch.fitted.iter().any(|p| p.applied) {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        let mut given = hw.action_switch_s.unwrap_or_default();
        for (slot, code) in [
            (&mut given.forward, "F"),
            (&mut given.backward, "B"),
            (&mut given.input, "I"),
            (&mut given.weight, "W"),
        ] {
            if let Some(s) = switch.applied(code) {
                *slot = Some(s);
            }
        }
        hw.action_switch_s = Some(given);
    }
    // The calibrated scenario carries how the run varied, so that it predicts the expected
    // step wherever it goes (a file, the app, a what-if); a jitter of an earlier calibration is
    // replaced, and dropped where nothing varied.
    calibrated.jitter = (!jitter.is_empty()).then(|| jitter.clone());
    pass(0.3)?;
    let simulation = simulate_scenario(&calibrated, options)?;
    let mut stopped = None;
    let expected =
        crate::sim::jitter::expected(&simulation, &jitter, options, &mut |f| match pass(
            0.3 + 0.2 * f,
        ) {
            Ok(()) => true,
            Err(e) => {
                stopped = Some(e);
                false
            }
        });
    if let Some(e) = stopped {
        return Err(e);
    }
    let predicted_s = expected.map_or(simulation.makespan_s, |e| e.median_s);
    let steps = step_checks(m, alignment, predicted_s, &mut pass)?;
    Ok(Calibration {
        jitter,
        expected,
        fit_step,
        every_step,
        check_step,
        factors,
        link,
        overhead,
        p2p,
        host_launch,
        host,
        split,
        split_pricing,
        run_split,
        switch,
        memory,
        before: compare(sim, m, alignment, check_step),
        after: compare(&simulation, m, alignment, check_step),
        fit: compare(&simulation, m, alignment, fit_step),
        steps,
        scenario: calibrated,
        simulation,
    })
}

/// The transfer times of the fitted steps ([`transfer_samples`]: the derived order's cross-rank
/// transfers whose consumer waited for them, less the consumer's own share). `α` is their mean
/// less the scenario's `β·n`; when the sizes differ, `α` and `β` by least squares, or, when the
/// time does not grow with the size, `α` as with one size and the scenario's `β` kept.
fn fit_link(
    sim: &Simulation,
    kept: &[f64],
    steps: &[Vec<(usize, Vec<StepAction>)>],
    rank_side_s: f64,
    hosted: bool,
) -> (LinkFit, Vec<f64>) {
    let hw = &sim.derivation.plan.hardware;
    let samples: Vec<(f64, f64)> = steps
        .iter()
        .flat_map(|measured| transfer_samples(sim, kept, measured, rank_side_s, hosted))
        .collect();
    let mut sizes: Vec<f64> = samples.iter().map(|s| s.0).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let median_s = median(samples.iter().map(|s| s.1).collect());
    let scenario_beta = |n: f64| match hw.link_bytes_per_s {
        Some(b) if b > 0.0 => n / b,
        _ => 0.0,
    };
    // The mean, not the median: a transfer that is now and then slow (a send held until its
    // receiver is ready) costs its average on the critical path. Less the scenario's `β·n`,
    // which is kept.
    let alpha_beyond_scenario = || {
        mean(
            samples
                .iter()
                .map(|&(n, t)| (t - scenario_beta(n)).max(0.0)),
        )
    };
    let (alpha_s, bytes_per_s) = if sizes.len() >= 2 {
        // Least squares t = α + n/β over the samples.
        let k = samples.len() as f64;
        let (sn, st) = samples
            .iter()
            .fold((0.0, 0.0), |(a, b), &(n, t)| (a + n, b + t));
        let (mn, mt) = (sn / k, st / k);
        let (sxy, sxx) = samples.iter().fold((0.0, 0.0), |(a, b), &(n, t)| {
            (a + (n - mn) * (t - mt), b + (n - mn) * (n - mn))
        });
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        if slope > 0.0 {
            (Some((mt - slope * mn).max(0.0)), Some(1.0 / slope))
        } else {
            // Time does not grow with size here: the bandwidth cannot be read, so it is kept.
            (alpha_beyond_scenario(), None)
        }
    } else {
        (alpha_beyond_scenario(), None)
    };
    // Each transfer beyond the `β·n` the calibrated scenario charges (the fitted bandwidth, or
    // the scenario's): how it varies around `α`.
    let beyond: Vec<f64> = samples
        .iter()
        .map(|&(n, t)| match bytes_per_s {
            Some(b) if b > 0.0 => t - n / b,
            _ => (t - scenario_beta(n)).max(0.0),
        })
        .collect();
    (
        LinkFit {
            alpha_s,
            bytes_per_s,
            samples: samples.len(),
            sizes: sizes.len(),
            median_s,
            stall_s: None,
        },
        beyond,
    )
}

/// The transfers of one fitted step whose consumer waited for them, as `(bytes, seconds)`: for every
/// cross-rank transfer of the derived order (a point-to-point send, or one leg of a seam's
/// gather or scatter) between two compute actions that were both measured, the time from the
/// producer's last compute op to the consumer's first, less `rank_side_s` (the consumer's
/// per-action overhead), where the consumer's rank ran nothing in between. The dependencies are
/// the order's own, so a region whose stages do not hand on to one another (a Replicated
/// region's replicas) gives none.
fn transfer_samples(
    sim: &Simulation,
    kept: &[f64],
    measured: &[(usize, Vec<StepAction>)],
    rank_side_s: f64,
    hosted: bool,
) -> Vec<(f64, f64)> {
    let plan = &sim.derivation.plan;
    let graph = &sim.derivation.order.graph;
    let mut at: FxHashMap<(usize, Action), &StepAction> = FxHashMap::default();
    for (rank, actions) in measured {
        for a in actions {
            if let Some(action) = a.action {
                at.entry((*rank, action)).or_insert(a);
            }
        }
    }
    // Each rank's actions by start, with the latest end among those up to each, to ask "was it
    // busy in between".
    let mut spans: FxHashMap<usize, (Vec<i64>, Vec<i64>)> = FxHashMap::default();
    for (rank, actions) in measured {
        let mut by_start: Vec<(i64, i64)> =
            actions.iter().map(|a| (a.start_ns, a.end_ns)).collect();
        by_start.sort_unstable();
        let starts = by_start.iter().map(|s| s.0).collect();
        let latest_end = by_start
            .iter()
            .scan(i64::MIN, |latest, s| {
                *latest = (*latest).max(s.1);
                Some(*latest)
            })
            .collect();
        spans.insert(*rank, (starts, latest_end));
    }
    let measured_at = |node: NodeIndex| {
        let event = graph.node_weight(node).filter(|e| e.is_compute())?;
        let rank = event.rank()?;
        Some((rank, *at.get(&(rank, event.action()?))?))
    };
    let mut samples: Vec<(f64, f64)> = Vec::new();
    for consumer in graph.node_indices() {
        let Some((to_rank, c)) = measured_at(consumer) else {
            continue;
        };
        // Of its transfers in, the one whose producer finished last: a consumer of several (a
        // gather's legs) waits for them all, so only the last one's gap is a transfer's time.
        let last = graph
            .neighbors_directed(consumer, Direction::Incoming)
            .filter_map(|t| Some((t, crate::sim::cost::transfer_bytes(plan, graph, t)?)))
            .flat_map(|(t, n)| {
                graph
                    .neighbors_directed(t, Direction::Incoming)
                    .filter_map(measured_at)
                    .map(move |(_, p)| (n, p))
            })
            .max_by_key(|(_, p)| p.compute_end_ns);
        let Some((n, producer)) = last else {
            continue;
        };
        // With a host model, a consumer its host had not yet launched when its input arrived
        // waited for its host, which the launches model: no transfer's time.
        if hosted && c.host_start_ns > producer.compute_end_ns {
            continue;
        }
        let gap = c.compute_start_ns.saturating_sub(producer.compute_end_ns);
        // Its rank ran nothing between the producer's compute and its own: it was waiting. (An
        // action of its rank that started before the consumer and ended after the producer
        // held it.)
        let busy = spans.get(&to_rank).is_some_and(|(starts, latest_end)| {
            let before = starts.partition_point(|&t| t < c.start_ns);
            before
                .checked_sub(1)
                .and_then(|i| latest_end.get(i))
                .is_some_and(|&end| end > producer.compute_end_ns)
        });
        // The consumer's own work in the gap (its overhead, and what the scenario keeps: the
        // posting of its sends) is modelled apart.
        if gap >= 0 && !busy {
            let own = rank_side_s + kept.get(consumer.index()).copied().unwrap_or(0.0);
            samples.push((n, (gap as f64 * 1e-9 - own).max(0.0)));
        }
    }
    samples
}

/// What is fitted for one layer: the factors its costs are scaled by (forward, whole backward,
/// and its halves when they were fitted: `None` keeps their share of the backward), and the
/// memory measured for it (`None` keeps the scenario's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerFit {
    pub forward: f64,
    pub backward: f64,
    /// Whether whole backwards were measured: then `backward` sets the whole backward, and the
    /// halves (when measured too, as DualPipeV runs both) only part it.
    pub whole_measured: bool,
    pub input: Option<f64>,
    pub weight: Option<f64>,
    /// Of a second-order schedule's `FE`, `FF`, `BF`, `BE` ([`Phase::FOUR`]'s order), the
    /// factors measured.
    pub four_phase: [Option<f64>; 4],
    pub activation_bytes: Option<f64>,
    pub workspace_bytes: Option<f64>,
}

/// A rank's memory as measured on the fit step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFit {
    pub rank: usize,
    /// Held per forward until its backward: the level the rank's first backward starts at, over
    /// the step's start, shared by the forwards before it.
    pub activation_bytes: Option<f64>,
    /// Allocated and freed while a backward runs: the median, over its whole backwards and input
    /// halves, of the peak inside one over the level it starts at (a weight half's is its own,
    /// below).
    pub workspace_bytes: Option<f64>,
    /// A weight half's transient over its stage's parameter bytes (the median over the rank's
    /// weight halves; `None` without one): what it holds before it accumulates its gradients.
    pub weight_transient_per_param_byte: Option<f64>,
    /// Still held when the rank's last backward ends, over the step's start: every activation is
    /// freed by then, so this is what the step allocated for good — its gradient buffers (freed
    /// at the step's end when the trainer zeroes them to `None`).
    pub step_held_bytes: Option<f64>,
    /// On an allocator that counts from the device's start (an accelerator's), the level at the
    /// step's first action: what the rank held before the step did anything (`None` on a
    /// relative one, a CPU's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_bytes: Option<f64>,
    /// The median over the rank's input halves (the first stage's under `in_weight` left out)
    /// of what one leaves behind when it ends, over what a forward saves: where positive, the
    /// half freed nothing and holds that share for its weight half (PyTorch); where negative, it
    /// freed that share (`None` without input halves or a forward's saved bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_half_net_per_activation: Option<f64>,
    pub forwards: usize,
    pub backwards: usize,
}

/// Whether the first stage (the unit holding the model's first layer) of `plan` runs stage
/// `stage`.
fn first_stage(plan: &Plan, stage: Stage) -> bool {
    plan.stage_to_region_rank(stage)
        .is_some_and(|(region, rank)| Plan::holds_first_layer(&plan.unit_layers(region, rank)))
}

/// Where the run's first stage ran its split backward: whole in its weight half when its input
/// halves' median compute took under a tenth of its weight halves' (PyTorch's pipelining: the
/// model's input needs no gradient, so the input half finds nothing to do), else split; `None`
/// where it ran no halves.
fn first_stage_backward(
    plan: &Plan,
    steps: &[Vec<(usize, Vec<StepAction>)>],
) -> Option<FirstStageBackward> {
    let halves = |phase: Phase| {
        let compute: Vec<f64> = steps
            .iter()
            .flatten()
            .flat_map(|(_, actions)| actions)
            .filter(|a| {
                a.action
                    .is_some_and(|x| x.phase == phase && first_stage(plan, x.stage))
            })
            .map(|a| a.compute_ns as f64)
            .collect();
        median(compute)
    };
    let (input, weight) = (halves(Phase::Input)?, halves(Phase::Weight)?);
    Some(if input < 0.1 * weight {
        FirstStageBackward::InWeight
    } else {
        FirstStageBackward::Split
    })
}

/// The memory of each rank with `[memory]` events on the fit step (see [`MemoryFit`]), read
/// against when each action ran on the host: the allocator's samples are the CPU's, and on a GPU
/// run the CPU allocates as it launches, ahead of the kernels.
fn fit_memory(
    plan: &Plan,
    m: &Measurement,
    alignment: &Alignment,
    measured: &[(usize, Vec<StepAction>)],
    in_weight: bool,
) -> Vec<MemoryFit> {
    let mut out: Vec<(MemoryFit, Vec<f64>)> = Vec::new();
    for (rank, actions) in measured {
        let Some(memory) = m.rank(*rank).and_then(|r| r.memory.as_ref()) else {
            continue;
        };
        let offset = alignment.offset(*rank);
        let own = |t: i64| t.saturating_sub(offset);
        let is_backward = |a: &StepAction| a.action.is_some_and(|x| x.phase.is_backward());
        let Some(start) = actions.iter().map(|a| a.host_start_ns).min() else {
            continue;
        };
        let first_backward = actions
            .iter()
            .filter(|a| is_backward(a))
            .min_by_key(|a| a.host_start_ns);
        let forwards = first_backward.map_or(0, |b| {
            actions
                .iter()
                .filter(|a| {
                    a.action.is_some_and(|x| x.phase == Phase::Forward)
                        && a.host_start_ns < b.host_start_ns
                })
                .count()
        });
        let activation_bytes = first_backward.filter(|_| forwards > 0).map(|b| {
            ((memory.at(own(b.host_start_ns)) - memory.at(own(start))) / forwards as f64).max(0.0)
        });
        let transient = |a: &StepAction| {
            let (s, e) = (own(a.host_start_ns), own(a.host_end_ns));
            (memory.peak(s, e) - memory.at(s)).max(0.0)
        };
        // The first stage's halves under `in_weight`: its input half runs nothing (no
        // sample), its weight half the whole backward (a workspace sample, not a transient).
        let first_half = |a: &StepAction| {
            in_weight
                && a.action.is_some_and(|x| {
                    matches!(x.phase, Phase::Input | Phase::Weight) && first_stage(plan, x.stage)
                })
        };
        let is_weight =
            |a: &StepAction| a.action.is_some_and(|x| x.phase == Phase::Weight) && !first_half(a);
        let whole = |a: &StepAction| {
            a.action.is_some_and(|x| {
                x.phase == Phase::Backward || (x.phase == Phase::Weight && first_half(a))
            })
        };
        // A whole backward's workspace (an input half's is a fraction of it: the weight
        // gradients it leaves to its weight half), else the input halves'.
        let whole_workspaces: Vec<f64> =
            actions.iter().filter(|a| whole(a)).map(transient).collect();
        let input_workspaces: Vec<f64> = actions
            .iter()
            .filter(|a| a.action.is_some_and(|x| x.phase == Phase::Input) && !first_half(a))
            .map(transient)
            .collect();
        // A weight half's transient over its stage's parameter bytes.
        let weight_transients: Vec<f64> = actions
            .iter()
            .filter(|a| is_weight(a))
            .filter_map(|a| {
                let (region, stage_rank) = plan.stage_to_region_rank(a.action?.stage)?;
                let params = crate::sim::cost::param_bytes(plan, region, stage_rank);
                (params > 0.0).then(|| transient(a) / params)
            })
            .collect();
        // Read once the last backward has returned. On the CPU its last op's end is too early
        // where the function still holds what it computed (PyTorch's weight half keeps the
        // gradients `autograd.grad` returned until it returns): the lowest level from that op's
        // end to its span's end (or the rank's next action, if sooner). An accelerator's
        // action is read on the host at its CPU span's end already (its span's end is its
        // kernels', when the host has long gone on).
        let last_backward = actions
            .iter()
            .filter(|a| is_backward(a))
            .max_by_key(|a| a.host_end_ns);
        let step_held_bytes = last_backward.map(|b| {
            let from = b.host_end_ns;
            let next = actions
                .iter()
                .map(|a| a.host_start_ns)
                .filter(|&t| t > from)
                .min();
            let held = match memory.relative() {
                true => {
                    let until = next.map_or(b.end_ns, |t| t.min(b.end_ns)).max(from);
                    memory.low(own(from), own(until))
                }
                false => memory.at(own(from)),
            };
            (held - memory.at(own(start))).max(0.0)
        });
        // What an input half leaves behind when it ends, over what a forward saved: positive
        // where it frees nothing and keeps something for its weight half (PyTorch).
        let input_half_net = activation_bytes
            .filter(|&a| a > 0.0)
            .and_then(|per_forward| {
                median(
                    actions
                        .iter()
                        .filter(|a| {
                            a.action.is_some_and(|x| x.phase == Phase::Input) && !first_half(a)
                        })
                        .map(|a| {
                            (memory.at(own(a.host_end_ns)) - memory.at(own(a.host_start_ns)))
                                / per_forward
                        })
                        .collect(),
                )
            });
        let whole_ran = !whole_workspaces.is_empty();
        out.push((
            MemoryFit {
                rank: *rank,
                activation_bytes,
                step_held_bytes,
                start_bytes: (!memory.relative()).then(|| memory.at(own(start))),
                input_half_net_per_activation: input_half_net,
                backwards: if whole_ran {
                    whole_workspaces.len()
                } else {
                    input_workspaces.len()
                },
                workspace_bytes: median(if whole_ran {
                    whole_workspaces.clone()
                } else {
                    input_workspaces
                }),
                weight_transient_per_param_byte: median(weight_transients),
                forwards,
            },
            whole_workspaces,
        ));
    }
    // A rank that ran no whole backward (a zero-bubble schedule's middle ranks run input halves
    // only) takes the other ranks' whole backwards' workspace where they ran any: what a
    // schedule that runs its backwards whole will hold.
    let every_whole = median(out.iter().flat_map(|(_, w)| w.iter().copied()).collect());
    out.into_iter()
        .map(|(mut fit, whole)| {
            if whole.is_empty() && every_whole.is_some() {
                fit.workspace_bytes = every_whole;
            }
            fit
        })
        .collect()
}

/// What each rank holds through the step beyond its parameters (`hardware.resident_bytes`), on
/// a run whose allocator counts from the device's start: the level at the fit step's start less
/// the rank's parameter bytes × the calibrated `static_memory_factor` (what the scenario held
/// resident before is not taken off: calibrating again gives the same); a rank without such a
/// reading keeps the scenario's, else takes the others' median. `None` where no rank has one (a
/// CPU's run).
fn resident_bytes(plan: &Plan, calibrated: &Scenario, memory: &[MemoryFit]) -> Option<Vec<f64>> {
    let factor = calibrated.static_memory_factor.unwrap_or(1.0);
    let own = |rank: usize| {
        let fit = memory.iter().find(|f| f.rank == rank)?;
        let start = fit.start_bytes?;
        Some((start - crate::sim::memory::parameter_bytes(plan, rank) * factor).max(0.0))
    };
    let fitted: Vec<f64> = (0..plan.ranks).filter_map(own).collect();
    let others = median(fitted)?;
    let given = calibrated
        .hardware
        .as_ref()
        .and_then(|h| h.resident_bytes.as_ref());
    Some(
        (0..plan.ranks)
            .map(|r| {
                own(r)
                    .or_else(|| given.and_then(|g| g.get(r).copied()))
                    .unwrap_or(others)
            })
            .collect(),
    )
}

/// The gradient buffers of the step per parameter byte (`hardware.step_grad_bytes_per_param_byte`):
/// the median over ranks of what a rank still holds after its last backward over its parameter
/// bytes (the median: one rank's stray allocation does not set it). `None` without memory, and
/// when that is under a quarter of the parameter bytes: gradient buffers come as whole
/// parameter-sized sets (×1 in the parameters' type, ×0.5 in a half-width one), so a smaller
/// remainder is something else (a loss kept, a cache), and the gradients are static (a trainer
/// that keeps them between steps).
fn step_grad_factor(sim: &Simulation, memory: &[MemoryFit], outputs_held: f64) -> Option<f64> {
    let plan = &sim.derivation.plan;
    let ratios: Vec<f64> = memory
        .iter()
        .filter_map(|m| {
            let params: f64 = plan
                .regions
                .iter()
                .map(|r| crate::sim::cost::param_bytes(plan, r.index, m.rank))
                .sum();
            // What the rank still holds of the last stage's outputs is not gradients: those of
            // the backwards it ran, as the memory model keeps them.
            let outputs: f64 = outputs_held
                * crate::sim::memory::outputs_kept(plan, &sim.derivation.order, m.rank)
                    .map(|(_, bytes)| bytes)
                    .sum::<f64>();
            let held = (m.step_held_bytes? - outputs).max(0.0);
            (params > 0.0).then(|| held / params)
        })
        .collect();
    median(ratios).filter(|&f| f >= MIN_GRADIENT_SHARE)
}

/// The least share of the parameter bytes read as the step's gradient buffers.
const MIN_GRADIENT_SHARE: f64 = 0.25;

/// What-if on another schedule: `target` (another schedule of the same model) with the costs and
/// memory a calibration fitted — `calibrated`'s layers, hardware and jitter, `target`'s cut, schedule,
/// placement, ranks and microbatches. Refused when the two models differ in their layer count.
pub fn with_fitted_costs(target: &Scenario, calibrated: &Scenario) -> Result<Scenario, String> {
    let count = |s: &Scenario| s.model.layers.iter().map(|l| l.count).sum::<usize>();
    if count(target) != count(calibrated) {
        return Err(format!(
            "the calibrated model has {} layers and this one {}: fitted costs apply to the same model only",
            count(calibrated),
            count(target)
        ));
    }
    let mut out = target.clone();
    out.model = calibrated.model.clone();
    out.hardware = calibrated.hardware.clone();
    // The static factor the calibration left beside the step's gradients and resident bytes
    // (they were fitted against it).
    out.static_memory_factor = calibrated.static_memory_factor;
    out.jitter = calibrated.jitter.clone();
    if !out.name.is_empty() && !out.name.ends_with(" (calibrated)") {
        out.name.push_str(" (calibrated)");
    }
    Ok(out)
}

/// `scenario` with each layer's costs scaled by `factors(layer)` (layer index in the expanded
/// model); a layer group whose layers get different factors is split into pieces.
pub fn scaled(scenario: &Scenario, factors: &dyn Fn(usize) -> LayerFit) -> Scenario {
    let mut out = scenario.clone();
    let mut layers: Vec<LayerSpec> = Vec::new();
    let mut at = 0usize;
    for spec in &scenario.model.layers {
        let end = at + spec.count;
        while at < end {
            let f = factors(at);
            let mut stop = at + 1;
            while stop < end && factors(stop) == f {
                stop += 1;
            }
            let mut piece = spec.clone();
            piece.count = stop - at;
            scale_layer(&mut piece, f);
            layers.push(piece);
            at = stop;
        }
    }
    out.model.layers = layers;
    if !out.name.is_empty() && !out.name.ends_with(" (calibrated)") {
        out.name.push_str(" (calibrated)");
    }
    out
}

/// Scales one layer group's costs, seconds or roofline work alike.
fn scale_layer(piece: &mut LayerSpec, f: LayerFit) {
    scale_four_phases(piece, &f);
    let halves = f.input.is_some() || f.weight.is_some();
    let (input_f, weight_f) = (
        f.input.unwrap_or(f.backward),
        f.weight.unwrap_or(f.backward),
    );
    // The whole backward and its halves as the cost model reads them (DESIGN.md §3 defaults:
    // the backward is twice the forward, the input half is half of it).
    let whole = |bwd: Option<f64>, input: Option<f64>, weight: Option<f64>, fwd: Option<f64>| {
        bwd.or(input.zip(weight).map(|(i, w)| i + w))
            .or(fwd.map(|x| 2.0 * x))
    };
    let split = |whole: f64, input: Option<f64>, weight: Option<f64>| {
        let i = input.or(weight.map(|w| whole - w)).unwrap_or(whole / 2.0);
        (i, weight.unwrap_or(whole - i))
    };
    let seconds = whole(
        piece.bwd_s,
        piece.bwd_input_s,
        piece.bwd_weight_s,
        piece.fwd_s,
    );
    // Fitted halves make the whole backward (the cost model requires the two to agree) unless
    // whole backwards were measured too: then those set it, and the halves only part it.
    let mut halves_s = None;
    if halves && let Some(w) = seconds {
        let (i, wt) = split(w, piece.bwd_input_s, piece.bwd_weight_s);
        let (i, wt) = (i * input_f, wt * weight_f);
        halves_s = Some(if f.whole_measured && i + wt > 0.0 {
            let whole = w * f.backward;
            (whole * i / (i + wt), whole * wt / (i + wt))
        } else {
            (i, wt)
        });
    }
    let flops = whole(
        piece.bwd_flops,
        piece.bwd_input_flops,
        piece.bwd_weight_flops,
        piece.fwd_flops,
    );
    piece.bwd_s = piece
        .bwd_s
        .or(piece.fwd_s.map(|x| 2.0 * x))
        .map(|x| x * f.backward);
    piece.fwd_s = piece.fwd_s.map(|x| x * f.forward);
    piece.fwd_flops = piece.fwd_flops.map(|x| x * f.forward);
    piece.fwd_bytes = piece.fwd_bytes.map(|x| x * f.forward);
    piece.bwd_flops = piece.bwd_flops.map(|x| x * f.backward);
    piece.bwd_bytes = piece.bwd_bytes.map(|x| x * f.backward);
    if let Some((i, w)) = halves_s {
        piece.bwd_input_s = Some(i);
        piece.bwd_weight_s = Some(w);
        piece.bwd_s = Some(i + w);
    } else if halves && let Some(whole) = flops {
        let (i, w) = split(whole, piece.bwd_input_flops, piece.bwd_weight_flops);
        let (i, w) = (i * input_f, w * weight_f);
        let (i, w) = if f.whole_measured && i + w > 0.0 {
            let whole = whole * f.backward;
            (whole * i / (i + w), whole * w / (i + w))
        } else {
            (i, w)
        };
        piece.bwd_input_flops = Some(i);
        piece.bwd_weight_flops = Some(w);
        piece.bwd_flops = Some(i + w);
    }
    if f.activation_bytes.is_some() {
        piece.activation_bytes = f.activation_bytes;
    }
    if f.workspace_bytes.is_some() {
        piece.workspace_bytes = f.workspace_bytes;
    }
}

/// Sets a second-order phase's seconds to what it was (given, or its default share of the
/// forward and backward before they are scaled) times its measured factor; a phase not measured
/// keeps following the forward and backward. A roofline layer's defaults follow its scaled work
/// (its given second-order seconds are scaled).
fn scale_four_phases(piece: &mut LayerSpec, f: &LayerFit) {
    let cost = piece.cost().ok();
    let slots = [
        &mut piece.fe_s,
        &mut piece.ff_s,
        &mut piece.bf_s,
        &mut piece.be_s,
    ];
    for ((slot, factor), [to_fwd, to_bwd]) in slots
        .into_iter()
        .zip(f.four_phase)
        .zip(crate::scenario::layer::FOUR_PHASE_SHARES)
    {
        let Some(factor) = factor else { continue };
        let default = match cost {
            Some(crate::scenario::layer::Cost::Explicit { fwd_s, bwd_s }) => {
                Some(to_fwd * fwd_s + to_bwd * bwd_s)
            }
            _ => None,
        };
        *slot = slot.or(default).map(|t| t * factor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ranks_paces_are_over_its_mean_and_kept_only_within_a_files_bounds() {
        // Rank 0 at 0.9, 1.2, 0.9 of its costs over three steps (mean 1), rank 1 at 2 throughout.
        let raw = |step: usize, rank: usize| match (step, rank) {
            (1, 0) => 1.2,
            (_, 0) => 0.9,
            _ => 2.0,
        };
        let pace = rank_paces(3, &raw, Some(1));
        assert_eq!(pace.len(), 3);
        for (row, expected) in pace.iter().zip([[0.9, 1.0], [1.2, 1.0], [0.9, 1.0]]) {
            for (got, want) in row.iter().zip(expected) {
                assert!((got - want).abs() < 1e-12, "{pace:?}");
            }
        }
        // One step: its costs were fitted to it. No rank traced, or more than a file may hold:
        // none.
        assert!(rank_paces(1, &raw, Some(1)).is_empty());
        assert!(rank_paces(3, &raw, None).is_empty());
        assert!(rank_paces(MAX_PACE_STEPS + 1, &raw, Some(0)).is_empty());
        assert!(rank_paces(4, &raw, Some(MAX_PACE_ENTRIES / 4)).is_empty());
        assert_eq!(rank_paces(4, &raw, Some(MAX_PACE_ENTRIES / 4 - 1)).len(), 4);
    }

    #[test]
    fn a_calibration_is_never_checked_on_its_fit_step() {
        assert_eq!(check_step(0, 6), Some(1));
        assert_eq!(check_step(5, 6), Some(4));
        assert_eq!(check_step(1, 2), Some(0));
        assert_eq!(check_step(0, 1), None);
        assert_eq!(check_step(3, 2), None);
    }
    use crate::vocab::role::Role;

    #[test]
    fn a_layer_group_across_a_cut_is_split_and_each_piece_scaled() {
        let scenario = Scenario {
            format: crate::scenario::FORMAT.to_string(),
            name: "s".into(),
            description: String::new(),
            model: crate::scenario::ModelSpec {
                layers: vec![LayerSpec::timed("x", Role::Backbone, 4, 1.0)],
            },
            cut: vec![1],
            schedule: vec![crate::schedules::ONE_F_ONE_B, crate::schedules::ONE_F_ONE_B],
            ranks: 1,
            microbatches: 1,
            data_parallel: 1,
            slabs: None,
            hardware: None,
            workload: None,
            owner: Default::default(),
            static_memory_factor: None,
            orders: None,
            orders_csv: None,
            orders_from_csv: None,
            owner_budget: None,
            placement: None,
            wave_k: None,
            activation_limit: None,
            width: None,
            jitter: None,
        };
        // Layer 0 (region 1): forward ×2; layers 1 to 3 (region 2): backward ×0.5.
        let factors = |layer: usize| LayerFit {
            forward: if layer == 0 { 2.0 } else { 1.0 },
            backward: if layer == 0 { 1.0 } else { 0.5 },
            whole_measured: true,
            input: None,
            weight: None,
            four_phase: [None; 4],
            activation_bytes: None,
            workspace_bytes: None,
        };
        let out = scaled(&scenario, &factors);
        let got: Vec<(usize, Option<f64>, Option<f64>)> = out
            .model
            .layers
            .iter()
            .map(|l| (l.count, l.fwd_s, l.bwd_s))
            .collect();
        assert_eq!(got, [(1, Some(2.0), Some(2.0)), (3, Some(1.0), Some(1.0))]);
        assert_eq!(out.name, "s (calibrated)");
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
