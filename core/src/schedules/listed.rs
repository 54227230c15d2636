//! An order list-scheduled over any placement of a plain wavefront's stages (forwards and
//! whole backwards, or backwards split into their input and weight halves): the ranks run the
//! pipeline with forwards taking one unit of time and backwards two (each half one); whenever a
//! rank is free it starts one of its ready actions, a forward only while it holds fewer than
//! `(v + 1)·P − 1` stages' activations (interleaved 1F1B's peak on its first rank with rounds of
//! `P`; with split backwards interleaved zero bubble's `v·P` first, the looser bound only where
//! it runs shorter; a stage's activations are held until its backward, or its weight half,
//! ends; when every rank waits on that bound with nothing running, the most urgent ready forward
//! runs anyway, so a run always ends). A weight half, which no other stage waits for, runs where
//! its rank has nothing else it may start (zero bubble's deferral into the bubble, ZB-H1's): a
//! rank held at the bound frees activations so. Which ready action a rank starts is a [`Rule`];
//! up to five runs are made under each bound — 1F1B's priorities (the oldest microbatch's
//! backward first) and four earliest-deadline rules — and the shortest is kept (the first of
//! equals). On the split folds a constraint solver was run on
//! (`tests/fixtures/fold_optimum/optimum_split.txt`) every order is optimal: zero bubble's step.
//! The per-rank orders are read off that one run, so they are a projection of one topological
//! order of the dependencies: deadlock-free for any costs. Hanayo's waves run it over
//! their zigzag; the derivation runs it over a fold a schedule's slots do not assume.
//!
//! Why deadlines: 1F1B's priorities run a backward whenever one is ready, and on a fold that
//! starves the forwards the fold's turn needs (a V fold of four ranks, eight microbatches: 65
//! units where 57, the bound a rank's work and the pipeline's fill and drain give, is reachable —
//! `tests/fixtures/fold_optimum/generate.py` proves 57 optimal with a constraint solver). An
//! action's deadline is its microbatch's due time (`mb · spacing`) less the longest path from its
//! start to its microbatch's end: the least slack first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Time a forward and a backward take in the runs the order is read from (a backward's input
/// and weight halves half a backward each).
pub const FORWARD: u64 = 1;
pub const BACKWARD: u64 = 2;
pub const HALF: u64 = BACKWARD / 2;

/// What an action of a run computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Forward,
    /// A whole backward.
    Backward,
    /// A backward's input half (on the gradient chain, as a whole backward is).
    Input,
    /// A backward's weight half (after its input half; nothing waits for it).
    Weight,
}

impl Op {
    /// Its time in the runs.
    pub fn cost(self) -> u64 {
        match self {
            Op::Forward => FORWARD,
            Op::Backward => BACKWARD,
            Op::Input | Op::Weight => HALF,
        }
    }

    /// Its letter in the action notation (`4F0`, `4B0`, `4I0`, `4W0`).
    pub fn letter(self) -> char {
        match self {
            Op::Forward => 'F',
            Op::Backward => 'B',
            Op::Input => 'I',
            Op::Weight => 'W',
        }
    }
}

/// An action of a run: `(op, stage, microbatch)`.
pub type Act = (Op, usize, usize);
/// A rank's ready actions of one kind, most urgent first: `(priority, tie, stage, microbatch)`.
type Ready = BinaryHeap<Reverse<(i64, i64, usize, usize)>>;
/// An action under way, as it ends: `(rank, op, stage, microbatch)`.
type Ending = (usize, Op, usize, usize);

/// The actions under way by when they end: an action ends one or two units after the instant
/// it starts, so a ring of three instants (`end mod 3`) holds them all, in place of a heap.
#[derive(Default)]
struct Running {
    ring: [Vec<Ending>; RING],
}

/// The ring's length: one more than the longest action.
const RING: usize = BACKWARD as usize + 1;
// Every action lasts at least one unit and less than the ring.
const _: () = assert!(FORWARD >= 1 && FORWARD < RING as u64);
const _: () = assert!(HALF >= 1 && HALF < RING as u64);

impl Running {
    fn push(&mut self, end: u64, action: Ending) {
        if let Some(bucket) = self.ring.get_mut(end as usize % RING) {
            bucket.push(action);
        }
    }

    /// The next instant after `now` at which some action ends, its actions moved into `ended`
    /// (cleared first); `None` with nothing under way.
    fn next(&mut self, now: u64, ended: &mut Vec<Ending>) -> Option<u64> {
        ended.clear();
        for end in now + 1..=now + RING as u64 {
            if let Some(bucket) = self.ring.get_mut(end as usize % RING)
                && !bucket.is_empty()
            {
                std::mem::swap(bucket, ended);
                return Some(end);
            }
        }
        None
    }
}

/// How a rank picks among its ready actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// 1F1B's: the oldest microbatch's backward (the deeper stage first among its), else the
    /// oldest microbatch's forward.
    Oldest,
    /// Earliest deadline: microbatch `mb` is due `mb · spacing` (in half units of time), an
    /// action `2·`(the longest path from its start to its microbatch's end) before that; a
    /// backward first among equals.
    Deadline { spacing: i64 },
}

impl Rule {
    /// The rules tried, in the order ties are settled: 1F1B's, then microbatches due every half
    /// a rank's work for one (`v·(F + B)/2`), every `F + B`, `1.5(F + B)` and `2(F + B)`.
    fn tried(chunks: usize) -> [Rule; 5] {
        let unit = (FORWARD + BACKWARD) as i64;
        let v = i64::try_from(chunks).unwrap_or(i64::MAX / 8).min(1 << 20);
        [
            Rule::Oldest,
            Rule::Deadline { spacing: v * unit },
            Rule::Deadline { spacing: 2 * unit },
            Rule::Deadline { spacing: 3 * unit },
            Rule::Deadline { spacing: 4 * unit },
        ]
    }

    /// What the derivation's note says of the rule that won.
    fn describe(self) -> String {
        match self {
            Rule::Oldest => {
                "1F1B's priorities (the oldest ready backward first, then the oldest ready forward)"
                    .to_string()
            }
            Rule::Deadline { spacing } => format!(
                "the least slack first (microbatches due every {}·(F + B))",
                spacing as f64 / (2 * (FORWARD + BACKWARD)) as f64
            ),
        }
    }

    /// The key of `act` (a forward, or a backward or input half on the gradient chain, each
    /// `back` long) in its rank's ready list, over `stages` stages.
    fn key(self, (op, s, mb): Act, stages: usize, back: u64) -> (i64, i64, usize, usize) {
        let (si, total, mbi) = (s as i64, stages as i64, mb as i64);
        let backward = op != Op::Forward;
        match self {
            Rule::Oldest => (mbi, if backward { -si } else { si }, s, mb),
            Rule::Deadline { spacing } => {
                // The longest path from the action's start to its microbatch's last backward
                // (or input half).
                let back = back as i64;
                let tail = if backward {
                    (si + 1) * back
                } else {
                    (total - si) * FORWARD as i64 + total * back
                };
                (mbi.saturating_mul(spacing) - 2 * tail, mbi, s, mb)
            }
        }
    }
}

/// The shortest run over a placement: each rank's actions in order, the rule and the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Each rank's actions `(op, stage, microbatch)`, in the order it starts them.
    pub actions: Vec<Vec<Act>>,
    /// Which rule gave it, in words.
    pub rule: String,
    /// The bound on the stages' activations a rank holds it ran under, in words
    /// (`(v + 1)·P − 1`, or `v·P` where the backward splits and that is as short, or the
    /// schedule's own).
    pub bound: String,
    /// Whether runs were made under two bounds (a split backward's, without one of its own).
    pub two_bounds: bool,
    /// The run's end, in units of time (a forward one, a backward two, each half one): what the
    /// order's own earliest-start replay takes at most.
    pub end: u64,
}

/// The bounds on held activations, in words: interleaved 1F1B's and interleaved zero bubble's.
const BOUND_1F1B: &str = "(v + 1)·P − 1";
const BOUND_ZB: &str = "v·P";

/// The placement's shape, as the runs read it.
#[derive(Clone, Copy)]
struct Shape<'a> {
    ranks: usize,
    stages: usize,
    microbatches: usize,
    rank_of: &'a [usize],
    /// Stages' activations a rank may hold before it starts another forward (unforced).
    bound: usize,
    /// Whether backwards split into their input and weight halves.
    split: bool,
}

/// The shortest of the runs of [`Rule::tried`] over `ranks` ranks, `microbatches` microbatches
/// and the stages `rank_of` places (stage `s` on rank `rank_of[s]`, the chain in stage order),
/// backwards whole or (`split`) in halves, under the schedule's `own` bound on held activations
/// where it gives one (else as the module says), or `None` where there is nothing to run (no
/// stage, no microbatch, a stage without a rank).
pub fn shortest(
    ranks: usize,
    microbatches: usize,
    rank_of: &[usize],
    split: bool,
    own: Option<(&'static str, usize)>,
) -> Option<Listed> {
    let stages = rank_of.len();
    if ranks == 0 || stages == 0 || microbatches == 0 || rank_of.iter().any(|&r| r >= ranks) {
        return None;
    }
    let chunks = stages.div_ceil(ranks);
    let shape = Shape {
        ranks,
        stages,
        microbatches,
        rank_of,
        bound: 0,
        split,
    };
    // Interleaved 1F1B's peak on its first rank with rounds of `P`, `(v − 1)·P + 2(P − 1) + 1`;
    // where the backward splits, interleaved zero bubble's, `(v − 1)·P + P`, first (the shorter
    // of equal runs is the first: the looser bound only where it saves time).
    let loose = (BOUND_1F1B, (chunks + 1).saturating_mul(ranks) - 1);
    let bounds: &[(&str, usize)] = match own {
        // A schedule that controls its memory keeps its own bound.
        Some(own) => &[own],
        None if split => &[(BOUND_ZB, chunks.saturating_mul(ranks)), loose],
        None => &[loose],
    };
    let mut best: Option<(u64, Rule, &str, Vec<Vec<Act>>)> = None;
    let rules = Rule::tried(chunks);
    let mut bounds_run = 0;
    for (k, &(words, bound)) in bounds.iter().enumerate() {
        // One rank (or any shape where the bounds agree): the second would run the first again.
        if bounds
            .get(..k)
            .is_some_and(|before| before.iter().any(|b| b.1 == bound))
        {
            continue;
        }
        let shape = Shape { bound, ..shape };
        bounds_run += 1;
        for (i, &rule) in rules.iter().enumerate() {
            // Two to four chunks make the first deadline rule a later one: run once.
            if rules.get(..i).is_some_and(|before| before.contains(&rule)) {
                continue;
            }
            let Some((end, run)) = run(&shape, rule) else {
                continue;
            };
            if best.as_ref().is_none_or(|(shortest, ..)| end < *shortest) {
                best = Some((end, rule, words, run));
            }
        }
    }
    let (end, rule, bound, actions) = best?;
    Some(Listed {
        actions,
        rule: rule.describe(),
        bound: bound.to_string(),
        two_bounds: bounds_run > 1,
        end,
    })
}

/// A rank's ready actions: the backwards (or input halves), the forwards, the weight halves.
#[derive(Clone, Default)]
struct Queues {
    back: Ready,
    forward: Ready,
    weight: Ready,
}

/// One run under `rule`: its end (in units of time) and each rank's actions in the order it
/// started them; `None` if it does not finish (it always does: the data edges alone form no
/// cycle, a weight half is ready once its input half ends, and a forced forward breaks every
/// wait on the bound).
fn run(shape: &Shape, rule: Rule) -> Option<(u64, Vec<Vec<Act>>)> {
    let Shape {
        ranks,
        stages,
        microbatches: m,
        rank_of,
        bound,
        split,
    } = *shape;
    let back_op = if split { Op::Input } else { Op::Backward };
    let back = back_op.cost();
    let kinds = if split { 3 } else { 2 };
    let total = stages.checked_mul(m)?.checked_mul(kinds)?;
    let kind = |op: Op| match op {
        Op::Forward => 0,
        Op::Backward | Op::Input => 1,
        Op::Weight => 2,
    };
    let id = |(op, s, mb): Act| (kind(op) * stages + s) * m + mb;
    // Inputs still missing: a forward waits for the stage before; the last stage's backward for
    // its forward; any other backward for its forward and the backward of the stage after; a
    // weight half for its input half.
    let mut missing = vec![0u8; total];
    for s in 0..stages {
        for mb in 0..m {
            if let Some(slot) = missing.get_mut(id((Op::Forward, s, mb))) {
                *slot = u8::from(s > 0);
            }
            if let Some(slot) = missing.get_mut(id((back_op, s, mb))) {
                *slot = if s + 1 == stages { 1 } else { 2 };
            }
            if split && let Some(slot) = missing.get_mut(id((Op::Weight, s, mb))) {
                *slot = 1;
            }
        }
    }
    let mut queues: Vec<Queues> = vec![Queues::default(); ranks];
    let first = &mut queues.get_mut(*rank_of.first()?)?.forward;
    for mb in 0..m {
        first.push(Reverse(rule.key((Op::Forward, 0, mb), stages, back)));
    }
    let mut held = vec![0usize; ranks];
    let mut free = vec![true; ranks];
    let mut out: Vec<Vec<Act>> = vec![Vec::new(); ranks];
    let mut running = Running::default();
    let mut now = 0u64;
    let mut done = 0usize;
    // What ends at one instant (reused: the ring's lists and this one trade places).
    let mut ended: Vec<Ending> = Vec::new();
    let pick = |r: usize, queues: &mut [Queues], forwards_allowed: bool| {
        pick(rule, back_op, queues.get_mut(r)?, forwards_allowed)
    };
    // Each pass starts or finishes an action, or forces one: a bounded loop.
    for _ in 0..total.saturating_mul(3).saturating_add(ranks) {
        if done == total {
            return Some((now, out));
        }
        let mut started = false;
        for r in 0..ranks {
            if !free.get(r).copied().unwrap_or(false) {
                continue;
            }
            let under = held.get(r).is_some_and(|&h| h < bound);
            if let Some(act) = pick(r, &mut queues, under) {
                start(act, r, now, &mut running, &mut free, &mut held, &mut out);
                started = true;
            }
        }
        if started {
            continue;
        }
        let Some(end) = running.next(now, &mut ended) else {
            // Nothing runs and nothing may start under the bound: the most urgent ready forward
            // runs.
            let r = (0..ranks)
                .filter(|&r| free.get(r).copied().unwrap_or(false))
                .filter_map(|r| queues.get(r)?.forward.peek().map(|Reverse(k)| (*k, r)))
                .min()?
                .1;
            let act = pick(r, &mut queues, true)?;
            start(act, r, now, &mut running, &mut free, &mut held, &mut out);
            continue;
        };
        now = end;
        // Everything that ends now ends before any rank picks again (a backward readied at this
        // instant is weighed with the forwards; in which order they end changes nothing).
        let mut ready = |act: Act| -> Option<()> {
            let slot = missing.get_mut(id(act))?;
            *slot = slot.saturating_sub(1);
            if *slot == 0 {
                let on = queues.get_mut(*rank_of.get(act.1)?)?;
                let (list, key) = match act.0 {
                    Op::Forward => (&mut on.forward, rule.key(act, stages, back)),
                    Op::Backward | Op::Input => (&mut on.back, rule.key(act, stages, back)),
                    // The oldest first: nothing waits for it.
                    Op::Weight => (&mut on.weight, (act.2 as i64, act.1 as i64, act.1, act.2)),
                };
                list.push(Reverse(key));
            }
            Some(())
        };
        for &(r, op, s, mb) in &ended {
            *free.get_mut(r)? = true;
            done += 1;
            match op {
                Op::Forward => {
                    if s + 1 < stages {
                        ready((Op::Forward, s + 1, mb))?;
                    }
                    ready((back_op, s, mb))?;
                }
                Op::Backward | Op::Input => {
                    if op == Op::Backward {
                        *held.get_mut(r)? = held.get(r)?.saturating_sub(1);
                    } else {
                        ready((Op::Weight, s, mb))?;
                    }
                    if s > 0 {
                        ready((back_op, s - 1, mb))?;
                    }
                }
                Op::Weight => *held.get_mut(r)? = held.get(r)?.saturating_sub(1),
            }
        }
    }
    None
}

/// What a rank with these ready actions runs next under `rule` (`back_op` the gradient chain's
/// op), a forward only where `forwards_allowed` (under the activation bound, or forced), a
/// weight half only where neither a forward it may start nor a backward is ready.
fn pick(rule: Rule, back_op: Op, queues: &mut Queues, forwards_allowed: bool) -> Option<Act> {
    let backward = queues.back.peek().map(|Reverse(k)| k.0);
    let forward = if forwards_allowed {
        queues.forward.peek().map(|Reverse(k)| k.0)
    } else {
        None
    };
    let (op, list) = match (backward, forward) {
        (None, None) => (Op::Weight, &mut queues.weight),
        (Some(_), None) => (back_op, &mut queues.back),
        (None, Some(_)) => (Op::Forward, &mut queues.forward),
        // 1F1B's priorities run any ready backward first; a deadline rule the more urgent, a
        // backward among equals.
        (Some(b), Some(f)) if rule == Rule::Oldest || b <= f => (back_op, &mut queues.back),
        (Some(_), Some(_)) => (Op::Forward, &mut queues.forward),
    };
    let Reverse((_, _, s, mb)) = list.pop()?;
    Some((op, s, mb))
}

/// Starts `act` on rank `r` at `now`.
fn start(
    act: Act,
    r: usize,
    now: u64,
    running: &mut Running,
    free: &mut [bool],
    held: &mut [usize],
    out: &mut [Vec<Act>],
) {
    let (op, s, mb) = act;
    running.push(now + op.cost(), (r, op, s, mb));
    if let Some(f) = free.get_mut(r) {
        *f = false;
    }
    if op == Op::Forward
        && let Some(h) = held.get_mut(r)
    {
        *h += 1;
    }
    if let Some(order) = out.get_mut(r) {
        order.push(act);
    }
}
