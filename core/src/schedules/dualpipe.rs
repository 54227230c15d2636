//! DualPipe (DeepSeek-V3, arXiv 2412.19437, §3.2.1; the open-source `deepseek-ai/DualPipe`'s
//! `DualPipe.step`): two directions over the same stages. The model's one Sharded region runs
//! the first half of the microbatches from rank 0 down to rank `P − 1`; its mirror — a copy of
//! the same layers, so every rank holds two stages' parameters — runs the second half from rank
//! `P − 1` up to rank 0. In the steady state a forward of one direction and a backward of the
//! other run overlapped as one compute slot, `(F;B)OVERLAP_F_B`, each hiding the other's
//! communication; the warmup and cooldown split some backwards into `I` now and `W` later. Needs
//! an even `P` and an even `M ≥ 2P`.
//!
//! Rank `r`, with `H = P/2`, `h = min(r, P − 1 − r)`, its "own" direction the one whose first
//! stage is nearer (down for `r < H`, up otherwise) and "other" the opposite: `2(H − h − 1)`
//! forwards of own; `h + 1` times a forward of own and of other; `H − h − 1` times `I` of other,
//! the oldest pending `W`, a forward of other; `M/2 − P + h + 1` steady steps of two pairs (F own
//! with B other — on the two middle ranks the first one apart — then F other with B own);
//! `H − h − 1` times B other and the pair (F other, B own); `h + 1` times a backward of other
//! and of own, split into `I` from the middle one on (from own's if `h` is even, from other's
//! if odd); `H − h − 1` times a pending `W` and `I` of own; the last `h + 1` pending `W`s. Each
//! `W` is the oldest pending one.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::{
    CutPosition, Formula, RunCtx, Schedule, ScheduleRule, Uniform, microbatches_at_least,
};
use crate::vocab::layout::{Layout, PlacementKind};
use crate::vocab::phase::OpSet;
use std::collections::VecDeque;

/// `dualpipe`.
#[derive(Debug)]
pub struct DualPipe;

pub const DUALPIPE: Skeleton = Skeleton::of(&DualPipe);

impl Schedule for DualPipe {
    fn name(&self) -> &'static str {
        "dualpipe"
    }

    fn summary(&self) -> &'static str {
        "DualPipe: two directions over the same stages (each rank a stage of each, parameters twice), F&B of opposite directions overlapped"
    }

    fn reference(&self) -> &'static str {
        "DeepSeek-V3 DualPipe (arXiv 2412.19437), `deepseek-ai/DualPipe` `DualPipe.step`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::Mixed
    }

    /// The mirror's stages on the ranks in reverse: the V fold of ⟨region, mirror⟩.
    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn bidirectional(&self) -> bool {
        true
    }

    fn check_position(&self, at: &CutPosition) -> Result<(), ScheduleRule> {
        whole_model("dualpipe-alone", self.name(), at)
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        bidirectional_shape(
            &ShapeRules {
                skeleton: "dualpipe",
                chunks: "dualpipe-chunks",
                ranks: "dualpipe-ranks",
                microbatches: "dualpipe-microbatches",
                source: "as DeepSeek's DualPipe",
                microbatch_unit: (2, "half of them runs each direction"),
            },
            ctx,
        )?;
        microbatches_at_least(
            ctx,
            2 * ctx.ranks,
            "dualpipe-microbatches",
            "dualpipe",
            "M ≥ 2P, as DeepSeek's DualPipe",
        )
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        slots(ctx.ranks, ctx.microbatches, position)
    }

    /// DualPipe's table: bubble `(P/2 − 1)·(F&B + B − 3W)` with `F&B` an overlapped pair's slot
    /// (`t_F + t_B` without overlap) and `B` the whole backward; `P + 1` microbatches'
    /// activations and twice the parameters. Exact where `t_F = t_I = t_W = t` (`t_B = 2t`): each
    /// rank works `3M·t` and idles `(P − 2)·t`.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        let t = costs.forward_s;
        if self.check(ctx).is_err() || !costs.backward_is(2.0) {
            return None;
        }
        let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
        let step_s = (3.0 * m + p - 2.0) * t;
        Some(Formula {
            step: "M·(t_F + t_B) + (P/2 − 1)·(F&B + B − 3W), F&B = t_F + t_B, t_F = t_I = t_W = t: (3M + P − 2)·t, M ≥ 2P",
            step_s,
            bubble: "(P − 2)/(3M + P − 2)",
            bubble_fraction: (p - 2.0) / (3.0 * m + p - 2.0),
            memory: Some("(P + 1)·A (parameters: two stages a rank)"),
            peak_activations: Some(p + 1.0),
        })
    }
}

/// Where a bidirectional schedule stands: alone, the model's one region (its two directions run
/// the whole pipeline).
pub(crate) fn whole_model(
    rule: &'static str,
    skeleton: &'static str,
    at: &CutPosition,
) -> Result<(), ScheduleRule> {
    if at.regions == 1 {
        return Ok(());
    }
    Err(ScheduleRule::Position {
        rule,
        skeleton,
        region: at.region,
        stands: "a model of one region (it runs the whole pipeline in two directions)",
    })
}

/// The rule names of a bidirectional schedule's shape: one chunk, `P` even, `M` a multiple of
/// `microbatch_unit`.
pub(crate) struct ShapeRules {
    pub(crate) skeleton: &'static str,
    pub(crate) chunks: &'static str,
    pub(crate) ranks: &'static str,
    pub(crate) microbatches: &'static str,
    /// Whose requirement an even `P` is (`as DeepSeek's DualPipe`).
    pub(crate) source: &'static str,
    /// What `M` must be a multiple of, and why.
    pub(crate) microbatch_unit: (usize, &'static str),
}

/// Checks a bidirectional schedule's shape against `rules`.
pub(crate) fn bidirectional_shape(rules: &ShapeRules, ctx: &RunCtx) -> Result<(), ScheduleRule> {
    if ctx.chunks != 1 {
        return Err(ScheduleRule::Chunks {
            rule: rules.chunks,
            skeleton: rules.skeleton,
            want: 1,
            chunks: ctx.chunks,
            why: "its two directions run the whole model",
        });
    }
    let (unit, why) = rules.microbatch_unit;
    for (symbol, what, value, rule, of, why) in [
        ("P", "number of ranks", ctx.ranks, rules.ranks, 2, rules.source),
        (
            "M",
            "number of microbatches",
            ctx.microbatches,
            rules.microbatches,
            unit,
            why,
        ),
    ] {
        if !value.is_multiple_of(of.max(1)) {
            return Err(ScheduleRule::Multiple {
                rule,
                skeleton: rules.skeleton,
                what,
                symbol,
                value,
                of,
                why,
            });
        }
    }
    Ok(())
}

/// DualPipe's slots of the rank at `position` (chunk 0: the region for the first half of the
/// microbatches, its mirror for the second).
fn slots(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let (p, r, half) = (ranks, position, microbatches / 2);
    let big_h = p / 2;
    let h = r.min(p.saturating_sub(1 + r));
    let own = usize::from(r >= big_h);
    let other = 1 - own;
    let middle = h + 1 == big_h;
    let warm = big_h.saturating_sub(h + 1);
    let mut d = Directions::new(microbatches);
    for _ in 0..2 * warm {
        d.forward(own);
    }
    for _ in 0..=h {
        d.forward(own);
        d.forward(other);
    }
    for _ in 0..warm {
        d.backward(other, true);
        d.weight();
        d.forward(other);
    }
    for i in 0..(half + h + 1).saturating_sub(p) {
        if i == 0 && middle {
            d.forward(own);
            d.backward(other, false);
        } else {
            d.pair(own, other);
        }
        d.pair(other, own);
    }
    for _ in 0..warm {
        d.backward(other, false);
        d.pair(other, own);
    }
    let mut split = false;
    for i in 0..=h {
        let from_here = i == h.div_ceil(2);
        split |= from_here && h % 2 == 1;
        d.backward(other, split);
        split |= from_here && h % 2 == 0;
        d.backward(own, split);
    }
    for _ in 0..warm {
        d.weight();
        d.backward(own, true);
    }
    while !d.pending.is_empty() {
        d.weight();
    }
    d.out
}

/// The counters of a rank's two directions as its slots are written: direction `d`'s `k`-th
/// microbatch is `d·⌊M/2⌋ + k`, as the builder routes the second half to the mirror.
pub(crate) struct Directions {
    half: usize,
    forwards: [usize; 2],
    backwards: [usize; 2],
    /// Input halves whose weight half is still to run, oldest first.
    pending: VecDeque<usize>,
    pub(crate) out: Vec<Slot>,
}

impl Directions {
    /// No slot written yet, for `microbatches` over both directions (each rank runs a forward
    /// and a backward of each, a split one in two slots).
    pub(crate) fn new(microbatches: usize) -> Directions {
        Directions {
            half: microbatches / 2,
            forwards: [0; 2],
            backwards: [0; 2],
            pending: VecDeque::new(),
            out: Vec::with_capacity(2 * microbatches),
        }
    }

    /// The next microbatch of direction `d` from `counter`, advancing it.
    fn next(half: usize, counter: &mut [usize; 2], d: usize) -> usize {
        let Some(n) = counter.get_mut(d) else {
            return 0;
        };
        *n += 1;
        d * half + *n - 1
    }

    fn forward_slot(&mut self, d: usize) -> Slot {
        Slot::forward(0, Self::next(self.half, &mut self.forwards, d))
    }

    pub(crate) fn forward(&mut self, d: usize) {
        let s = self.forward_slot(d);
        self.out.push(s);
    }

    fn backward_slot(&mut self, d: usize, split: bool) -> Slot {
        let mb = Self::next(self.half, &mut self.backwards, d);
        if split {
            self.pending.push_back(mb);
            Slot::input(0, mb)
        } else {
            Slot::backward(0, mb)
        }
    }

    pub(crate) fn backward(&mut self, d: usize, split: bool) {
        let s = self.backward_slot(d, split);
        self.out.push(s);
    }

    fn weight(&mut self) {
        if let Some(mb) = self.pending.pop_front() {
            self.out.push(Slot::weight(0, mb));
        }
    }

    /// A forward of `f` overlapped with a whole backward of `b`.
    fn pair(&mut self, f: usize, b: usize) {
        let forward = self.forward_slot(f).overlapped();
        let backward = self.backward_slot(b, false);
        self.out.extend([forward, backward]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn dualpipe_by_hand_p4_m8() {
        // DualPipe.step's order on rank 0 (stage 0 down, stage 7 = the up direction's last).
        assert_eq!(
            show(&slots(4, 8, 0)),
            "0F0 0F1 0F2 0F4 0I4 0W4 0F5 0F3+0B5 0F6+0B0 0B6 0F7+0B1 0B7 0I2 0W2 0I3 0W3"
        );
    }
}
