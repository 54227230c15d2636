//! `derive(cut, schedule, model) → (placement, collectives, order)`.

use crate::algebra::collectives::{self, Collectives};
use crate::algebra::plan::Plan;
use crate::algebra::validity::{self, ValidityError};
use crate::graph::order::{Derived, Order, OrderError};
use crate::graph::{any_placement, build};
use crate::scenario::edit::{Edit, Remedy};
use crate::scenario::placement::PlacementSpec;
use crate::scenario::{Scenario, ScenarioError, field_error};
use crate::schedules::Schedule;
use crate::vocab::layout::Composition;
use crate::vocab::phase::OpSet;

/// Everything derived from a valid scenario.
#[derive(Debug, Clone)]
pub struct Derivation {
    /// Placement: each region's layout and owner (slabs or owner map).
    pub plan: Plan,
    pub collectives: Collectives,
    pub order: Order,
    /// How the order was derived, when not from the schedule's own slots (a placement the
    /// slots do not assume: [`crate::graph::any_placement`]).
    pub order_note: Option<String>,
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
            DeriveError::Order(OrderError::Slots { .. }) => "schedule-slots",
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

    /// The change that makes the scenario valid, where one is known: the normal form, one rank
    /// a layer, or a deadlocking order's proposed reordering.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            DeriveError::Invalid(e) => e.remedy(),
            // A placement the schedule's slots do not assume: its own placement is the fix (the
            // proposed reordering keeps the placement but runs far longer: 226 s against
            // 105 s for plain interleaving on the scenario).
            DeriveError::Order(OrderError::Deadlock {
                derived: Some(Derived::Placement(name)),
                ..
            }) => Some(Remedy {
                label: format!("Use the schedule's own placement (remove `placement` {name})"),
                edit: Edit::Placement(None),
            }),
            DeriveError::Order(OrderError::Deadlock { fix, .. }) => Some(Remedy {
                label: "Apply the proposed order".into(),
                edit: Edit::Orders(Some(fix.orders.clone())),
            }),
            DeriveError::Order(OrderError::Explicit { .. } | OrderError::Slots { .. }) => None,
        }
    }

    /// The error positioned in the scenario's text, for messages that name file, line and column.
    pub fn locate(&self, text: &str, file: &str) -> ScenarioError {
        field_error(text, file, &self.field(), self.to_string())
    }
}

/// Validates the scenario and derives placement, collectives and the per-rank order: analytic
/// only, it never simulates. An owner map that needs the cost model (`greedy_slack`,
/// `optimized`) is round robin here, provisionally: [`crate::tune::owners::tune`] chooses it
/// with the caller's simulation options ([`crate::tune::owners::derive_tuned`] does both).
pub fn derive(scenario: &Scenario) -> Result<Derivation, DeriveError> {
    let plan = validity::plan(scenario)?;
    let explicit = scenario.explicit_orders();
    derive_plan(plan, explicit).map_err(|e| match e {
        // An order the scenario did not write: blame what it did write (`placement`, else
        // `schedule`), not an `orders` field it does not have.
        DeriveError::Order(OrderError::Deadlock {
            cycle,
            actions,
            fix,
            derived: None,
        }) if explicit.is_none() => DeriveError::Order(OrderError::Deadlock {
            cycle,
            actions,
            fix,
            derived: Some(match &scenario.placement {
                Some(p) if *p != own_placement(scenario) => Derived::Placement(p.name()),
                _ => Derived::Schedule,
            }),
        }),
        other => other,
    })
}

/// The placement the scenario's wavefront schedule assumes (its first Sharded region's).
fn own_placement(scenario: &Scenario) -> PlacementSpec {
    scenario
        .schedule
        .iter()
        .find(|s| s.layout() == crate::vocab::layout::Layout::Sharded)
        .map_or(PlacementSpec::Default, |s| s.schedule().placement().into())
}

/// How the derivation's note begins where the schedule's slots deadlock under a placement they
/// do not assume and a list-scheduled order stands in.
pub(crate) const SLOTS_DEADLOCK: &str =
    "the schedule's slots deadlock under this placement (they assume its own)";

/// The schedule of `plan`'s plain wavefront where it runs under a placement its slots do not
/// assume (`None` elsewhere, and with hand-written orders: `explicit`): the slots may deadlock
/// there, or run slower than an order list-scheduled over the placement.
pub(crate) fn folded_schedule(plan: &Plan, explicit: bool) -> Option<&'static dyn Schedule> {
    plan.wavefront
        .as_ref()
        .map(|w| w.skeleton.schedule())
        .filter(|s| {
            !explicit
                && !plan.is_placed_as(s.placement())
                && matches!(s.ops(), OpSet::ForwardBackward | OpSet::SplitBackward)
        })
}

/// The list runs' units, in the note's words (long and short) for a folded schedule.
fn unit_words(fold: Option<&dyn Schedule>) -> (&'static str, &'static str) {
    match fold.is_some_and(|s| s.ops() == OpSet::SplitBackward) {
        true => (
            "a forward taking one unit of time, an input or weight half one; a weight half where its rank has nothing else it may start",
            "a forward one, each half of a backward one",
        ),
        false => (
            "a forward taking one unit of time, a backward two",
            "a forward one, a backward two",
        ),
    }
}

/// How a list-scheduled order was chosen, in the derivation's note: how many rules were tried,
/// under which bound (or how many) on held activations.
pub(crate) fn listed_words(listed: &any_placement::Listed) -> String {
    let rules = match listed.rules {
        5 => "five".to_string(),
        7 => "seven".to_string(),
        n => n.to_string(),
    };
    let runs = match listed.bounds {
        0 | 1 => format!("up to {rules} rules"),
        2 => format!(
            "up to {rules} rules under each of two bounds on held activations (of equally short runs the one holding least)"
        ),
        n => format!(
            "up to {rules} rules under each of {} bounds on held activations (of equally short runs the one holding least)",
            match n {
                3 => "three".to_string(),
                4 => "four".to_string(),
                n => n.to_string(),
            }
        ),
    };
    let again = match listed.fed_back {
        true => format!(", {}", crate::schedules::listed::FED_BACK_WORDS),
        false => String::new(),
    };
    format!(
        "the shortest of {runs}{again}, a forward only while a rank holds under {} = {} stages' activations unless every rank waits on that (the run holds at most {} on a rank)",
        listed.bound, listed.limit, listed.held
    )
}

/// Collectives and order of a checked plan (`explicit`: the scenario's hand-written orders).
pub fn derive_plan(
    plan: Plan,
    explicit: Option<&[Vec<String>]>,
) -> Result<Derivation, DeriveError> {
    derive_plan_with(plan, explicit, None)
}

/// [`derive_plan`] with the wavefront's slots given by position (a schedule ordered by the
/// stages' costs: [`crate::tune::costed`]).
pub fn derive_plan_with(
    plan: Plan,
    explicit: Option<&[Vec<String>]>,
    by_position: Option<Vec<Vec<crate::schedules::slot::Slot>>>,
) -> Result<Derivation, DeriveError> {
    let collectives = collectives::collectives(&plan);
    let mut order_note = None;
    let fold = folded_schedule(&plan, explicit.is_some());
    let (units, short_units) = unit_words(fold);
    // Where a listed order may stand in for slots that deadlock, the deadlock's proposed
    // reordering (a search) is made only if the deadlock is reported after all.
    let again = fold.is_some().then(|| by_position.clone()).flatten();
    let reported = |unproposed: OrderError| match build::build_with(
        &plan,
        &collectives,
        explicit,
        again.clone(),
    ) {
        Err(proposed) => DeriveError::from(proposed),
        // Not met: the same build deadlocked a moment ago (it is deterministic).
        Ok(_) => DeriveError::from(unproposed),
    };
    let parsed = explicit.map(build::parse);
    let built = build::build_proposing(
        &plan,
        &collectives,
        parsed.as_deref(),
        by_position,
        fold.is_none(),
    );
    let mut order = match built {
        Err(deadlock @ OrderError::Deadlock { .. }) if fold.is_some() => {
            let Some(listed) = any_placement::orders(&plan) else {
                return Err(reported(deadlock));
            };
            order_note = Some(format!(
                "{SLOTS_DEADLOCK}: the order is list-scheduled over it — {}, {} ({units})",
                listed.rule,
                listed_words(&listed)
            ));
            // The deadlock stays the error where the listed order does not lay out either.
            match build::build_steps(&plan, &collectives, &listed.orders) {
                Ok(order) => order,
                Err(_) => return Err(reported(deadlock)),
            }
        }
        // Slots that run on give way where they are slower, for a schedule whose spirit the
        // list-scheduled rules keep (1F1B's bound on the activations a rank holds); another's
        // (GPipe's all forwards, then all backwards) stay its own.
        Ok(slots) if fold.is_some_and(|s| s.lists_over_any_placement()) => {
            let slot_end = any_placement::unit_end(&slots);
            let shorter = any_placement::orders(&plan)
                .filter(|listed| listed.end.is_none_or(|end| (end as f64) < slot_end))
                // The slots stay where the listed order does not lay out.
                .and_then(|listed| {
                    let order = build::build_steps(&plan, &collectives, &listed.orders).ok()?;
                    // A run with actions the plan lacks is timed as laid out.
                    let end = listed
                        .end
                        .map_or_else(|| any_placement::unit_end(&order), |end| end as f64);
                    (end < slot_end).then_some((listed, order, end))
                });
            match shorter {
                Some((listed, order, end)) => {
                    order_note = Some(format!(
                        "the schedule's slots assume its own placement and take {slot_end} units under this one ({short_units}) where an order list-scheduled over it takes {end}: that order — {}, {}",
                        listed.rule,
                        listed_words(&listed)
                    ));
                    order
                }
                None => slots,
            }
        }
        other => other?,
    };
    // Nested regions (an encoder first, a generator last) are embedded in the backbone's
    // logical time: the orders the backbone gives, with their work nested, derived as explicit
    // orders.
    let nested = plan
        .regions
        .iter()
        .any(|r| r.skeleton.composition() == Some(Composition::Nested));
    if nested && explicit.is_none() {
        let orders = crate::graph::compose::nested::orders(&plan, &order);
        order = build::build(&plan, &collectives, Some(&orders))?;
    }
    Ok(Derivation {
        plan,
        collectives,
        order,
        order_note,
    })
}
