//! Measured against predicted, action by action, for one step: start and duration residuals
//! (measured minus predicted, both from the step's start: its first compute op), each rank's
//! bubble and memory peak, the step time, and how far each rank's measured order agrees with the
//! predicted one (longest common subsequence over the longer of the two).

use super::align::Alignment;
use super::recover::{MeasuredEvent, MeasuredRank, Measurement};
use crate::sim::memory::MemoryCurve;
use crate::sim::run::Simulation;
use crate::vocab::action::Action;
use crate::vocab::phase::Phase;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// One action seen on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionResidual {
    pub rank: usize,
    pub action: String,
    pub measured_start_s: f64,
    pub measured_duration_s: f64,
    pub predicted_start_s: f64,
    pub predicted_duration_s: f64,
    /// Measured minus predicted.
    pub start_residual_s: f64,
    pub duration_residual_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankComparison {
    pub rank: usize,
    /// `LCS(measured, predicted) / max(len)`: 1 when the rank ran exactly the predicted order.
    pub order_agreement: f64,
    /// Measured: the compute of the rank's action spans (each from its first compute op to its
    /// last), the rest of those spans (waiting for inputs), and the step's time outside any
    /// span (idle). Compute + wait + idle = the measured step; wait + idle = the measured
    /// bubble.
    pub measured_compute_s: f64,
    pub measured_wait_s: f64,
    pub measured_idle_s: f64,
    pub measured_bubble_s: f64,
    pub predicted_bubble_s: f64,
    pub mean_abs_start_residual_s: f64,
    pub mean_abs_duration_residual_s: f64,
    /// The measured memory peak of the step (`None` without `[memory]` events) and the
    /// predicted one. When the measured totals count from the profiler's start (the CPU
    /// allocator's), the prediction is its dynamic part: the peak less the static bytes.
    pub measured_peak_bytes: Option<f64>,
    pub predicted_peak_bytes: f64,
    /// How far the predicted memory curve's *shape* is from the measured one: the mean, over
    /// the step (each curve on its own step's length, at [`SHAPE_SAMPLES`] instants), of
    /// |predicted − measured| over the measured peak, on the measured basis (`None` without
    /// `[memory]` events). A curve with the right peak at the wrong time, or held too long, shows
    /// here and not in the peak.
    pub memory_shape_error: Option<f64>,
    /// Predicted actions the trace does not have on this rank.
    pub missing: usize,
    /// Measured actions the prediction does not have on this rank.
    pub unexpected: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub step: usize,
    pub order_agreement: f64,
    pub makespan_measured_s: f64,
    pub makespan_predicted_s: f64,
    pub ranks: Vec<RankComparison>,
    /// Every measured action seen on both sides.
    pub actions: Vec<ActionResidual>,
    /// Why measured actions could not be matched, when the reason is the schedule or its
    /// placement rather than the run: actions the schedule cannot have (split-backward halves),
    /// stages measured on another rank than the placement gives, stages it does not have.
    pub warnings: Vec<String>,
    /// Every measured action of the step, matched or not, as the app draws it.
    pub blocks: Vec<MeasuredBlock>,
    /// Each rank's measured memory over the step, as the app draws it.
    pub memory: Vec<MeasuredMemoryCurve>,
}

/// A rank's measured memory over one step: `[seconds from the step's start, bytes]`, at most
/// [`MEMORY_POINTS`] points (the highest of each stretch kept, so no peak is lost).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredMemoryCurve {
    pub rank: usize,
    pub device: String,
    /// The totals count from the profiler's start (CPU): compare with the predicted curve less
    /// its static bytes.
    pub relative: bool,
    pub points: Vec<[f64; 2]>,
}

impl MeasuredMemoryCurve {
    /// The measured curve on the scale of `predicted` (the same rank's): a relative total sits
    /// on the predicted static bytes; its peak is its highest point (the first of equals).
    pub fn on_scale_of(&self, predicted: Option<&MemoryCurve>) -> MemoryCurve {
        let base = if self.relative {
            predicted.map_or(0.0, |c| c.static_bytes)
        } else {
            0.0
        };
        let points: Vec<[f64; 2]> = self.points.iter().map(|p| [p[0], p[1] + base]).collect();
        let (peak_at_s, peak_bytes) = points
            .iter()
            .map(|p| (p[0], p[1]))
            .fold((0.0, base), |a, b| if b.1 > a.1 { b } else { a });
        MemoryCurve {
            rank: self.rank,
            static_bytes: base,
            points,
            peak_bytes,
            peak_at_s,
            over_capacity: false,
            recomputed_points: Vec::new(),
            offloaded_points: Vec::new(),
        }
    }
}

/// The instants a memory curve's shape is compared at.
pub const SHAPE_SAMPLES: usize = 200;

/// The level of a step curve (`[t, bytes]` after each change, in time order) at `t`: the last
/// point at or before it (the first point's level before it).
fn level_at(points: &[[f64; 2]], t: f64) -> f64 {
    let i = points.partition_point(|p| p[0] <= t);
    i.checked_sub(1)
        .and_then(|i| points.get(i))
        .or(points.first())
        .map_or(0.0, |p| p[1])
}

/// The mean |predicted − measured| over the measured peak, at [`SHAPE_SAMPLES`] instants spread
/// over each curve's own step (`measured` over `measured_s`, `predicted` over `predicted_s`,
/// less `base` — the static bytes a measurement that counts from the profiler's start leaves
/// out). 0 when the measured curve has no height.
pub fn shape_error(
    measured: &[[f64; 2]],
    measured_s: f64,
    predicted: &[[f64; 2]],
    predicted_s: f64,
    base: f64,
) -> f64 {
    let peak = measured.iter().map(|p| p[1]).fold(0.0, f64::max);
    if peak <= 0.0 {
        return 0.0;
    }
    let n = SHAPE_SAMPLES as f64;
    let total: f64 = (0..SHAPE_SAMPLES)
        .map(|k| {
            let u = (k as f64 + 0.5) / n;
            let m = level_at(measured, u * measured_s);
            let p = level_at(predicted, u * predicted_s) - base;
            (p - m).abs()
        })
        .sum();
    total / n / peak
}

/// The most points a measured memory curve keeps per step.
pub const MEMORY_POINTS: usize = 2000;

/// The measured memory of `rank` in `[t0, t1]` (aligned clock), every sample, as
/// `[seconds from t0, bytes]` (the level at `t0` first), with whether it counts from the
/// profiler's start and its device.
fn memory_points(
    m: &Measurement,
    alignment: &Alignment,
    rank: usize,
    t0: i64,
    t1: i64,
) -> Option<(Vec<[f64; 2]>, bool, String)> {
    let memory = m.rank(rank)?.memory.as_ref()?;
    let offset = alignment.offset(rank);
    let (from, to) = (t0.saturating_sub(offset), t1.saturating_sub(offset));
    let first = memory.samples.partition_point(|&(ts, _)| ts < from);
    let points = std::iter::once([0.0, memory.at(from)])
        .chain(
            memory
                .samples
                .get(first..)
                .unwrap_or_default()
                .iter()
                .take_while(|&&(ts, _)| ts <= to)
                .map(|&(ts, bytes)| [seconds(ts.saturating_sub(from)), bytes]),
        )
        .collect();
    Some((points, memory.relative(), memory.device()))
}

/// A rank's measured memory curve thinned to [`MEMORY_POINTS`] (the highest of each stretch).
fn thinned(
    rank: usize,
    (inside, relative, device): (Vec<[f64; 2]>, bool, String),
) -> MeasuredMemoryCurve {
    let stretch = inside.len().div_ceil(MEMORY_POINTS).max(1);
    let points = inside
        .chunks(stretch)
        .filter_map(|c| c.iter().copied().max_by(|a, b| a[1].total_cmp(&b[1])))
        .collect();
    MeasuredMemoryCurve {
        rank,
        device,
        relative,
        points,
    }
}

/// Predicted `(start, end)` of every compute action, by `(rank, action)`.
pub fn predicted_actions(sim: &Simulation) -> FxHashMap<(usize, Action), (f64, f64)> {
    predicted_compute(sim)
        .into_iter()
        .map(|(key, (start, end, _))| (key, (start, end)))
        .collect()
}

/// Every predicted action's start and end, and its compute: its duration less the runtime's own
/// share ([`Simulation::runtime_s`]: per-action overhead, posting, a switch) and its wait for its
/// host's launch ([`Simulation::host_wait_s`]), which a measured action's compute ops do not hold.
pub fn predicted_compute(sim: &Simulation) -> FxHashMap<(usize, Action), (f64, f64, f64)> {
    let graph = &sim.derivation.order.graph;
    graph
        .node_indices()
        .filter_map(|n| {
            let event = graph.node_weight(n)?;
            let action = event.action().filter(|a| a.phase != Phase::Recompute)?;
            let rank = event.rank()?;
            let (mut start, end) = sim.timeline.span_of(n)?;
            let own = |n: petgraph::graph::NodeIndex, (s, e): (f64, f64)| {
                (e - s - sim.not_work_s(n.index())).max(0.0)
            };
            let mut compute = own(n, (start, end));
            // A trace's backward holds its recomputation (PyTorch has no action of its own
            // for it): an early one is read as part of it.
            if let Some(r) = crate::graph::recompute::early_of(graph, n)
                && let Some(span) = sim.timeline.span_of(r)
            {
                start = start.min(span.0);
                compute += own(r, span);
            }
            Some(((rank, action), (start, end, compute)))
        })
        .collect()
}

/// The measured action as the predicted notation has it (`None` for `I`/`W`, which the
/// simulator does not split yet).
fn as_action(stage: usize, phase: Option<Phase>, mb: usize) -> Option<Action> {
    Some(Action {
        stage: stage.into(),
        phase: phase?,
        mb: mb.into(),
    })
}

/// A measured action of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepAction {
    /// As a predicted action, when it is one.
    pub action: Option<Action>,
    pub label: String,
    /// The span, on the aligned clock, from the step's start at the latest (a wait that began
    /// before the step's first compute is not part of the step).
    pub start_ns: i64,
    pub end_ns: i64,
    /// Of the span, the time compute ops cover (the rest is waiting).
    pub compute_ns: i64,
    /// When its first compute op starts and its last ends (aligned clock).
    pub compute_start_ns: i64,
    pub compute_end_ns: i64,
    /// When its compute ran on the host's clock, the memory samples' (aligned clock): its
    /// compute's extent, or the CPU span of an action timed by its kernels.
    pub host_start_ns: i64,
    pub host_end_ns: i64,
}

/// Measured step `step` (aligned clock): each rank's actions, and the step's window — from its
/// first compute op on any rank (not a consumer's wait for its input) to its last action's end.
pub fn measured_step(
    m: &Measurement,
    alignment: &Alignment,
    step: usize,
) -> (i64, i64, Vec<(usize, Vec<StepAction>)>) {
    step_of(m, alignment, |_, r| {
        r.actions.iter().filter(|a| a.step == step).collect()
    })
}

/// Each rank's actions grouped by step once, for reading many steps: a step's actions are
/// looked up, not searched for among all of them (a run of thousands of steps, each read).
#[derive(Debug)]
pub struct Steps<'a> {
    m: &'a Measurement,
    /// Of each rank (as `m.ranks`), its actions sorted by step (stably: each step's in their
    /// order).
    by_rank: Vec<Vec<&'a MeasuredEvent>>,
}

impl<'a> Steps<'a> {
    pub fn new(m: &'a Measurement) -> Steps<'a> {
        let by_rank = m
            .ranks
            .iter()
            .map(|r| {
                let mut actions: Vec<&MeasuredEvent> = r.actions.iter().collect();
                actions.sort_by_key(|a| a.step);
                actions
            })
            .collect();
        Steps { m, by_rank }
    }

    /// [`measured_step`] of step `step`.
    pub fn step(
        &self,
        alignment: &Alignment,
        step: usize,
    ) -> (i64, i64, Vec<(usize, Vec<StepAction>)>) {
        step_of(self.m, alignment, |i, _| {
            let sorted = self.by_rank.get(i).map_or(&[][..], Vec::as_slice);
            let from = sorted.partition_point(|a| a.step < step);
            let to = sorted.partition_point(|a| a.step <= step);
            sorted.get(from..to).unwrap_or_default().to_vec()
        })
    }
}

/// [`measured_step`] of the actions `actions_of` gives of each rank (by its position in
/// `m.ranks`).
fn step_of<'a>(
    m: &'a Measurement,
    alignment: &Alignment,
    actions_of: impl Fn(usize, &'a MeasuredRank) -> Vec<&'a MeasuredEvent>,
) -> (i64, i64, Vec<(usize, Vec<StepAction>)>) {
    let mut first = i64::MAX;
    let mut last = i64::MIN;
    let ranks = m
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let offset = alignment.offset(r.rank);
            let actions: Vec<_> = actions_of(i, r)
                .into_iter()
                .map(|a| {
                    let (s, e) = (
                        a.start_ns.saturating_add(offset),
                        a.end_ns.saturating_add(offset),
                    );
                    first = first.min(a.compute_start_ns.saturating_add(offset));
                    last = last.max(e);
                    StepAction {
                        action: as_action(a.stage, a.kind.phase(), a.mb),
                        label: a.label(),
                        start_ns: s,
                        end_ns: e,
                        compute_ns: a.compute_ns,
                        compute_start_ns: a.compute_start_ns.saturating_add(offset),
                        compute_end_ns: a.compute_end_ns.saturating_add(offset),
                        host_start_ns: a.host_start_ns.saturating_add(offset),
                        host_end_ns: a.host_end_ns.saturating_add(offset),
                    }
                })
                .collect();
            (r.rank, actions)
        })
        .collect();
    if first > last {
        return (0, 0, ranks);
    }
    let mut ranks = ranks;
    for a in ranks.iter_mut().flat_map(|(_, actions)| actions.iter_mut()) {
        a.start_ns = a.start_ns.max(first).min(a.end_ns);
    }
    (first, last, ranks)
}

/// Seconds between two nanosecond instants.
fn seconds(ns: i64) -> f64 {
    ns as f64 * 1e-9
}

/// Measured actions that match nothing for a reason the schedule explains, counted.
#[derive(Default)]
struct Mismatch {
    /// Split-backward halves (`I`, `W`) where the schedule runs whole backwards, by rank.
    halves: std::collections::BTreeMap<usize, usize>,
    /// Whole backwards (`B`) where the schedule splits them, by rank.
    wholes: std::collections::BTreeMap<usize, usize>,
    /// `(stage, measured rank) → (placed rank, count)`.
    elsewhere: std::collections::BTreeMap<(usize, usize), (usize, usize)>,
    /// Stages the schedule does not have, with a count.
    unknown: std::collections::BTreeMap<usize, usize>,
}

impl Mismatch {
    fn note(&mut self, sim: &Simulation, rank: usize, action: Option<Action>) {
        let Some(action) = action else {
            return;
        };
        let plan = &sim.derivation.plan;
        let located = plan.stage_to_region_rank(action.stage);
        // A mixed schedule (DualPipeV) runs whole backwards and halves both.
        let skeleton = located
            .and_then(|(region, _)| plan.region(region))
            .map(|r| r.skeleton);
        if matches!(action.phase, Phase::Input | Phase::Weight)
            && !skeleton.is_some_and(|s| s.may_split_backward())
        {
            *self.halves.entry(rank).or_default() += 1;
            return;
        }
        if action.phase == Phase::Backward && skeleton.is_some_and(|s| s.splits_backward()) {
            *self.wholes.entry(rank).or_default() += 1;
            return;
        }
        match located {
            Some((_, placed)) if placed != rank => {
                self.elsewhere
                    .entry((action.stage.into(), rank))
                    .or_insert((placed, 0))
                    .1 += 1;
            }
            Some(_) => {}
            None => *self.unknown.entry(action.stage.into()).or_default() += 1,
        }
    }

    fn warnings(&self, sim: &Simulation) -> Vec<String> {
        const SHOWN: usize = 8;
        let plan = &sim.derivation.plan;
        let schedule: Vec<_> = plan.schedule();
        let mut out = Vec::new();
        let schedule = crate::schedules::skeleton::schedule_to_string(&schedule);
        // How many actions, and on which ranks (`0, 2`), of a count by rank.
        let counted = |by_rank: &std::collections::BTreeMap<usize, usize>| {
            let ranks: Vec<String> = by_rank.keys().map(ToString::to_string).collect();
            (by_rank.values().sum::<usize>(), ranks.join(", "))
        };
        if !self.halves.is_empty() {
            let (total, ranks) = counted(&self.halves);
            out.push(format!(
                "{total} measured action(s) on rank(s) {ranks} are split-backward halves (I, W), which the schedule {schedule} cannot have: it runs each backward whole (B)"
            ));
        }
        if !self.wholes.is_empty() {
            let (total, ranks) = counted(&self.wholes);
            out.push(format!(
                "{total} measured action(s) on rank(s) {ranks} are whole backwards (B), which the schedule {schedule} splits into I and W"
            ));
        }
        for (&(stage, rank), &(placed, n)) in self.elsewhere.iter().take(SHOWN) {
            out.push(format!(
                "stage {stage} is measured on rank {rank} ({n} action(s)), but the scenario's placement puts it on rank {placed}"
            ));
        }
        if self.elsewhere.len() > SHOWN {
            out.push(format!(
                "… and {} more stage(s) measured away from their placed rank",
                self.elsewhere.len() - SHOWN
            ));
        }
        let stages = plan.placement.ranks_of_stages().len();
        for (&stage, &n) in self.unknown.iter().take(SHOWN) {
            out.push(format!(
                "stage {stage} is measured ({n} action(s)), but the schedule has stages 0 to {}",
                stages.saturating_sub(1)
            ));
        }
        if self.unknown.len() > SHOWN {
            out.push(format!(
                "… and {} more stage(s) the schedule does not have",
                self.unknown.len() - SHOWN
            ));
        }
        out
    }
}

/// Compares step `step` of the measurement with the simulation.
pub fn compare(
    sim: &Simulation,
    m: &Measurement,
    alignment: &Alignment,
    step: usize,
) -> Comparison {
    let plan_ranks = sim.derivation.plan.ranks;
    let (t0, t1, measured) = measured_step(m, alignment, step);
    let ctx = StepContext {
        sim,
        m,
        alignment,
        predicted: predicted_compute(sim),
        t0,
        t1,
        makespan_measured_s: seconds(t1.saturating_sub(t0)),
    };
    let (mut actions, mut blocks, mut memory, mut ranks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut lcs_total, mut len_total) = (0usize, 0usize);
    let mut mismatch = Mismatch::default();
    // Ranks are a sparse set: the plan's, and whatever numbers the traces carry (a file that
    // says it is rank 4,000,000,000 is one more rank, not four billion).
    let by_rank: FxHashMap<usize, &[StepAction]> =
        measured.iter().map(|(r, a)| (*r, a.as_slice())).collect();
    let mut all: Vec<usize> = (0..plan_ranks).chain(by_rank.keys().copied()).collect();
    all.sort_unstable();
    all.dedup();
    for rank in all {
        let mine: &[StepAction] = by_rank.get(&rank).copied().unwrap_or(&[]);
        let r = ctx.rank(rank, mine, &mut mismatch);
        lcs_total += r.lcs;
        len_total += r.longer;
        ranks.push(r.comparison);
        actions.extend(r.residuals);
        blocks.extend(r.blocks);
        memory.extend(r.memory);
    }
    Comparison {
        step,
        order_agreement: if len_total == 0 {
            1.0
        } else {
            lcs_total as f64 / len_total as f64
        },
        makespan_measured_s: ctx.makespan_measured_s,
        makespan_predicted_s: sim.makespan_s,
        ranks,
        actions,
        blocks,
        memory,
        warnings: mismatch.warnings(sim),
    }
}

/// What every rank of one step is compared with: the prediction, the measurement and the
/// step's window on the aligned clock.
struct StepContext<'a> {
    sim: &'a Simulation,
    m: &'a Measurement,
    alignment: &'a Alignment,
    /// Start, end and compute of every predicted action ([`predicted_compute`]).
    predicted: FxHashMap<(usize, Action), (f64, f64, f64)>,
    t0: i64,
    t1: i64,
    makespan_measured_s: f64,
}

/// One rank of a step compared.
struct RankOutcome {
    comparison: RankComparison,
    residuals: Vec<ActionResidual>,
    blocks: Vec<MeasuredBlock>,
    memory: Option<MeasuredMemoryCurve>,
    /// The longest common subsequence of the measured and predicted orders, and the longer's
    /// length.
    lcs: usize,
    longer: usize,
}

impl StepContext<'_> {
    fn rank(&self, rank: usize, mine: &[StepAction], mismatch: &mut Mismatch) -> RankOutcome {
        let sim = self.sim;
        let t0 = self.t0;
        let want: Vec<Action> = sim.derivation.order.actions(rank);
        let got: Vec<Option<Action>> = mine.iter().map(|a| a.action).collect();
        let lcs = lcs_len(&got, &want);
        let longer = got.len().max(want.len());
        let (blocks, residuals) = self.blocks(rank, mine, mismatch);
        let matched = residuals.len();
        let mean = |f: fn(&ActionResidual) -> f64| {
            if matched == 0 {
                0.0
            } else {
                residuals.iter().map(|r| f(r).abs()).sum::<f64>() / matched as f64
            }
        };
        // Busy is compute: a span's wait for its inputs is bubble.
        let measured_busy: f64 = mine.iter().map(|a| seconds(a.compute_ns)).sum();
        let measured_spans: f64 = mine
            .iter()
            .map(|a| seconds(a.end_ns.saturating_sub(a.start_ns)))
            .sum();
        let raw = memory_points(self.m, self.alignment, rank, t0, self.t1);
        // The shape is compared on every sample (the thinned curve keeps each stretch's highest).
        let memory_shape_error =
            raw.as_ref()
                .zip(sim.memory.get(rank))
                .map(|((m, relative, _), p)| {
                    let base = if *relative { p.static_bytes } else { 0.0 };
                    shape_error(m, self.makespan_measured_s, &p.points, sim.makespan_s, base)
                });
        let memory = raw.map(|r| thinned(rank, r));
        let measured_peak_bytes = memory
            .as_ref()
            .map(|c| c.points.iter().map(|p| p[1]).fold(0.0, f64::max));
        let predicted_peak_bytes = sim.memory.get(rank).map_or(0.0, |c| {
            if memory.as_ref().is_some_and(|c| c.relative) {
                c.peak_bytes - c.static_bytes
            } else {
                c.peak_bytes
            }
        });
        let predicted_busy: f64 = want
            .iter()
            .filter_map(|a| self.predicted.get(&(rank, *a)))
            .map(|(s, e, _)| e - s)
            .sum();
        let idle_or_zero = |busy: f64| {
            if mine.is_empty() {
                0.0
            } else {
                self.makespan_measured_s - busy
            }
        };
        let comparison = RankComparison {
            rank,
            measured_compute_s: measured_busy,
            measured_wait_s: measured_spans - measured_busy,
            measured_idle_s: idle_or_zero(measured_spans),
            order_agreement: if longer == 0 {
                1.0
            } else {
                lcs as f64 / longer as f64
            },
            measured_bubble_s: idle_or_zero(measured_busy),
            predicted_bubble_s: sim.makespan_s - predicted_busy,
            mean_abs_start_residual_s: mean(|r| r.start_residual_s),
            mean_abs_duration_residual_s: mean(|r| r.duration_residual_s),
            measured_peak_bytes,
            predicted_peak_bytes,
            memory_shape_error,
            missing: want.len() - matched.min(want.len()),
            unexpected: mine.len() - matched,
        };
        RankOutcome {
            comparison,
            residuals,
            blocks,
            memory,
            lcs,
            longer,
        }
    }

    /// Every measured action of `rank` as a block on the step's clock, and the residual of each
    /// one the prediction has; the others are noted in `mismatch`.
    fn blocks(
        &self,
        rank: usize,
        mine: &[StepAction],
        mismatch: &mut Mismatch,
    ) -> (Vec<MeasuredBlock>, Vec<ActionResidual>) {
        let (sim, t0) = (self.sim, self.t0);
        let mut residuals = Vec::new();
        let mut blocks = Vec::with_capacity(mine.len());
        for a in mine {
            let (label, s, e) = (&a.label, &a.start_ns, &a.end_ns);
            let matched = a
                .action
                .and_then(|a| self.predicted.get(&(rank, a)))
                .copied();
            let compute = matched.map(|m| m.2);
            let matched = matched.map(|(s, e, _)| (s, e));
            if matched.is_none() {
                mismatch.note(sim, rank, a.action);
            }
            blocks.push(MeasuredBlock {
                rank,
                action: label.clone(),
                start_s: seconds(s.saturating_sub(t0)),
                end_s: seconds(e.saturating_sub(t0)),
                compute_s: seconds(a.compute_ns),
                predicted: matched,
            });
            let (Some((ps, _)), Some(predicted_duration_s)) = (matched, compute) else {
                continue;
            };
            // The prediction's duration is compute: the span's wait is not part of it.
            let (ms, md) = (seconds(s.saturating_sub(t0)), seconds(a.compute_ns));
            residuals.push(ActionResidual {
                rank,
                action: label.clone(),
                measured_start_s: ms,
                measured_duration_s: md,
                predicted_start_s: ps,
                predicted_duration_s,
                start_residual_s: ms - ps,
                duration_residual_s: md - predicted_duration_s,
            });
        }
        (blocks, residuals)
    }
}

/// One measured action of a step as the app draws it: seconds from the step's start (its first
/// compute op), and the predicted start and end when the prediction has the same action on the same
/// rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredBlock {
    pub rank: usize,
    pub action: String,
    pub start_s: f64,
    pub end_s: f64,
    /// Of the span, the seconds its compute ops cover; the rest of it is waiting.
    pub compute_s: f64,
    pub predicted: Option<(f64, f64)>,
}

/// How far a measured action starts from its prediction, against the step's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResidualClass {
    /// No prediction for the action.
    Unpredicted,
    /// Within 2 % of the step.
    Close,
    /// Within 10 %.
    Off,
    /// Further.
    Far,
}

impl MeasuredBlock {
    /// Measured start minus predicted start, seconds, when predicted.
    pub fn start_residual_s(&self) -> Option<f64> {
        self.predicted.map(|(start, _)| self.start_s - start)
    }

    /// How far the block starts from its prediction in a step of `span` seconds.
    pub fn residual_class(&self, span: f64) -> ResidualClass {
        match self.start_residual_s() {
            None => ResidualClass::Unpredicted,
            Some(r) if r.abs() <= 0.02 * span => ResidualClass::Close,
            Some(r) if r.abs() <= 0.10 * span => ResidualClass::Off,
            Some(_) => ResidualClass::Far,
        }
    }
}

/// Length of the longest common subsequence of the measured and predicted orders.
fn lcs_len(got: &[Option<Action>], want: &[Action]) -> usize {
    let mut row = vec![0usize; want.len() + 1];
    for g in got {
        let mut diagonal = 0;
        for (j, w) in want.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(0);
            let left = row.get(j).copied().unwrap_or(0);
            let value = if *g == Some(*w) {
                diagonal + 1
            } else {
                above.max(left)
            };
            diagonal = above;
            if let Some(slot) = row.get_mut(j + 1) {
                *slot = value;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Action {
        s.parse().unwrap()
    }

    #[test]
    fn order_agreement_is_the_longest_common_subsequence() {
        let want = [a("0F0"), a("0F1"), a("0B0"), a("0B1")];
        let same: Vec<Option<Action>> = want.iter().copied().map(Some).collect();
        assert_eq!(lcs_len(&same, &want), 4);
        let swapped = [
            Some(a("0F0")),
            Some(a("0B0")),
            Some(a("0F1")),
            Some(a("0B1")),
        ];
        assert_eq!(lcs_len(&swapped, &want), 3);
        let with_unknown = [Some(a("0F0")), None, Some(a("0B1"))];
        assert_eq!(lcs_len(&with_unknown, &want), 2);
        assert_eq!(lcs_len(&[], &want), 0);
    }

    #[test]
    fn a_block_is_classed_by_its_start_residual_against_the_step() {
        let block = |start_s: f64, predicted: Option<(f64, f64)>| MeasuredBlock {
            rank: 0,
            action: "0F0".into(),
            start_s,
            end_s: start_s + 1.0,
            compute_s: 1.0,
            predicted,
        };
        // A 100 s step: 2 s and 10 s are the bounds.
        assert_eq!(
            block(5.0, None).residual_class(100.0),
            ResidualClass::Unpredicted
        );
        assert_eq!(
            block(12.0, Some((10.0, 11.0))).residual_class(100.0),
            ResidualClass::Close
        );
        assert_eq!(
            block(8.0, Some((10.0, 11.0))).residual_class(100.0),
            ResidualClass::Close
        );
        assert_eq!(
            block(12.5, Some((10.0, 11.0))).residual_class(100.0),
            ResidualClass::Off
        );
        assert_eq!(
            block(20.0, Some((10.0, 11.0))).residual_class(100.0),
            ResidualClass::Off
        );
        assert_eq!(
            block(0.0, Some((10.5, 11.0))).residual_class(100.0),
            ResidualClass::Far
        );
        assert_eq!(
            block(12.5, Some((10.0, 11.0))).start_residual_s(),
            Some(2.5)
        );
    }

    #[test]
    fn a_memory_curves_shape_is_compared_over_each_steps_own_length() {
        // Measured: nothing for half the step, then 10 bytes. The same shape over a step twice
        // as long matches exactly; a curve at 10 from the start is off by 10 for half the
        // step: 5 on average, half the peak; the static base is taken off the prediction.
        let measured = [[0.0, 0.0], [0.5, 10.0]];
        assert_eq!(
            shape_error(&measured, 1.0, &[[0.0, 0.0], [1.0, 10.0]], 2.0, 0.0),
            0.0
        );
        assert_eq!(shape_error(&measured, 1.0, &[[0.0, 10.0]], 1.0, 0.0), 0.5);
        assert_eq!(
            shape_error(&measured, 1.0, &[[0.0, 7.0], [0.5, 17.0]], 1.0, 7.0),
            0.0
        );
        assert_eq!(
            shape_error(&[[0.0, 0.0]], 1.0, &[[0.0, 3.0]], 1.0, 0.0),
            0.0
        );
    }
}
