//! An order for a plain wavefront (forwards and whole backwards, every region Sharded) on any
//! placement: 1F1B's priorities, list-scheduled. A schedule's slots assume its own placement
//! (interleaved 1F1B: chunk `c` of rank `r` is stage `c·P + r`); under another (the V fold, an
//! explicit one) they can deadlock. Here each rank, whenever it is free, runs the oldest
//! microbatch's backward that is ready, else the oldest microbatch's forward that is ready —
//! while it holds fewer than `(v + 1)·P − 1` stages' activations (interleaved 1F1B's peak on its
//! first rank with rounds of `P`; tighter targets idle the V's turn, looser ones gain nothing on
//! the samples tried; the forced forward below may pass it) —
//! with forwards taking one unit of time and backwards two. The per-rank orders are read off
//! that one run, so they are a projection of one topological order of the dependencies:
//! deadlock-free for any costs. When every rank waits on the activation bound with nothing
//! running, the oldest ready forward runs anyway, so the run always ends.

use crate::algebra::plan::Plan;
use crate::vocab::layout::Layout;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Time a forward and a backward take in the run the order is read from.
const FORWARD: u64 = 1;
const BACKWARD: u64 = 2;

/// An action of the run: `(backward, stage, microbatch)`.
type Act = (bool, usize, usize);
/// A rank's ready backwards, oldest microbatch first, the deeper stage first among its.
type Backwards = BinaryHeap<Reverse<(usize, Reverse<usize>)>>;
/// A rank's ready forwards, oldest microbatch first.
type Forwards = BinaryHeap<Reverse<(usize, usize)>>;
/// The actions under way, soonest end first: `(end, rank, backward, stage, microbatch)`.
type Running = BinaryHeap<Reverse<(u64, usize, bool, usize, usize)>>;

/// Each rank's order in action notation (`4F0`, `4B0`), or `None` where this does not apply: a
/// Replicated region, a bidirectional schedule's mirror (its microbatches do not run the one
/// chain of stages this schedules), a placement that leaves a stage without a rank, no stages.
pub(crate) fn orders(plan: &Plan) -> Option<Vec<Vec<String>>> {
    if plan
        .regions
        .iter()
        .any(|r| r.layout() != Layout::Sharded || r.mirror_of.is_some())
    {
        return None;
    }
    let ranks = plan.ranks;
    let stages = plan.regions.len().checked_mul(ranks)?;
    let m = plan.microbatches;
    let rank_of = plan.placement.ranks_of_stages();
    if stages == 0 || m == 0 || rank_of.len() != stages || rank_of.iter().any(|&r| r >= ranks) {
        return None;
    }
    let total = stages.checked_mul(m)?.checked_mul(2)?;
    let id = |(backward, s, mb): Act| (usize::from(backward) * stages + s) * m + mb;
    // Inputs still missing: a forward waits for the stage before; the last stage's backward for
    // its forward; any other backward for its forward and the backward of the stage after.
    let mut missing = vec![0u8; total];
    for s in 0..stages {
        for mb in 0..m {
            if let Some(slot) = missing.get_mut(id((false, s, mb))) {
                *slot = u8::from(s > 0);
            }
            if let Some(slot) = missing.get_mut(id((true, s, mb))) {
                *slot = if s + 1 == stages { 1 } else { 2 };
            }
        }
    }
    // Per rank, the ready backwards and forwards, oldest microbatch first.
    let mut backwards: Vec<Backwards> = vec![BinaryHeap::new(); ranks];
    let mut forwards: Vec<Forwards> = vec![BinaryHeap::new(); ranks];
    for mb in 0..m {
        forwards.get_mut(*rank_of.first()?)?.push(Reverse((mb, 0)));
    }
    // Interleaved 1F1B's peak on its first rank with rounds of `P`: `(v − 1)·P + 2(P − 1) + 1`.
    let bound = (plan.regions.len() + 1) * ranks - 1;
    let mut held = vec![0usize; ranks];
    let mut free = vec![true; ranks];
    let mut out: Vec<Vec<String>> = vec![Vec::new(); ranks];
    let mut running: Running = BinaryHeap::new();
    let mut now = 0u64;
    let mut done = 0usize;
    // Each pass starts or finishes an action, or forces one: a bounded loop.
    for _ in 0..total.saturating_mul(3).saturating_add(ranks) {
        if done == total {
            return Some(out);
        }
        let mut started = false;
        for r in 0..ranks {
            if !free.get(r).copied().unwrap_or(false) {
                continue;
            }
            let pick = pick(r, &mut backwards, &mut forwards, &held, bound, false);
            if let Some(act) = pick {
                start(act, r, now, &mut running, &mut free, &mut held, &mut out);
                started = true;
            }
        }
        if started {
            continue;
        }
        let Some(Reverse((end, r, backward, s, mb))) = running.pop() else {
            // Nothing runs and nothing may start under the bound: the oldest ready forward runs.
            let r = (0..ranks)
                .filter(|&r| free.get(r).copied().unwrap_or(false))
                .filter_map(|r| forwards.get(r)?.peek().map(|Reverse(k)| (*k, r)))
                .min()?
                .1;
            let act = pick(r, &mut backwards, &mut forwards, &held, bound, true)?;
            start(act, r, now, &mut running, &mut free, &mut held, &mut out);
            continue;
        };
        now = end;
        // Everything that ends now ends before any rank picks again (a backward readied at this
        // instant goes before a forward).
        let mut ended = vec![(r, backward, s, mb)];
        while let Some(Reverse((e, ..))) = running.peek()
            && *e == now
        {
            let Some(Reverse((_, r, backward, s, mb))) = running.pop() else {
                break;
            };
            ended.push((r, backward, s, mb));
        }
        let mut ready = |act: Act| -> Option<()> {
            let slot = missing.get_mut(id(act))?;
            *slot = slot.saturating_sub(1);
            if *slot == 0 {
                let (backward, s, mb) = act;
                let on = *rank_of.get(s)?;
                if backward {
                    backwards.get_mut(on)?.push(Reverse((mb, Reverse(s))));
                } else {
                    forwards.get_mut(on)?.push(Reverse((mb, s)));
                }
            }
            Some(())
        };
        for (r, backward, s, mb) in ended {
            *free.get_mut(r)? = true;
            done += 1;
            if backward {
                *held.get_mut(r)? = held.get(r)?.saturating_sub(1);
                if s > 0 {
                    ready((true, s - 1, mb))?;
                }
            } else {
                if s + 1 < stages {
                    ready((false, s + 1, mb))?;
                }
                ready((true, s, mb))?;
            }
        }
    }
    None
}

/// What rank `r` runs next: its oldest ready backward, else (under the activation bound, or
/// `forced`) its oldest ready forward.
fn pick(
    r: usize,
    backwards: &mut [Backwards],
    forwards: &mut [Forwards],
    held: &[usize],
    bound: usize,
    forced: bool,
) -> Option<Act> {
    if let Some(Reverse((mb, Reverse(s)))) = backwards.get_mut(r)?.pop() {
        return Some((true, s, mb));
    }
    if forced || held.get(r).copied().unwrap_or(0) < bound {
        let Reverse((mb, s)) = forwards.get_mut(r)?.pop()?;
        return Some((false, s, mb));
    }
    None
}

/// Starts `act` on rank `r` at `now`.
fn start(
    (backward, s, mb): Act,
    r: usize,
    now: u64,
    running: &mut Running,
    free: &mut [bool],
    held: &mut [usize],
    out: &mut [Vec<String>],
) {
    let cost = if backward { BACKWARD } else { FORWARD };
    running.push(Reverse((now + cost, r, backward, s, mb)));
    if let Some(f) = free.get_mut(r) {
        *f = false;
    }
    if !backward && let Some(h) = held.get_mut(r) {
        *h += 1;
    }
    if let Some(order) = out.get_mut(r) {
        order.push(format!("{s}{}{mb}", if backward { "B" } else { "F" }));
    }
}
