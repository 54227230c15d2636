//! ZB-V (the zero-bubble paper's V schedule, Qi et al., ICLR 2024, §6) as PyTorch's
//! `ScheduleZBVZeroBubble` runs it: exactly two chunks per rank placed as a V (rank `r` holds
//! stages `r` and `2P − 1 − r`, so the first and the last stage share rank 0), the backward split
//! into `I` and `W`. With `t_F = t_I = t_W = t` and `M ≥ 2P − 1` a rank idles only the
//! `(P − 1)·t` the first forward takes to reach it: the step is `(6M + P − 1)·t`.
//!
//! Rank `r` warms up with `2(P − r) − 1` forwards of chunk 0, then `r` pairs (chunk 1, chunk 0)
//! of forwards, then `P − r` times `F I W` of chunk 1; the steady state alternates `F I W` on
//! chunk 0 and chunk 1; the cooldown runs `r` input halves of both chunks, then `P − r` times
//! `I W` of chunk 0, then the remaining weight halves of chunk 1 and of chunk 0. As PyTorch does,
//! the order is written for `max(2P − 1, M)` microbatches and the slots beyond `M` are dropped.

use crate::vocab::layout::PlacementKind;
use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::schedules::slot::Slot;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;

/// `zbv`.
#[derive(Debug)]
pub struct Zbv;

pub const ZBV: Skeleton = Skeleton::of(&Zbv);

impl Schedule for Zbv {
    fn name(&self) -> &'static str {
        "zbv"
    }

    fn summary(&self) -> &'static str {
        "zero bubble on a V: two chunks per rank folded (rank r holds stages r and 2P−1−r), backward split into I and W"
    }

    fn reference(&self) -> &'static str {
        "PyTorch `ScheduleZBVZeroBubble` (ZB-V, Qi et al., ICLR 2024, §6)"
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
            "zbv-chunks",
            "zbv",
            ctx,
            "the two arms of the V, as PyTorch's ScheduleZBVZeroBubble",
        )?;
        // The order is written for max(2P − 1, M) microbatches, as PyTorch writes it.
        let value = ctx
            .ranks
            .saturating_mul(ctx.microbatches.max((2 * ctx.ranks).saturating_sub(1)));
        if value > crate::vocab::limits::MAX_SLOTS {
            return Err(ScheduleRule::Size {
                rule: "zbv-size",
                skeleton: "zbv",
                grows: "writes its order for max(2P − 1, M) microbatches on every rank, as PyTorch",
                measure: "P·max(2P − 1, M)",
                value,
                max: crate::vocab::limits::MAX_SLOTS,
            });
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        slots(ctx.ranks, ctx.microbatches, position)
    }

    /// The paper's setting, `t_F = t_I = t_W = t` (a chunk's stage; `t_B = 2t`), with
    /// `M ≥ 2P − 1`: each rank works `6M·t` and idles only the `(P − 1)·t` the first forward
    /// takes to reach it.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        let t = costs.forward_s;
        if ctx.chunks != 2
            || ctx.microbatches + 1 < 2 * ctx.ranks
            || !costs.backward_is(2.0)
        {
            return None;
        }
        let (p, m) = (ctx.ranks as f64, ctx.microbatches as f64);
        Some(Formula {
            step: "(6M + P − 1)·t, t = t_F = t_I = t_W of one chunk's stage, M ≥ 2P − 1",
            step_s: (6.0 * m + p - 1.0) * t,
            bubble: "(P − 1)/(6M + P − 1)",
            bubble_fraction: (p - 1.0) / (6.0 * m + p - 1.0),
            // 1F1B's P microbatches of the whole rank: `2P` chunk stages' activations.
            memory: Some("2P·A, A of one chunk's stage"),
            peak_activations: Some(2.0 * p),
        })
    }
}

/// The rule of the V schedules: exactly two Sharded regions.
pub(crate) fn two_chunks(
    rule: &'static str,
    skeleton: &'static str,
    ctx: &RunCtx,
    why: &'static str,
) -> Result<(), ScheduleRule> {
    if ctx.chunks != 2 {
        return Err(ScheduleRule::Chunks {
            rule,
            skeleton,
            want: 2,
            chunks: ctx.chunks,
            why,
        });
    }
    Ok(())
}

/// ZB-V's slots of the rank at `position` (chunk 0 is stage `position`, chunk 1 stage
/// `2P − 1 − position`).
pub fn slots(ranks: usize, microbatches: usize, position: usize) -> Vec<Slot> {
    let (p, r) = (ranks, position);
    let n = microbatches.max((2 * p).saturating_sub(1));
    let mut out = Vec::with_capacity(6 * n);
    // Next microbatch of each chunk's forwards (f), input halves (b) and weight halves (w).
    let (mut f0, mut f1, mut b0, mut b1) = (0, 0, 0, 0);
    let next = |counter: &mut usize| {
        *counter += 1;
        *counter - 1
    };
    for _ in 0..(2 * p.saturating_sub(r)).saturating_sub(1) {
        out.push(Slot::forward(0, next(&mut f0)));
    }
    for _ in 0..r {
        out.push(Slot::forward(1, next(&mut f1)));
        out.push(Slot::forward(0, next(&mut f0)));
    }
    for _ in 0..p.saturating_sub(r) {
        out.push(Slot::forward(1, next(&mut f1)));
        out.extend([Slot::input(1, b1), Slot::weight(1, next(&mut b1))]);
    }
    while f1 < f0 || f0 < n {
        if f0 < n {
            out.push(Slot::forward(0, next(&mut f0)));
        }
        out.extend([Slot::input(0, b0), Slot::weight(0, next(&mut b0))]);
        out.push(Slot::forward(1, next(&mut f1)));
        out.extend([Slot::input(1, b1), Slot::weight(1, next(&mut b1))]);
    }
    let (mut w0, w1) = (b0, b1);
    for _ in 0..r {
        out.push(Slot::input(0, next(&mut b0)));
        out.push(Slot::input(1, next(&mut b1)));
    }
    for _ in 0..p.saturating_sub(r) {
        out.push(Slot::input(0, next(&mut b0)));
        out.push(Slot::weight(0, next(&mut w0)));
    }
    out.extend((w1..b1).map(|m| Slot::weight(1, m)));
    out.extend((w0..b0).map(|m| Slot::weight(0, m)));
    out.retain(|s| s.mb < microbatches.into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn zbv_by_hand() {
        // PyTorch's order for P = 2, M = 4 (rank 0: stages 0 and 3; rank 1: stages 1 and 2).
        assert_eq!(
            show(&slots(2, 4, 0)),
            "0F0 0F1 0F2 1F0 1I0 1W0 1F1 1I1 1W1 0F3 0I0 0W0 1F2 1I2 1W2 0I1 0W1 1F3 1I3 1W3 0I2 0W2 0I3 0W3"
        );
        assert_eq!(
            show(&slots(2, 4, 1)),
            "0F0 1F0 0F1 1F1 1I0 1W0 0F2 0I0 0W0 1F2 1I1 1W1 0F3 0I1 0W1 1F3 1I2 1W2 0I2 1I3 0I3 0W2 1W3 0W3"
        );
    }
}
