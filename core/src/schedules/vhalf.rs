//! V-Half (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, §4) as the
//! zero-bubble project's `zbv_greedy.py` builds it: two chunks per rank on a V (rank `r` holds
//! stages `r` and `2P − 1 − r`), the backward split into `I` and `W`, about half of 1F1B's
//! activation memory. This file also holds the building-block method V-Min shares.
//!
//! **The building block.** Every microbatch repeats one block with a period of six slots: rank
//! `r` runs its chunk-0 forward, chunk-1 forward, chunk-1 input half and chunk-0 input half at
//! fixed offsets (V-Half: `2r`, `3P − r − 2`, `3P + g + 2r − 1`, `6P + g − r − 2` with `g = 3`
//! for even `P`, else 0; V-Min: `r`, `2P − r − 1`, `2P + g + r`, `4P + g − r − 1` with `g = 2`
//! when `3 | P`), microbatch `m` at `+ 6m`. The block's lifespans set the memory.
//!
//! **From block to order** (`zbv_greedy.py`'s `schedule_from_pattern`): weight halves fill each
//! rank's free slots, oldest first ("put W"); then twice a greedy pass visits every op in time
//! order and moves it to the earliest free slot its dependencies allow whose memory stays within
//! the block's peak — the first pass with the weight halves placed (moving them too), the second
//! without (they refill the gaps) and leaving the steady state, from the first rank's first
//! chunk-0 input half to the last chunk-0 forward, as it is; each pass ends by running the
//! placement eagerly at unit times ("squeeze"). Last, the weight halves are put once more, of
//! chunk 1 before chunk 0, and each rank's order is its ops by slot.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::zbv::two_chunks;
use crate::schedules::{RunCtx, Schedule, ScheduleRule};
use crate::vocab::layout::{Layout, PlacementKind};
use crate::vocab::phase::OpSet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `vhalf`.
#[derive(Debug)]
pub struct VHalf;

pub const VHALF: Skeleton = Skeleton::of(&VHalf);

impl Schedule for VHalf {
    fn name(&self) -> &'static str {
        "vhalf"
    }

    fn summary(&self) -> &'static str {
        "V-Half: zero bubble's V with about half of 1F1B's activation memory (controllable-memory building block)"
    }

    fn reference(&self) -> &'static str {
        "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), zero-bubble `zbv_greedy.py`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        two_chunks(
            "vhalf-chunks",
            "vhalf",
            ctx,
            "the two arms of the V its building block is written for",
        )?;
        check_size("vhalf-size", "vhalf", ctx)
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        self.slots(ctx).into_iter().nth(position).unwrap_or_default()
    }

    fn slots(&self, ctx: &RunCtx) -> Vec<Vec<Slot>> {
        from_block(&Block::Half, ctx.ranks, ctx.microbatches)
    }
}

/// The most `P·(P + M)` the greedy passes are run for: each visits every op and re-reads a rank's
/// slots for a move (P = 64 and M = 512 take about 1.3 s; this bound about four times that).
pub(crate) const MOST_BLOCK_SIZE: usize = 1 << 17;

/// The size rule of the building-block schedules: `P·(P + M)` within [`MOST_BLOCK_SIZE`].
pub(crate) fn check_size(
    rule: &'static str,
    skeleton: &'static str,
    ctx: &RunCtx,
) -> Result<(), ScheduleRule> {
    let value = ctx
        .ranks
        .saturating_mul(ctx.ranks.saturating_add(ctx.microbatches));
    if value > MOST_BLOCK_SIZE {
        return Err(ScheduleRule::Size {
            rule,
            skeleton,
            grows: "orders the whole pipeline in greedy passes whose work grows with P·(P + M)",
            measure: "P·(P + M)",
            value,
            max: MOST_BLOCK_SIZE,
        });
    }
    Ok(())
}

/// One of the paper's building blocks.
pub(crate) enum Block {
    /// V-Half: lifespans of about `3P` slots, half of 1F1B's memory.
    Half,
    /// V-Min: lifespans of about `2P` slots, a third of 1F1B's memory.
    Min,
}

/// The ops of one microbatch on one rank, in the order the block lists them: the forward of
/// chunk 0 and of chunk 1, the input half of chunk 1 and of chunk 0; then the weight halves
/// (one list of either chunk in a pass, or of chunk 1 and of chunk 0 at the end).
const BLOCK_OPS: usize = 4;

/// A rank's ops, as the slot of each: `times[kind][mb]`.
type Times = Vec<Vec<usize>>;

impl Block {
    /// The block's offsets on rank `r` of `p`.
    fn offsets(&self, p: usize, r: usize) -> [usize; BLOCK_OPS] {
        match self {
            Block::Half => {
                let g = if p.is_multiple_of(2) { 3 } else { 0 };
                [2 * r, 3 * p - r - 2, 3 * p + g + 2 * r - 1, 6 * p + g - r - 2]
            }
            Block::Min => {
                let g = if p.is_multiple_of(3) { 2 } else { 0 };
                [r, 2 * p - r - 1, 2 * p + g + r, 4 * p + g - r - 1]
            }
        }
    }
}

/// Every rank's slots for `P` ranks and `M` microbatches from `block` (empty where the method
/// finds no order, which the grid of the tests never meets).
pub(crate) fn from_block(block: &Block, p: usize, m: usize) -> Vec<Vec<Slot>> {
    if p == 0 || m == 0 {
        return vec![Vec::new(); p];
    }
    let start: Vec<Times> = (0..p)
        .map(|r| {
            block
                .offsets(p, r)
                .iter()
                .map(|&x| (0..m).map(|k| x + 6 * k).collect())
                .collect()
        })
        .collect();
    let order = reorder(start, true)
        .map(without_weights)
        .and_then(|r1| reorder(r1, false))
        .map(|r2| {
            let mut r2 = without_weights(r2);
            for rank in &mut r2 {
                put_weights(rank, true);
            }
            r2
        })
        .and_then(|r2| eager(&r2).map(|(_, order)| order));
    let Some(order) = order else {
        return vec![Vec::new(); p];
    };
    order
        .into_iter()
        .map(|ops| {
            ops.into_iter()
                .map(|(kind, mb)| match kind {
                    0 => Slot::forward(0, mb),
                    1 => Slot::forward(1, mb),
                    2 => Slot::input(1, mb),
                    3 => Slot::input(0, mb),
                    4 => Slot::weight(1, mb),
                    _ => Slot::weight(0, mb),
                })
                .collect()
        })
        .collect()
}

fn without_weights(times: Vec<Times>) -> Vec<Times> {
    times
        .into_iter()
        .map(|mut rank| {
            rank.truncate(BLOCK_OPS);
            rank
        })
        .collect()
}

/// The latest slot any op of `times` takes.
fn last_slot(times: &[Vec<usize>]) -> usize {
    times
        .iter()
        .filter_map(|t| t.last())
        .copied()
        .max()
        .unwrap_or(0)
}

/// The op of `times` a rank runs next (the earliest slot; ties to the lower kind), as
/// (slot, kind), given how many of each kind ran (`next`); `None` when all ran.
fn next_op(times: &[Vec<usize>], next: &[usize], kinds: usize) -> Option<(usize, usize)> {
    (0..kinds)
        .filter_map(|k| {
            let at = *times.get(k)?.get(*next.get(k)?)?;
            Some((at, k))
        })
        .min()
}

/// Places the weight halves of a rank's four block lists into its free slots, oldest first
/// (`split`: of chunk 1 before chunk 0, in two lists; else one list of either chunk), the rest
/// after its last slot.
fn put_weights(rank: &mut Times, split: bool) {
    let bound = last_slot(rank);
    let lists = if split { 2 } else { 1 };
    rank.extend(std::iter::repeat_n(Vec::new(), lists));
    // Input halves whose weight half is not placed yet: of chunk 1 and of chunk 0 (split), or
    // of either in the first.
    let (mut pending_1, mut pending_0) = (0usize, 0usize);
    let mut next = [0usize; BLOCK_OPS];
    let place = |rank: &mut Times, list: usize, slot: usize| {
        if let Some(l) = rank.get_mut(BLOCK_OPS + list) {
            l.push(slot);
        }
    };
    for slot in 0..=bound {
        match next_op(rank, &next, BLOCK_OPS) {
            Some((at, kind)) if at == slot => {
                if let Some(n) = next.get_mut(kind) {
                    *n += 1;
                }
                match kind {
                    3 if split => pending_0 += 1,
                    2 | 3 => pending_1 += 1,
                    _ => {}
                }
            }
            _ if pending_1 > 0 => {
                pending_1 -= 1;
                place(rank, 0, slot);
            }
            _ if pending_0 > 0 => {
                pending_0 -= 1;
                place(rank, 1, slot);
            }
            _ => {}
        }
    }
    let mut slot = bound;
    for (list, pending) in [(0, pending_1), (1, pending_0)] {
        for _ in 0..pending {
            slot += 1;
            place(rank, list, slot);
        }
    }
}

/// The most chunk stages' activations a rank holds at once (a forward adds one, a weight half
/// frees one; without weight lists, each free slot runs a pending weight half).
fn peak_memory(rank: &[Vec<usize>]) -> i64 {
    let has_weights = rank.len() > BLOCK_OPS;
    let kinds = rank.len().min(BLOCK_OPS + 1);
    let mut next = vec![0usize; kinds];
    let (mut held, mut peak, mut pending) = (0i64, 0i64, 0usize);
    for slot in 0..=last_slot(rank) {
        match next_op(rank, &next, kinds) {
            Some((at, kind)) if at == slot => {
                if let Some(n) = next.get_mut(kind) {
                    *n += 1;
                }
                match kind {
                    0 | 1 => held += 1,
                    2 | 3 => pending += 1,
                    _ => held -= 1,
                }
            }
            _ if !has_weights && pending > 0 => {
                held -= 1;
                pending -= 1;
            }
            _ => {}
        }
        peak = peak.max(held);
    }
    peak
}

/// The pipeline's ops in `zbv_greedy.py`'s visiting order — the earliest slot, ties to the lower
/// rank, then kind — as (slot, rank, kind, mb): a heap of each (rank, kind)'s next op, whose slot
/// is read when the one before it is visited (a pass moves only the op it visits).
struct Visit {
    heap: BinaryHeap<Reverse<(usize, usize, usize, usize)>>,
}

impl Visit {
    fn new(times: &[Times]) -> Visit {
        let heap = times
            .iter()
            .enumerate()
            .flat_map(|(r, rank)| {
                rank.iter()
                    .enumerate()
                    .filter_map(move |(k, list)| Some(Reverse((*list.first()?, r, k, 0))))
            })
            .collect();
        Visit { heap }
    }

    fn next(&mut self, times: &[Times]) -> Option<(usize, usize, usize, usize)> {
        let Reverse(op @ (_, rank, kind, mb)) = self.heap.pop()?;
        if let Some(slot) = at(times, rank, kind, mb + 1) {
            self.heap.push(Reverse((slot, rank, kind, mb + 1)));
        }
        Some(op)
    }
}

/// The slot `times[rank][kind][mb]`.
fn at(times: &[Times], rank: usize, kind: usize, mb: usize) -> Option<usize> {
    times.get(rank)?.get(kind)?.get(mb).copied()
}

/// One greedy pass (`reorder`): every op, in the pipeline's visiting order, to the earliest free
/// slot after its dependencies where the rank's memory stays within the pass's starting peak;
/// then squeezed. `with_weights`: the weight halves are placed first and moved too, and the ops
/// before the steady state move; else the weight halves refill the free slots.
fn reorder(mut times: Vec<Times>, with_weights: bool) -> Option<Vec<Times>> {
    if with_weights {
        for rank in &mut times {
            put_weights(rank, false);
        }
    }
    let p = times.len();
    let limit = times.iter().map(|r| peak_memory(r)).max().unwrap_or(0);
    let mut occupied: Vec<Vec<bool>> = times
        .iter()
        .map(|r| vec![false; r.last().and_then(|l| l.last()).map_or(0, |&t| t + 1)])
        .collect();
    let forwards = times.first().and_then(|r| r.first()).map_or(0, Vec::len);
    let mut visit = Visit::new(&times);
    // 0: before the steady state; 1: in it (nothing moves); 2: after it.
    let mut phase = 0;
    while let Some((slot, rank, kind, mb)) = visit.next(&times) {
        if kind == 3 && rank == 0 && phase == 0 {
            phase = 1;
        }
        let stays = phase == 1 || (phase == 0 && !with_weights);
        if phase == 1 && kind == 0 && mb + 1 == forwards {
            phase = 2;
        }
        if !stays {
            let earliest = earliest_slot(&times, rank, kind, mb, p)?;
            if earliest > slot {
                return None;
            }
            let mut moved = slot;
            for candidate in earliest..slot {
                if occupied.get(rank)?.get(candidate) == Some(&false) {
                    *times.get_mut(rank)?.get_mut(kind)?.get_mut(mb)? = candidate;
                    if peak_memory(times.get(rank)?) <= limit {
                        moved = candidate;
                        break;
                    }
                }
            }
            *times.get_mut(rank)?.get_mut(kind)?.get_mut(mb)? = moved;
        }
        let placed = at(&times, rank, kind, mb)?;
        if let Some(o) = occupied.get_mut(rank).and_then(|o| o.get_mut(placed)) {
            *o = true;
        }
    }
    if !with_weights {
        for rank in &mut times {
            put_weights(rank, false);
        }
    }
    eager(&times).map(|(starts, _)| starts)
}

/// The first slot an op may take after its [`inputs`] (in slot units); a weight half after the
/// `mb`-th input half of either chunk.
fn earliest_slot(times: &[Times], rank: usize, kind: usize, mb: usize, p: usize) -> Option<usize> {
    let mut after: Option<usize> = None;
    let mut dep = |t: Option<usize>| -> Option<()> {
        after = after.max(Some(t?));
        Some(())
    };
    for (r, k, m) in inputs(rank, kind, mb, p) {
        dep(at(times, r, k, m))?;
    }
    if kind == BLOCK_OPS {
        let r = times.get(rank)?;
        let mut inputs: Vec<usize> = r.get(2)?.iter().chain(r.get(3)?).copied().collect();
        inputs.sort_unstable();
        dep(inputs.get(mb).copied())?;
    }
    Some(after.map_or(0, |t| t + 1))
}

/// What an op waits for, as (rank, kind, mb): the same op on the rank before it along the V
/// (forward of chunk 0 and input half of chunk 1 flow to higher ranks, the others to lower
/// ones), the op before it in its microbatch, the same kind's previous microbatch.
fn inputs(
    rank: usize,
    kind: usize,
    mb: usize,
    p: usize,
) -> impl Iterator<Item = (usize, usize, usize)> {
    let along = match kind {
        0 | 2 => rank.checked_sub(1),
        1 | 3 => Some(rank + 1).filter(|&r| r < p),
        _ => None,
    };
    [
        along.map(|r| (r, kind, mb)),
        (1..BLOCK_OPS)
            .contains(&kind)
            .then(|| (rank, kind - 1, mb)),
        mb.checked_sub(1).map(|m| (rank, kind, m)),
    ]
    .into_iter()
    .flatten()
}

/// Runs the placement at unit times with free links, each rank in its slot order (`squeeze`):
/// every op's start slot, and each rank's ops in the order run, as (kind, mb).
#[allow(clippy::type_complexity)] // (start slots, per-rank orders) of one eager run
fn eager(times: &[Times]) -> Option<(Vec<Times>, Vec<Vec<(usize, usize)>>)> {
    let p = times.len();
    let mut end: Vec<Vec<Vec<Option<usize>>>> = times
        .iter()
        .map(|r| r.iter().map(|l| vec![None; l.len()]).collect())
        .collect();
    let mut order: Vec<Vec<(usize, usize)>> = vec![Vec::new(); p];
    let mut visit = Visit::new(times);
    let done = |end: &[Vec<Vec<Option<usize>>>], r: usize, k: usize, m: usize| {
        end.get(r)?.get(k)?.get(m).copied().flatten()
    };
    while let Some((_, rank, kind, mb)) = visit.next(times) {
        let mut ready = 0;
        for (r, k, m) in inputs(rank, kind, mb, p) {
            ready = ready.max(done(&end, r, k, m)?);
        }
        if let Some(&(k, m)) = order.get(rank)?.last() {
            ready = ready.max(done(&end, rank, k, m)?);
        }
        *end.get_mut(rank)?.get_mut(kind)?.get_mut(mb)? = Some(ready + 1);
        order.get_mut(rank)?.push((kind, mb));
    }
    let starts = end
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|l| l.into_iter().map(|e| e.map_or(0, |e| e - 1)).collect())
                .collect()
        })
        .collect();
    Some((starts, order))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn weights_fill_free_slots_oldest_first() {
        // Forwards at 0 and 1, input halves at 2 and 4: the first free slot (3) runs a weight.
        let mut rank: Times = vec![vec![0], vec![1], vec![2], vec![4]];
        put_weights(&mut rank, true);
        assert_eq!(rank[4], [3]);
        assert_eq!(rank[5], [5]);
        // Held: 1, 2, 2, 1 (W), 1, 0.
        assert_eq!(peak_memory(&rank), 2);
    }

    #[test]
    fn every_op_once() {
        for block in [Block::Half, Block::Min] {
            for p in 2..=6 {
                for m in 1..=2 * p {
                    let all = from_block(&block, p, m);
                    assert_eq!(all.len(), p);
                    for rank in &all {
                        // Each of the six ops of each microbatch exactly once.
                        let mut seen: Vec<String> = rank
                            .iter()
                            .map(|s| format!("{}{}{}", s.chunk, s.phase.code(), s.mb))
                            .collect();
                        seen.sort();
                        let mut want: Vec<String> = (0..m)
                            .flat_map(|mb| {
                                ["0F", "1F", "0I", "1I", "0W", "1W"].map(|op| format!("{op}{mb}"))
                            })
                            .collect();
                        want.sort();
                        assert_eq!(seen, want, "P = {p}, M = {m}: {}", show(rank));
                    }
                }
            }
        }
    }
}
