//! The one pipeline from a scenario to its simulation: derive it, choose a cost-based owner map
//! with the caller's simulation options ([`crate::tune::owners`]), simulate. Every search that
//! tries scenarios, the trace calibration, the CLI and the app go through it.

use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::sim::engine::SimOptions;
use crate::sim::run::{Simulation, run, run_cancellable};
use crate::tune::owners::derive_tuned;

/// Why a simulation has no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimulationError {
    #[error(transparent)]
    Derive(#[from] DeriveError),
    /// The caller's `keep_going` said stop.
    #[error("cancelled")]
    Cancelled,
}

/// Derives a scenario (choosing a cost-based owner map with `options`) and simulates it.
pub fn simulate_scenario(
    scenario: &Scenario,
    options: SimOptions,
) -> Result<Simulation, DeriveError> {
    Ok(run(
        derive_tuned(scenario, options, &mut |_| true)?,
        options,
    ))
}

/// [`simulate_scenario`] that reports how far it got and can be stopped: between its passes it
/// calls `keep_going` with the fraction done (0 to 1) and stops with
/// [`SimulationError::Cancelled`] as soon as that returns false. Each pass is linear in the
/// number of events, so a stop takes effect within one pass.
pub fn simulate_scenario_cancellable(
    scenario: &Scenario,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Simulation, SimulationError> {
    if !keep_going(0.0) {
        return Err(SimulationError::Cancelled);
    }
    // The derivation and the `optimized` owner search are the first 30 %.
    let derivation = derive_tuned(scenario, options, &mut |f| keep_going(0.3 * f))?;
    run_cancellable(derivation, options, keep_going).ok_or(SimulationError::Cancelled)
}
