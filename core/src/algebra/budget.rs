//! How much memory deriving and simulating a scenario needs, estimated from its sizes alone
//! before anything is allocated, and the limit a scenario must stay under (rule `memory`). What
//! passes finishes: the estimate bounds the peak measured around derive + simulate (a test keeps
//! it between one and three times the measured peak).

use crate::scenario::Scenario;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;
use crate::vocab::units::gib;

/// Heap bytes per event of the order graph for derive + simulate: the graph (events and flat
/// lists of its edges and streams), the per-rank orders, durations, the timeline (and the
/// encoder-free one), slack, the critical path, memory curves and metrics. Measured: 77–87
/// bytes per event of peak heap (`core/tests/memory_estimate.rs`), about 110 of resident size;
/// the rest is margin.
pub const BYTES_PER_EVENT: f64 = 200.0;

/// With a cost-based owner map (`greedy_slack`, `optimized`) the search holds a second order graph
/// while it simulates candidates: measured up to 162 bytes per event.
pub const OWNER_SEARCH_FACTOR: f64 = 1.6;

/// With `workload.graphs`, `simulate` holds the scenario's simulation and one packing's at once.
pub const PACKING_FACTOR: f64 = 2.0;

/// Bytes per event a command keeps beside the simulation for its output, measured (peak
/// resident size over events, less [`BYTES_PER_EVENT`]) with some margin: the SVG of `render`
/// (P = 64, M = 4,000, a million events: 700 MB in all), the Chrome trace of `export` (1.06 GB).
/// Set when [`BYTES_PER_EVENT`] was 260, and raised by what it was lowered, so that each
/// command's total (760 and 1,110 bytes an event) keeps its margin.
pub const RENDER_BYTES_PER_EVENT: f64 = 560.0;
pub const EXPORT_BYTES_PER_EVENT: f64 = 910.0;

/// What a command does with the scenario, for the peak it reaches (rule `memory` for each
/// command, not for one simulation only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Derive and simulate it once (`validate`, `derive`, `simulate`, `compare`: one scenario
    /// at a time).
    Simulate,
    /// Tune it: the current pipeline, the best candidate and the one being tried at once.
    Tune,
    /// Render it as SVG.
    Render,
    /// Export it as a Chrome trace.
    Export,
}

impl Use {
    fn simulations(self) -> f64 {
        match self {
            Use::Tune => 3.0,
            _ => 1.0,
        }
    }

    fn output_per_event(self) -> f64 {
        match self {
            Use::Render => RENDER_BYTES_PER_EVENT,
            Use::Export => EXPORT_BYTES_PER_EVENT,
            Use::Simulate | Use::Tune => 0.0,
        }
    }

    fn doing(self) -> &'static str {
        match self {
            Use::Simulate => "simulating it",
            Use::Tune => "tuning it (three simulations at once)",
            Use::Render => "rendering it as SVG",
            Use::Export => "exporting it as a Chrome trace",
        }
    }
}

/// The most a scenario may need (8 GiB): a third of a 24 GiB machine, leaving room for the app's
/// own copy of the timeline and for the rest of the system.
pub const MEMORY_LIMIT_BYTES: f64 = 8.0 * (1u64 << 30) as f64;

/// An estimate made from a scenario's sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// An upper bound of the order graph's events.
    pub events: u64,
    /// Heap bytes for derive + simulate.
    pub bytes: f64,
}

/// What a pipeline CSV of `s`'s orders may hold: a row per rank, and no more actions than the
/// events `s`'s sizes bound.
pub fn csv_limits(s: &Scenario) -> crate::scenario::orders_csv::CsvLimits {
    crate::scenario::orders_csv::CsvLimits {
        rows: s.ranks,
        cells: estimate(s).events,
    }
}

/// The estimate for `s` (sizes as given; nothing is expanded or allocated).
pub fn estimate(s: &Scenario) -> Estimate {
    let (p, m) = (s.ranks as u64, s.microbatches as u64);
    let regions = s.schedule.len() as u64;
    // Per microbatch: each Sharded region runs a forward and a backward (two halves when its
    // schedule or a hand-written order may split it) on every rank and hops between consecutive ranks both ways; a
    // Replicated region runs them once, on its owner.
    // Activation offload adds two copies per forward, an early recomputation one action.
    let memory_events = u64::from(
        s.model
            .layers
            .iter()
            .any(|l| l.offload_share.unwrap_or(0.0) > 0.0),
    ) * 2
        + u64::from(s.model.layers.iter().any(|l| l.recompute_early));
    let per_mb: u64 = s
        .schedule
        .iter()
        .map(|k| {
            // Four-phase schedules run four events per stage and four passes over the pipeline.
            let (compute, passes) = match k.schedule().ops() {
                OpSet::ForwardBackward if s.explicit_orders().is_none() => (2, 2),
                OpSet::ForwardBackward | OpSet::SplitBackward | OpSet::Mixed => (3, 2),
                OpSet::FourPhase => (4, 4),
            };
            let compute = compute + memory_events;
            match k.layout() {
                Layout::Sharded => compute * p + passes * p.saturating_sub(1),
                Layout::Replicated => compute,
            }
        })
        .fold(0u64, u64::saturating_add);
    // Seams both ways, and the loss.
    let per_mb = per_mb.saturating_add(2 * regions.saturating_sub(1) + 1);
    let events = m
        .saturating_mul(per_mb)
        .saturating_add(regions.saturating_mul(p))
        .saturating_add(1);
    let searches =
        s.owner.needs_costs() && s.schedule.iter().any(|k| k.layout() == Layout::Replicated);
    let mut factor = if searches { OWNER_SEARCH_FACTOR } else { 1.0 };
    // A batch of graphs is packed both ways and each packing simulated beside the scenario's
    // own simulation: two at once.
    if s.workload.as_ref().is_some_and(|w| w.graphs.is_some()) {
        factor *= PACKING_FACTOR;
    }
    Estimate {
        events,
        bytes: events as f64 * BYTES_PER_EVENT * factor,
    }
}

/// Why a scenario is refused before anything is allocated (rule `memory`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "rule `memory`: {doing} needs about {} (up to {events} events × {per_event:.0} bytes), more than the {} this version allows; use fewer microbatches or ranks",
    gib(*bytes),
    gib(*limit)
)]
pub struct OverBudget {
    /// What needs it (`simulating it`, `tuning it …`).
    pub doing: &'static str,
    pub events: u64,
    pub per_event: f64,
    pub bytes: f64,
    pub limit: f64,
}

impl OverBudget {
    /// The scenario field to change: the microbatches multiply everything.
    pub fn field(&self) -> &'static str {
        "microbatches"
    }
}

/// Rejects `s` when deriving and simulating it (plus `extra_per_event` bytes per event the caller
/// keeps, such as the app's timeline) would need more than `limit` bytes.
pub fn check(s: &Scenario, limit: f64, extra_per_event: f64) -> Result<(), OverBudget> {
    check_use(s, Use::Simulate, limit, extra_per_event)
}

/// Rejects `s` when what `how` does with it (plus `extra_per_event` bytes per event the caller
/// keeps) would need more than `limit` bytes: each command's own peak.
pub fn check_use(
    s: &Scenario,
    how: Use,
    limit: f64,
    extra_per_event: f64,
) -> Result<(), OverBudget> {
    let e = estimate(s);
    over_budget(e, how, limit, extra_per_event)
}

/// [`check_use`] for a simulation already held, of `events` events (its owner search, if any,
/// done): what `how` adds to it must fit too.
pub fn check_held(
    events: u64,
    how: Use,
    limit: f64,
    extra_per_event: f64,
) -> Result<(), OverBudget> {
    let e = Estimate {
        events,
        bytes: events as f64 * BYTES_PER_EVENT,
    };
    over_budget(e, how, limit, extra_per_event)
}

/// The peak of doing `how` with a simulation of estimate `e`, against `limit`.
fn over_budget(e: Estimate, how: Use, limit: f64, extra_per_event: f64) -> Result<(), OverBudget> {
    let bytes =
        e.bytes * how.simulations() + e.events as f64 * (extra_per_event + how.output_per_event());
    if bytes > limit {
        return Err(OverBudget {
            doing: how.doing(),
            events: e.events,
            per_event: bytes / e.events.max(1) as f64,
            bytes,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One simulation's estimate is what `validate` checks; a command that holds more (the
    /// tuner's three simulations, an SVG, a Chrome trace, two packings) is checked for its own
    /// peak, the same file refused by one command and not by another.
    #[test]
    fn each_use_adds_what_it_holds() {
        let text = r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "l", "count": 64, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 64, "microbatches": 120000}"#;
        let s = Scenario::from_json_str(text, "s.json").unwrap_or_else(|e| panic!("{e}"));
        let e = estimate(&s);
        let limit = MEMORY_LIMIT_BYTES;
        assert_eq!(check(&s, limit, 0.0), Ok(()));
        let need = |how| check_use(&s, how, 0.0, 0.0).map_err(|o| (o.doing, o.bytes));
        assert_eq!(
            need(Use::Tune),
            Err(("tuning it (three simulations at once)", 3.0 * e.bytes))
        );
        assert_eq!(
            need(Use::Render),
            Err((
                "rendering it as SVG",
                e.bytes + e.events as f64 * RENDER_BYTES_PER_EVENT
            ))
        );
        assert_eq!(
            need(Use::Export),
            Err((
                "exporting it as a Chrome trace",
                e.bytes + e.events as f64 * EXPORT_BYTES_PER_EVENT
            ))
        );
        // A simulation already held counts its events at one simulation's bytes each.
        assert_eq!(
            check_held(1000, Use::Render, 0.0, 200.0).map_err(|o| o.bytes),
            Err(1000.0 * (BYTES_PER_EVENT + 200.0 + RENDER_BYTES_PER_EVENT))
        );
        for how in [Use::Tune, Use::Render, Use::Export] {
            assert!(check_use(&s, how, limit, 0.0).is_err());
        }
        // A batch of graphs is simulated twice beside the scenario: twice the bytes.
        let mut graphs = s.clone();
        graphs.workload = serde_json::from_str(
            r#"{"graphs": {"count": 64, "distribution": {"kind": "uniform", "low": 1, "high": 2}}}"#,
        )
        .ok();
        assert!(graphs.workload.is_some());
        assert_eq!(estimate(&graphs).bytes, PACKING_FACTOR * e.bytes);
    }
}
