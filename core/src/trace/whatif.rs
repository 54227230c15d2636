//! The decision the engineer came for (DESIGN.md §5 "Reading a run right"): which schedule to
//! run. The candidates are every registered schedule that fits the traced model — each Sharded,
//! first-order skeleton over the run's regions (one region per chunk a rank holds), kept when it
//! derives. Among them the trace's own schedule is identified by how well its measured per-rank
//! orders agree with each; and, with the costs one calibration fitted, every candidate's step
//! time and peak memory are predicted and ranked.

use super::align::Alignment;
use super::compare::compare;
use super::recover::Measurement;
use crate::scenario::Scenario;
use crate::schedules::skeleton::{Skeleton, schedule_to_string};
use crate::sim::engine::SimOptions;
use crate::sim::run::Simulation;
use crate::tune::Stepped;
use crate::tune::pipeline::simulate_scenario;
use crate::vocab::layout::Layout;
use serde::Serialize;

/// The layer cut of `chunks` regions: the scenario's own when it has that many regions, else
/// equal regions (`None` when the layers do not divide evenly).
fn cut_for(scenario: &Scenario, chunks: usize) -> Option<Vec<usize>> {
    if scenario.schedule.len() == chunks {
        return Some(scenario.cut.clone());
    }
    let layers: usize = scenario.model.layers.iter().map(|l| l.count).sum();
    if chunks == 0 || !layers.is_multiple_of(chunks) {
        return None;
    }
    Some((1..chunks).map(|i| i * layers / chunks).collect())
}

/// `scenario` re-cut into `cut` (`chunks` regions) with `skeleton` in every region; `None` when
/// the skeleton is not a Sharded, first-order one.
fn candidate_scenario(
    scenario: &Scenario,
    skeleton: Skeleton,
    chunks: usize,
    cut: &[usize],
) -> Option<Scenario> {
    if skeleton.layout() != Layout::Sharded || skeleton.second_order() {
        return None;
    }
    let mut candidate = scenario.clone();
    candidate.cut = cut.to_vec();
    candidate.schedule = vec![skeleton; chunks];
    crate::scenario::edit::carry_widths(&mut candidate, &scenario.cut);
    candidate.slabs = None;
    candidate.orders = None;
    candidate.orders_csv = None;
    candidate.orders_from_csv = None;
    candidate.placement = None;
    candidate.wave_k = None;
    Some(candidate)
}

/// How well a schedule explains the measured orders.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderMatch {
    pub schedule: String,
    /// Stages per rank.
    pub chunks: usize,
    /// Microbatches per step.
    pub microbatches: usize,
    /// Over all ranks, on the step compared (1 = every rank ran exactly its order).
    pub order_agreement: f64,
}

impl OrderMatch {
    /// How well `scenario` (simulated as `sim`) explains step `step` of the run.
    fn of(
        scenario: &Scenario,
        sim: &Simulation,
        (m, alignment, step): (&Measurement, &Alignment, usize),
    ) -> OrderMatch {
        OrderMatch {
            schedule: schedule_to_string(&scenario.schedule),
            chunks: scenario.schedule.len(),
            microbatches: scenario.microbatches,
            order_agreement: compare(sim, m, alignment, step).order_agreement,
        }
    }
}

/// The trace's schedule, identified among the candidates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identification {
    pub step: usize,
    /// The scenario's own schedule against the measured orders.
    pub scenario: OrderMatch,
    /// Every candidate with the run's stage count, best first.
    pub ranked: Vec<OrderMatch>,
}

impl Identification {
    /// The best match, when one explains the orders better than the scenario's schedule does.
    pub fn better_than_scenario(&self) -> Option<&OrderMatch> {
        self.ranked
            .first()
            .filter(|b| b.order_agreement > self.scenario.order_agreement + 1e-9)
    }

    /// Whether the scenario's schedule is the one that ran (every order agrees).
    pub fn scenario_ran(&self) -> bool {
        self.scenario.order_agreement >= 1.0 - 1e-9
    }
}

/// Stages per rank of the run: distinct measured stages over ranks (at least 1).
pub fn measured_chunks(m: &Measurement) -> usize {
    let mut stages: Vec<usize> = m
        .ranks
        .iter()
        .flat_map(|r| r.actions.iter().map(|a| a.stage))
        .collect();
    stages.sort_unstable();
    stages.dedup();
    stages.len().checked_div(m.ranks.len()).unwrap_or(1).max(1)
}

/// Microbatches per step of the run: on step `step`, the most forwards any stage ran (`None`
/// without a forward).
pub fn measured_microbatches(m: &Measurement, step: usize) -> Option<usize> {
    let mut per_stage: std::collections::BTreeMap<usize, usize> = Default::default();
    for a in m.ranks.iter().flat_map(|r| r.actions.iter()) {
        if a.step == step && a.kind == super::rules::ActionKind::Forward {
            *per_stage.entry(a.stage).or_default() += 1;
        }
    }
    per_stage.into_values().max()
}

/// Compares step `step` of the run with every candidate of its stage count and microbatch count
/// (and with `scenario`'s own prediction `predicted`), best match first; ties keep the
/// registry's order.
pub fn identify(
    scenario: &Scenario,
    predicted: &Simulation,
    m: &Measurement,
    alignment: &Alignment,
    step: usize,
    options: SimOptions,
) -> Identification {
    identify_until(
        scenario,
        predicted,
        (m, alignment, step),
        options,
        &mut |_| true,
    )
    // Never stopped, so never `None`; the scenario's own match alone otherwise.
    .unwrap_or_else(|| Identification {
        step,
        scenario: OrderMatch::of(scenario, predicted, (m, alignment, step)),
        ranked: Vec::new(),
    })
}

/// `scenario` over the run's microbatch count (its per-microbatch workload dropped when that
/// differs): what the candidates are built from.
fn over_run_microbatches(scenario: &Scenario, microbatches: Option<usize>) -> Scenario {
    let mut shaped = scenario.clone();
    if let Some(m) = microbatches.filter(|&m| m != scenario.microbatches) {
        shaped.microbatches = m;
        shaped.workload = None;
    }
    shaped
}

/// [`identify`] that calls `keep_going` with the fraction of candidates tried and stops
/// (`None`) as soon as it returns false.
pub fn identify_until(
    scenario: &Scenario,
    predicted: &Simulation,
    (m, alignment, step): (&Measurement, &Alignment, usize),
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Identification> {
    let mut steps = IdentifySteps::new(scenario, predicted, (m, alignment, step), options);
    Stepped::run_to_end(|| {
        Ok::<_, std::convert::Infallible>(steps.step((m, alignment), keep_going))
    })
    .unwrap_or_else(|never| match never {})
}

/// The walk over every (stages per rank, registered skeleton) pair of a model that both the
/// identification and the what-if take, a pair at a time: the next candidate that fits the model
/// (Sharded and first-order, the same skeleton in every region), `keep_going` asked before each
/// pair with the fraction of pairs walked.
#[derive(Debug)]
struct CandidateWalk {
    /// Each count of stages per rank, with its layer cut.
    cuts: Vec<(usize, Vec<usize>)>,
    /// The next pair, counted over `cuts` × [`Skeleton::all`].
    next: usize,
}

/// Where a [`CandidateWalk`] is.
enum Walked {
    /// The pair `at` of `of`: a candidate over `chunks` regions per rank.
    Candidate {
        at: usize,
        of: usize,
        chunks: usize,
        scenario: Box<Scenario>,
    },
    End,
    Cancelled,
}

impl CandidateWalk {
    fn new(cuts: Vec<(usize, Vec<usize>)>) -> CandidateWalk {
        CandidateWalk { cuts, next: 0 }
    }

    /// The next candidate of `model`, the pairs that do not fit it passed over.
    fn next(&mut self, model: &Scenario, keep_going: &mut dyn FnMut(f32) -> bool) -> Walked {
        let skeletons = Skeleton::all();
        let per_cut = skeletons.len().max(1);
        let of = (self.cuts.len() * skeletons.len()).max(1);
        loop {
            let at = self.next;
            let (Some((chunks, cut)), Some(&skeleton)) =
                (self.cuts.get(at / per_cut), skeletons.get(at % per_cut))
            else {
                return Walked::End;
            };
            if !keep_going(at as f32 / of as f32) {
                return Walked::Cancelled;
            }
            self.next += 1;
            if let Some(scenario) = candidate_scenario(model, skeleton, *chunks, cut) {
                return Walked::Candidate {
                    at,
                    of,
                    chunks: *chunks,
                    scenario: Box::new(scenario),
                };
            }
        }
    }
}

/// The identification run a candidate a step (what [`identify_until`] loops over): every
/// registered schedule that fits the model over the run's stages per rank (Sharded and
/// first-order skeletons, the same one in every region, kept when they derive and simulate: a
/// schedule's own rules, such as a microbatch count it needs, leave it out), each compared with
/// the measured orders.
#[derive(Debug)]
pub struct IdentifySteps {
    /// The scenario over the run's microbatch count.
    shaped: Scenario,
    step: usize,
    options: SimOptions,
    /// The scenario's own schedule against the measured orders.
    scenario: OrderMatch,
    /// Over the run's stages per rank only (none when the layers do not divide into them).
    walk: CandidateWalk,
    ranked: Vec<OrderMatch>,
}

impl IdentifySteps {
    /// The identification of step `step` of the run against `scenario` (simulated as
    /// `predicted`) and every candidate; no candidate simulated yet.
    pub fn new(
        scenario: &Scenario,
        predicted: &Simulation,
        (m, alignment, step): (&Measurement, &Alignment, usize),
        options: SimOptions,
    ) -> IdentifySteps {
        let chunks = measured_chunks(m);
        let shaped = over_run_microbatches(scenario, measured_microbatches(m, step));
        IdentifySteps {
            walk: CandidateWalk::new(
                cut_for(&shaped, chunks)
                    .map(|cut| (chunks, cut))
                    .into_iter()
                    .collect(),
            ),
            shaped,
            step,
            options,
            scenario: OrderMatch::of(scenario, predicted, (m, alignment, step)),
            ranked: Vec::new(),
        }
    }

    /// The next candidate that fits the model simulated and compared with the run `m` (the one
    /// the steps were made for), `keep_going` asked with the fraction of skeletons tried; the
    /// identification, best match first (ties keep the registry's order), once all are.
    pub fn step(
        &mut self,
        (m, alignment): (&Measurement, &Alignment),
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Stepped<Identification> {
        loop {
            let candidate = match self.walk.next(&self.shaped, keep_going) {
                Walked::Candidate { scenario, .. } => scenario,
                Walked::Cancelled => return Stepped::Cancelled,
                Walked::End => {
                    let mut ranked = std::mem::take(&mut self.ranked);
                    ranked.sort_by(|a, b| b.order_agreement.total_cmp(&a.order_agreement));
                    return Stepped::Done(Identification {
                        step: self.step,
                        scenario: self.scenario.clone(),
                        ranked,
                    });
                }
            };
            let Ok(simulation) = simulate_scenario(&candidate, self.options) else {
                continue;
            };
            self.ranked.push(OrderMatch::of(
                &candidate,
                &simulation,
                (m, alignment, self.step),
            ));
            return Stepped::Again;
        }
    }
}

/// What predicted memory is compared on: the measured CPU allocator counts from the profiler's
/// start (the parameters allocated before are not in it), an accelerator's from the device's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryBasis {
    /// Activations, workspace and what the runtime holds: the peak less the static bytes.
    Dynamic,
    /// Dynamic plus static bytes (parameters, gradients, optimizer state).
    Total,
}

impl MemoryBasis {
    /// The basis a measurement's peaks are on (dynamic without one: what a schedule changes).
    pub fn of(m: &Measurement) -> MemoryBasis {
        let relative = m
            .ranks
            .iter()
            .filter_map(|r| r.memory.as_ref())
            .all(|mem| mem.relative());
        if relative {
            MemoryBasis::Dynamic
        } else {
            MemoryBasis::Total
        }
    }

    /// For labels: "dynamic bytes (…)".
    pub fn label(self) -> &'static str {
        match self {
            MemoryBasis::Dynamic => {
                "dynamic bytes (activations, workspace, the step's gradient buffers; static bytes left out: the measured CPU allocator counts from the profiler's start)"
            }
            MemoryBasis::Total => "dynamic + static bytes",
        }
    }

    /// Its short name: "dynamic", "dynamic + static".
    pub fn short(self) -> &'static str {
        match self {
            MemoryBasis::Dynamic => "dynamic",
            MemoryBasis::Total => "dynamic + static",
        }
    }

    /// A simulated rank's peak on this basis.
    pub fn peak(self, curve: &crate::sim::memory::MemoryCurve) -> f64 {
        match self {
            MemoryBasis::Dynamic => (curve.peak_bytes - curve.static_bytes).max(0.0),
            MemoryBasis::Total => curve.peak_bytes,
        }
    }
}

/// One schedule predicted with the fitted costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub schedule: String,
    pub chunks: usize,
    /// The step it ranks by: the expected step under the run's measured jitter when there is
    /// one (the median of seeded draws), else the simulated step.
    pub step_s: f64,
    /// The simulated step, every cost at its mean.
    pub simulated_s: f64,
    /// The expected step under the run's jitter, with its 10 % and 90 % points.
    pub expected: Option<crate::sim::jitter::Expected>,
    pub bubble_fraction: f64,
    /// Per rank, the predicted peak on `basis`.
    pub peak_bytes: Vec<f64>,
    pub basis: MemoryBasis,
    /// A rank's peak (dynamic + static) above `hardware.memory_bytes`.
    pub over_capacity: bool,
    /// The schedule that ran (identified from the trace's orders).
    pub ran: bool,
    /// Where the run could not show what its split backward costs and this schedule splits it:
    /// its step with the split priced at the low and the high end of what recorded runs
    /// measured ([`RunShape::split_range`]), on `step_s`'s footing (the simulated steps' ratio
    /// to this one's simulated step, times `step_s`).
    pub split_range_s: Option<[f64; 2]>,
}

/// The stages per rank a what-if tries: the run's own, and every count up to
/// [`MAX_CHUNKS`] that gives each stage whole layers (the layers divide evenly into that many
/// regions, each at least one layer per rank).
pub fn chunk_counts(model: &Scenario, run: usize) -> Vec<usize> {
    let layers: usize = model.model.layers.iter().map(|l| l.count).sum();
    let mut out: Vec<usize> = (1..=MAX_CHUNKS)
        .filter(|&v| layers.is_multiple_of(v) && layers / v >= model.ranks)
        .chain([run])
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The most stages per rank a what-if tries (beyond the run's own).
pub const MAX_CHUNKS: usize = 4;

/// Every candidate of `model` (the scenario the run was read against, over the run's microbatch
/// count) over each of [`chunk_counts`] regions per rank, simulated with the costs `calibrated`
/// holds, fastest first; `ran` marks the identified schedule over the run's `chunks`.
pub fn what_if_all(
    model: &Scenario,
    calibrated: &Scenario,
    run: &RunShape,
    options: SimOptions,
) -> Vec<Prediction> {
    what_if_all_until(model, calibrated, run, options, &mut |_| true).unwrap_or_default()
}

/// What a what-if marks and measures by: the run's stages per rank and microbatches per step
/// (`None`: the model's), the schedule identified as the one that ran, the measured memory's
/// basis.
#[derive(Debug, Clone, Copy)]
pub struct RunShape<'a> {
    pub chunks: usize,
    pub microbatches: Option<usize>,
    pub ran: Option<&'a str>,
    pub basis: MemoryBasis,
    /// How the run's costs varied: each candidate is ranked by its expected step under it.
    pub jitter: Option<&'a crate::sim::jitter::Jitter>,
    /// Where the run could not show what its split backward costs: the split's factors
    /// (`[input, weight]`) at the low and the high end of what recorded runs measured, each
    /// splitting candidate simulated at both too ([`Prediction::split_range_s`];
    /// [`super::report::CompareTraceReport::split_range`]).
    pub split_range: Option<[[f64; 2]; 2]>,
}

/// [`what_if_all`] that calls `keep_going` with the fraction done (of the candidates tried) and
/// stops (`None`) as soon as it returns false.
pub fn what_if_all_until(
    model: &Scenario,
    calibrated: &Scenario,
    run: &RunShape,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Option<Vec<Prediction>> {
    let mut steps = WhatIfSteps::new(model, calibrated, run, options);
    Stepped::run_to_end(|| Ok::<_, std::convert::Infallible>(steps.step(keep_going)))
        .unwrap_or_else(|never| match never {})
}

/// The what-if over every schedule run a candidate a step (what [`what_if_all_until`] loops
/// over), so a caller without threads (the web build) draws its progress and hears Cancel
/// between candidates.
#[derive(Debug)]
pub struct WhatIfSteps {
    /// The scenario the run was read against, over the run's microbatch count.
    model: Scenario,
    calibrated: Scenario,
    chunks: usize,
    ran: Option<String>,
    basis: MemoryBasis,
    jitter: Option<crate::sim::jitter::Jitter>,
    split_range: Option<[[f64; 2]; 2]>,
    options: SimOptions,
    /// Over each count of stages per rank tried.
    walk: CandidateWalk,
    out: Vec<Prediction>,
}

impl WhatIfSteps {
    /// The what-if of every candidate of `model` over each of [`chunk_counts`] regions per rank
    /// with the costs `calibrated` holds; nothing simulated yet.
    pub fn new(
        model: &Scenario,
        calibrated: &Scenario,
        run: &RunShape,
        options: SimOptions,
    ) -> WhatIfSteps {
        let model = over_run_microbatches(model, run.microbatches);
        let cuts = chunk_counts(&model, run.chunks)
            .into_iter()
            .filter_map(|v| cut_for(&model, v).map(|cut| (v, cut)))
            .collect();
        WhatIfSteps {
            model,
            calibrated: calibrated.clone(),
            chunks: run.chunks,
            ran: run.ran.map(str::to_string),
            basis: run.basis,
            jitter: run.jitter.cloned(),
            split_range: run.split_range,
            options,
            walk: CandidateWalk::new(cuts),
            out: Vec::new(),
        }
    }

    /// The next candidate that fits the model simulated with the fitted costs (and its
    /// expected step under the run's jitter), `keep_going` asked with the fraction of candidates
    /// tried; every prediction, fastest first, once all are.
    pub fn step(&mut self, keep_going: &mut dyn FnMut(f32) -> bool) -> Stepped<Vec<Prediction>> {
        loop {
            let (i, total, v, candidate) = match self.walk.next(&self.model, keep_going) {
                Walked::Candidate {
                    at,
                    of,
                    chunks,
                    scenario,
                } => (at, of as f32, chunks, scenario),
                Walked::Cancelled => return Stepped::Cancelled,
                Walked::End => {
                    let mut out = std::mem::take(&mut self.out);
                    out.sort_by(|a, b| a.step_s.total_cmp(&b.step_s));
                    return Stepped::Done(out);
                }
            };
            let Ok(fitted) = super::calibrate::with_fitted_costs(&candidate, &self.calibrated)
            else {
                continue;
            };
            let Ok(sim) = simulate_scenario(&fitted, self.options) else {
                continue;
            };
            let mut stopped = false;
            let expected = self.jitter.as_ref().and_then(|j| {
                crate::sim::jitter::expected(&sim, j, self.options, &mut |f| {
                    stopped = !keep_going((i as f32 + f) / total);
                    !stopped
                })
            });
            if stopped {
                return Stepped::Cancelled;
            }
            let schedule = schedule_to_string(&candidate.schedule);
            let step_s = expected.map_or(sim.makespan_s, |e| e.median_s);
            // Heard between the range's simulations too.
            let split_range_s = split_range_s(
                &fitted,
                &sim,
                step_s,
                self.split_range,
                (self.options, &mut || keep_going((i as f32 + 1.0) / total)),
            );
            if !keep_going((i as f32 + 1.0) / total) {
                return Stepped::Cancelled;
            }
            self.out.push(Prediction {
                ran: self.ran.as_deref() == Some(schedule.as_str()) && v == self.chunks,
                schedule,
                chunks: v,
                step_s,
                simulated_s: sim.makespan_s,
                expected,
                bubble_fraction: sim.bubble_fraction,
                peak_bytes: sim.memory.iter().map(|m| self.basis.peak(m)).collect(),
                basis: self.basis,
                over_capacity: sim.memory.iter().any(|m| m.over_capacity),
                split_range_s,
            });
            return Stepped::Again;
        }
    }
}

/// What a split range says, after the step it brackets.
pub const SPLIT_RANGE_TEXT: &str =
    "with the split priced at the low and the high end of what recorded runs measured";

/// The step of `fitted` (simulated as `sim`, ranked at `step_s`) with its split priced at each
/// end of `range` (`[input, weight]` factor pairs: [`RunShape::split_range`]), on `step_s`'s
/// footing (each simulated step's ratio to `sim`'s, times `step_s`); `None` without a range,
/// for an order that splits no backward, where a simulation fails, or where `keep_going` (asked
/// between the two) says stop. A schedule whose order is fixed takes longer the dearer its
/// halves; one ordered by its costs (`zb_auto`) may take another order at either end, so its
/// range need not bracket `step_s`.
pub fn split_range_s(
    fitted: &Scenario,
    sim: &crate::sim::run::Simulation,
    step_s: f64,
    range: Option<[[f64; 2]; 2]>,
    (options, keep_going): (SimOptions, &mut dyn FnMut() -> bool),
) -> Option<[f64; 2]> {
    let [low, high] = range.filter(|_| order_splits_backward(sim))?;
    let scale = (sim.makespan_s > 0.0).then(|| step_s / sim.makespan_s)?;
    let at = |factors| split_priced_at(fitted, factors, options).map(|s| s * scale);
    let low = at(low)?;
    keep_going().then_some(())?;
    Some([low, at(high)?])
}

/// Whether a simulation's order runs a split backward's halves.
fn order_splits_backward(sim: &crate::sim::run::Simulation) -> bool {
    use crate::vocab::phase::Half;
    sim.derivation.order.graph.node_weights().any(|e| {
        matches!(
            e,
            crate::graph::event::Event::Bwd {
                half: Half::Input | Half::Weight,
                ..
            }
        )
    })
}

/// The simulated step of `fitted` with its split's factors at `[input, weight]`.
fn split_priced_at(
    fitted: &Scenario,
    [input, weight]: [f64; 2],
    options: SimOptions,
) -> Option<f64> {
    let mut priced = fitted.clone();
    let hw = priced.hardware.get_or_insert_with(Default::default);
    hw.input_half_factor = Some(input);
    hw.weight_half_factor = Some(weight);
    simulate_scenario(&priced, options)
        .ok()
        .map(|s| s.makespan_s)
}
