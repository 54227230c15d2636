//! A schedule that orders by the stages' real costs (the zero-bubble automatic scheduler,
//! [`crate::schedules::Schedule::costed_slots`]): `derive` orders it at unit costs; here, with
//! the cost model, each stage's `F`, `I`, `W` and transfer times order it, and the plan is
//! derived again with those slots (its other regions composed and gated as ever).

use crate::algebra::plan::Plan;
use crate::graph::derive::{
    Derivation, DeriveError, SLOTS_DEADLOCK, derive_plan_with, folded_schedule, listed_words,
};
use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::Timeline;
use crate::graph::{any_placement, build};
use crate::scenario::hardware::transfer_time;
use crate::schedules::StageCosts;
use crate::schedules::listed::{self, Op, StageTicks, Times};
use crate::sim::cost;
use crate::sim::cost::{
    activation_bytes, activation_input_bytes, compute_time, output_bytes, unit_layers,
};
use crate::sim::engine::{SimOptions, simulate_launched};
use crate::sim::memory::memory;
use crate::vocab::phase::{Half, OpSet, Phase};
use petgraph::graph::NodeIndex;

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

/// `derivation` with its order list-scheduled again in place of the units `derive` runs with (no
/// transfer taking time): with each stage's own times (the cost model's mean over microbatches
/// of each stage's forward, backward or halves, its collectives and runtime share included)
/// where they are not the units' already, and with those and the transfers between stages on
/// different ranks (the mean of each stage's) where the transfers' `listed::latency` is a stage
/// or more. Of those orders the one with the shortest simulated step (with `options`) is kept
/// where it is shorter than the order it would replace and puts no rank over its device's
/// memory that that order keeps under it. Only where `derive` list-schedules (a fold's order,
/// Hanayo's slots), or may (a schedule whose slots give way to a shorter listed order).
pub fn listed_by_times(derivation: Derivation, options: SimOptions) -> Derivation {
    let plan = &derivation.plan;
    let Some(schedule) = plan.wavefront.as_ref().map(|w| w.skeleton.schedule()) else {
        return derivation;
    };
    let lists = schedule.slots_are_listed()
        || (folded_schedule(plan, false).is_some()
            && (derivation.order_note.is_some() || schedule.lists_over_any_placement()));
    if !lists {
        return derivation;
    }
    let split = schedule.ops() == OpSet::SplitBackward;
    let timed = cost::timed(plan, &derivation.order);
    let Some((ticks, hops)) = stage_ticks(plan, &derivation.order, &timed.durations) else {
        return derivation;
    };
    let units = in_units(&ticks, split);
    // Transfers that add up to less than a stage's work along the way down and back are left
    // out (they weigh too little to be worth the runs, though they could still reorder ties).
    let rank_of = plan.placement.ranks_of_stages();
    let with_hops = Times {
        stages: &ticks,
        hops: &hops,
    };
    let transfers = listed::latency(rank_of, split, with_hops) > 0;
    // The runs with the stages' own times alone (where they are not the units') and with the
    // transfers too (where they count): the list's rules weigh what they are given, and
    // neither run is always the shorter once simulated.
    let mut tried: Vec<&[u64]> = Vec::with_capacity(2);
    if !units {
        tried.push(&[]);
    }
    if transfers {
        tried.push(&hops);
    }
    if tried.is_empty() {
        return derivation;
    }
    // The order it would replace, simulated once a candidate is built.
    let mut durations = Some(timed.durations);
    let mut old: Option<Timeline> = None;
    // Not at the price of a device's memory: an order that puts a rank over its capacity where
    // the order it would replace keeps every rank under it stays out.
    let over = |order: &Order, timeline: &Timeline| {
        plan.hardware.memory_bytes.is_some()
            && memory(plan, order, timeline)
                .iter()
                .any(|curve| curve.over_capacity)
    };
    let mut old_over: Option<bool> = None;
    // The shortest so far: its step, the replaced order's, the order, its list, whether with
    // the transfers.
    let mut best: Option<(f64, f64, Order, any_placement::Listed, bool)> = None;
    for hops in tried {
        let times = Times {
            stages: &ticks,
            hops,
        };
        let Some(listed) = any_placement::orders_timed(plan, Some(times)) else {
            continue;
        };
        let Ok(order) = build::build_steps(plan, &derivation.collectives, &listed.orders) else {
            continue;
        };
        let retimed = cost::timed(plan, &order);
        let new = simulate_launched(&order, retimed.durations, &retimed.launches, options);
        let after = new.makespan;
        let old = old.get_or_insert_with(|| {
            let durations = durations.take().unwrap_or_default();
            simulate_launched(&derivation.order, durations, &timed.launches, options)
        });
        let before = old.makespan;
        // Strictly shorter than the order it would replace and any tried before (a step that is
        // no number keeps the order as it was).
        let bar = best.as_ref().map_or(before, |b| b.0);
        if after.partial_cmp(&bar) != Some(std::cmp::Ordering::Less) {
            continue;
        }
        if over(&order, &new) && !*old_over.get_or_insert_with(|| over(&derivation.order, old)) {
            continue;
        }
        best = Some((after, before, order, listed, !hops.is_empty()));
    }
    let Some((after, before, order, listed, with_transfers)) = best else {
        return derivation;
    };
    let weights = match split {
        true => "; a weight half where its rank has nothing else it may start",
        false => "",
    };
    // Why the schedule's slots gave way, where `derive` said they deadlock, and which order
    // this one is shorter than: the slots kept, or `derive`'s list in units.
    let prefix = match &derivation.order_note {
        Some(note) if note.starts_with(SLOTS_DEADLOCK) => format!("{SLOTS_DEADLOCK}: "),
        _ => String::new(),
    };
    let than = match derivation.order_note {
        None => "the schedule's own slots take",
        Some(_) => "the order list-scheduled in units of time takes",
    };
    let transfers = match with_transfers {
        true => " and the transfers between them",
        false => "",
    };
    let note = format!(
        "{prefix}list-scheduled over this placement with each stage's own times{transfers} (the cost model's) — {}, {}{weights}; it takes {after:.3} s where {than} {before:.3} s",
        listed.rule,
        listed_words(&listed)
    );
    Derivation {
        order,
        order_note: Some(note),
        ..derivation
    }
}

/// Each stage's mean time of each op over the microbatches in `durations` (`order`'s), in ticks
/// of a hundred-thousandth of the longest, and the mean of each stage's transfers to the next
/// stage (and of the gradients back) across ranks in the same ticks, one a stage but the last;
/// `None` where no op takes any time. An early recomputation is its backward's (the backward's or
/// its input half's time holds it, as it does where the recomputation runs inside the backward).
fn stage_ticks(
    plan: &Plan,
    order: &Order,
    durations: &[f64],
) -> Option<(Vec<StageTicks>, Vec<u64>)> {
    let stages = plan.placement.ranks_of_stages().len();
    let mut sum = vec![[0.0f64; 4]; stages];
    let mut count = vec![[0u32; 4]; stages];
    let mut hop_sum = vec![0.0f64; stages.saturating_sub(1)];
    let mut hop_count = vec![0u32; stages.saturating_sub(1)];
    let mut recomputed = vec![0.0f64; stages];
    for (i, (event, &d)) in order.graph.node_weights().zip(durations).enumerate() {
        if let Event::Recompute { stage, .. } = *event {
            if let Some(r) = recomputed.get_mut(stage.index()) {
                *r += d;
            }
            continue;
        }
        if matches!(event, Event::Coll { .. }) {
            if let Some(stage) = cost::transfer_stage(plan, &order.graph, NodeIndex::new(i))
                && let (Some(s), Some(c)) = (
                    hop_sum.get_mut(stage.index()),
                    hop_count.get_mut(stage.index()),
                )
            {
                *s += d;
                *c += 1;
            }
            continue;
        }
        let (stage, op) = match *event {
            Event::Fwd { stage, .. } => (stage, Op::Forward),
            Event::Bwd { stage, half, .. } => (
                stage,
                match half {
                    Half::Whole => Op::Backward,
                    Half::Input => Op::Input,
                    Half::Weight => Op::Weight,
                },
            ),
            _ => continue,
        };
        if let (Some(s), Some(c)) = (
            sum.get_mut(stage.index())
                .and_then(|t| t.get_mut(op.index())),
            count
                .get_mut(stage.index())
                .and_then(|t| t.get_mut(op.index())),
        ) {
            *s += d;
            *c += 1;
        }
    }
    for ((s, c), &r) in sum.iter_mut().zip(&count).zip(&recomputed) {
        let back = match c.get(Op::Backward.index()).is_some_and(|&n| n > 0) {
            true => Op::Backward,
            false => Op::Input,
        };
        if let Some(t) = s.get_mut(back.index()) {
            *t += r;
        }
    }
    let means: Vec<[f64; 4]> = sum
        .iter()
        .zip(&count)
        .map(|(s, c)| {
            std::array::from_fn(|i| match (s.get(i), c.get(i)) {
                (Some(&s), Some(&c)) if c > 0 => s / f64::from(c),
                _ => 0.0,
            })
        })
        .collect();
    let longest = means.iter().flatten().copied().fold(0.0f64, f64::max);
    if !(longest.is_finite() && longest > 0.0) {
        return None;
    }
    let tick = longest / 100_000.0;
    let in_ticks = |t: f64| (t / tick).round().max(0.0) as u64;
    let hops = hop_sum
        .iter()
        .zip(&hop_count)
        .map(|(&s, &c)| if c > 0 { in_ticks(s / f64::from(c)) } else { 0 })
        .collect();
    Some((means.iter().map(|m| m.map(in_ticks)).collect(), hops))
}

/// Whether every stage's times are the units' (a forward `q`, a backward `2q`, each half `q`):
/// the runs `derive` made already, but for the two tighter spacings timed runs add, which
/// are not made for them.
fn in_units(ticks: &[StageTicks], split: bool) -> bool {
    let Some(q) = ticks.first().map(|t| t[0]) else {
        return true;
    };
    ticks.iter().all(|&[f, b, i, w]| {
        f == q
            && match split {
                true => i == q && w == q,
                false => Some(b) == q.checked_mul(2),
            }
    })
}
