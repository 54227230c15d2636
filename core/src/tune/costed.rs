//! A schedule that orders by the stages' real costs (the zero-bubble automatic scheduler,
//! [`crate::schedules::Schedule::costed_slots`]): `derive` orders it at unit costs; here, with
//! the cost model, each stage's `F`, `I`, `W` and transfer times order it, and the plan is
//! derived again with those slots (its other regions composed and gated as ever).

use crate::algebra::plan::Plan;
use crate::graph::derive::{Derivation, DeriveError, derive_plan_with};
use crate::scenario::hardware::transfer_time;
use crate::schedules::StageCosts;
use crate::sim::cost::{
    activation_bytes, activation_input_bytes, compute_time, output_bytes, unit_layers,
};
use crate::vocab::phase::Phase;

/// The stages of the wavefront's one chunk with their costs (microbatch 0's), in stage order;
/// `None` without a wavefront of one chunk.
pub fn stage_costs(plan: &Plan) -> Option<StageCosts> {
    let w = plan.wavefront.as_ref()?;
    let [region] = w.regions.as_slice() else {
        return None;
    };
    let ranks = plan.placement.region_ranks(*region);
    let mut costs = StageCosts::default();
    let mut transfers = Vec::new();
    for (i, &rank) in ranks.iter().enumerate() {
        let layers = unit_layers(plan, *region, rank);
        let time = |phase| compute_time(plan, layers.clone(), 0, phase);
        costs.forward_s.push(time(Phase::Forward));
        costs.input_s.push(time(Phase::Input));
        costs.weight_s.push(time(Phase::Weight));
        let held = activation_bytes(plan, *region, rank, 0);
        // The first stage's input half frees nothing under `in_weight` (its weight half runs
        // the whole backward).
        costs
            .input_share
            .push(if plan.unit_whole_in_weight(*region, rank) {
                0.0
            } else if held > 0.0 {
                activation_input_bytes(plan, *region, rank, 0) / held
            } else {
                0.5
            });
        if i + 1 < ranks.len() {
            transfers.push(transfer_time(
                &plan.hardware,
                output_bytes(plan, *region, rank, 0),
            ));
        }
    }
    costs.transfer_s = if transfers.is_empty() {
        0.0
    } else {
        transfers.iter().sum::<f64>() / transfers.len() as f64
    };
    Some(costs)
}

/// `derivation` ordered by its stages' costs where its schedule orders by them (else as it is).
pub fn ordered(derivation: Derivation) -> Result<Derivation, DeriveError> {
    let plan = &derivation.plan;
    let Some(w) = &plan.wavefront else {
        return Ok(derivation);
    };
    let Some(costs) = stage_costs(plan) else {
        return Ok(derivation);
    };
    let Some(slots) = w.skeleton.schedule().costed_slots(&plan.run_ctx(w), &costs) else {
        return Ok(derivation);
    };
    let plan = derivation.plan;
    derive_plan_with(plan, None, Some(slots))
}
