//! BigMac's three multimodal designs on one model, as its post frames them: *compute-efficient*
//! (the encoder transposed, ⟨transpose, …⟩: all its forwards first, in the warmup bubble),
//! *memory-efficient* (the encoder as its own pipeline stage: one Sharded region over encoder and
//! backbone, the encoder's layers alone on rank 0, the backbone's balanced over the others) and
//! *nested* (⟨nested, …⟩: each encoder action just in time in the backbone's order). A generator
//! after the backbone stays as the scenario gives it. Each design is simulated at each number of
//! microbatches: the step time and every rank's peak memory, against the device's capacity.

use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::scenario::owner::OwnerSpec;
use crate::schedules::skeleton::Skeleton;
use crate::sim::engine::SimOptions;
use crate::tune::Stepped;
use crate::tune::fit_memory::{FitError, FittedPoint, fit_simulated};
use crate::tune::pipeline::simulate_scenario;
use crate::vocab::layout::{Composition, Layout};
use serde::Serialize;

/// One of the three designs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    ComputeEfficient,
    MemoryEfficient,
    Nested,
}

impl Design {
    pub const ALL: [Design; 3] = [
        Design::ComputeEfficient,
        Design::MemoryEfficient,
        Design::Nested,
    ];

    /// Its name as BigMac's post gives it; the third design is named after the registry's
    /// schedule that composes an encoder as BigMac's nested pipeline.
    pub fn name(self) -> &'static str {
        match self {
            Design::ComputeEfficient => "compute-efficient",
            Design::MemoryEfficient => "memory-efficient",
            Design::Nested => {
                Skeleton::composing(Composition::Nested).map_or("just-in-time", Skeleton::name)
            }
        }
    }

    /// What the design is, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Design::ComputeEfficient => {
                "⟨transpose, …⟩: every encoder forward first, in the warmup bubble"
            }
            Design::MemoryEfficient => "the encoder as its own pipeline stage on rank 0",
            Design::Nested => "⟨nested, …⟩: encoder work just in time in the backbone's order",
        }
    }
}

/// The registry's schedule that composes an encoder as `composition`.
fn composing(composition: Composition) -> Result<Skeleton, String> {
    Skeleton::composing(composition)
        .ok_or_else(|| format!("no schedule composes its work as {composition:?}"))
}

/// Why the designs cannot be built from a scenario.
fn shape_error() -> String {
    let replicated: Vec<&str> = Skeleton::all()
        .iter()
        .filter(|s| s.layout() == Layout::Replicated)
        .map(|s| s.name())
        .collect();
    let replicated = replicated.join(" or ");
    format!(
        "the designs need an encoder first (a Replicated region: {replicated}) before a Sharded backbone"
    )
}

/// Whether the designs can be built from `scenario`: an encoder (a Replicated region) first,
/// then a Sharded backbone.
pub fn check_shape(scenario: &Scenario) -> Result<(), String> {
    let first = scenario.schedule.first().copied();
    let backbone = scenario.schedule.get(1).copied();
    if first.is_none_or(|s| s.layout() != Layout::Replicated)
        || backbone.is_none_or(|s| s.layout() != Layout::Sharded)
    {
        return Err(shape_error());
    }
    Ok(())
}

/// `scenario` as `design`. The scenario must start with a Replicated encoder region followed by a
/// Sharded backbone; the memory-efficient design also needs one Sharded backbone region (no
/// interleaving) and at least two ranks.
pub fn scenario_for(scenario: &Scenario, design: Design) -> Result<Scenario, String> {
    check_shape(scenario)?;
    let mut out = scenario.clone();
    out.orders = None;
    out.orders_csv = None;
    out.orders_from_csv = None;
    let replace_first = |out: &mut Scenario, skeleton| {
        if let Some(s) = out.schedule.first_mut() {
            *s = skeleton;
        }
    };
    match design {
        Design::ComputeEfficient => replace_first(&mut out, composing(Composition::Transpose)?),
        Design::Nested => replace_first(&mut out, composing(Composition::Nested)?),
        Design::MemoryEfficient => {
            let sharded = scenario
                .schedule
                .iter()
                .filter(|s| s.layout() == Layout::Sharded)
                .count();
            let p = scenario.ranks;
            if sharded != 1 || p < 2 {
                return Err(
                    "memory-efficient: the encoder as its own stage needs one Sharded backbone region and at least 2 ranks"
                        .to_string(),
                );
            }
            let total: usize = scenario.model.layers.iter().map(|l| l.count).sum();
            let encoder = scenario.cut.first().copied().unwrap_or(0);
            let backbone_end = scenario.cut.get(1).copied().unwrap_or(total);
            let layers = backbone_end.saturating_sub(encoder);
            // The encoder alone on rank 0; the backbone balanced over ranks 1 to P − 1.
            let others = p - 1;
            let counts: Vec<usize> = std::iter::once(encoder)
                .chain((0..others).map(|r| layers / others + usize::from(r < layers % others)))
                .collect();
            out.cut = scenario.cut.iter().skip(1).copied().collect();
            out.schedule = scenario.schedule.iter().skip(1).copied().collect();
            crate::scenario::edit::carry_widths(&mut out, &scenario.cut);
            let mut slabs = vec![None; out.schedule.len()];
            if let Some(first) = slabs.first_mut() {
                *first = Some(counts);
            }
            out.slabs = Some(slabs);
            out.placement = None;
        }
    }
    if !out.name.is_empty() {
        out.name = format!("{} — {}", scenario.name, design.name());
    }
    Ok(out)
}

/// `scenario` with `m` microbatches: a per-microbatch workload list and an explicit owner map
/// are repeated over the new count.
pub fn with_microbatches(scenario: &Scenario, m: usize) -> Scenario {
    let mut out = scenario.clone();
    let cycled = |list: &[f64]| -> Vec<f64> {
        if list.is_empty() {
            Vec::new()
        } else {
            list.iter().copied().cycle().take(m).collect()
        }
    };
    out.microbatches = m;
    if let Some(w) = out.workload.as_mut()
        && let Some(scale) = w.encoder_scale.as_mut()
    {
        *scale = cycled(scale);
    }
    if let OwnerSpec::Explicit(map) = &out.owner
        && !map.is_empty()
    {
        out.owner = OwnerSpec::Explicit(map.iter().copied().cycle().take(m).collect());
    }
    out
}

/// One design at one number of microbatches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignPoint {
    pub design: Design,
    pub microbatches: usize,
    pub makespan_s: f64,
    /// Per rank.
    pub peak_bytes: Vec<f64>,
    /// Some rank's peak is above `hardware.memory_bytes`.
    pub over_capacity: bool,
    /// Over capacity: the design fitted under it by offload and recomputation
    /// ([`crate::tune::fit_memory`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted: Option<FittedPoint>,
}

impl DesignPoint {
    /// The highest rank's peak memory.
    pub fn peak(&self) -> f64 {
        self.peak_bytes.iter().copied().fold(0.0, f64::max)
    }
}

/// The three designs over the numbers of microbatches asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignComparison {
    pub name: String,
    pub capacity_bytes: Option<f64>,
    pub points: Vec<DesignPoint>,
    /// Designs that cannot be built from this scenario, and why.
    pub refused: Vec<(Design, String)>,
}

/// Simulates every design at every `m` of `microbatches`. An error names the design, the
/// number of microbatches and what was wrong.
pub fn compare_designs(
    scenario: &Scenario,
    microbatches: &[usize],
    options: SimOptions,
) -> Result<DesignComparison, String> {
    compare_designs_cancellable(scenario, microbatches, options, &mut |_| true)?
        .ok_or_else(|| "cancelled".to_string())
}

/// [`compare_designs`] that reports how far it got and can be stopped: before each simulation it
/// calls `keep_going` with the fraction done; `Ok(None)` when that said stop.
pub fn compare_designs_cancellable(
    scenario: &Scenario,
    microbatches: &[usize],
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Option<DesignComparison>, String> {
    let mut steps = DesignSteps::new(scenario, microbatches, options)?;
    Stepped::run_to_end(|| steps.step(keep_going))
}

/// The design comparison in steps, one design at one number of microbatches each (with its fit
/// under the capacity when it is over): what [`compare_designs_cancellable`] runs in a loop, and
/// a caller with no threads (the web build) runs a few at a time between the frames it draws.
#[derive(Debug, Clone)]
pub struct DesignSteps {
    scenario: Scenario,
    microbatches: Vec<usize>,
    options: SimOptions,
    /// The design (index into [`Design::ALL`]) and the microbatch count (index) to run next, and
    /// the design's scenario once built.
    design: usize,
    next_m: usize,
    base: Option<Scenario>,
    done: usize,
    points: Vec<DesignPoint>,
    refused: Vec<(Design, String)>,
}

impl DesignSteps {
    /// The steps of comparing `scenario`'s designs at each of `microbatches`; refused when the
    /// scenario gives hand-written orders.
    pub fn new(
        scenario: &Scenario,
        microbatches: &[usize],
        options: SimOptions,
    ) -> Result<DesignSteps, String> {
        if scenario.explicit_orders().is_some() || scenario.orders_csv.is_some() {
            return Err(
                "the scenario gives hand-written orders, which fix its schedule: the designs need derived ones"
                    .to_string(),
            );
        }
        Ok(DesignSteps {
            scenario: scenario.clone(),
            microbatches: microbatches.to_vec(),
            options,
            design: 0,
            next_m: 0,
            base: None,
            done: 0,
            points: Vec::new(),
            refused: Vec::new(),
        })
    }

    /// Runs the next design point: `Again` while more remain, `Done` with the comparison after
    /// the last, `Cancelled` when `keep_going` (given the fraction done before each simulation
    /// and through a fit) said stop.
    pub fn step(
        &mut self,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Result<Stepped<DesignComparison>, String> {
        let total = (Design::ALL.len() * self.microbatches.len()).max(1) as f32;
        loop {
            let Some(&design) = Design::ALL.get(self.design) else {
                return Ok(Stepped::Done(DesignComparison {
                    name: self.scenario.name.clone(),
                    capacity_bytes: self.scenario.hardware.as_ref().and_then(|h| h.memory_bytes),
                    points: std::mem::take(&mut self.points),
                    refused: std::mem::take(&mut self.refused),
                }));
            };
            let base = match &self.base {
                Some(base) => base,
                None => match scenario_for(&self.scenario, design) {
                    Ok(s) => self.base.insert(s),
                    Err(why) if design == Design::MemoryEfficient => {
                        self.refused.push((design, why));
                        self.design += 1;
                        continue;
                    }
                    Err(why) => return Err(why),
                },
            };
            let Some(&m) = self.microbatches.get(self.next_m) else {
                (self.design, self.next_m, self.base) = (self.design + 1, 0, None);
                continue;
            };
            if !keep_going(self.done as f32 / total) {
                return Ok(Stepped::Cancelled);
            }
            let at = self.done as f32 / total;
            self.done += 1;
            self.next_m += 1;
            let s = with_microbatches(base, m);
            let options = self.options;
            let sim = simulate_scenario(&s, options).map_err(|e: DeriveError| {
                format!("{} with M = {m}: field `{}`: {e}", design.name(), e.field())
            })?;
            let over_capacity = sim.memory.iter().any(|c| c.over_capacity);
            let (makespan_s, peak_bytes): (f64, Vec<f64>) = (
                sim.makespan_s,
                sim.memory.iter().map(|c| c.peak_bytes).collect(),
            );
            // Over capacity: what fitting it under costs (the fit's own progress within this
            // point's share), starting from this simulation.
            let fitted = if over_capacity {
                match fit_simulated(&s, sim, options, &mut |f| keep_going(at + f / total)) {
                    Ok(fitted) => Some(fitted),
                    Err(FitError::Cancelled) => return Ok(Stepped::Cancelled),
                    Err(e) => return Err(format!("{} with M = {m}: {e}", design.name())),
                }
            } else {
                None
            };
            self.points.push(DesignPoint {
                design,
                microbatches: m,
                makespan_s,
                peak_bytes,
                over_capacity,
                fitted,
            });
            return Ok(Stepped::Again);
        }
    }
}

impl DesignComparison {
    /// A table per design: M, step time, the highest rank peak, each rank's peak.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let gb = |b: f64| crate::vocab::units::bytes(b);
        let _ = writeln!(
            out,
            "{}: the three designs (BigMac){}",
            self.name,
            self.capacity_bytes
                .map_or(String::new(), |c| format!("; device capacity {}", gb(c)))
        );
        for design in Design::ALL {
            let rows: Vec<&DesignPoint> =
                self.points.iter().filter(|p| p.design == design).collect();
            let _ = writeln!(out, "\n{} — {}", design.name(), design.summary());
            if let Some((_, why)) = self.refused.iter().find(|(d, _)| *d == design) {
                let _ = writeln!(out, "  not built: {why}");
                continue;
            }
            let _ = writeln!(out, "     M   step time   peak (highest rank)   per rank");
            for p in rows {
                let peak = p.peak();
                let ranks: Vec<String> = p.peak_bytes.iter().map(|&b| gb(b)).collect();
                let _ = writeln!(
                    out,
                    "{:>6}  {:>10}  {:>20}   {}{}",
                    p.microbatches,
                    crate::vocab::units::secs(p.makespan_s),
                    gb(peak),
                    ranks.join(" "),
                    crate::tune::fit_memory::capacity_note(
                        p.over_capacity,
                        p.fitted.as_ref(),
                        p.makespan_s
                    )
                );
            }
        }
        out
    }
}
