//! One file per schedule, behind one trait and a registry. A schedule says its name (the
//! scenario's skeleton string), its layout, its own validity rules and, for a Sharded schedule,
//! each rank's compute slots over the wavefront's chunks. Adding a schedule is one new file and
//! one line in [`REGISTRY`]; nothing else matches on schedule names.
//!
//! A Replicated schedule has no slots of its own: its work joins each rank's stream through its
//! composition policy ([`crate::graph::compose`]).

pub mod dualpipev;
pub mod gpipe;
pub mod looped_bfs;
pub mod nested;
pub mod one_f_one_b;
pub mod one_f_one_b_2nd;
pub mod transpose;
pub mod wavek;
pub mod zb1p;
pub mod zbv;

pub use dualpipev::DUALPIPEV;
pub use gpipe::GPIPE;
pub use looped_bfs::LOOPED_BFS;
pub use nested::NESTED;
pub use one_f_one_b::ONE_F_ONE_B;
pub use one_f_one_b_2nd::ONE_F_ONE_B_2ND;
pub use transpose::TRANSPOSE;
pub use wavek::WAVEK;
pub use zb1p::ZB1P;
pub use zbv::ZBV;

use crate::algebra::placement::PlacementSpec;
use crate::algebra::skeleton::Skeleton;
use crate::algebra::validity::ValidityError;
use crate::vocab::ids::{Chunk, Mb};
use crate::vocab::layout::Layout;
use crate::vocab::phase::OpSet;
use crate::vocab::phase::Phase;

/// Every skeleton a scenario may name, in the order the app lists them.
pub static REGISTRY: &[Skeleton] = &[
    one_f_one_b::ONE_F_ONE_B,
    gpipe::GPIPE,
    transpose::TRANSPOSE,
    nested::NESTED,
    looped_bfs::LOOPED_BFS,
    zb1p::ZB1P,
    zbv::ZBV,
    dualpipev::DUALPIPEV,
    one_f_one_b_2nd::ONE_F_ONE_B_2ND,
    wavek::WAVEK,
];

/// What a schedule's rules and slots are computed from: the wavefront's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCtx {
    pub ranks: usize,
    pub microbatches: usize,
    /// Virtual stages per rank `v`: the Sharded regions of the wavefront.
    pub chunks: usize,
    /// The scenario's `wave_k` (WaveK's unit size; `None`: the schedule's default).
    pub wave_k: Option<usize>,
}

/// One compute slot of a rank: chunk `c` (the wavefront's `c`-th region), its phase (`F`, a
/// whole backward `B`, the halves `I`/`W` of a split one, or one of the four phases of a
/// second-order schedule), microbatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub chunk: Chunk,
    pub phase: Phase,
    pub mb: Mb,
    /// This slot and the next one run overlapped, as one compute slot (DualPipeV's
    /// `(F;B)OVERLAP_F_B`: a forward first, then a backward).
    pub overlaps_next: bool,
}

impl Slot {
    fn new(chunk: usize, phase: Phase, mb: usize) -> Slot {
        Slot {
            chunk: Chunk::new(chunk),
            phase,
            mb: Mb::new(mb),
            overlaps_next: false,
        }
    }

    pub fn forward(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Forward, mb)
    }

    /// A whole backward `B`.
    pub fn backward(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Backward, mb)
    }

    /// The input half `I` of a split backward.
    pub fn input(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Input, mb)
    }

    /// The weight half `W` of a split backward.
    pub fn weight(chunk: usize, mb: usize) -> Slot {
        Slot::new(chunk, Phase::Weight, mb)
    }

    /// One of the four phases of a second-order schedule.
    pub fn four(phase: Phase, mb: usize) -> Slot {
        Slot::new(0, phase, mb)
    }

    /// This slot, run overlapped with the slot that follows it.
    pub fn overlapped(self) -> Slot {
        Slot {
            overlaps_next: true,
            ..self
        }
    }
}

/// The next microbatch of `chunk` from a per-chunk counter, advancing it (0 for a chunk out of
/// range).
pub(crate) fn take(counters: &mut [usize], chunk: usize) -> usize {
    counters.get_mut(chunk).map_or(0, |n| {
        *n += 1;
        *n - 1
    })
}

/// The chunk rotation of PyTorch's interleaved schedules (`_get_1f1b_rank_ops`): microbatches go
/// in rounds of `R = M / max(1, ⌊M/P⌋)` per chunk; the rank at `position` runs
/// `min((v−1)·R + hop·(P−1−position), v·M)` warmup forwards (`hop` = 2 for 1F1B, 1 for zero
/// bubble); forward step `s` runs chunk `⌊s/R⌋ mod v`, backward step `s` chunk
/// `v − 1 − ⌊(s − warmup)/R⌋ mod v`.
pub(crate) struct Rotation {
    pub(crate) chunks: usize,
    per_round: usize,
    /// Forwards of every chunk: `v·M`.
    pub(crate) total: usize,
    pub(crate) warmup: usize,
}

impl Rotation {
    pub(crate) fn new(ctx: &RunCtx, position: usize, hop: usize) -> Rotation {
        let (p, m, v) = (ctx.ranks, ctx.microbatches, ctx.chunks);
        let rounds = (m / p.max(1)).max(1);
        let per_round = (m / rounds).max(1);
        let total = v * m;
        let warmup =
            (v.saturating_sub(1) * per_round + hop * p.saturating_sub(1 + position)).min(total);
        Rotation {
            chunks: v,
            per_round,
            total,
            warmup,
        }
    }

    pub(crate) fn forward_chunk(&self, step: usize) -> usize {
        (step / self.per_round) % self.chunks
    }

    /// For a step at or after the warmup.
    pub(crate) fn backward_chunk(&self, step: usize) -> usize {
        self.chunks - 1 - ((step - self.warmup) / self.per_round) % self.chunks
    }
}

/// A schedule: one skeleton of the algebra.
pub trait Schedule: Sync {
    /// The scenario's skeleton string.
    fn name(&self) -> &'static str;
    /// What it is, in one line (the app's skeleton menu).
    fn summary(&self) -> &'static str;
    /// Where its order comes from (a paper, a PyTorch schedule class).
    fn reference(&self) -> &'static str;
    fn layout(&self) -> Layout;
    /// Its events per stage and microbatch.
    fn ops(&self) -> OpSet {
        OpSet::ForwardBackward
    }
    /// Its stage → rank map when the scenario gives none.
    fn placement(&self) -> PlacementSpec {
        PlacementSpec::Default
    }
    /// Its own validity rules for a wavefront of this shape, each rejection named.
    fn check(&self, _ctx: &RunCtx) -> Result<(), ValidityError> {
        Ok(())
    }
    /// The compute slots, in execution order, of the rank at `position` along the wavefront's
    /// first chunk (the rank itself under the default placement and the V fold); empty for a
    /// Replicated schedule.
    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot>;
}

#[cfg(test)]
pub(crate) fn show(slots: &[Slot]) -> String {
    slots
        .iter()
        .map(|s| {
            let sep = if s.overlaps_next { "+" } else { " " };
            format!("{}{}{}{sep}", s.chunk, s.phase.code(), s.mb)
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_by_name() {
        for (i, s) in REGISTRY.iter().enumerate() {
            assert_eq!(Skeleton::named(s.name()), Some(*s));
            assert!(REGISTRY.iter().skip(i + 1).all(|t| t.name() != s.name()));
        }
        assert_eq!(Skeleton::named("2f2b"), None);
        // Every schedule file's skeleton is read by its name.
        for s in [
            ONE_F_ONE_B,
            GPIPE,
            TRANSPOSE,
            LOOPED_BFS,
            ZB1P,
            ZBV,
            DUALPIPEV,
            ONE_F_ONE_B_2ND,
            WAVEK,
        ] {
            assert_eq!(Skeleton::named(s.name()), Some(s), "{s} is not registered");
        }
    }
}
