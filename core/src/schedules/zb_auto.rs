//! The zero-bubble paper's automatic scheduler (Qi et al., "Zero Bubble Pipeline Parallelism",
//! ICLR 2024, §3), as its heuristic runs in the authors' code (`zb.py`, `initial_solution` and
//! `manual_order`): given each stage's `F`, `I` (their `B`) and `W` times, the time of a transfer
//! and a memory limit of `L` microbatches' activations a stage, it writes every stage's order
//! of forwards, input halves and weight halves. One chunk a rank.
//!
//! **The heuristic.** Microbatch 0's forward runs down every stage; each stage then runs as many
//! more forwards as fit before microbatch 0's input half can reach it (within the memory limit;
//! with `allow_bubble_before_first_b`, while the forward would end before the gradient arrives,
//! else while the stage is still free before it), no stage more than the one before it; then
//! microbatch 0's input halves run up the stages. For each later microbatch `i`: each stage that
//! has forwards left runs its next one (with `prioritize_b`, a stage two forwards ahead of the
//! next may skip it if the next stage's forward and input half would otherwise wait), no stage
//! more than the one after it; before each forward and each input half a stage runs pending
//! weight halves while memory is over the limit, and while one fits in the gap before the op's
//! input arrives — and, with `no_bubble_greedy`, one more when the gap left is within the worst
//! stage's bubble so far; the first stage drains its weight halves once its forwards are done;
//! the remaining weight halves close every stage. Of the eight combinations of the three flags,
//! the order whose longest stage (first forward to last weight half) is shortest wins, the
//! first on a tie. Where some combination cannot keep a stage within the limit, the reference
//! stops ("Cannot fit memory"); so does this, and the schedule falls back to its order at unit
//! costs.
//!
//! The analytic derivation orders with unit costs (`t_F = t_I = t_W = 1`, free transfers, half
//! of the activations freed by `I`); wherever the simulator runs, the stages' real times order
//! it ([`Schedule::costed_slots`]). `activation_limit` sets `L` (default `P`, 1F1B's memory:
//! the paper's ZB-1p; `2P`: ZB-2p).

use crate::schedules::skeleton::Skeleton;
use crate::schedules::slot::Slot;
use crate::schedules::{RunCtx, Schedule, ScheduleRule, StageCosts};
use crate::vocab::layout::Layout;
use crate::vocab::parameter::Parameter;
use crate::vocab::phase::OpSet;

/// `zb_auto`.
#[derive(Debug)]
pub struct ZbAuto;

pub const ZB_AUTO: Skeleton = Skeleton::of(&ZbAuto);

impl Schedule for ZbAuto {
    fn name(&self) -> &'static str {
        "zb_auto"
    }

    fn summary(&self) -> &'static str {
        "zero bubble, ordered by the stages' own F, I, W and transfer times under a memory limit (the paper's automatic scheduler)"
    }

    fn reference(&self) -> &'static str {
        "the automatic scheduler of the zero-bubble paper (Qi et al., ICLR 2024, §3), its heuristic in the authors' `zb.py`"
    }

    fn layout(&self) -> Layout {
        Layout::Sharded
    }

    fn ops(&self) -> OpSet {
        OpSet::SplitBackward
    }

    fn parameters(&self) -> &'static [Parameter] {
        &[Parameter::ActivationLimit]
    }

    fn parameter(&self, parameter: Parameter, ctx: &RunCtx) -> Option<usize> {
        (parameter == Parameter::ActivationLimit).then(|| limit(ctx))
    }

    fn check(&self, ctx: &RunCtx) -> Result<(), ScheduleRule> {
        if ctx.chunks != 1 {
            return Err(ScheduleRule::Chunks {
                rule: "zb_auto-chunks",
                skeleton: "zb_auto",
                want: 1,
                chunks: ctx.chunks,
                why: "the automatic scheduler orders one stage a rank",
            });
        }
        if ctx.activation_limit == Some(0) {
            return Err(ScheduleRule::ActivationLimit { limit: 0 });
        }
        Ok(())
    }

    fn rank_slots(&self, ctx: &RunCtx, position: usize) -> Vec<Slot> {
        self.slots(ctx).into_iter().nth(position).unwrap_or_default()
    }

    fn slots(&self, ctx: &RunCtx) -> Vec<Vec<Slot>> {
        let p = ctx.ranks;
        let unit = StageCosts {
            forward_s: vec![1.0; p],
            input_s: vec![1.0; p],
            weight_s: vec![1.0; p],
            input_share: vec![0.5; p],
            transfer_s: 0.0,
        };
        schedule(&unit, ctx.microbatches, limit(ctx)).unwrap_or_default()
    }

    fn costed_slots(&self, ctx: &RunCtx, costs: &StageCosts) -> Option<Vec<Vec<Slot>>> {
        if costs.forward_s.len() != ctx.ranks {
            return None;
        }
        schedule(costs, ctx.microbatches, limit(ctx))
    }

    fn no_formula(&self) -> Option<&'static str> {
        Some("a heuristic orders it by the stages' own costs under the memory limit, so its step has no closed form")
    }
}

/// The memory limit `L` the scenario runs with (default `P`).
fn limit(ctx: &RunCtx) -> usize {
    ctx.activation_limit.unwrap_or(ctx.ranks).max(1)
}

/// The best order of the eight flag combinations, as slots of each stage; `None` where the
/// heuristic stops (a stage it cannot keep within the limit).
pub(crate) fn schedule(costs: &StageCosts, m: usize, limit: usize) -> Option<Vec<Vec<Slot>>> {
    let mut best: Option<(f64, Orders)> = None;
    for allow_bubble in [true, false] {
        for prioritize_input in [true, false] {
            for greedy in [true, false] {
                let flags = Flags {
                    allow_bubble,
                    prioritize_input,
                    greedy,
                };
                let (time, order) = Heuristic::new(costs, m, limit)?.run(flags)?;
                if best.as_ref().is_none_or(|(t, _)| time < *t) {
                    best = Some((time, order));
                }
            }
        }
    }
    let (_, order) = best?;
    Some(
        order
            .into_iter()
            .map(|ops| {
                ops.into_iter()
                    .map(|(kind, mb)| match kind {
                        Kind::Forward => Slot::forward(0, mb),
                        Kind::Input => Slot::input(0, mb),
                        Kind::Weight => Slot::weight(0, mb),
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Every stage's ops in the order it runs them, as (kind, microbatch).
type Orders = Vec<Vec<(Kind, usize)>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Forward,
    Input,
    Weight,
}

/// `manual_order`'s three switches.
#[derive(Debug, Clone, Copy)]
struct Flags {
    /// A stage's first extra forwards may end up to the moment microbatch 0's input half
    /// arrives (else they start only while the stage would otherwise wait).
    allow_bubble: bool,
    /// A stage two forwards ahead of the next may leave its forward for later.
    prioritize_input: bool,
    /// A weight half into a gap no wider than the worst stage's bubble so far.
    greedy: bool,
}

/// One run of the heuristic: the stages' counters, clocks and memory.
struct Heuristic<'a> {
    costs: &'a StageCosts,
    p: usize,
    m: usize,
    limit: f64,
    /// Ops done of each kind, a stage.
    forwards: Vec<usize>,
    inputs: Vec<usize>,
    weights: Vec<usize>,
    /// Activations held (microbatches' worth), the clock and the idle time, a stage.
    memory: Vec<f64>,
    clock: Vec<f64>,
    bubble: Vec<f64>,
    /// The largest of `bubble` (bubbles only grow).
    worst: f64,
    /// The end of every forward and input half, by `(stage, mb)`.
    forward_end: Vec<f64>,
    input_end: Vec<f64>,
    /// When each stage's first forward ended.
    first_forward_end: Vec<f64>,
    order: Orders,
}

impl<'a> Heuristic<'a> {
    fn new(costs: &'a StageCosts, m: usize, limit: usize) -> Option<Heuristic<'a>> {
        let p = costs.forward_s.len();
        if [&costs.input_s, &costs.weight_s, &costs.input_share]
            .iter()
            .any(|v| v.len() != p)
            || p == 0
            || m == 0
        {
            return None;
        }
        let cells = p.checked_mul(m)?;
        Some(Heuristic {
            costs,
            p,
            m,
            limit: limit as f64,
            forwards: vec![0; p],
            inputs: vec![0; p],
            weights: vec![0; p],
            memory: vec![0.0; p],
            clock: vec![0.0; p],
            bubble: vec![0.0; p],
            worst: 0.0,
            forward_end: vec![0.0; cells],
            input_end: vec![0.0; cells],
            first_forward_end: vec![0.0; p],
            order: vec![Vec::new(); p],
        })
    }

    fn cost(&self, kind: Kind, stage: usize) -> f64 {
        let list = match kind {
            Kind::Forward => &self.costs.forward_s,
            Kind::Input => &self.costs.input_s,
            Kind::Weight => &self.costs.weight_s,
        };
        list.get(stage).copied().unwrap_or(0.0)
    }

    /// What an op adds to its stage's memory: a forward a microbatch, its input half frees its
    /// share, the weight half the rest.
    fn memory_of(&self, kind: Kind, stage: usize) -> f64 {
        let share = self.costs.input_share.get(stage).copied().unwrap_or(0.5);
        match kind {
            Kind::Forward => 1.0,
            Kind::Input => -share,
            Kind::Weight => share - 1.0,
        }
    }

    fn done(&self, kind: Kind, stage: usize) -> usize {
        let list = match kind {
            Kind::Forward => &self.forwards,
            Kind::Input => &self.inputs,
            Kind::Weight => &self.weights,
        };
        list.get(stage).copied().unwrap_or(0)
    }

    fn forward_end(&self, stage: usize, mb: usize) -> f64 {
        self.forward_end
            .get(stage * self.m + mb)
            .copied()
            .unwrap_or(0.0)
    }

    fn input_end(&self, stage: usize, mb: usize) -> f64 {
        self.input_end.get(stage * self.m + mb).copied().unwrap_or(0.0)
    }

    fn worst_bubble(&self) -> f64 {
        self.worst
    }

    /// Runs the next op of `kind` on `stage` (`put`): as soon as the stage is free and its input
    /// is in.
    fn put(&mut self, stage: usize, kind: Kind) {
        let mb = self.done(kind, stage);
        let cost = self.cost(kind, stage);
        let at = |v: &[f64]| v.get(stage).copied().unwrap_or(0.0);
        let free_end = at(&self.clock) + cost;
        let mut end = free_end;
        if kind == Kind::Forward && stage > 0 {
            end = end.max(self.forward_end(stage - 1, mb) + self.costs.transfer_s + cost);
        }
        if kind == Kind::Input && stage + 1 < self.p {
            end = end.max(self.input_end(stage + 1, mb) + self.costs.transfer_s + cost);
        }
        if self.done(Kind::Forward, stage) > 0
            && let Some(b) = self.bubble.get_mut(stage)
        {
            *b += end - free_end;
            self.worst = self.worst.max(*b);
        }
        if let Some(c) = self.clock.get_mut(stage) {
            *c = end;
        }
        let cell = stage * self.m + mb;
        match kind {
            Kind::Forward => {
                if let Some(e) = self.forward_end.get_mut(cell) {
                    *e = end;
                }
                if mb == 0
                    && let Some(e) = self.first_forward_end.get_mut(stage)
                {
                    *e = end;
                }
            }
            Kind::Input => {
                if let Some(e) = self.input_end.get_mut(cell) {
                    *e = end;
                }
            }
            Kind::Weight => {}
        }
        let delta = self.memory_of(kind, stage);
        if let Some(mem) = self.memory.get_mut(stage) {
            *mem += delta;
        }
        let counter = match kind {
            Kind::Forward => &mut self.forwards,
            Kind::Input => &mut self.inputs,
            Kind::Weight => &mut self.weights,
        };
        if let Some(n) = counter.get_mut(stage) {
            *n += 1;
        }
        if let Some(o) = self.order.get_mut(stage) {
            o.push((kind, mb));
        }
    }

    fn over(&self, stage: usize, kind: Kind) -> bool {
        self.memory.get(stage).copied().unwrap_or(0.0) + self.memory_of(kind, stage) > self.limit
    }

    /// Before an op of `kind` on `stage` whose input arrives at `ready`: weight halves while the
    /// stage is over its limit (`None`: none left to run), then into the gap before `ready`.
    fn weights_before(
        &mut self,
        stage: usize,
        kind: Kind,
        ready: Option<f64>,
        greedy: bool,
    ) -> Option<()> {
        while self.over(stage, kind) {
            if self.done(Kind::Weight, stage) >= self.done(Kind::Input, stage) {
                return None;
            }
            self.put(stage, Kind::Weight);
        }
        let Some(ready) = ready else {
            return Some(());
        };
        let clock = |h: &Self| h.clock.get(stage).copied().unwrap_or(0.0);
        let pending = |h: &Self| h.done(Kind::Weight, stage) < h.done(Kind::Input, stage);
        while pending(self) && clock(self) + self.cost(Kind::Weight, stage) <= ready {
            self.put(stage, Kind::Weight);
        }
        if pending(self) && clock(self) < ready {
            let gap = ready - clock(self);
            let bubble = self.bubble.get(stage).copied().unwrap_or(0.0);
            if gap > self.worst_bubble() - bubble || greedy {
                self.put(stage, Kind::Weight);
            }
        }
        Some(())
    }

    /// The heuristic under `flags`: the longest stage's time (its first forward's start to its
    /// last weight half's end) and every stage's order; `None` where it cannot keep the limit.
    fn run(mut self, flags: Flags) -> Option<(f64, Orders)> {
        let (p, m) = (self.p, self.m);
        let comm = self.costs.transfer_s;
        for i in 0..m {
            let mut extra = vec![0usize; p];
            if i == 0 {
                for j in 0..p {
                    self.put(j, Kind::Forward);
                }
                // Forwards that fit before microbatch 0's input half reaches each stage.
                let mut arrives = 0.0;
                for j in (0..p).rev() {
                    if j + 1 == p {
                        arrives = self.forward_end(j, 0) + self.cost(Kind::Input, j);
                        continue;
                    }
                    let mut memory = self.memory.get(j).copied().unwrap_or(0.0);
                    let mut clock = self.clock.get(j).copied().unwrap_or(0.0);
                    let forward = self.cost(Kind::Forward, j);
                    let mut n = 0;
                    while self.done(Kind::Forward, j) + n < m && memory + 1.0 <= self.limit {
                        let stop = if flags.allow_bubble {
                            clock + forward > arrives + comm
                        } else {
                            clock >= arrives + comm
                        };
                        if stop {
                            break;
                        }
                        memory += 1.0;
                        clock += forward;
                        n += 1;
                    }
                    if let Some(e) = extra.get_mut(j) {
                        *e = n;
                    }
                    arrives = clock.max(arrives + comm) + self.cost(Kind::Input, j);
                }
                // No stage runs more extra forwards than the one before it.
                for j in 1..p {
                    let before = extra.get(j - 1).copied().unwrap_or(0);
                    let done = self.done(Kind::Forward, j);
                    if let Some(e) = extra.get_mut(j) {
                        while *e > 0 && *e >= before && done + *e < m {
                            *e -= 1;
                        }
                    }
                }
                for (j, &n) in extra.iter().enumerate() {
                    for _ in 0..n {
                        self.put(j, Kind::Forward);
                    }
                }
                for j in (0..p).rev() {
                    self.put(j, Kind::Input);
                }
                continue;
            }
            for j in 0..p {
                let f = self.done(Kind::Forward, j);
                if f >= m {
                    continue;
                }
                if flags.prioritize_input && j + 1 < p && f >= self.done(Kind::Forward, j + 1) + 2
                {
                    let next_clock = self.clock.get(j + 1).copied().unwrap_or(0.0);
                    let next_plus = next_clock
                        + self.cost(Kind::Forward, j + 1)
                        + self.cost(Kind::Input, j + 1)
                        + comm;
                    let clock = self.clock.get(j).copied().unwrap_or(0.0);
                    if clock >= next_plus {
                        continue;
                    }
                    // The weight halves the forward's memory would need first.
                    let mut memory = self.memory.get(j).copied().unwrap_or(0.0) + 1.0;
                    let (mut weight_s, mut w) = (0.0, 0);
                    while memory > self.limit
                        && self.done(Kind::Weight, j) + w < self.done(Kind::Input, j)
                    {
                        weight_s += self.cost(Kind::Weight, j);
                        memory += self.memory_of(Kind::Weight, j);
                        w += 1;
                    }
                    if clock + self.cost(Kind::Forward, j) + weight_s <= next_plus {
                        if let Some(e) = extra.get_mut(j) {
                            *e = 1;
                        }
                        continue;
                    }
                    let bubble = self.bubble.get(j).copied().unwrap_or(0.0);
                    if next_plus - clock <= self.worst_bubble() - bubble {
                        continue;
                    }
                }
                if let Some(e) = extra.get_mut(j) {
                    *e = 1;
                }
            }
            // No stage runs a forward the stage after it does not.
            for j in (0..p.saturating_sub(1)).rev() {
                let after = extra.get(j + 1).copied().unwrap_or(0);
                if let Some(e) = extra.get_mut(j) {
                    *e = (*e).min(after);
                }
            }
            for j in 0..p {
                if extra.get(j).copied().unwrap_or(0) == 0 {
                    continue;
                }
                let ready = (j > 0).then(|| {
                    self.forward_end(j - 1, self.done(Kind::Forward, j)) + comm
                });
                self.weights_before(j, Kind::Forward, ready, flags.greedy)?;
                self.put(j, Kind::Forward);
            }
            for j in (0..p).rev() {
                if self.done(Kind::Input, j) != i {
                    return None;
                }
                let ready = (j + 1 < p).then(|| self.input_end(j + 1, i) + comm);
                self.weights_before(j, Kind::Input, ready, flags.greedy)?;
                if j == 0 && self.done(Kind::Forward, j) == m {
                    while self.done(Kind::Weight, j) < self.done(Kind::Input, j) {
                        self.put(j, Kind::Weight);
                    }
                }
                self.put(j, Kind::Input);
            }
        }
        for j in 0..p {
            while self.done(Kind::Weight, j) < m {
                self.put(j, Kind::Weight);
            }
        }
        // The longest stage, from its first forward's start to its last weight half's end.
        let time = (0..p)
            .map(|j| {
                self.clock.get(j).copied().unwrap_or(0.0)
                    - self.first_forward_end.get(j).copied().unwrap_or(0.0)
                    + self.cost(Kind::Forward, j)
            })
            .fold(0.0, f64::max);
        Some((time, self.order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::show;

    #[test]
    fn unit_costs_at_1f1b_memory_is_zb_h1_like() {
        let costs = StageCosts {
            forward_s: vec![1.0; 2],
            input_s: vec![1.0; 2],
            weight_s: vec![1.0; 2],
            input_share: vec![0.5; 2],
            transfer_s: 0.0,
        };
        let s = schedule(&costs, 3, 2).unwrap();
        assert_eq!(s.len(), 2);
        for rank in &s {
            assert_eq!(rank.len(), 9, "{}", show(rank));
        }
    }
}
