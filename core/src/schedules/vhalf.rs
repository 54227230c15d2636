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
use crate::schedules::{Formula, RunCtx, Schedule, ScheduleRule, Uniform};
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

    fn listed_bound(&self, ctx: &RunCtx) -> Option<(&'static str, usize)> {
        Block::Half.listed_bound(ctx)
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

    /// [`Block::formula`] of V-Half's block.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        self.check(ctx).ok()?;
        Block::Half.formula(ctx, costs)
    }
}

/// The most `P·(P + M)` the greedy passes are run for: each visits every op, and the second
/// (and the first, while two of a rank's ops share a slot) recounts a rank's memory for each
/// move it tries (P = 64 and M = 1984, at the bound, take about 1.2 s).
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
    /// The step and activation memory of the order this method builds from the block, in the
    /// paper's setting (`t_F = t_I = t_W = t` of one chunk's stage, free links): each rank works
    /// `6M·t` and the step idles `(3P − 4 − g)·t` (V-Half) or `(4P − 5 − g)·t` (V-Min) on top,
    /// `g` the block's gap; a rank holds at most the paper's `⌊(P + 2)/2⌋` (V-Half) or
    /// `⌊(P + 4)/3⌋` (V-Min) microbatches of its two stages, `2×` as many of one chunk's stage,
    /// whatever share of them the input half frees. The paper states the memory and the bubble
    /// rate (about `P/2M`, `2P/3M`); the step's closed form is the one the construction (the
    /// authors' greedy passes) gives — found from the simulated orders, which the tests hold it
    /// to for every `P` of 3 to 12 and `M` from `P + 2` (V-Half) or `P + 1` (V-Min) to `3P`;
    /// with fewer microbatches, or two ranks, the passes' squeeze leaves another step.
    pub(crate) fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        let (p, m) = (ctx.ranks, ctx.microbatches);
        let peak = self.held_stages(p);
        let (least, idle) = match self {
            Block::Half => {
                let g = if p.is_multiple_of(2) { 3 } else { 0 };
                (p + 2, (3 * p).checked_sub(4 + g)?)
            }
            Block::Min => {
                let g = if p.is_multiple_of(3) { 2 } else { 0 };
                (p + 1, (4 * p).checked_sub(5 + g)?)
            }
        };
        if ctx.chunks != 2 || p < 3 || m < least || !costs.backward_is(2.0) {
            return None;
        }
        let t = costs.forward_s;
        let (work, idle) = (6.0 * m as f64, idle as f64);
        let (step, bubble, memory) = match self {
            Block::Half => (
                "6M·t + (3P − 4 − g)·t, g = 3 for even P (else 0), t = t_F = t_I = t_W of one chunk's stage, P ≥ 3, M ≥ P + 2",
                "(3P − 4 − g)/(6M + 3P − 4 − g)",
                "2⌊(P + 2)/2⌋·A, A of one chunk's stage (the paper's ⌊(P + 2)/2⌋ microbatches of a rank)",
            ),
            Block::Min => (
                "6M·t + (4P − 5 − g)·t, g = 2 where 3 | P (else 0), t = t_F = t_I = t_W of one chunk's stage, P ≥ 3, M ≥ P + 1",
                "(4P − 5 − g)/(6M + 4P − 5 − g)",
                "2⌊(P + 4)/3⌋·A, A of one chunk's stage (the paper's ⌊(P + 4)/3⌋ microbatches of a rank)",
            ),
        };
        Some(Formula {
            step,
            step_s: (work + idle) * t,
            bubble,
            bubble_fraction: idle / (work + idle),
            memory: Some(memory),
            peak_activations: Some(peak as f64),
        })
    }

    /// The stages' activations a rank holds at most over `p` ranks (one chunk's stage each): the
    /// paper's `⌊(P + 2)/2⌋` (V-Half) or `⌊(P + 4)/3⌋` (V-Min) microbatches of its two stages.
    pub(crate) fn held_stages(&self, p: usize) -> usize {
        match self {
            Block::Half => 2 * ((p + 2) / 2),
            Block::Min => 2 * ((p + 4) / 3),
        }
    }

    /// [`Schedule::listed_bound`] of the block's schedule.
    pub(crate) fn listed_bound(&self, ctx: &RunCtx) -> Option<(&'static str, usize)> {
        let words = match self {
            Block::Half => "V-Half's 2⌊(P + 2)/2⌋",
            Block::Min => "V-Min's 2⌊(P + 4)/3⌋",
        };
        Some((words, self.held_stages(ctx.ranks)))
    }

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
    from_block_with(block, p, m, Peaks::Tracked)
}

/// [`from_block`], its passes asking memory as `peaks` says.
fn from_block_with(block: &Block, p: usize, m: usize, peaks: Peaks) -> Vec<Vec<Slot>> {
    // (Beyond what [`Visit`] numbers and [`Queued`] counts, which the size rule keeps far off.)
    if p == 0 || m == 0 || p >= 1 << 24 || m as u64 >= 1 << 26 {
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
    let order = reorder_with(start, true, peaks)
        .map(without_weights)
        .and_then(|r1| reorder_with(r1, false, peaks))
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
/// frees one; without weight lists, each free slot runs a pending weight half): the count
/// [`peak_memory_by_slot`] defines, op by op rather than slot by slot — a run of free slots
/// frees what is pending at once (freeing cannot raise the peak), and once the next op's slot
/// has passed (two ops in one slot, which the slot-by-slot count runs only the first of) or lies
/// past the last list's end, no op runs again.
fn peak_memory(rank: &[Vec<usize>]) -> i64 {
    let has_weights = rank.len() > BLOCK_OPS;
    let last = last_slot(rank);
    // Each kind's list and its next op's slot (`usize::MAX` once it has run them all): the
    // earliest, ties to the lower kind, runs next, as `next_op` picks.
    let mut next = [0usize; BLOCK_OPS + 1];
    let mut head = [usize::MAX; BLOCK_OPS + 1];
    for (h, list) in head.iter_mut().zip(rank) {
        *h = list.first().copied().unwrap_or(usize::MAX);
    }
    let (mut held, mut peak, mut pending) = (0i64, 0i64, 0usize);
    let mut slot = 0;
    loop {
        let (mut at, mut kind) = (usize::MAX, 0);
        for (k, &h) in head.iter().enumerate() {
            if h < at {
                (at, kind) = (h, k);
            }
        }
        if at == usize::MAX || at < slot || at > last {
            break;
        }
        if !has_weights {
            // The free slots before it each run a pending weight half.
            let freed = (at - slot).min(pending);
            pending -= freed;
            held -= freed as i64;
        }
        if let (Some(n), Some(h)) = (next.get_mut(kind), head.get_mut(kind)) {
            *n += 1;
            *h = rank
                .get(kind)
                .and_then(|l| l.get(*n))
                .copied()
                .unwrap_or(usize::MAX);
        }
        match kind {
            2 | 3 if !has_weights => pending += 1,
            _ => held += held_delta(kind),
        }
        peak = peak.max(held);
        slot = at + 1;
    }
    peak
}

/// [`peak_memory`] as the zero-bubble project counts it, slot by slot (the definition the tests
/// hold the op-by-op count to).
#[cfg(test)]
fn peak_memory_by_slot(rank: &[Vec<usize>]) -> i64 {
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
/// rank, then kind — as (slot, rank, kind, mb), each (rank, kind)'s next op read when the one
/// before it is visited (a pass moves only the op it visits, so the ops not yet visited keep the
/// slots they started with). Each op is one number that orders as the tuple does
/// ([`Visit::key`]: ranks below `2^24`, kinds below `2^8` and microbatches below `2^32`, which
/// the size rule keeps far within).
enum Visit {
    /// Every list in slot order (as the passes keep them): the merge of the lists is all ops
    /// sorted at once — by slot, counting, and within a slot in the order listed (rank, kind,
    /// mb).
    Sorted { keys: Vec<u128>, next: usize },
    /// Some list out of order: a heap of each list's next op.
    Merged(BinaryHeap<Reverse<u128>>),
}

impl Visit {
    fn new(times: &[Times]) -> Visit {
        let lists = || each_list(times);
        if !lists().all(|(_, _, list)| list.is_sorted()) {
            return Visit::merged(times);
        }
        let slots = lists()
            .filter_map(|(_, _, list)| list.last())
            .max()
            .map_or(0, |&t| t + 1);
        // Where each slot's ops begin in the sorted list.
        let mut begin = vec![0usize; slots + 1];
        for &t in lists().flat_map(|(_, _, list)| list) {
            if let Some(c) = begin.get_mut(t + 1) {
                *c += 1;
            }
        }
        for i in 1..begin.len() {
            let before = begin.get(i - 1).copied().unwrap_or(0);
            if let Some(c) = begin.get_mut(i) {
                *c += before;
            }
        }
        let mut keys = vec![0u128; begin.last().copied().unwrap_or(0)];
        for (r, k, list) in lists() {
            for (mb, &t) in list.iter().enumerate() {
                if let Some(at) = begin.get_mut(t)
                    && let Some(key) = keys.get_mut(*at)
                {
                    *key = Visit::key(t, r, k, mb);
                    *at += 1;
                }
            }
        }
        Visit::Sorted { keys, next: 0 }
    }

    /// The lists merged as they come (a heap of each list's next op).
    fn merged(times: &[Times]) -> Visit {
        let heap = each_list(times)
            .filter_map(|(r, k, list)| Some(Reverse(Visit::key(*list.first()?, r, k, 0))))
            .collect();
        Visit::Merged(heap)
    }

    /// (slot, rank, kind, mb) as one number.
    fn key(slot: usize, rank: usize, kind: usize, mb: usize) -> u128 {
        ((slot as u128) << 64) | ((rank as u128) << 40) | ((kind as u128) << 32) | mb as u128
    }

    fn next(&mut self, times: &[Times]) -> Option<(usize, usize, usize, usize)> {
        let key = match self {
            Visit::Sorted { keys, next } => {
                let key = *keys.get(*next)?;
                *next += 1;
                key
            }
            Visit::Merged(heap) => {
                let mut top = heap.peek_mut()?;
                let key = top.0;
                let (_, rank, kind, mb) = Visit::op(key);
                // Its list's next op takes its place (sifted down once), or it leaves.
                match at(times, rank, kind, mb + 1) {
                    Some(next) => *top = Reverse(Visit::key(next, rank, kind, mb + 1)),
                    None => {
                        std::collections::binary_heap::PeekMut::pop(top);
                    }
                }
                key
            }
        };
        Some(Visit::op(key))
    }

    /// [`Visit::key`]'s op.
    fn op(key: u128) -> (usize, usize, usize, usize) {
        (
            (key >> 64) as usize,
            ((key >> 40) & 0xff_ffff) as usize,
            ((key >> 32) & 0xff) as usize,
            (key & 0xffff_ffff) as usize,
        )
    }
}

/// Every rank's every list, as (rank, kind, its slots).
fn each_list(times: &[Times]) -> impl Iterator<Item = (usize, usize, &Vec<usize>)> {
    times
        .iter()
        .enumerate()
        .flat_map(|(r, rank)| rank.iter().enumerate().map(move |(k, list)| (r, k, list)))
}

/// The slot `times[rank][kind][mb]`.
fn at(times: &[Times], rank: usize, kind: usize, mb: usize) -> Option<usize> {
    times.get(rank)?.get(kind)?.get(mb).copied()
}

/// How a pass asks whether a move keeps a rank within the memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peaks {
    /// From [`Held`], updated as ops move, wherever [`peak_memory`]'s count is a running sum
    /// (the weight halves placed, no two ops in one slot): a few steps a move.
    Tracked,
    /// [`peak_memory`] over the whole rank for every candidate slot (the definition; the
    /// tests hold the tracked passes to it).
    #[cfg(test)]
    Recounted,
}

/// A rank's held activations at each slot — the running sum of its forwards' `+1` and its
/// weight halves' `−1` — under moves, with their largest at hand: a segment tree whose nodes
/// keep their subtree's largest plus what was added to the whole of it.
struct Held {
    /// Leaves: the tree's width (a power of two).
    width: usize,
    /// Of each node, what was added to its whole range.
    add: Vec<i64>,
    /// Of each node, the largest in its range, its own add included.
    top: Vec<i64>,
}

impl Held {
    /// The running sums of `rank`'s ops (each in its own slot) over `slots` slots.
    fn new(rank: &[Vec<usize>], slots: usize) -> Held {
        let width = slots.max(1).next_power_of_two();
        let mut step = vec![0i64; width + 1];
        for (kind, list) in rank.iter().enumerate().take(BLOCK_OPS + 1) {
            let delta = held_delta(kind);
            for &at in list {
                if let Some(d) = step.get_mut(at) {
                    *d += delta;
                }
            }
        }
        let mut top = vec![i64::MIN / 4; 2 * width];
        let mut sum = 0;
        for (leaf, d) in top.iter_mut().skip(width).zip(step.iter().take(slots)) {
            sum += d;
            *leaf = sum;
        }
        for node in (1..width).rev() {
            let below = |i: usize| top.get(i).copied().unwrap_or(i64::MIN / 4);
            let larger = below(2 * node).max(below(2 * node + 1));
            if let Some(t) = top.get_mut(node) {
                *t = larger;
            }
        }
        Held {
            width,
            add: vec![0; 2 * width],
            top,
        }
    }

    /// Adds `delta` to every slot of `range`.
    fn add(&mut self, range: std::ops::Range<usize>, delta: i64) {
        self.add_at(1, 0..self.width, &range, delta);
    }

    fn add_at(
        &mut self,
        node: usize,
        span: std::ops::Range<usize>,
        range: &std::ops::Range<usize>,
        delta: i64,
    ) {
        if range.end <= span.start || span.end <= range.start {
            return;
        }
        if range.start <= span.start && span.end <= range.end {
            if let (Some(a), Some(t)) = (self.add.get_mut(node), self.top.get_mut(node)) {
                *a += delta;
                *t += delta;
            }
            return;
        }
        let mid = span.start + (span.end - span.start) / 2;
        self.add_at(2 * node, span.start..mid, range, delta);
        self.add_at(2 * node + 1, mid..span.end, range, delta);
        let below = self
            .top
            .get(2 * node)
            .copied()
            .zip(self.top.get(2 * node + 1).copied())
            .map(|(a, b)| a.max(b));
        if let (Some(below), Some(&a), Some(t)) =
            (below, self.add.get(node), self.top.get_mut(node))
        {
            *t = below + a;
        }
    }

    /// The rank's peak: the largest held count, and 0 (before the first op).
    fn peak(&self) -> i64 {
        self.top.get(1).copied().unwrap_or(0).max(0)
    }

    /// The largest held count over `range` (a very small number for an empty one).
    fn max_in(&self, range: std::ops::Range<usize>) -> i64 {
        self.max_at(1, 0..self.width, &range)
    }

    fn max_at(
        &self,
        node: usize,
        span: std::ops::Range<usize>,
        range: &std::ops::Range<usize>,
    ) -> i64 {
        if range.end <= span.start || span.end <= range.start {
            return i64::MIN / 4;
        }
        if range.start <= span.start && span.end <= range.end {
            return self.top.get(node).copied().unwrap_or(i64::MIN / 4);
        }
        let mid = span.start + (span.end - span.start) / 2;
        let below = self
            .max_at(2 * node, span.start..mid, range)
            .max(self.max_at(2 * node + 1, mid..span.end, range));
        below + self.add.get(node).copied().unwrap_or(0)
    }

    /// Whether the peak stays within `limit` with `delta` added over `range`.
    fn fits(&mut self, range: std::ops::Range<usize>, delta: i64, limit: i64) -> bool {
        if self.peak() <= limit {
            // What lies outside the range stays within the limit: only the range can pass it,
            // and only by rising.
            return delta <= 0 || self.max_in(range) + delta <= limit;
        }
        self.add(range.clone(), delta);
        let fits = self.peak() <= limit;
        self.add(range, -delta);
        fits
    }
}

/// What slots do to a rank's held count without weight lists ([`peak_memory`]'s count): a
/// forward adds one, an input half leaves its weight half pending, a free slot runs a pending
/// one (minus one). For `q` pending on entry, the weight halves run by a span's slot `t` are
/// `min(d_t, q + c_t)` (`d_t` its free slots up to `t`; `c_t` the least, over the instants `u`
/// up to `t`, of the input halves by `u` and the free slots after it), so its held count rises
/// at most `max(alpha, beta − q)` above the entry's — a span's summary, which two adjacent
/// spans' compose into.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    /// Input halves.
    arrive: i32,
    forwards: i32,
    /// `d` and `c` at the span's end.
    free: i32,
    least: i32,
    alpha: i32,
    beta: i32,
}

/// Beyond any count (a span's `least` with no instant in it).
const BEYOND: i32 = i32::MAX / 4;

impl Span {
    /// No slot: what composes with any span into it.
    const EMPTY: Span = Span {
        arrive: 0,
        forwards: 0,
        free: 0,
        least: BEYOND,
        alpha: -BEYOND,
        beta: -BEYOND,
    };

    /// The slot of an op of `kind` (a forward or an input half), or a free one.
    fn slot(kind: Option<usize>) -> Span {
        let (arrive, forwards, free) = match kind {
            Some(0 | 1) => (0, 1, 0),
            Some(_) => (1, 0, 0),
            None => (0, 0, 1),
        };
        Span {
            arrive,
            forwards,
            free,
            least: 0,
            alpha: forwards - free,
            beta: forwards,
        }
    }

    /// This span, then `next`.
    fn then(self, next: Span) -> Span {
        Span {
            arrive: self.arrive + next.arrive,
            forwards: self.forwards + next.forwards,
            free: self.free + next.free,
            least: (self.least + next.free).min(self.arrive + next.least),
            alpha: self.alpha.max(self.forwards - self.free + next.alpha),
            beta: self
                .beta
                .max(self.forwards - self.least + next.alpha)
                .max(self.forwards - self.arrive + next.beta),
        }
    }
}

/// A rank's slots without weight lists as a segment tree of [`Span`]s, under moves.
struct Queued {
    /// Leaves: the tree's width (a power of two).
    width: usize,
    nodes: Vec<Span>,
}

impl Queued {
    /// `rank`'s first [`BLOCK_OPS`] lists (each op in a slot of its own) over `slots` slots.
    fn new(rank: &[Vec<usize>], slots: usize) -> Queued {
        let width = slots.max(1).next_power_of_two();
        let mut nodes = vec![Span::EMPTY; 2 * width];
        if let Some(leaves) = nodes.get_mut(width..width + slots) {
            leaves.fill(Span::slot(None));
        }
        for (kind, list) in rank.iter().enumerate().take(BLOCK_OPS) {
            for &at in list {
                if let Some(leaf) = nodes.get_mut(width + at).filter(|_| at < slots) {
                    *leaf = Span::slot(Some(kind));
                }
            }
        }
        for node in (1..width).rev() {
            let below = |i: usize| nodes.get(i).copied().unwrap_or(Span::EMPTY);
            let joined = below(2 * node).then(below(2 * node + 1));
            if let Some(n) = nodes.get_mut(node) {
                *n = joined;
            }
        }
        Queued { width, nodes }
    }

    fn set(&mut self, slot: usize, span: Span) {
        let mut node = self.width + slot;
        match self.nodes.get_mut(node) {
            Some(leaf) => *leaf = span,
            None => return,
        }
        while node > 1 {
            node /= 2;
            let below = |i: usize| self.nodes.get(i).copied().unwrap_or(Span::EMPTY);
            let joined = below(2 * node).then(below(2 * node + 1));
            if let Some(n) = self.nodes.get_mut(node) {
                *n = joined;
            }
        }
    }

    /// The op of `kind` at slot `from` moved to the free slot `to`.
    fn trade(&mut self, kind: usize, from: usize, to: usize) {
        self.set(from, Span::slot(None));
        self.set(to, Span::slot(Some(kind)));
    }

    /// The rank's peak: the largest held count, and 0 (before the first op), none pending at
    /// first.
    fn peak(&self) -> i64 {
        let root = self.nodes.get(1).copied().unwrap_or(Span::EMPTY);
        i64::from(root.alpha.max(root.beta).max(0))
    }
}

/// How a tracked pass counts a rank's held activations.
enum Counts {
    /// The weight halves placed: the running sums.
    Placed(Held),
    /// Without them: the queue of pending weight halves the free slots serve.
    Queued(Queued),
    /// Without them, on a rank that starts with two ops in one slot: recounted.
    Recounted,
}

/// What a tracked pass keeps of one rank as its ops move.
struct Tracked {
    /// Its held counts.
    held: Counts,
    /// How many of its ops each slot holds (every slot its ops take or may take: they only
    /// move earlier).
    ops_at: Vec<u32>,
    /// How many slots hold two or more: while any does, the rank is recounted.
    crowded: usize,
    /// Its input halves' slots in order (a weight half's earliest slot follows the `mb`-th).
    inputs: Vec<usize>,
}

impl Tracked {
    /// `with_weights`: the rank's weight halves are placed (in its lists past [`BLOCK_OPS`]).
    fn new(rank: &[Vec<usize>], with_weights: bool) -> Tracked {
        let slots = last_slot(rank) + 1;
        let mut ops_at = vec![0u32; slots];
        let mut crowded = 0;
        for &t in rank.iter().flatten() {
            if let Some(c) = ops_at.get_mut(t) {
                *c += 1;
                crowded += usize::from(*c == 2);
            }
        }
        let mut inputs: Vec<usize> = rank.iter().skip(2).take(2).flatten().copied().collect();
        inputs.sort_unstable();
        Tracked {
            held: match (with_weights, crowded) {
                (true, _) => Counts::Placed(Held::new(rank, slots)),
                (false, 0) => Counts::Queued(Queued::new(rank, slots)),
                // (A tree of one op a slot cannot hold two; moves never crowd a slot again.)
                (false, _) => Counts::Recounted,
            },
            ops_at,
            crowded,
            inputs,
        }
    }

    /// Whether an op moved to `slot` would be alone there, with no other slot crowded, and its
    /// counts tracked.
    fn alone_at(&self, slot: usize) -> bool {
        self.crowded == 0
            && self.ops_at.get(slot) == Some(&0)
            && !matches!(self.held, Counts::Recounted)
    }

    /// Whether the rank's peak stays within `limit` with its op of `kind` (adding `delta` to the
    /// held count where the weight halves are placed) moved from `from` to the earlier `to`,
    /// alone there.
    fn fits(&mut self, kind: usize, from: usize, to: usize, delta: i64, limit: i64) -> bool {
        match &mut self.held {
            Counts::Placed(held) => held.fits(to..from, delta, limit),
            Counts::Queued(queued) => {
                queued.trade(kind, from, to);
                let fits = queued.peak() <= limit;
                queued.trade(kind, to, from);
                fits
            }
            Counts::Recounted => false,
        }
    }

    /// An op of `kind` moved from slot `from` to the earlier `to`.
    fn moved(&mut self, kind: usize, from: usize, to: usize) -> Option<()> {
        match &mut self.held {
            Counts::Placed(held) => held.add(to..from, held_delta(kind)),
            Counts::Queued(queued) => queued.trade(kind, from, to),
            Counts::Recounted => {}
        }
        let left = self.ops_at.get_mut(from)?;
        *left -= 1;
        self.crowded -= usize::from(*left == 1);
        let joined = self.ops_at.get_mut(to)?;
        *joined += 1;
        self.crowded += usize::from(*joined == 2);
        if matches!(kind, 2 | 3) {
            let old = self.inputs.binary_search(&from).ok()?;
            self.inputs.remove(old);
            let new = self.inputs.partition_point(|&t| t < to);
            self.inputs.insert(new, to);
        }
        Some(())
    }
}

/// What an op of `kind` adds to its rank's held activations (with the weight halves placed):
/// a forward one, a weight half minus one, an input half nothing.
fn held_delta(kind: usize) -> i64 {
    match kind {
        0 | 1 => 1,
        2 | 3 => 0,
        _ => -1,
    }
}

/// One greedy pass: every op, in the pipeline's visiting order, to the earliest free slot after
/// its dependencies where the rank's memory stays within the pass's starting peak; then
/// squeezed. `with_weights`: the weight halves are placed first and moved too, and the ops
/// before the steady state move; else the weight halves refill the free slots. Its memory
/// asked as `peaks` says.
fn reorder_with(mut times: Vec<Times>, with_weights: bool, peaks: Peaks) -> Option<Vec<Times>> {
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
    // Tracked: each rank's counts, kept as its ops move (none while recounting).
    let mut tracked: Vec<Tracked> = if peaks == Peaks::Tracked {
        times
            .iter()
            .map(|rank| Tracked::new(rank, with_weights))
            .collect()
    } else {
        Vec::new()
    };
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
            let sorted = tracked.get(rank).map(|t| t.inputs.as_slice());
            let earliest = earliest_slot(&times, (rank, kind, mb), p, sorted)?;
            if earliest > slot {
                return None;
            }
            let delta = held_delta(kind);
            let mut moved = slot;
            for candidate in earliest..slot {
                if occupied.get(rank)?.get(candidate) == Some(&false) {
                    // Tracked where every op of the rank, this one moved, has a slot of its
                    // own: with the weight halves placed, the held counts rise (a forward) or
                    // fall (a weight half) by one from the candidate to the op's slot; without,
                    // the op and a free slot trade places in the rank's queue.
                    let fits = match tracked.get_mut(rank).filter(|t| t.alone_at(candidate)) {
                        Some(t) => t.fits(kind, slot, candidate, delta, limit),
                        None => {
                            *times.get_mut(rank)?.get_mut(kind)?.get_mut(mb)? = candidate;
                            peak_memory(times.get(rank)?) <= limit
                        }
                    };
                    if fits {
                        moved = candidate;
                        break;
                    }
                }
            }
            *times.get_mut(rank)?.get_mut(kind)?.get_mut(mb)? = moved;
            if moved != slot
                && let Some(t) = tracked.get_mut(rank)
            {
                t.moved(kind, slot, moved)?;
            }
        }
        let placed = at(&times, rank, kind, mb)?;
        if let Some(o) = occupied.get_mut(rank).and_then(|o| o.get_mut(placed)) {
            *o = true;
        }
    }
    drop(visit);
    if !with_weights {
        for rank in &mut times {
            put_weights(rank, false);
        }
    }
    eager(&times).map(|(starts, _)| starts)
}

/// The first slot an op may take after its [`inputs`] (in slot units); a weight half after the
/// `mb`-th input half of either chunk (of `sorted_inputs`, the rank's input halves' slots in
/// order, where the pass keeps them; else sorted here).
fn earliest_slot(
    times: &[Times],
    (rank, kind, mb): (usize, usize, usize),
    p: usize,
    sorted_inputs: Option<&[usize]>,
) -> Option<usize> {
    let mut after: Option<usize> = None;
    let mut dep = |t: Option<usize>| -> Option<()> {
        after = after.max(Some(t?));
        Some(())
    };
    for (r, k, m) in inputs(rank, kind, mb, p) {
        dep(at(times, r, k, m))?;
    }
    if kind == BLOCK_OPS {
        match sorted_inputs {
            Some(sorted) => dep(sorted.get(mb).copied())?,
            None => {
                let r = times.get(rank)?;
                let mut inputs: Vec<usize> =
                    r.get(2)?.iter().chain(r.get(3)?).copied().collect();
                inputs.sort_unstable();
                dep(inputs.get(mb).copied())?;
            }
        }
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
    // Each op's end slot (0: not run yet), flat: list (rank, kind) from `lists[rank][kind]`'s
    // offset, as long as its list.
    let mut lists: Vec<Vec<(usize, usize)>> = Vec::with_capacity(p);
    let mut total = 0;
    for rank in times {
        lists.push(
            rank.iter()
                .map(|l| {
                    total += l.len();
                    (total - l.len(), l.len())
                })
                .collect(),
        );
    }
    let place = |r: usize, k: usize, m: usize| {
        let &(from, len) = lists.get(r)?.get(k)?;
        (m < len).then_some(from + m)
    };
    let mut end = vec![0usize; total];
    // Of each rank, its last op's end.
    let mut free_at = vec![0usize; p];
    let mut order: Vec<Vec<(usize, usize)>> = vec![Vec::new(); p];
    let mut visit = Visit::new(times);
    while let Some((_, rank, kind, mb)) = visit.next(times) {
        let mut ready = free_at.get(rank).copied()?;
        for (r, k, m) in inputs(rank, kind, mb, p) {
            let done = *end.get(place(r, k, m)?)?;
            if done == 0 {
                return None;
            }
            ready = ready.max(done);
        }
        *end.get_mut(place(rank, kind, mb)?)? = ready + 1;
        *free_at.get_mut(rank)? = ready + 1;
        order.get_mut(rank)?.push((kind, mb));
    }
    let starts = lists
        .iter()
        .map(|rank| {
            rank.iter()
                .map(|&(from, len)| {
                    end.get(from..from + len)
                        .unwrap_or_default()
                        .iter()
                        .map(|&e| e.saturating_sub(1))
                        .collect()
                })
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
        assert_eq!(peak_memory_by_slot(&rank), 2);
    }

    /// The held counts tracked as ops move give the orders the whole rank's recount gives,
    /// over every shape up to `P = 10`, `M = 3P`, of both blocks.
    #[test]
    fn tracked_peaks_order_as_recounted_ones() {
        let mut shapes = 0;
        for block in [Block::Half, Block::Min] {
            for p in 2..=10 {
                for m in 1..=3 * p {
                    assert_eq!(
                        from_block_with(&block, p, m, Peaks::Tracked),
                        from_block_with(&block, p, m, Peaks::Recounted),
                        "P = {p}, M = {m}"
                    );
                    shapes += 1;
                }
            }
        }
        assert_eq!(shapes, 2 * (2..=10).map(|p| 3 * p).sum::<usize>());
    }

    /// A draw below `n` each call, from `seed` (xorshift: the same every run).
    fn draws(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        }
    }

    /// The op-by-op count is the slot-by-slot one: on random lists with and without weight
    /// lists, sorted or not, with ops sharing slots.
    #[test]
    fn peaks_count_op_by_op_as_slot_by_slot() {
        let mut draw = draws(0x9e37_79b9_7f4a_7c15);
        for case in 0..4000 {
            let lists = if case % 2 == 0 { BLOCK_OPS } else { BLOCK_OPS + 1 + case % 3 / 2 };
            let span = 4 + draw(40);
            let rank: Times = (0..lists)
                .map(|_| {
                    let mut l: Vec<usize> = (0..draw(8)).map(|_| draw(span)).collect();
                    if case % 5 != 0 {
                        l.sort_unstable();
                        if case % 7 != 0 {
                            l.dedup();
                        }
                    }
                    l
                })
                .collect();
            assert_eq!(peak_memory(&rank), peak_memory_by_slot(&rank), "{rank:?}");
        }
    }

    /// A random starting layout of `p` ranks and `m` microbatches the passes can order: each op
    /// a random 0–2 slots after its inputs, microbatch by microbatch, each kind in the direction
    /// it flows along the V; `distinct`: each rank's ops in slots of their own (else some fall
    /// into one slot by chance).
    fn random_layout(
        draw: &mut impl FnMut(usize) -> usize,
        p: usize,
        m: usize,
        distinct: bool,
    ) -> Vec<Times> {
        let mut start: Vec<Times> = vec![vec![vec![0; m]; BLOCK_OPS]; p];
        let mut taken: Vec<Vec<bool>> = vec![Vec::new(); p];
        for mb in 0..m {
            for kind in 0..BLOCK_OPS {
                let ranks: Vec<usize> = if matches!(kind, 0 | 2) {
                    (0..p).collect()
                } else {
                    (0..p).rev().collect()
                };
                for rank in ranks {
                    let mut at = inputs(rank, kind, mb, p)
                        .map(|(r, k, m)| start[r][k][m] + 1)
                        .max()
                        .unwrap_or(0)
                        + draw(3);
                    if distinct {
                        while taken[rank].get(at) == Some(&true) {
                            at += 1;
                        }
                        if taken[rank].len() <= at {
                            taken[rank].resize(at + 1, false);
                        }
                        taken[rank][at] = true;
                    }
                    start[rank][kind][mb] = at;
                }
            }
        }
        start
    }

    /// Whether two ops of one rank of `times` share a slot.
    fn shares_slots(times: &[Times]) -> bool {
        times.iter().any(|rank| {
            let mut all: Vec<usize> = rank.iter().flatten().copied().collect();
            all.sort_unstable();
            all.windows(2).any(|w| w[0] == w[1])
        })
    }

    /// From random starting layouts — ops of a rank sharing slots among them, so that the
    /// tracked pass recounts where they do — the tracked pass moves every op as the recounting
    /// one does (or fails where it fails).
    #[test]
    fn tracked_passes_recount_where_ops_share_slots() {
        let mut draw = draws(0x2545_f491_4f6c_dd1d);
        let (mut crowded, mut ordered) = (0, 0);
        for _ in 0..600 {
            // Ops of one rank falling into one slot by chance.
            let (p, m) = (2 + draw(4), 1 + draw(6));
            let start = random_layout(&mut draw, p, m, false);
            crowded += usize::from(shares_slots(&start));
            let tracked = reorder_with(start.clone(), true, Peaks::Tracked);
            ordered += usize::from(tracked.is_some());
            assert_eq!(tracked, reorder_with(start, true, Peaks::Recounted));
        }
        assert!(crowded > 300 && ordered > 500, "{crowded} crowded, {ordered} ordered");
    }

    /// Without weight lists, the queue's summary tree gives [`peak_memory`]'s count: on random
    /// ranks (each op in a slot of its own), and after each of a run of random moves of an op
    /// into an earlier free slot, after its kind's op before it (as the passes move them).
    #[test]
    fn queued_peaks_count_as_the_ops_run() {
        let mut draw = draws(0x5851_f42d_4c95_7f2d);
        let mut moves = 0;
        for _ in 0..3000 {
            let span = 2 + draw(40);
            // Distinct slots, dealt to the four kinds at random.
            let mut rank: Times = vec![Vec::new(); BLOCK_OPS];
            for slot in 0..span {
                if draw(3) > 0 {
                    rank[draw(BLOCK_OPS)].push(slot);
                }
            }
            let slots = last_slot(&rank) + 1;
            let mut queued = Queued::new(&rank, slots);
            assert_eq!(queued.peak(), peak_memory(&rank), "{rank:?}");
            for _ in 0..8 {
                let kind = draw(BLOCK_OPS);
                if rank[kind].is_empty() {
                    continue;
                }
                let from_i = draw(rank[kind].len());
                let from = rank[kind][from_i];
                let after = from_i.checked_sub(1).map_or(0, |i| rank[kind][i] + 1);
                let free: Vec<usize> = (after..from)
                    .filter(|t| rank.iter().all(|l| !l.contains(t)))
                    .collect();
                if free.is_empty() {
                    continue;
                }
                let to = free[draw(free.len())];
                rank[kind][from_i] = to;
                queued.trade(kind, from, to);
                assert_eq!(queued.peak(), peak_memory(&rank), "{rank:?}");
                moves += 1;
            }
        }
        assert!(moves > 5000, "{moves} moves");
    }

    /// The second pass (the weight halves refill the free slots) from random layouts: tracked
    /// by the queue's tree, it moves every op as the recounting pass does.
    #[test]
    fn queued_passes_order_as_recounted_ones() {
        let mut draw = draws(0x9fb2_1c65_1e98_df25);
        let (mut moved, mut crowded) = (0, 0);
        for case in 0..600 {
            // Enough microbatches that the pass reaches its cooldown (where ops move); every
            // fifth layout with ops of a rank sharing slots (recounted there).
            let (p, m) = (2 + draw(4), 1 + draw(20));
            let start = random_layout(&mut draw, p, m, case % 5 != 0);
            let tracked = reorder_with(start.clone(), false, Peaks::Tracked);
            // What the pass gives when it moves nothing: the start, weights put, squeezed.
            let mut still = start.clone();
            for rank in &mut still {
                put_weights(rank, false);
            }
            moved += usize::from(tracked.is_some() && tracked != eager(&still).map(|(s, _)| s));
            crowded += usize::from(shares_slots(&start));
            assert_eq!(tracked, reorder_with(start, false, Peaks::Recounted));
        }
        assert!(moved > 150 && crowded > 100, "{moved} moved, {crowded} crowded");
    }

    /// Lists in slot order are visited, sorted at once, as the heap merges them: on random
    /// ranks with slots shared within and across lists.
    #[test]
    fn sorted_visits_are_the_merged_ones() {
        let mut draw = draws(0xd1b5_4a32_d192_ed03);
        for _ in 0..2000 {
            let (p, kinds) = (1 + draw(5), 1 + draw(BLOCK_OPS + 2));
            let times: Vec<Times> = (0..p)
                .map(|_| {
                    (0..kinds)
                        .map(|_| {
                            let mut l: Vec<usize> = (0..draw(9)).map(|_| draw(20)).collect();
                            l.sort_unstable();
                            l
                        })
                        .collect()
                })
                .collect();
            let all = |mut v: Visit| {
                let mut ops = Vec::new();
                while let Some(op) = v.next(&times) {
                    ops.push(op);
                }
                ops
            };
            let sorted = Visit::new(&times);
            assert!(matches!(sorted, Visit::Sorted { .. }));
            let merged = all(Visit::merged(&times));
            assert_eq!(merged.len(), times.iter().flatten().map(Vec::len).sum::<usize>());
            assert_eq!(all(sorted), merged, "{times:?}");
        }
    }

    #[test]
    fn held_counts_follow_range_adds() {
        // Forwards at 0 and 2, a weight half at 3: held 1, 1, 2, 1, 1.
        let rank: Times = vec![vec![0], vec![2], vec![], vec![], vec![3]];
        let mut h = Held::new(&rank, 5);
        assert_eq!(h.peak(), 2);
        // The second forward one slot earlier (+1 on slot 1), the weight half two (−1 on
        // slots 1 and 2): 1, 1, 1, 1, 1.
        h.add(1..2, 1);
        h.add(1..3, -1);
        assert_eq!(h.peak(), 1);
        assert_eq!((h.max_in(0..1), h.max_in(2..5), h.max_in(4..4)), (1, 1, i64::MIN / 4));
        // Within 1: a rise over slots 1–2 passes it, a fall does not; within 2 a rise does not.
        assert!(!h.fits(1..3, 1, 1) && h.fits(1..3, -1, 1) && h.fits(1..3, 1, 2));
        h.add(0..5, 3);
        assert_eq!(h.peak(), 4);
        // Over the limit already: a fall over the peak's whole range brings it back.
        assert!(h.fits(0..5, -1, 3) && !h.fits(0..4, -1, 3));
        h.add(0..5, -9);
        assert_eq!(h.peak(), 0);
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
