//! GARS before and after: the scenario's batch of graphs packed sequentially and by GARS, each
//! packing's per-microbatch load, imbalance and simulated step.

use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::sim::engine::SimOptions;
use crate::tune::Stepped;
use crate::tune::pipeline::simulate_scenario;
use crate::vocab::units::{bytes, secs};
use crate::workload::gars::{Mode, Packed, Packing};
use serde::Serialize;
use std::fmt::Write as _;

/// One packing of the batch, simulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PackingRun {
    pub packed: Packed,
    /// Each microbatch's workload factor (edges over the mean microbatch's).
    pub factors: Vec<f64>,
    /// Largest over mean microbatch edges.
    pub imbalance: f64,
    pub max_atoms: u64,
    pub makespan_s: f64,
    pub bubble_fraction: f64,
    pub peak_memory_bytes: f64,
}

impl PackingRun {
    /// With a per-rank atom budget (microbatches tagged with a mode): how many microbatches run
    /// distributed, of how many tagged.
    pub fn dist_microbatches(&self) -> Option<(usize, usize)> {
        let tagged: Vec<Mode> = self
            .packed
            .microbatches
            .iter()
            .filter_map(|m| m.mode)
            .collect();
        (!tagged.is_empty()).then(|| {
            let dist = tagged.iter().filter(|&&m| m == Mode::Dist).count();
            (dist, tagged.len())
        })
    }
}

/// Sequential packing (before) against GARS (after).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PackingComparison {
    pub sequential: PackingRun,
    pub gars: PackingRun,
    /// The packing the scenario uses.
    pub used: Packing,
}

impl PackingComparison {
    /// The before/after block of `mpipe simulate`.
    pub fn text(&self) -> String {
        let mut out = String::from("\ngraph packing (GARS): sequential → GARS\n");
        let row = |out: &mut String, what: &str, a: String, b: String| {
            let _ = writeln!(out, "  {what:<22} {a:>12} → {b}");
        };
        let (s, g) = (&self.sequential, &self.gars);
        row(
            &mut out,
            "step time",
            secs(s.makespan_s),
            secs(g.makespan_s),
        );
        row(
            &mut out,
            "bubble",
            format!("{:.1} %", 100.0 * s.bubble_fraction),
            format!("{:.1} %", 100.0 * g.bubble_fraction),
        );
        row(
            &mut out,
            "imbalance (max/mean)",
            format!("{:.3}", s.imbalance),
            format!("{:.3}", g.imbalance),
        );
        row(
            &mut out,
            "largest microbatch",
            format!("{} atoms", s.max_atoms),
            format!("{} atoms", g.max_atoms),
        );
        row(
            &mut out,
            "peak memory",
            bytes(s.peak_memory_bytes),
            bytes(g.peak_memory_bytes),
        );
        let modes = |r: &PackingRun| {
            r.dist_microbatches()
                .map_or("–".to_string(), |(dist, _)| format!("{dist} dist"))
        };
        row(&mut out, "dist microbatches", modes(s), modes(g));
        if g.packed.kept_sequential {
            out.push_str("  (GARS kept the sequential grouping: sorted greedy was no better)\n");
        }
        let _ = writeln!(
            out,
            "  per-microbatch load (edges / mean), sequential → GARS:"
        );
        for (j, (a, b)) in s.factors.iter().zip(&g.factors).enumerate() {
            let _ = writeln!(out, "    mb {j:>3}  {a:>6.3} → {b:.3}");
        }
        let _ = writeln!(out, "  the scenario uses {}", self.used.name());
        out
    }
}

/// Both packings of the scenario's graphs, simulated; `None` without `workload.graphs`.
pub fn compare_packings(
    scenario: &Scenario,
    options: SimOptions,
) -> Result<Option<PackingComparison>, DeriveError> {
    let Some(mut steps) = PackingSteps::new(scenario, options) else {
        return Ok(None);
    };
    Stepped::run_to_end(|| steps.step(&mut |_| true))
}

/// The packing comparison in steps, one packing simulated each: what [`compare_packings`] runs
/// in a loop, and a caller with no threads (the web build) runs one a frame.
#[derive(Debug, Clone)]
pub struct PackingSteps {
    scenario: Scenario,
    graphs: crate::workload::gars::Graphs,
    options: SimOptions,
    sequential: Option<PackingRun>,
}

impl PackingSteps {
    /// The steps of comparing `scenario`'s packings; `None` when its workload packs no graphs.
    pub fn new(scenario: &Scenario, options: SimOptions) -> Option<PackingSteps> {
        let graphs = scenario.workload.as_ref()?.graphs.clone()?;
        Some(PackingSteps {
            scenario: scenario.clone(),
            graphs,
            options,
            sequential: None,
        })
    }

    /// Simulates the next packing: `Again` after the first (sequential), `Done` with the
    /// comparison after the second (GARS), `Cancelled` when `keep_going` (given the fraction
    /// done before each) said stop.
    pub fn step(
        &mut self,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Result<Stepped<PackingComparison>, DeriveError> {
        let done = if self.sequential.is_some() { 0.5 } else { 0.0 };
        if !keep_going(done) {
            return Ok(Stepped::Cancelled);
        }
        let (scenario, graphs) = (&self.scenario, &self.graphs);
        let run = |packing: Packing| -> Result<PackingRun, DeriveError> {
            let mut s = scenario.clone();
            if let Some(g) = s.workload.as_mut().and_then(|w| w.graphs.as_mut()) {
                g.packing = packing;
            }
            let sim = simulate_scenario(&s, self.options)?;
            let packed = graphs
                .pack_with(scenario.microbatches, packing)
                .map_err(|e| DeriveError::Invalid(e.into()))?;
            let factors = packed.factors();
            Ok(PackingRun {
                imbalance: factors.iter().copied().fold(0.0, f64::max),
                factors,
                max_atoms: packed.max_atoms(),
                packed,
                makespan_s: sim.makespan_s,
                bubble_fraction: sim.bubble_fraction,
                peak_memory_bytes: sim.peak_memory_bytes(),
            })
        };
        match self.sequential.take() {
            None => {
                self.sequential = Some(run(Packing::Sequential)?);
                Ok(Stepped::Again)
            }
            Some(sequential) => Ok(Stepped::Done(PackingComparison {
                sequential,
                gars: run(Packing::Gars)?,
                used: graphs.packing,
            })),
        }
    }
}
