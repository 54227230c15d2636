//! One file per schedule, behind one trait and a registry. A schedule answers every question the
//! rest of the crate and the app ask about it — its name, layout and op set, its placement when
//! the scenario gives none, how its Replicated work joins a rank's stream (composition policy),
//! where it may stand in a cut, which parameters it reads, its own validity rules, each rank's
//! compute slots, and its textbook formula — so that no code outside this folder names a
//! schedule. Adding a schedule is one new file and one line in [`registry!`]'s list (the
//! architecture test counts the places).

pub mod listed;
pub mod skeleton;
pub mod slot;

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::vocab::layout::{Composition, Layout, PlacementKind};
use crate::vocab::parameter::Parameter;
use crate::vocab::phase::OpSet;

/// Declares every schedule's file and lists its skeleton in [`REGISTRY`]; the first is the
/// default a new region gets.
macro_rules! registry {
    ($first_file:ident::$first:ident $(, $file:ident::$constant:ident)* $(,)?) => {
        pub mod $first_file;
        pub use $first_file::$first;
        $(pub mod $file; pub use $file::$constant;)*

        /// Every skeleton a scenario may name, in the order the app lists them.
        pub static REGISTRY: &[Skeleton] = &[$first_file::$first $(, $file::$constant)*];

        /// The skeleton a new region gets when nothing else is known (the registry's first).
        pub const DEFAULT: Skeleton = $first_file::$first;
    };
}

registry! {
    one_f_one_b::ONE_F_ONE_B,
    gpipe::GPIPE,
    transpose::TRANSPOSE,
    nested::NESTED,
    looped_bfs::LOOPED_BFS,
    zb1p::ZB1P,
    zb2p::ZB2P,
    zbv::ZBV,
    vhalf::VHALF,
    vmin::VMIN,
    dualpipe::DUALPIPE,
    chimera::CHIMERA,
    zb_auto::ZB_AUTO,
    dualpipev::DUALPIPEV,
    one_f_one_b_2nd::ONE_F_ONE_B_2ND,
    wavek::WAVEK,
    hanayo::HANAYO,
}

/// What a schedule's rules and slots are computed from: the wavefront's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCtx {
    pub ranks: usize,
    pub microbatches: usize,
    /// Virtual stages per rank `v`: the Sharded regions of the wavefront.
    pub chunks: usize,
    /// The scenario's `wave_k` (WaveK's unit size; `None`: the schedule's default).
    pub wave_k: Option<usize>,
    /// The scenario's `activation_limit` (the automatic scheduler's memory limit, microbatches;
    /// `None`: the schedule's default).
    pub activation_limit: Option<usize>,
}

impl RunCtx {
    /// The value the scenario gives `parameter`, if any.
    pub fn given(&self, parameter: Parameter) -> Option<usize> {
        match parameter {
            Parameter::WaveK => self.wave_k,
            Parameter::ActivationLimit => self.activation_limit,
        }
    }

    /// The same shape with `parameter` not given (its schedule's default runs).
    pub fn without(self, parameter: Parameter) -> RunCtx {
        match parameter {
            Parameter::WaveK => RunCtx {
                wave_k: None,
                ..self
            },
            Parameter::ActivationLimit => RunCtx {
                activation_limit: None,
                ..self
            },
        }
    }
}

/// Where a region stands in the cut, for the schedules that may stand only in some places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPosition {
    /// The region, 1-based.
    pub region: usize,
    /// How many regions the cut makes.
    pub regions: usize,
    /// Whether some region of the cut is Sharded (a backbone to stand around).
    pub backbone: bool,
}

/// Costs that are the same for every stage and microbatch: the setting of a schedule's textbook
/// formula (with free links and no runtime overhead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    /// One stage's forward of one microbatch; of a four-phase schedule, each of its phases.
    pub forward_s: f64,
    /// One stage's whole backward of one microbatch (a split one: its two halves together).
    pub backward_s: f64,
}

impl Uniform {
    /// Whether the backward takes `times` the forward, within rounding (read off a simulation,
    /// the costs are means).
    pub fn backward_is(self, times: f64) -> bool {
        (self.backward_s - times * self.forward_s).abs() <= 1e-9 * self.forward_s.abs().max(1e-12)
    }
}

/// `M ≥ least` for `skeleton`, else its rule `rule` (`why`: whose requirement, in words).
pub(crate) fn microbatches_at_least(
    ctx: &RunCtx,
    least: usize,
    rule: &'static str,
    skeleton: &'static str,
    why: &'static str,
) -> Result<(), ScheduleRule> {
    if ctx.microbatches < least {
        return Err(ScheduleRule::TooFewMicrobatches {
            rule,
            skeleton,
            microbatches: ctx.microbatches,
            least,
            why,
        });
    }
    Ok(())
}

/// A schedule's textbook figures under [`Uniform`] costs: what the papers write beside their
/// pictures, to read a simulated step against.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    /// The step's closed form, as the papers write it (`(M + P − 1)·(t_F + t_B)`).
    pub step: &'static str,
    /// The step under the given costs, seconds.
    pub step_s: f64,
    /// The bubble fraction's closed form (`(P − 1)/(M + P − 1)`).
    pub bubble: &'static str,
    /// The idle share of `P ×` the step.
    pub bubble_fraction: f64,
    /// The activation memory's closed form, in microbatches' activations of one stage (`A`),
    /// where one exists (`min(P, M)·A`).
    pub memory: Option<&'static str>,
    /// The most microbatches' activations one rank holds at once, in units of `A`.
    pub peak_activations: Option<f64>,
}

/// What a schedule that orders by costs (the zero-bubble automatic scheduler) is given: each
/// stage of the wavefront's one chunk, in stage order, with its times, and the time of one
/// transfer between stages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StageCosts {
    pub forward_s: Vec<f64>,
    /// The input half `I` of the split backward.
    pub input_s: Vec<f64>,
    /// The weight half `W`.
    pub weight_s: Vec<f64>,
    /// The share of a microbatch's activations its input half frees (the rest at `W`).
    pub input_share: Vec<f64>,
    pub transfer_s: f64,
}

/// A rule of one schedule that a scenario breaks: each names the rule, and the scenario field it
/// is about ([`ScheduleRule::field`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleRule {
    #[error(
        "rule `{rule}`: {skeleton} runs exactly {want} Sharded regions ({why}); the schedule gives {chunks}"
    )]
    Chunks {
        rule: &'static str,
        skeleton: &'static str,
        want: usize,
        chunks: usize,
        why: &'static str,
    },
    #[error(
        "rule `{rule}`: {skeleton} needs at least as many microbatches as stages ({why}): M = {microbatches} < {least}"
    )]
    TooFewMicrobatches {
        rule: &'static str,
        skeleton: &'static str,
        microbatches: usize,
        least: usize,
        why: &'static str,
    },
    #[error(
        "rule `wave-k`: `wave_k` = {k}; WaveK's unit size must be between 1 and M = {microbatches}"
    )]
    WaveK { k: usize, microbatches: usize },
    #[error(
        "rule `interleaved-rounds`: {schedule} runs microbatches in rounds of M / max(1, ⌊M/P⌋); M = {microbatches} is not a multiple of the {rounds} rounds that P = {ranks} gives (try M = {lower} or M = {upper})"
    )]
    InterleavedRounds {
        /// Which interleaved schedule (`interleaved 1F1B`, `interleaved zero bubble`).
        schedule: &'static str,
        microbatches: usize,
        ranks: usize,
        rounds: usize,
        lower: usize,
        upper: usize,
    },
    #[error(
        "rule `{rule}`: {skeleton} needs the {what} to be a multiple of {of} ({why}); {symbol} = {value}"
    )]
    Multiple {
        rule: &'static str,
        skeleton: &'static str,
        /// `number of ranks`, `number of microbatches`.
        what: &'static str,
        /// `P`, `M`.
        symbol: &'static str,
        value: usize,
        of: usize,
        why: &'static str,
    },
    #[error(
        "rule `{rule}`: {skeleton} {grows}; here {measure} = {value}, more than this version orders ({max})"
    )]
    Size {
        rule: &'static str,
        skeleton: &'static str,
        /// What its work grows with, in words.
        grows: &'static str,
        /// The measure, as a formula (`P·(P + M)`).
        measure: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "rule `activation-limit`: `activation_limit` = {limit}; a stage must be able to hold at least one microbatch's activations"
    )]
    ActivationLimit { limit: usize },
    #[error("rule `{rule}`: region {region} is `{skeleton}`, which is defined for {stands}")]
    Position {
        rule: &'static str,
        skeleton: &'static str,
        region: usize,
        /// Where it may stand, in words.
        stands: &'static str,
    },
}

impl ScheduleRule {
    /// The short name of the rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            ScheduleRule::Chunks { rule, .. }
            | ScheduleRule::TooFewMicrobatches { rule, .. }
            | ScheduleRule::Position { rule, .. }
            | ScheduleRule::Multiple { rule, .. }
            | ScheduleRule::Size { rule, .. } => rule,
            ScheduleRule::WaveK { .. } => "wave-k",
            ScheduleRule::ActivationLimit { .. } => "activation-limit",
            ScheduleRule::InterleavedRounds { .. } => "interleaved-rounds",
        }
    }

    /// The scenario field the rule is about, as a path (`schedule`, `schedule[0]`).
    pub fn field(&self) -> String {
        match self {
            ScheduleRule::Chunks { .. } | ScheduleRule::Size { .. } => "schedule".into(),
            ScheduleRule::TooFewMicrobatches { .. } | ScheduleRule::InterleavedRounds { .. } => {
                "microbatches".into()
            }
            ScheduleRule::WaveK { .. } => Parameter::WaveK.field().into(),
            ScheduleRule::ActivationLimit { .. } => Parameter::ActivationLimit.field().into(),
            ScheduleRule::Multiple { symbol, .. } => match *symbol {
                "P" => "ranks",
                // The chunks a rank runs: the schedule's Sharded regions.
                "v" => "schedule",
                _ => "microbatches",
            }
            .into(),
            ScheduleRule::Position { region, .. } => {
                format!("schedule[{}]", region.saturating_sub(1))
            }
        }
    }
}

/// A schedule: one skeleton of the algebra. Everything but its name, words, layout and slots has
/// a default that fits a plain Sharded schedule.
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
    fn placement(&self) -> PlacementKind {
        PlacementKind::Default
    }
    /// How its work joins each rank's stream, for a Replicated schedule (none: a Sharded one
    /// has slots of its own).
    fn composition(&self) -> Option<Composition> {
        None
    }
    /// Whether it may stand at `position` in the cut (default: anywhere).
    fn check_position(&self, _position: &CutPosition) -> Result<(), ScheduleRule> {
        Ok(())
    }
    /// The scenario parameters it reads beyond ranks, microbatches and the cut.
    fn parameters(&self) -> &'static [Parameter] {
        &[]
    }
    /// The value it runs `parameter` with (the scenario's, else its default), for a parameter it
    /// reads.
    fn parameter(&self, _parameter: Parameter, _ctx: &RunCtx) -> Option<usize> {
        None
    }
    /// Whether it runs any number `v` of chunks a rank, interleaving them in its steady state
    /// (a tuner may then spread its stages over more virtual stages).
    fn interleaves(&self) -> bool {
        false
    }
    /// Whether, under a placement its slots do not assume (a fold), an order list-scheduled
    /// over that placement under 1F1B's bound (a forward only under a cap on the activations a
    /// rank holds) is this schedule run there: the derivation then
    /// keeps the shorter of its slots and that order ([`crate::graph::any_placement`]).
    fn lists_over_any_placement(&self) -> bool {
        false
    }
    /// Whether its slots are themselves list-scheduled in units of time
    /// ([`crate::schedules::listed`]: Hanayo's waves), so that the same runs with each stage's
    /// own times may be shorter (`crate::tune::costed::listed_by_times`).
    fn slots_are_listed(&self) -> bool {
        false
    }
    /// The bound on the stages' activations a rank holds that an order list-scheduled over a
    /// placement its slots do not assume keeps to, in words and as a count, where the schedule
    /// controls its memory (V-Half, V-Min); `None`: zero bubble's or 1F1B's.
    fn listed_bound(&self, _ctx: &RunCtx) -> Option<(&'static str, usize)> {
        None
    }
    /// The schedule it is with its backward split into `I` and `W` (zero bubble: `1f1b`), where
    /// it is one: a tuner's split-backward move goes from that one to this.
    fn splits_backward_of(&self) -> Option<Skeleton> {
        None
    }
    /// Its own validity rules for a wavefront of this shape, each rejection named.
    fn check(&self, _ctx: &RunCtx) -> Result<(), ScheduleRule> {
        Ok(())
    }
    /// The compute slots, in execution order, of the rank at `position` along the wavefront's
    /// first chunk (the rank itself under the default placement and the V fold); empty for a
    /// Replicated schedule.
    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot>;
    /// Every position's slots at once (a schedule that orders the whole pipeline in one pass
    /// computes it once, not once a rank).
    fn slots(&self, ctx: &RunCtx) -> Vec<Vec<Slot>> {
        (0..ctx.ranks).map(|r| self.rank_slots(ctx, r)).collect()
    }
    /// Whether it runs two directions (DualPipe, Chimera): each Sharded region gets a mirror
    /// (the same layers, their parameters copied, its stages on the ranks in reverse), the first
    /// half of the microbatches runs through the regions and the second half through their
    /// mirrors; a slot of chunk `c` names the mirror's work for a second-half microbatch.
    fn bidirectional(&self) -> bool {
        false
    }
    /// Every position's slots ordered by the stages' real costs, for a schedule that orders by
    /// them (`None`: its slots do not depend on costs). The analytic derivation runs
    /// [`Schedule::slots`] (unit costs); wherever the simulator runs, these replace them.
    fn costed_slots(&self, _ctx: &RunCtx, _costs: &StageCosts) -> Option<Vec<Vec<Slot>>> {
        None
    }
    /// Its textbook formula under uniform costs, where one exists for this shape.
    fn formula(&self, _ctx: &RunCtx, _costs: Uniform) -> Option<Formula> {
        None
    }
    /// Why it states no closed form at any shape, where it states none (`None`: it gives
    /// [`Schedule::formula`] at some shapes).
    fn no_formula(&self) -> Option<&'static str> {
        None
    }
}

/// Slots in action notation without stages (`0F0 1B2`; `+` joins an overlapped pair).
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
    }
}
