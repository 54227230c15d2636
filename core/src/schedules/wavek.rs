//! `wavek`: JanusPipe's WaveK for second-order training (four phases per microbatch and stage,
//! FE → FF → BF → BE). Microbatches go in waves of `k` (`"wave_k"` in the scenario; default
//! `k = P`, the last wave holding the remaining `M mod k`). Each rank keeps two streams in wave
//! order: the forward-direction one — per wave, the wave's `FE`s, then its `FF`s — and the
//! backward-direction one — per wave, its `BF`s, then its `BE`s. A rank warms up with the first
//! wave's forward-direction work (`2·min(k, M)` slots), then alternates one backward-direction
//! slot with one forward-direction slot until both streams run out.
//!
//! Every rank runs the same order: a per-position warmup (1F1B's `P − 1 − r`) deadlocks here,
//! because each stream is itself a round trip (`FE` down and `FF` back up; `BF` down and `BE`
//! back up). With one order on every rank, each event waits only for same-position events of
//! its neighbours in one direction per phase, or for its own earlier slots, so no order deadlocks.
//!
//! What `k` does, with uniform costs `t` per phase and free links: each wave pays one boundary
//! bubble of `2(P−1)·t` (the turnarounds it cannot overlap), so a step of `M` microbatches with
//! `k | M` takes exactly `(4M + 2(P−1)(M/k + 1))·t`; the bubble falls inversely with `k`. When
//! `k ∤ M` the trailing wave is not full and still pays a whole wave's bubble (or more: the
//! alternation then pairs slots of different waves), so the step takes longer than that formula
//! at `M/k` waves — the trailing-wave bubble. Peak memory grows with `k`: a wave's `k`
//! microbatches hold their `FE` activations at once.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::ScheduleRule;
use crate::schedules::{Formula, RunCtx, Schedule, Uniform};
use crate::vocab::parameter::Parameter;
use crate::schedules::slot::Slot;
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;
use crate::vocab::phase::Phase;

/// `wavek`.
#[derive(Debug)]
pub struct WaveK;

pub const WAVEK: Skeleton = Skeleton::of(&WaveK);

impl Schedule for WaveK {
    fn name(&self) -> &'static str {
        "wavek"
    }

    fn summary(&self) -> &'static str {
        "second order (JanusPipe WaveK): four phases FE/FF/BF/BE in waves of k microbatches; the bubble falls as 1/k, memory grows with k"
    }

    fn reference(&self) -> &'static str {
        "JanusPipe's WaveK (second-order MLIP training); `wave_k` sets k (default P)"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::FourPhase
    }

    fn parameters(&self) -> &'static [Parameter] {
        &[Parameter::WaveK]
    }

    fn parameter(&self, parameter: Parameter, ctx: &RunCtx) -> Option<usize> {
        (parameter == Parameter::WaveK).then(|| wave_size(ctx.wave_k, ctx.ranks, ctx.microbatches))
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        one_region(self.name(), ctx)?;
        match ctx.wave_k {
            Some(k) if k == 0 || k > ctx.microbatches => Err(ScheduleRule::WaveK {
                k,
                microbatches: ctx.microbatches,
            }),
            _ => Ok(()),
        }
    }

    fn rank_slots(&self, ctx: &RunCtx, _position: usize) -> Vec<Slot> {
        waves(
            ctx.microbatches,
            wave_size(ctx.wave_k, ctx.ranks, ctx.microbatches),
        )
    }

    /// With `k | M`: each of `M/k` waves pays one boundary bubble of `2(P − 1)·t`, and the
    /// step one more.
    fn formula(&self, ctx: &RunCtx, costs: Uniform) -> Option<Formula> {
        wave_formula(ctx, wave_size(ctx.wave_k, ctx.ranks, ctx.microbatches), costs)
    }
}

/// WaveK's step with waves of `k | M` microbatches, every phase taking `t`:
/// `(4M + 2(P − 1)(M/k + 1))·t` (none when `k ∤ M`: the trailing wave costs more).
pub(crate) fn wave_formula(ctx: &RunCtx, k: usize, costs: Uniform) -> Option<Formula> {
    let m = ctx.microbatches;
    if k == 0 || ctx.chunks != 1 || !m.is_multiple_of(k) {
        return None;
    }
    let (p, m, waves) = (ctx.ranks as f64, m as f64, (m / k) as f64);
    let boundary = 2.0 * (p - 1.0) * (waves + 1.0);
    Some(Formula {
        step: "(4M + 2(P − 1)(M/k + 1))·t, k | M",
        step_s: (4.0 * m + boundary) * costs.forward_s,
        bubble: "2(P − 1)(M/k + 1) / (4M + 2(P − 1)(M/k + 1))",
        bubble_fraction: boundary / (4.0 * m + boundary),
        memory: None,
        peak_activations: None,
    })
}

/// The unit size `k` WaveK runs: `wave_k`, else `P`, within `1..=M`.
pub fn wave_size(wave_k: Option<usize>, ranks: usize, microbatches: usize) -> usize {
    wave_k.unwrap_or(ranks).clamp(1, microbatches.max(1))
}

/// Second-order schedules run over one Sharded region (the whole model, or the part of it the
/// cut gives them): the four phases' turnarounds are defined for one pipeline pass each.
pub(crate) fn one_region(skeleton: &'static str, ctx: &RunCtx) -> Result<(), ScheduleRule> {
    if ctx.chunks != 1 {
        return Err(ScheduleRule::Chunks {
            rule: "four-phase-region",
            skeleton,
            want: 1,
            chunks: ctx.chunks,
            why: "each of its four phases is one pass over the pipeline",
        });
    }
    Ok(())
}

/// The order every rank runs, for waves of `k` microbatches (`k = 1`: `1f1b-2nd`).
pub fn waves(microbatches: usize, k: usize) -> Vec<Slot> {
    let k = k.max(1);
    let starts = (0..microbatches).step_by(k);
    let wave = |start: usize| start..(start + k).min(microbatches);
    let stream = |first: Phase, second: Phase| -> Vec<Slot> {
        starts
            .clone()
            .flat_map(|s| {
                wave(s)
                    .map(move |m| Slot::four(first, m))
                    .chain(wave(s).map(move |m| Slot::four(second, m)))
            })
            .collect()
    };
    let forward = stream(Phase::EnergyForward, Phase::ForceForward);
    let backward = stream(Phase::ForceBackward, Phase::EnergyBackward);
    let warmup = (2 * k.min(microbatches)).min(forward.len());
    let mut slots = Vec::with_capacity(forward.len() + backward.len());
    slots.extend(forward.iter().take(warmup));
    let mut rest = forward.iter().skip(warmup);
    for b in &backward {
        slots.push(*b);
        slots.extend(rest.next());
    }
    slots.extend(rest);
    slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn waves_by_hand() {
        // M = 3 in waves of 2: the first wave's FE and FF, then BF/BE of the waves alternating
        // with the rest of the forward-direction stream.
        assert_eq!(
            show(&waves(3, 2)),
            "0FE0 0FE1 0FF0 0FF1 0BF0 0FE2 0BF1 0FF2 0BE0 0BE1 0BF2 0BE2"
        );
        // k = 1 is 1F1B-2nd: one forward block (FE, FF), then backward-direction and
        // forward-direction slots in turn.
        assert_eq!(
            show(&waves(2, 1)),
            "0FE0 0FF0 0BF0 0FE1 0BE0 0FF1 0BF1 0BE1"
        );
        // k ≥ M: one wave.
        assert_eq!(show(&waves(2, 5)), show(&waves(2, 2)));
    }
}
