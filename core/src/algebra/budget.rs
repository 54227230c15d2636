//! How much memory deriving and simulating a scenario needs, estimated from its sizes alone
//! before anything is allocated, and the limit a scenario must stay under (rule `memory`). What
//! passes finishes: the estimate bounds the peak measured around derive + simulate (a test keeps
//! it between one and three times the measured peak).

use crate::scenario::Scenario;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;
use crate::vocab::units::gib;

/// Heap bytes per event of the order graph for derive + simulate: the graph and its flat
/// adjacency, the per-rank orders, durations, the timeline (and the encoder-free one), slack,
/// the critical path, memory curves and metrics. Measured: 160–200 bytes per event.
pub const BYTES_PER_EVENT: f64 = 260.0;

/// With a cost-based owner map (`greedy_slack`, `optimized`) the search holds a second order graph
/// while it simulates candidates: measured up to 300 bytes per event.
pub const OWNER_SEARCH_FACTOR: f64 = 1.6;

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
    let factor = if searches { OWNER_SEARCH_FACTOR } else { 1.0 };
    Estimate {
        events,
        bytes: events as f64 * BYTES_PER_EVENT * factor,
    }
}

/// Why a scenario is refused before anything is allocated (rule `memory`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "rule `memory`: simulating it needs about {} (up to {events} events × {per_event:.0} bytes), more than the {} this version allows; use fewer microbatches or ranks",
    gib(*bytes),
    gib(*limit)
)]
pub struct OverBudget {
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
    let e = estimate(s);
    let bytes = e.bytes + e.events as f64 * extra_per_event;
    if bytes > limit {
        return Err(OverBudget {
            events: e.events,
            per_event: bytes / e.events.max(1) as f64,
            bytes,
            limit,
        });
    }
    Ok(())
}
