//! `derive(cut, schedule, model) → (placement, collectives, order)`.

use crate::algebra::collectives::{self, Collectives};
use crate::algebra::plan::Plan;
use crate::algebra::validity::{self, ValidityError};
use crate::graph::order::{self, Order, OrderError};
use crate::scenario::{Scenario, ScenarioError, field_error};
use crate::sim::engine::SimOptions;

/// Everything derived from a valid scenario.
#[derive(Debug, Clone)]
pub struct Derivation {
    /// Placement: each region's layout and owner (slabs or owner map).
    pub plan: Plan,
    pub collectives: Collectives,
    pub order: Order,
}

/// Why a scenario cannot be derived.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeriveError {
    #[error(transparent)]
    Invalid(#[from] ValidityError),
    #[error(transparent)]
    Order(#[from] OrderError),
}

impl DeriveError {
    /// The short name of the rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            DeriveError::Invalid(e) => e.rule(),
            DeriveError::Order(OrderError::Explicit { .. }) => "orders",
            DeriveError::Order(OrderError::Deadlock { .. }) => "deadlock-free",
        }
    }

    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            DeriveError::Invalid(e) => e.field(),
            DeriveError::Order(e) => e.field(),
        }
    }

    /// The error positioned in the scenario's text, for messages that name file, line and column.
    pub fn locate(&self, text: &str, file: &str) -> ScenarioError {
        field_error(text, file, &self.field(), self.to_string())
    }
}

/// Validates the scenario and derives placement, collectives and the per-rank order.
pub fn derive(scenario: &Scenario) -> Result<Derivation, DeriveError> {
    derive_with(scenario, &mut |_| true)
}

/// [`derive`], telling `keep_going` how far the `optimized` owner map's search got (0 to 1); when
/// it returns false the search stops at the best map found so far.
pub fn derive_with(
    scenario: &Scenario,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Derivation, DeriveError> {
    let mut plan = validity::plan(scenario)?;
    crate::tune::owners::choose(
        &mut plan,
        &scenario.owner,
        scenario.orders.as_deref(),
        crate::tune::owners::Budget {
            simulations: scenario
                .owner_budget
                .unwrap_or(crate::tune::owners::SEARCH_BUDGET),
            options: SimOptions::default(),
        },
        keep_going,
    )?;
    let collectives = collectives::collectives(&plan);
    let order = order::build(&plan, scenario.orders.as_deref())?;
    Ok(Derivation {
        plan,
        collectives,
        order,
    })
}
