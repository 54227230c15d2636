//! Hanayo's waves (Liu et al., "Hanayo: Harnessing Wave-like Pipeline Parallelism for Enhanced
//! Large Model Training Efficiency", SC'23): the model cut into `2W·P` stages folded `W` times
//! over the ranks as waves — chunk `c` of rank `r` is stage `c·P + r` for even `c` and
//! `c·P + P − 1 − r` for odd `c` (down the ranks and back up, a V a wave), so a microbatch turns
//! on rank `P − 1` and on rank 0 without a transfer and no stage is replicated (Chimera's waves
//! need two copies of the model). Forwards and whole backwards.
//!
//! The paper's own per-rank order is not public; the order here is list-scheduled over the wave
//! ([`crate::schedules::listed`]: the shortest of 1F1B's priorities and four least-slack rules,
//! each made again twice with its microbatches due when the run before finished them where none
//! reaches the bound the ranks' work gives, a forward only while a rank holds under
//! `(2W + 1)·P − 1` stages' activations, and where the runs still fall short of the bound the
//! ranks' work gives, under `P` more a round, then under the bounds between, tightest first, while
//! under what the run kept holds and within a budget, the run holding least kept; the pipeline
//! lists it again with each stage's own times where those are not the units'). With one to four
//! waves, `t_B = 2t_F` and `M ≥ 2P` it reaches `(2W·M + P − 1)·(t_F + t_B)`, which no order over
//! the wave can beat (rank `P − 1` waits `(P − 1)·t_F` for its first forward, then has
//! `2W·M·(t_F + t_B)` of work, and its last backward — stage `P − 1`'s — has `P − 1` backwards
//! after it): interleaved 1F1B's step, without its transfers at the turns (one and two waves on
//! every P 2–12 and M 2P–5P, three and four on every P 2–8 and M 2P–5P, `core/tests/hanayo.rs`; two
//! waves hold up to `P` stages' activations more than 1F1B's bound, three up to `4P` more, four up
//! to `7P` more). The rounds that reach it are budgeted (10^6 actions, and as many again for the
//! bounds between), so on shapes far beyond those tested they may stop short of it; the formula's
//! reading then shows by how much. Beyond four waves no formula is stated: measured once
//! (2026-12-07, P 2–8, M 2P–5P, not a test), five waves reached it too, holding up to `9P` more,
//! six ended up to 0.5 % above it on P 7–8, eight up to 2.5 % on P 5–8.

use crate::schedules::listed::{self, Act, Op};
use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::{Formula, RunCtx, Schedule, ScheduleRule, Uniform};
use crate::vocab::layout::{Layout, PlacementKind, v_fold_rank};
use crate::vocab::phase::OpSet;

/// `hanayo`.
#[derive(Debug)]
pub struct Hanayo;

pub const HANAYO: Skeleton = Skeleton::of(&Hanayo);

impl Schedule for Hanayo {
    fn name(&self) -> &'static str {
        "hanayo"
    }

    fn slots_are_listed(&self) -> bool {
        true
    }

    fn summary(&self) -> &'static str {
        "Hanayo's waves: the model folded W times over the ranks (2W chunks a rank, every second one back up the ranks), no replica; a list-scheduled order"
    }

    fn reference(&self) -> &'static str {
        "Hanayo, Liu et al., SC'23 (its wave placement; the per-rank order is the studio's least-slack list schedule, the paper's is not public)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::ForwardBackward
    }

    fn placement(&self) -> PlacementKind {
        PlacementKind::VFold
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        if ctx.chunks < 2 || !ctx.chunks.is_multiple_of(2) {
            return Err(ScheduleRule::Multiple {
                rule: "hanayo-waves",
                skeleton: "hanayo",
                what: "number of its Sharded regions (chunks a rank)",
                symbol: "v",
                value: ctx.chunks,
                of: 2,
                why: "a wave is two chunks, down the ranks and back up",
            });
        }
        // The run keeps a count and a place for every action of every stage.
        let value = ctx
            .ranks
            .saturating_mul(ctx.chunks)
            .saturating_mul(ctx.microbatches);
        if value > crate::vocab::limits::MAX_SLOTS / 2 {
            return Err(ScheduleRule::Size {
                rule: "hanayo-size",
                skeleton: "hanayo",
                grows: "list-schedules every stage's forward and backward of every microbatch",
                measure: "P·v·M",
                value,
                max: crate::vocab::limits::MAX_SLOTS / 2,
            });
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        self.slots(ctx).into_iter().nth(position).unwrap_or_default()
    }

    fn slots(&self, ctx: &RunCtx) -> Vec<Vec<Slot>> {
        let p = ctx.ranks;
        let rank_of: Vec<usize> = (0..ctx.chunks)
            .flat_map(|c| (0..p).map(move |k| v_fold_rank(c, k, p)))
            .collect();
        let Some(run) = listed::shortest(p, ctx.microbatches, &rank_of, false, None, None) else {
            return vec![Vec::new(); p];
        };
        let slot = |&(op, s, mb): &Act| {
            let chunk = s / p.max(1);
            match op {
                Op::Forward => Slot::forward(chunk, mb),
                Op::Backward => Slot::backward(chunk, mb),
                Op::Input => Slot::input(chunk, mb),
                Op::Weight => Slot::weight(chunk, mb),
            }
        };
        run.actions
            .iter()
            .map(|acts| acts.iter().map(slot).collect())
            .collect()
    }

    /// One to four waves (`v` = 2, 4, 6 or 8): interleaved 1F1B's step over `v` chunks, the
    /// least any order over the wave takes (see the module's words), in the setting the order is
    /// list-scheduled in: `t_B = 2t_F`, `M ≥ 2P`. Its memory is what the list schedule holds (at
    /// most `(v + 2)·P − 1` stages' activations with two waves, `(v + 5)·P − 1` with three,
    /// `(v + 8)·P − 1` with four): no closed form. More waves: the order's step is above that
    /// bound on some shapes, so none is stated. Reached on every shape tested
    /// (`core/tests/hanayo.rs`); beyond them the step no order can beat, which the runs, their
    /// rounds budgeted, may stop short of on much larger shapes (the reading shows the gap).
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        if !matches!(ctx.chunks, 2 | 4 | 6 | 8)
            || ctx.microbatches < 2 * ctx.ranks
            || !costs.backward_is(2.0)
        {
            return None;
        }
        let (p, m, v) = (ctx.ranks as f64, ctx.microbatches as f64, ctx.chunks as f64);
        let fb = costs.forward_s + costs.backward_s;
        Some(Formula {
            step: "(vM + P − 1)·(t_F + t_B), v = 2W chunks (W ≤ 4), t of one chunk's stage, t_B = 2t_F, M ≥ 2P",
            step_s: (v * m + p - 1.0) * fb,
            bubble: "(P − 1)/(vM + P − 1)",
            bubble_fraction: (p - 1.0) / (v * m + p - 1.0),
            memory: None,
            peak_activations: None,
        })
    }
}
