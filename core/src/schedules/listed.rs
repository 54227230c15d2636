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
//! backward first) and four earliest-deadline rules — and the shortest is kept (of equals the
//! one holding the fewest stages' activations, else the first). Where none reaches the bound the
//! ranks' work gives (`Shape::work_bound`), each run is made again twice, each microbatch due
//! when the run before finished it (`Rule::Finished`: the finishes a run reached are a better
//! guess of when each microbatch can be done than an even spacing; Hanayo's two waves went from
//! 0.95–3.5 % above their bound to 0–1.9 %). Where they still fall short and the loosest bound
//! kept some rank from a ready forward it would have started (else a looser one runs the same),
//! every rule's run (and its feedback, while the budget lasts) is made once more under a bound `P`
//! stages' activations looser, `(v + 2)·P − 1` without transfers: more in flight lets a wave's fill
//! overlap its drain, and Hanayo's two waves then reach their bound on every shape tried
//! (`core/tests/hanayo.rs`), holding at most that much more. While still short, again `P` looser a
//! round (`(v + 3)·P − 1`, …), on the same condition and only while the budget holds every rule's
//! run: Hanayo's three and four waves reach their bound so. Once a round reaches it, every bound
//! between the loosest of the first ones and that round's is tried too, tightest first (fed back
//! where none of its runs reaches it), while under what the run kept holds, where a budget of their
//! own as large holds every such bound's runs and feedback (else the bounds within the last round
//! alone, where it holds those; else none): a run's peak is often under its bound, and which bound
//! reaches the step is not monotone, so one between can reach it holding less (Hanayo's two waves
//! over P 2–12, M 2P–5P: 63 % fewer stages' activations above 1F1B's bound, summed; three and four
//! waves over P 2–8: 21 % fewer; at most `(v + 2)·P − 1`, `(v + 5)·P − 1` and `(v + 8)·P − 1` with
//! two, three and four waves — a solver reaches the step under 1F1B's bound on the three-wave cases
//! it proved: more memory than an order needs, for the step). On the split folds a constraint
//! solver was run on (`tests/fixtures/fold_optimum/optimum_split.txt`) every order is optimal: zero
//! bubble's step.
//! The per-rank orders are read off that one run, so they are a projection of one topological
//! order of the dependencies: deadlock-free for any costs. Hanayo's waves run it over
//! their zigzag; the derivation runs it over a fold a schedule's slots do not assume.
//!
//! With each stage's own times ([`StageTicks`], the cost model's: `crate::tune::costed` runs it
//! so, since `derive` does not read the cost model) in place of the units, the same rules run,
//! the deadlines weigh those times, two tighter spacings are tried too (seven runs a bound), and
//! the actions under way wait in a heap by their ends rather than in the units' ring. With the
//! transfers between the stages too ([`Times::hops`]), what a rank hands to another is ready there
//! only when it arrives (the arrivals wait in a heap of their own), the deadlines and
//! `Shape::work_bound` count the transfers, and where they add up to a stage's work or more down
//! and back ([`latency`]) a looser bound on held activations is tried last: at 1F1B's, a rank
//! stalls on gradients still on their way where it could start forwards.
//!
//! Why deadlines: 1F1B's priorities run a backward whenever one is ready, and on a fold that
//! starves the forwards the fold's turn needs (a V fold of four ranks, eight microbatches: 65
//! units where 57, the bound a rank's work and the pipeline's fill and drain give, is reachable —
//! `tests/fixtures/fold_optimum/generate.py` proves 57 optimal with a constraint solver). An
//! action's deadline is its microbatch's due time (`mb · spacing`) less the longest path from its
//! start to its microbatch's end: the least slack first.

use crate::vocab::phase::Phase;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

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

    /// Its place in a stage's [`StageTicks`].
    pub fn index(self) -> usize {
        match self {
            Op::Forward => 0,
            Op::Backward => 1,
            Op::Input => 2,
            Op::Weight => 3,
        }
    }

    /// Its phase in the action notation (`4F0`, `4B0`, `4I0`, `4W0`).
    pub fn phase(self) -> Phase {
        match self {
            Op::Forward => Phase::Forward,
            Op::Backward => Phase::Backward,
            Op::Input => Phase::Input,
            Op::Weight => Phase::Weight,
        }
    }
}

/// A stage's time for each op, in a run with the stages' own times in place of the units:
/// `[forward, whole backward, input half, weight half]` (indexed by [`Op::index`]), in ticks of
/// any length the caller chose; a time below one tick counts one.
pub type StageTicks = [u64; 4];

/// The stages' own times for a run in place of the units: each stage's [`StageTicks`], and the
/// transfers between consecutive stages in the same ticks (`hops[s]`: stage `s`'s output to stage
/// `s + 1`, and its gradient back; paid only where the two sit on different ranks), one a stage
/// but the last, or none at all (no transfer takes time).
#[derive(Debug, Clone, Copy)]
pub struct Times<'a> {
    pub stages: &'a [StageTicks],
    pub hops: &'a [u64],
}

/// An action of a run: `(op, stage, microbatch)`.
pub type Act = (Op, usize, usize);
/// A rank's ready actions of one kind, most urgent first: `(priority, tie, stage, microbatch)`.
type Ready = BinaryHeap<Reverse<(i64, i64, usize, usize)>>;
/// An action under way, as it ends: `(rank, op, stage, microbatch)`.
type Ending = (usize, Op, usize, usize);

/// The actions under way by when they end. In units, an action ends one or two units after the
/// instant it starts, so a ring of three instants (`end mod 3`) holds them all; with the stages'
/// own times, a heap by end.
enum Running {
    Ring([Vec<Ending>; RING]),
    Heap(BinaryHeap<Reverse<(u64, Ending)>>),
}

/// The ring's length: one more than the longest action.
const RING: usize = BACKWARD as usize + 1;
// Every action lasts at least one unit and less than the ring.
const _: () = assert!(FORWARD >= 1 && FORWARD < RING as u64);
const _: () = assert!(HALF >= 1 && HALF < RING as u64);

impl Running {
    fn push(&mut self, end: u64, action: Ending) {
        match self {
            Running::Ring(ring) => {
                if let Some(bucket) = ring.get_mut(end as usize % RING) {
                    bucket.push(action);
                }
            }
            Running::Heap(heap) => heap.push(Reverse((end, action))),
        }
    }

    /// The next instant after `now` at which some action ends (nothing moved).
    fn next_end(&self, now: u64) -> Option<u64> {
        match self {
            Running::Ring(ring) => (now + 1..=now + RING as u64).find(|&end| {
                ring.get(end as usize % RING)
                    .is_some_and(|bucket| !bucket.is_empty())
            }),
            Running::Heap(heap) => heap.peek().map(|Reverse((end, _))| *end),
        }
    }

    /// The next instant after `now` at which some action ends, its actions moved into `ended`
    /// (cleared first); `None` with nothing under way.
    fn next(&mut self, now: u64, ended: &mut Vec<Ending>) -> Option<u64> {
        ended.clear();
        match self {
            Running::Ring(ring) => {
                for end in now + 1..=now + RING as u64 {
                    if let Some(bucket) = ring.get_mut(end as usize % RING)
                        && !bucket.is_empty()
                    {
                        std::mem::swap(bucket, ended);
                        return Some(end);
                    }
                }
                None
            }
            Running::Heap(heap) => {
                let Reverse((end, first)) = heap.pop()?;
                ended.push(first);
                while let Some(Reverse((at, _))) = heap.peek()
                    && *at == end
                {
                    if let Some(Reverse((_, action))) = heap.pop() {
                        ended.push(action);
                    }
                }
                Some(end)
            }
        }
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
    /// backward first among equals. `eighths`: the spacing in eighths of a stage's `F + B`.
    Deadline { eighths: i64, spacing: i64 },
    /// Earliest deadline, each microbatch due when an earlier run finished it (its last backward,
    /// or input half, ended) rather than at an even spacing.
    Finished,
}

impl Rule {
    /// The rules tried, in the order ties are settled: 1F1B's, then microbatches due every half
    /// a rank's work for one (`v·(F + B)/2`), every `F + B`, `1.5(F + B)` and `2(F + B)`, with
    /// `F + B` a stage's mean `unit`; with the stages' own times (`timed`) also every
    /// `(F + B)/2` and `0.75(F + B)` (uneven stages favour a tighter spacing).
    fn tried(chunks: usize, unit: i64, timed: bool) -> Vec<Rule> {
        let v = i64::try_from(chunks).unwrap_or(i64::MAX / 8).min(1 << 20);
        let mut eighths = vec![4 * v, 8, 12, 16];
        if timed {
            eighths.extend([4, 6]);
        }
        let deadline = |eighths: i64| Rule::Deadline {
            eighths,
            spacing: eighths.saturating_mul(unit) / 4,
        };
        std::iter::once(Rule::Oldest)
            .chain(eighths.into_iter().map(deadline))
            .collect()
    }

    /// What the derivation's note says of the rule that won.
    fn describe(self) -> String {
        match self {
            Rule::Oldest => {
                "1F1B's priorities (the oldest ready backward first, then the oldest ready forward)"
                    .to_string()
            }
            Rule::Deadline { eighths, .. } => format!(
                "the least slack first (microbatches due every {}·(F + B))",
                eighths as f64 / 8.0
            ),
            Rule::Finished => {
                "the least slack first (each microbatch due when an earlier run finished it)"
                    .to_string()
            }
        }
    }

    /// The key of `act` (a forward, or a backward or input half on the gradient chain) in its
    /// rank's ready list.
    fn key(self, (op, s, mb): Act, tails: &Tails) -> (i64, i64, usize, usize) {
        let (si, mbi) = (s as i64, mb as i64);
        let backward = op != Op::Forward;
        match self {
            Rule::Oldest => (mbi, if backward { -si } else { si }, s, mb),
            Rule::Deadline { .. } | Rule::Finished => {
                let list = if backward {
                    &tails.back
                } else {
                    &tails.forward
                };
                let tail = list.get(s).copied().unwrap_or(0);
                // In half units of time, as the tails are doubled.
                let due = match self {
                    Rule::Deadline { spacing, .. } => mbi.saturating_mul(spacing),
                    _ => tails.due.get(mb).copied().unwrap_or(0).saturating_mul(2),
                };
                (due.saturating_sub(tail.saturating_mul(2)), mbi, s, mb)
            }
        }
    }
}

/// The longest path from an action's start to its microbatch's last backward (or input half),
/// per stage, as the deadline rules weigh it: from a forward's (every later forward, then the
/// whole gradient chain) and from a backward's (the chain down to the first stage).
struct Tails {
    forward: Vec<i64>,
    back: Vec<i64>,
    /// When each microbatch is due under [`Rule::Finished`] (an earlier run's finish).
    due: Vec<i64>,
}

impl Tails {
    fn of(shape: &Shape, back_op: Op, due: Vec<i64>) -> Tails {
        let time = |op: Op, s: usize| i64::try_from(shape.cost(op, s)).unwrap_or(i64::MAX / 4);
        let hop = |s: usize| i64::try_from(shape.hop(s)).unwrap_or(i64::MAX / 4);
        let mut back = Vec::with_capacity(shape.stages);
        let mut sum = 0i64;
        for s in 0..shape.stages {
            // The gradient's transfer from stage `s` to the one before it.
            if let Some(before) = s.checked_sub(1) {
                sum = sum.saturating_add(hop(before));
            }
            sum = sum.saturating_add(time(back_op, s));
            back.push(sum);
        }
        let chain = sum;
        let mut forward = vec![0i64; shape.stages];
        let mut sum = chain;
        for (s, tail) in forward.iter_mut().enumerate().rev() {
            sum = sum
                .saturating_add(hop(s))
                .saturating_add(time(Op::Forward, s));
            *tail = sum;
        }
        Tails { forward, back, due }
    }
}

/// The shortest run over a placement: each rank's actions in order, the rule and the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Each rank's actions `(op, stage, microbatch)`, in the order it starts them.
    pub actions: Vec<Vec<Act>>,
    /// Which rule gave it, in words.
    pub rule: String,
    /// The most stages' activations a rank holds in it.
    pub held: usize,
    /// The bound on the stages' activations a rank holds it ran under, in words
    /// (`(v + 1)·P − 1`, or `v·P` where the backward splits, or 1F1B's with room for what the
    /// transfers keep in flight, `+ ⌊2Σh/(F + B)⌋`, or one of the bounds made `P` looser a round
    /// from the loosest of those, `(v + k)·P − 1 …`, or one between those, `(v + k)·P …` or
    /// `(v + k)·P + j …`, or the schedule's own).
    pub bound: String,
    /// That bound's value, in stages' activations.
    pub limit: usize,
    /// How many distinct bounds runs were made under (two for a split backward's without one of
    /// its own; one more where the transfers' [`latency`] is one stage or more; one more a round
    /// `P` looser, while the runs fall short of the bound the ranks' work gives, the bound before
    /// kept some rank from a forward and, after the first, the budget holds every rule's run;
    /// once a round reaches it, one more for each bound between the loosest and that round's, or
    /// within that round, tried while under what the run kept holds).
    pub bounds: usize,
    /// How many rules runs were made with under each bound ([`Rule::tried`]), counting any a
    /// shape makes the same as an earlier one (run once).
    pub rules: usize,
    /// Whether the runs were made again with their microbatches due when they finished them
    /// ([`Rule::Finished`]; only where none reached the bound the ranks' work gives).
    pub fed_back: bool,
    /// The run's end, in units of time (a forward one, a backward two, each half one; in ticks
    /// with the stages' own times): what the order's own earliest-start replay takes at most.
    pub end: u64,
}

/// How many times each run is made again with its microbatches due when it finished them.
const FEEDBACK_ROUNDS: usize = 2;

/// How many actions the runs made again may schedule in all (beyond one run's rounds): on a
/// small pipeline every run is made again, on a large one the shortest few.
const FEEDBACK_WORK: usize = 1_000_000;

/// The runs made again ([`FEEDBACK_ROUNDS`] times each, within [`FEEDBACK_WORK`] actions, and
/// within as many again over the bounds between the rounds), in the derivation's note's words.
pub const FED_BACK_WORDS: &str = "each made again twice where none reached the bound the ranks' work gives (each microbatch due when the run before finished it; the shortest runs first, up to 10^6 actions, as many again over the bounds between the rounds)";
// The words name the numbers.
const _: () = assert!(FEEDBACK_ROUNDS == 2 && FEEDBACK_WORK == 1_000_000);

/// The bounds on held activations, in words: interleaved 1F1B's and interleaved zero bubble's.
const BOUND_1F1B: &str = "(v + 1)·P − 1";
const BOUND_ZB: &str = "v·P";
/// What a bound's words add where the transfers count: room for the microbatches they keep in
/// flight, after 1F1B's bound or after a bound `P` looser a round, `(v + k)·P − 1`.
const BOUND_LATENCY_SUFFIX: &str = " + ⌊2Σh/(F + B)⌋ (Σh the transfers along the stages)";

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
    /// Each stage's own times (else the units).
    ticks: Option<&'a [StageTicks]>,
    /// The transfers between consecutive stages, in the same ticks (none in units).
    hops: &'a [u64],
}

impl Shape<'_> {
    /// How long what stage `s` hands on takes to reach stage `s + 1` (its gradient to come back):
    /// nothing where they share a rank or no transfer takes time.
    fn hop(&self, s: usize) -> u64 {
        match (self.rank_of.get(s), self.rank_of.get(s + 1)) {
            (Some(a), Some(b)) if a != b => self.hops.get(s).copied().unwrap_or(0),
            _ => 0,
        }
    }

    /// How long `op` of stage `s` takes in the run.
    fn cost(&self, op: Op, s: usize) -> u64 {
        match self.ticks {
            None => op.cost(),
            Some(ticks) => ticks
                .get(s)
                .and_then(|t| t.get(op.index()))
                .copied()
                .unwrap_or(0)
                .max(1),
        }
    }

    /// No run ends before this: for each rank, the forwards (and transfers) before its first
    /// stage's first one could start, its work (every microbatch of each of its stages), and the
    /// backwards (or input halves, and transfers) that must follow its last one down to the first
    /// stage (none where a weight half, which nothing follows, may end it) — the largest over the
    /// ranks.
    fn work_bound(&self) -> u64 {
        let back_op = if self.split { Op::Input } else { Op::Backward };
        let m = self.microbatches as u64;
        let mut head = vec![u64::MAX; self.ranks];
        let mut tail = vec![u64::MAX; self.ranks];
        let mut work = vec![0u64; self.ranks];
        let (mut forwards, mut backs) = (0u64, 0u64);
        for (s, &r) in self.rank_of.iter().enumerate() {
            let stage = self.stage_work(s);
            if let (Some(h), Some(t), Some(w)) = (head.get_mut(r), tail.get_mut(r), work.get_mut(r))
            {
                *h = (*h).min(forwards);
                *t = (*t).min(if self.split { 0 } else { backs });
                *w = w.saturating_add(stage.saturating_mul(m));
            }
            let hop = self.hop(s);
            forwards = forwards
                .saturating_add(self.cost(Op::Forward, s))
                .saturating_add(hop);
            backs = backs
                .saturating_add(self.cost(back_op, s))
                .saturating_add(hop);
        }
        (0..self.ranks)
            .filter_map(|r| {
                let (h, t, w) = (*head.get(r)?, *tail.get(r)?, *work.get(r)?);
                (w > 0).then(|| h.saturating_add(w).saturating_add(t))
            })
            .max()
            .unwrap_or(0)
    }

    /// How many actions a run schedules: each stage's forward and backward (or its two halves)
    /// of every microbatch; `None` past `usize`.
    fn actions(&self) -> Option<usize> {
        let kinds = if self.split { 3 } else { 2 };
        self.stages
            .checked_mul(self.microbatches)?
            .checked_mul(kinds)
    }

    /// Stage `s`'s work for one microbatch: its forward and its backward, whole or in halves.
    fn stage_work(&self, s: usize) -> u64 {
        let back = match self.split {
            true => self
                .cost(Op::Input, s)
                .saturating_add(self.cost(Op::Weight, s)),
            false => self.cost(Op::Backward, s),
        };
        self.cost(Op::Forward, s).saturating_add(back)
    }

    /// Stages' activations a rank's bound grows by for the transfers: `⌊2Σh/(F + B)⌋`, `Σh` the
    /// transfers along the chain of stages (each paid down and back), `F + B` a stage's mean
    /// ([`Shape::unit`]); none where they add up to less than one stage's work.
    fn latency(&self) -> usize {
        let chain = (0..self.stages)
            .map(|s| self.hop(s))
            .fold(0u64, u64::saturating_add);
        let unit = u64::try_from(self.unit()).unwrap_or(1).max(1);
        usize::try_from(chain.saturating_mul(2) / unit).unwrap_or(usize::MAX)
    }

    /// A stage's mean `F + B` (its backward whole or in halves), the deadline rules' spacing's
    /// unit: three units without the stages' own times.
    fn unit(&self) -> i64 {
        let Some(ticks) = self.ticks else {
            return (FORWARD + BACKWARD) as i64;
        };
        let sum: u64 = (0..self.stages)
            .map(|s| self.stage_work(s))
            .fold(0u64, u64::saturating_add);
        let mean = sum / (ticks.len().max(1) as u64);
        i64::try_from(mean).unwrap_or(i64::MAX / 8).min(1 << 40)
    }
}

/// Stages' activations the transfers of `times` keep in flight over the stages `rank_of` places
/// (backwards whole or, `split`, in halves): `⌊2Σh/(F + B)⌋`, `Σh` the transfers along the
/// chain of stages, `F + B` a stage's mean. Below one stage's work (0) the transfers weigh too
/// little to be worth the runs (they could still reorder ties), and the caller may leave them
/// out.
pub fn latency(rank_of: &[usize], split: bool, times: Times) -> usize {
    Shape {
        ranks: rank_of.iter().max().map_or(0, |r| r + 1),
        stages: rank_of.len(),
        microbatches: 1,
        rank_of,
        bound: 0,
        split,
        ticks: Some(times.stages),
        hops: times.hops,
    }
    .latency()
}

/// The shortest of the runs of [`Rule::tried`] over `ranks` ranks, `microbatches` microbatches
/// and the stages `rank_of` places (stage `s` on rank `rank_of[s]`, the chain in stage order),
/// backwards whole or (`split`) in halves, under the schedule's `own` bound on held activations
/// where it gives one (else as the module says), with each stage's own times and the transfers
/// between them where `times` gives them (else the units, no transfer taking time), or `None`
/// where there is nothing to run (no stage, no microbatch, a stage without a rank, times for
/// other than every stage, transfers for other than every stage but the last).
pub fn shortest(
    ranks: usize,
    microbatches: usize,
    rank_of: &[usize],
    split: bool,
    own: Option<(&'static str, usize)>,
    times: Option<Times>,
) -> Option<Listed> {
    let stages = rank_of.len();
    if ranks == 0
        || stages == 0
        || microbatches == 0
        || rank_of.iter().any(|&r| r >= ranks)
        || times.is_some_and(|t| {
            t.stages.len() != stages || !(t.hops.is_empty() || t.hops.len() + 1 == stages)
        })
    {
        return None;
    }
    let ticks = times.map(|t| t.stages);
    let chunks = stages.div_ceil(ranks);
    let shape = Shape {
        ranks,
        stages,
        microbatches,
        rank_of,
        bound: 0,
        split,
        ticks,
        hops: times.map_or(&[][..], |t| t.hops),
    };
    // Interleaved 1F1B's peak on its first rank with rounds of `P`, `(v − 1)·P + 2(P − 1) + 1`;
    // where the backward splits, interleaved zero bubble's, `(v − 1)·P + P`, first (of equally
    // short runs the one holding least is kept, else the first).
    let loose = (BOUND_1F1B, (chunks + 1).saturating_mul(ranks) - 1);
    let mut bounds: Vec<(Rc<str>, usize)> = match own {
        // A schedule that controls its memory keeps its own bound.
        Some((words, bound)) => vec![(words.into(), bound)],
        None if split => vec![
            (BOUND_ZB.into(), chunks.saturating_mul(ranks)),
            (loose.0.into(), loose.1),
        ],
        None => vec![(loose.0.into(), loose.1)],
    };
    // Transfers lengthen a microbatch's way down the stages and back by `2Σh`: a rank at 1F1B's
    // bound then waits for gradients still on their way where it could start forwards, so a
    // looser bound is tried last, with room for the microbatches that time would keep in flight.
    let latency = shape.latency();
    if own.is_none() && latency > 0 {
        bounds.push((
            format!("{BOUND_1F1B}{BOUND_LATENCY_SUFFIX}").into(),
            loose.1.saturating_add(latency),
        ));
    }
    let unit = shape.unit();
    let rules = Rule::tried(chunks, unit, ticks.is_some());
    let mut search = Search {
        shape,
        rules: &rules,
        best: None,
        finishes: Vec::new(),
        bounds_run: 0,
        held_at: 0,
        floor: shape.work_bound(),
    };
    for (k, (words, bound)) in bounds.iter().enumerate() {
        let bound = *bound;
        // One rank (or any shape where the bounds agree): the second would run the first again.
        if bounds
            .get(..k)
            .is_some_and(|before| before.iter().any(|b| b.1 == bound))
        {
            continue;
        }
        search.under(bound, words.clone());
    }
    // Short of the bound the ranks' work gives, each run again with its microbatches due when it
    // finished them (twice, each from the one before), under its bound: the shortest runs first,
    // while the budget of actions lasts (one run's two at least).
    let fed_back = search.short_of();
    let per_run = shape.actions().unwrap_or(usize::MAX).max(1);
    let runs_budget = (FEEDBACK_WORK / per_run).max(FEEDBACK_ROUNDS);
    let mut runs_left = runs_budget;
    if fed_back {
        search.feed_back(&mut runs_left);
    }
    // Still short of it: the runs again under a bound `P` stages' activations looser than the
    // loosest (more in flight lets the fill overlap the drain: Hanayo's two waves reach the
    // bound so), fed back as well while the budget lasts; and again `P` looser each time while
    // short of it and the budget holds every rule's run. Each round only where the bound before
    // kept some run's rank from a ready forward it would have started: else a looser one runs
    // the same (Hanayo's three and four waves reach their bound so, two to seven rounds looser).
    // Once a round reaches it, the bounds between ([`Search::between`]).
    if own.is_none() {
        let loosest = bounds.iter().map(|b| b.1).max().unwrap_or(loose.1);
        let mut bound = loosest;
        let mut rounds = 1usize;
        let suffix = match latency > 0 {
            true => BOUND_LATENCY_SUFFIX,
            false => "",
        };
        while search.short_of() && search.held_at >= bound {
            // The first round looser is made whatever the budget left (one run a rule).
            if rounds > 1 && !search.charge(&mut runs_left) {
                break;
            }
            rounds += 1;
            bound = bound.saturating_add(ranks);
            search.round(
                bound,
                format!("(v + {rounds})·P − 1{suffix}"),
                &mut runs_left,
            );
        }
        if rounds > 1 && !search.short_of() {
            search.between(loosest, bound, suffix, runs_budget);
        }
    }
    let Search {
        best, bounds_run, ..
    } = search;
    let ((end, held), rule, (bound, limit), actions) = best?;
    Some(Listed {
        actions,
        held,
        rule: rule.describe(),
        bound: bound.to_string(),
        limit,
        bounds: bounds_run,
        rules: rules.len(),
        fed_back,
        end,
    })
}

/// A run kept: its end and the most stages' activations a rank held, its rule, bound in words
/// and value, and actions.
type Best = ((u64, usize), Rule, (Rc<str>, usize), Vec<Vec<Act>>);

/// The runs [`shortest`] makes and the shortest so far: its end and peak, rule, bound in words
/// and actions; each run's end, bound, bound's words and when it finished each microbatch.
struct Search<'a> {
    shape: Shape<'a>,
    rules: &'a [Rule],
    best: Option<Best>,
    finishes: Vec<(u64, usize, Rc<str>, Vec<i64>)>,
    bounds_run: usize,
    /// The loosest bound that kept some run's rank from a ready forward (0: none did).
    held_at: usize,
    /// The bound the ranks' work gives.
    floor: u64,
}

impl Search<'_> {
    /// Every rule's run under `bound` (`words`): whether one reached the floor.
    fn under(&mut self, bound: usize, words: Rc<str>) -> bool {
        let shape = Shape {
            bound,
            ..self.shape
        };
        self.bounds_run += 1;
        let mut reached = false;
        for (i, &rule) in self.rules.iter().enumerate() {
            // Two to four chunks make the first deadline rule a later one: run once.
            if self
                .rules
                .get(..i)
                .is_some_and(|before| before.contains(&rule))
            {
                continue;
            }
            let Some((end, run, done, held, peak)) = run(&shape, rule, Vec::new()) else {
                continue;
            };
            self.hold(held, bound);
            reached |= end <= self.floor;
            self.keep((end, peak), rule, (&words, bound), run);
            self.finishes.push((end, bound, words.clone(), done));
        }
        reached
    }

    /// The runs not yet fed back made again with their microbatches due when they finished them,
    /// [`FEEDBACK_ROUNDS`] times each, the shortest first, while `runs_left` lasts.
    fn feed_back(&mut self, runs_left: &mut usize) {
        let mut runs = std::mem::take(&mut self.finishes);
        runs.sort_by_key(|&(end, ..)| end);
        for (_, bound, words, mut due) in runs {
            let shape = Shape {
                bound,
                ..self.shape
            };
            for _ in 0..FEEDBACK_ROUNDS {
                let Some(left) = runs_left.checked_sub(1) else {
                    return;
                };
                *runs_left = left;
                let Some((end, run, done, held, peak)) = run(&shape, Rule::Finished, due) else {
                    break;
                };
                self.hold(held, bound);
                self.keep((end, peak), Rule::Finished, (&words, bound), run);
                due = done;
            }
        }
    }

    /// Notes that a run under `bound` was `held` back by it.
    fn hold(&mut self, held: bool, bound: usize) {
        if held {
            self.held_at = self.held_at.max(bound);
        }
    }

    /// The run kept where it is the shortest so far, or as short holding less (else the first
    /// of equals).
    fn keep(
        &mut self,
        (end, peak): (u64, usize),
        rule: Rule,
        (words, bound): (&Rc<str>, usize),
        run: Vec<Vec<Act>>,
    ) {
        if self
            .best
            .as_ref()
            .is_none_or(|(kept, ..)| (end, peak) < *kept)
        {
            self.best = Some(((end, peak), rule, (words.clone(), bound), run));
        }
    }

    /// Takes one run of every rule from `runs_left`: whether it held them.
    fn charge(&self, runs_left: &mut usize) -> bool {
        match runs_left.checked_sub(self.rules.len()) {
            Some(left) => {
                *runs_left = left;
                true
            }
            None => false,
        }
    }

    /// Once a round looser than `loosest` reached the floor under `reached`: the bounds between,
    /// tightest first, each fed back where none of its runs reaches the floor, while under what
    /// the run kept holds (a run's peak is often under its bound, and which bound reaches the
    /// floor is not monotone: one between can reach it holding less than the round's run) —
    /// every such bound where `budget` holds all their runs and feedback, else those within the
    /// last round where it holds those, else none (a partial climb from the loosest would spend
    /// the budget on the bounds least likely to reach the floor). `suffix` ends their words.
    fn between(&mut self, loosest: usize, reached: usize, suffix: &str, budget: usize) {
        let ranks = self.shape.ranks.max(1);
        let per_bound = self.rules.len().saturating_mul(1 + FEEDBACK_ROUNDS);
        // The bounds between that are not a round's.
        let all = reached
            .saturating_sub(loosest)
            .saturating_sub(reached.saturating_sub(loosest) / ranks);
        let from = if all.saturating_mul(per_bound) <= budget {
            loosest.saturating_add(1)
        } else if (ranks - 1).saturating_mul(per_bound) <= budget {
            reached.saturating_sub(ranks - 1)
        } else {
            return;
        };
        let mut left = budget;
        for b in from..reached {
            let above = b.saturating_sub(loosest);
            let (k, more) = (above / ranks, above % ranks);
            if more == 0 {
                continue;
            }
            if self.holds_at_most(b) || !self.charge(&mut left) {
                break;
            }
            // `(v + 1 + k)·P − 1 + more`.
            let words = match more - 1 {
                0 => format!("(v + {})·P{suffix}", k.saturating_add(1)),
                extra => format!("(v + {})·P + {extra}{suffix}", k.saturating_add(1)),
            };
            self.round(b, words, &mut left);
        }
    }

    /// Every rule's run under `bound` (`words`), fed back where none reached the floor.
    fn round(&mut self, bound: usize, words: String, runs_left: &mut usize) {
        match self.under(bound, words.into()) {
            true => self.finishes.clear(),
            false => self.feed_back(runs_left),
        }
    }

    /// Whether the run kept reaches the floor holding at most `bound` stages' activations.
    fn holds_at_most(&self, bound: usize) -> bool {
        self.best
            .as_ref()
            .is_some_and(|((end, peak), ..)| *end <= self.floor && *peak <= bound)
    }

    /// Whether the shortest run so far ends after the floor.
    fn short_of(&self) -> bool {
        self.best
            .as_ref()
            .is_some_and(|((end, _), ..)| *end > self.floor)
    }
}

/// A rank's ready actions: the backwards (or input halves), the forwards, the weight halves;
/// whether one was added since the rank last picked.
#[derive(Clone, Default)]
struct Queues {
    back: Ready,
    forward: Ready,
    weight: Ready,
    added: bool,
}

/// What one run gives: its end (in units of time, or ticks), each rank's actions in the order it
/// started them, when it finished each microbatch, whether its bound ever kept a rank from a
/// ready forward it would have started (else the run under any looser bound is this one), and
/// the most stages' activations a rank held.
type Run = (u64, Vec<Vec<Act>>, Vec<i64>, bool, usize);

/// One run under `rule` (with `due`, when each microbatch is due under [`Rule::Finished`]);
/// `None` if it does not finish (it always does: the data edges alone form no cycle, a weight
/// half is ready once its input half ends, and a forced forward breaks every wait on the bound).
fn run(shape: &Shape, rule: Rule, due: Vec<i64>) -> Option<Run> {
    let Shape {
        ranks,
        stages,
        microbatches: m,
        rank_of,
        bound,
        split,
        ticks,
        hops: _,
    } = *shape;
    let back_op = if split { Op::Input } else { Op::Backward };
    let tails = Tails::of(shape, back_op, due);
    let mut finished = vec![0i64; m];
    let total = shape.actions()?;
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
        first.push(Reverse(rule.key((Op::Forward, 0, mb), &tails)));
    }
    let mut ranks_now = RanksNow {
        running: match ticks {
            None => Running::Ring(Default::default()),
            Some(_) => Running::Heap(BinaryHeap::new()),
        },
        idle: (0..ranks).collect(),
        freed: vec![true; ranks],
        held: vec![0usize; ranks],
        peak: 0,
        out: {
            // Each rank's actions: two or three a microbatch for each stage it holds.
            let mut stages_of = vec![0usize; ranks];
            for &r in rank_of {
                if let Some(n) = stages_of.get_mut(r) {
                    *n += 1;
                }
            }
            let ops = if split { 3 } else { 2 };
            stages_of
                .into_iter()
                .map(|n| Vec::with_capacity(n.saturating_mul(m).saturating_mul(ops)))
                .collect()
        },
    };
    // What a transfer brings, by when it arrives (with the stages' own times only).
    let mut arrivals: BinaryHeap<Reverse<(u64, Act)>> = BinaryHeap::new();
    let mut now = 0u64;
    let mut done = 0usize;
    // Whether the bound ever kept a rank from a ready forward it would have started.
    let mut held_back = false;
    // What ends at one instant (reused: the ring's lists and this one trade places).
    let mut ended: Vec<Ending> = Vec::new();
    // When an action started at `now` ends.
    let ends = |(op, s, _): Act, now: u64| now.saturating_add(shape.cost(op, s));
    let pick = |r: usize, queues: &mut [Queues], forwards_allowed: bool| {
        pick(rule, back_op, queues.get_mut(r)?, forwards_allowed)
    };
    // Each pass starts or finishes an action, forces one or takes a transfer's arrival (at most
    // one an action): a bounded loop.
    for _ in 0..total.saturating_mul(4).saturating_add(ranks) {
        if done == total {
            return Some((now, ranks_now.out, finished, held_back, ranks_now.peak));
        }
        // The idle ranks in rank order (one that starts leaves the list). A rank that found
        // nothing to start is asked again only once it is freed (an action of its ended, its
        // held activations with it) or something is added to its lists: nothing else changes
        // its pick, and a rank's start changes no other's, so one pass an instant asks all.
        let mut i = 0;
        while let Some(&r) = ranks_now.idle.get(i) {
            let freed = ranks_now.freed.get_mut(r).is_some_and(std::mem::take);
            let added = queues
                .get_mut(r)
                .is_some_and(|q| std::mem::take(&mut q.added));
            let under = ranks_now.held.get(r).is_some_and(|&h| h < bound);
            let ask = freed || added;
            held_back |= ask && !under && queues.get(r).is_some_and(|q| q.forward_first(rule));
            match ask.then(|| pick(r, &mut queues, under)).flatten() {
                Some(act) => ranks_now.start(act, r, ends(act, now)),
                None => i += 1,
            }
        }
        // The next instant: an action's end, or a transfer's arrival before any.
        let arrival = arrivals.peek().map(|Reverse((at, _))| *at);
        let next = match arrival {
            Some(at) if ranks_now.running.next_end(now).is_none_or(|end| at < end) => {
                ended.clear();
                Some(at)
            }
            _ => ranks_now.running.next(now, &mut ended),
        };
        let Some(end) = next else {
            // Nothing runs, nothing is on its way and nothing may start under the bound: the
            // most urgent ready forward runs.
            let r = ranks_now
                .idle
                .iter()
                .filter_map(|&r| queues.get(r)?.forward.peek().map(|Reverse(k)| (*k, r)))
                .min()?
                .1;
            let act = pick(r, &mut queues, true)?;
            ranks_now.start(act, r, ends(act, now));
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
                    Op::Forward => (&mut on.forward, rule.key(act, &tails)),
                    Op::Backward | Op::Input => (&mut on.back, rule.key(act, &tails)),
                    // The oldest first: nothing waits for it.
                    Op::Weight => (&mut on.weight, (act.2 as i64, act.1 as i64, act.1, act.2)),
                };
                list.push(Reverse(key));
                on.added = true;
            }
            Some(())
        };
        // What another rank needs comes after its transfer.
        let mut hand = |act: Act, hop: u64| match hop {
            0 => ready(act),
            _ => {
                arrivals.push(Reverse((now.saturating_add(hop), act)));
                Some(())
            }
        };
        for &(r, op, s, mb) in &ended {
            ranks_now.set_idle(r);
            done += 1;
            match op {
                Op::Forward => {
                    if s + 1 < stages {
                        hand((Op::Forward, s + 1, mb), shape.hop(s))?;
                    }
                    hand((back_op, s, mb), 0)?;
                }
                Op::Backward | Op::Input => {
                    if op == Op::Backward {
                        ranks_now.release(r)?;
                    } else {
                        hand((Op::Weight, s, mb), 0)?;
                    }
                    if let Some(before) = s.checked_sub(1) {
                        hand((back_op, before, mb), shape.hop(before))?;
                    } else if let Some(f) = finished.get_mut(mb) {
                        *f = i64::try_from(now).unwrap_or(i64::MAX);
                    }
                }
                Op::Weight => ranks_now.release(r)?,
            }
        }
        while let Some(Reverse((at, act))) = arrivals.peek().copied()
            && at <= now
        {
            arrivals.pop();
            ready(act)?;
        }
    }
    None
}

impl Queues {
    /// Whether a rank with these ready actions starts a forward under `rule` where it may: one
    /// is ready and no backward is, or (a deadline rule) the forward is the more urgent — 1F1B's
    /// priorities run any ready backward first, a deadline rule a backward among equals.
    fn forward_first(&self, rule: Rule) -> bool {
        match (self.back.peek(), self.forward.peek()) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(Reverse(b)), Some(Reverse(f))) => rule != Rule::Oldest && f.0 < b.0,
        }
    }
}

/// What a rank with these ready actions runs next under `rule` (`back_op` the gradient chain's
/// op), a forward only where `forwards_allowed` (under the activation bound, or forced), a
/// weight half only where neither a forward it may start nor a backward is ready.
fn pick(rule: Rule, back_op: Op, queues: &mut Queues, forwards_allowed: bool) -> Option<Act> {
    let (op, list) = if forwards_allowed && queues.forward_first(rule) {
        (Op::Forward, &mut queues.forward)
    } else if !queues.back.is_empty() {
        (back_op, &mut queues.back)
    } else {
        (Op::Weight, &mut queues.weight)
    };
    let Reverse((_, _, s, mb)) = list.pop()?;
    Some((op, s, mb))
}

/// The ranks as a run goes: what is under way, which ranks are idle (in rank order: with the
/// stages' own times most instants end one action, and only the idle ranks are asked), which
/// were freed since they last picked, how many stages' activations each holds, the actions each
/// started.
struct RanksNow {
    running: Running,
    idle: Vec<usize>,
    freed: Vec<bool>,
    held: Vec<usize>,
    /// The most stages' activations a rank has held.
    peak: usize,
    out: Vec<Vec<Act>>,
}

impl RanksNow {
    /// Starts `act` on rank `r`, to end at `end`.
    fn start(&mut self, act: Act, r: usize, end: u64) {
        let (op, s, mb) = act;
        self.running.push(end, (r, op, s, mb));
        if let Ok(at) = self.idle.binary_search(&r) {
            self.idle.remove(at);
        }
        if op == Op::Forward
            && let Some(h) = self.held.get_mut(r)
        {
            *h += 1;
            self.peak = self.peak.max(*h);
        }
        if let Some(order) = self.out.get_mut(r) {
            order.push(act);
        }
    }

    /// Rank `r` is idle again, to be asked what it starts.
    fn set_idle(&mut self, r: usize) {
        if let Err(at) = self.idle.binary_search(&r) {
            self.idle.insert(at, r);
        }
        if let Some(f) = self.freed.get_mut(r) {
            *f = true;
        }
    }

    /// Rank `r` frees one stage's activations.
    fn release(&mut self, r: usize) -> Option<()> {
        let h = self.held.get_mut(r)?;
        *h = h.saturating_sub(1);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run kept: its end, bound in words, most stages' activations a rank holds in it, and
    /// how many bounds runs were made under.
    fn kept(listed: &Listed) -> (u64, &str, usize, usize) {
        (listed.end, &listed.bound, listed.held, listed.bounds)
    }

    /// The placement's shape over `rank_of`, under `bound`, with `ticks` where given.
    fn shape<'a>(
        rank_of: &'a [usize],
        m: usize,
        bound: usize,
        split: bool,
        ticks: Option<&'a [StageTicks]>,
    ) -> Shape<'a> {
        Shape {
            ranks: rank_of.iter().max().map_or(0, |r| r + 1),
            stages: rank_of.len(),
            microbatches: m,
            rank_of,
            bound,
            split,
            ticks,
            hops: &[],
        }
    }

    /// Times that are the units' (a forward one tick, a backward two, each half one) run every
    /// rule exactly as the units do: the heap of actions under way ends them as the ring does.
    #[test]
    fn the_units_as_ticks_run_as_the_units() {
        let v_fold = [0, 1, 2, 3, 3, 2, 1, 0];
        for split in [false, true] {
            let units = vec![[FORWARD, BACKWARD, HALF, HALF]; v_fold.len()];
            for bound in [4, 7, 8] {
                for m in [4, 5, 8] {
                    let plain = shape(&v_fold, m, bound, split, None);
                    let timed = shape(&v_fold, m, bound, split, Some(&units));
                    assert_eq!(plain.unit(), timed.unit());
                    for rule in Rule::tried(2, plain.unit(), false) {
                        assert_eq!(
                            run(&plain, rule, Vec::new()),
                            run(&timed, rule, Vec::new()),
                            "{rule:?} {m} {bound}"
                        );
                    }
                }
            }
        }
    }

    /// The runs take each stage's own time: two ranks, three microbatches, the second stage's
    /// backward ten times a forward. The shortest run reaches the bound its busiest rank gives:
    /// the first forward (one tick), the second rank's three forwards and three backwards with
    /// nothing between them (3·(1 + 10)), then the first stage's last backward (two).
    #[test]
    fn stage_times_set_the_runs_end() {
        let rank_of = [0, 1];
        let ticks = [[1, 2, 1, 1], [1, 10, 5, 5]];
        let times = |stages| Times { stages, hops: &[] };
        let listed = shortest(2, 3, &rank_of, false, None, Some(times(&ticks))).unwrap();
        assert_eq!(listed.end, 1 + 3 * 11 + 2);
        assert_eq!(listed.rules, 7);
        // Times for other than every stage: nothing to run.
        assert_eq!(
            shortest(2, 3, &rank_of, false, None, Some(times(&ticks[..1]))),
            None
        );
    }

    /// A transfer delays what another rank needs by its time, and the bound the ranks' work gives
    /// counts it: two ranks, a stage each, three microbatches, a forward one tick, a backward
    /// two, a transfer one. Rank 1's first forward starts after rank 0's and its transfer (2),
    /// then its three forwards and backwards run back to back (9), and the last gradient's
    /// transfer and rank 0's last backward follow (3): 14 where, without the transfer, 12.
    #[test]
    fn transfers_delay_what_another_rank_needs() {
        let rank_of = [0, 1];
        let stages = [[FORWARD, BACKWARD, HALF, HALF]; 2];
        let times = |hops| Times {
            stages: &stages,
            hops,
        };
        let end = |hops| shortest(2, 3, &rank_of, false, None, Some(times(hops))).map(|l| l.end);
        assert_eq!(end(&[]), Some(12));
        assert_eq!(end(&[1]), Some(14));
        let mut s = shape(&rank_of, 3, 3, false, Some(&stages));
        s.hops = &[1];
        assert_eq!(s.work_bound(), 14);
        // Transfers for other than every stage but the last: nothing to run.
        assert_eq!(end(&[1, 1]), None);
        // Two transfers of a tick, down and back, fall short of a stage's three ticks of work:
        // no room is made for them; three stages' two transfers of three ticks make four.
        assert_eq!(latency(&rank_of, false, times(&[1])), 0);
        let three = [[FORWARD, BACKWARD, HALF, HALF]; 3];
        let hops = [3, 3];
        let wide = Times {
            stages: &three,
            hops: &hops,
        };
        assert_eq!(latency(&[0, 1, 2], false, wide), 4);
        // A transfer between stages on one rank takes no time.
        assert_eq!(latency(&[0, 0, 1], false, wide), 2);
    }

    /// Hanayo's two waves over three ranks, nine microbatches: no run under 1F1B's bound
    /// (`(v + 1)·P − 1` = 14 stages' activations), nor any made again, reaches the bound the ranks'
    /// work gives, `(4M + P − 1)·3 = 114`; under `P` more (17) one does, and then, the bounds
    /// between tried tightest first, one under 15 (`(v + 1)·P`) too: the run kept holds 15.
    #[test]
    fn runs_short_of_the_work_bound_are_made_again_p_looser() {
        let wave = [0, 1, 2, 2, 1, 0];
        let rank_of: Vec<usize> = wave.iter().chain(&wave).copied().collect();
        let s = shape(&rank_of, 9, 14, false, None);
        assert_eq!(s.work_bound(), 114);
        let listed = shortest(3, 9, &rank_of, false, None, None).unwrap();
        assert_eq!(
            (kept(&listed), listed.fed_back),
            ((114, "(v + 1)·P", 15, 3), true)
        );
        // A schedule's own bound is kept: nothing looser is tried.
        let own = shortest(3, 9, &rank_of, false, Some(("own", 14)), None).unwrap();
        assert_eq!((own.end, own.bounds), (115, 1));
    }

    /// Three waves over three ranks, six microbatches: under 1F1B's bound (20 stages'
    /// activations) and `P` looser (23), made again with their finishes, no run reaches the bound
    /// the ranks' work gives, `(6M + P − 1)·3 = 114`; `P` looser again (26) one does; of the
    /// bounds between, tightest first, 21 does not and 22 (`(v + 1)·P + 1`) does, and the scan
    /// stops (23 was tried; the run kept holds less than any bound after). With four
    /// microbatches none reaches 78 (79), and the rounds stop after the first (23): under it no
    /// rank was ever kept from a ready forward, so a looser bound would run the same.
    #[test]
    fn runs_still_short_are_made_again_p_looser_each_round() {
        let wave = [0, 1, 2, 2, 1, 0];
        let rank_of: Vec<usize> = wave.iter().cycle().take(18).copied().collect();
        let listed = shortest(3, 6, &rank_of, false, None, None).unwrap();
        assert_eq!(kept(&listed), (114, "(v + 1)·P + 1", 22, 5));
        let few = shortest(3, 4, &rank_of, false, None, None).unwrap();
        assert_eq!((few.end, few.bounds), (79, 2));
    }

    /// Four waves over eight ranks, sixteen microbatches: the rounds reach the bound the ranks'
    /// work gives, `(8M + P − 1)·3 = 405`, five rounds looser than 1F1B's bound (71), under 111,
    /// holding 111. Trying all 35 bounds between would take 525 runs (five rules, each made again
    /// twice) where the budget holds 488 (10^6 actions of 2,048 a run), so only the seven within
    /// the last round are tried, tightest
    /// first: 104, 105 and 106 do not reach it, 107 (`(v + 5)·P + 3`) does, holding 107, and no
    /// bound after is under that (ten bounds in all).
    #[test]
    fn bounds_within_the_last_round_are_tried_where_the_budget_holds_only_those() {
        let wave = [0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0];
        let rank_of: Vec<usize> = wave.iter().cycle().take(64).copied().collect();
        let listed = shortest(8, 16, &rank_of, false, None, None).unwrap();
        assert_eq!(kept(&listed), (405, "(v + 5)·P + 3", 107, 10));
    }

    /// With transfers that count, a bound between carries their room in its words: two waves
    /// over three ranks, six microbatches, stages of two ticks forward and four back, a tick a
    /// transfer (room for `l = 2` stages' activations more in flight): no run under 1F1B's bound
    /// with that room, 16, reaches the bound the ranks' work gives, one under 19 (`P` looser)
    /// does, and of the bounds between, 17 does not and 18 (`(v + 1)·P + 1 + l`) does, holding
    /// 18 (five bounds in all).
    #[test]
    fn a_bound_between_with_transfers_names_their_room() {
        let p = 3;
        let rank_of: Vec<usize> = (0..4)
            .flat_map(|c| (0..p).map(move |k| crate::vocab::layout::v_fold_rank(c, k, p)))
            .collect();
        let stages = vec![[2, 4, 2, 2]; rank_of.len()];
        let hops = vec![1; rank_of.len() - 1];
        let times = Times {
            stages: &stages,
            hops: &hops,
        };
        assert_eq!(latency(&rank_of, false, times), 2);
        let listed = shortest(p, 6, &rank_of, false, None, Some(times)).unwrap();
        assert_eq!(
            kept(&listed),
            (
                160,
                "(v + 1)·P + 1 + ⌊2Σh/(F + B)⌋ (Σh the transfers along the stages)",
                18,
                5
            )
        );
    }

    /// Hanayo's two waves over four ranks (the zigzag 0 1 2 3 3 2 1 0, twice), eight
    /// microbatches: no rule's run reaches the bound the ranks' work gives, `(4M + P − 1)·3 =
    /// 105` units (rank 3: three forwards before its first stage, 96 units of work, six after
    /// its last backward), so each is made again with its microbatches due when it finished them,
    /// and one of those runs reaches it (the rules alone: 106).
    #[test]
    fn runs_made_again_with_their_finishes_reach_the_work_bound() {
        let wave = [0, 1, 2, 3, 3, 2, 1, 0];
        let rank_of: Vec<usize> = wave.iter().chain(&wave).copied().collect();
        let s = shape(&rank_of, 8, 4 * 5 - 1, false, None);
        assert_eq!(s.work_bound(), 105);
        let rules_alone = Rule::tried(4, s.unit(), false)
            .into_iter()
            .filter_map(|rule| run(&s, rule, Vec::new()).map(|r| r.0))
            .min();
        assert_eq!(rules_alone, Some(106));
        let listed = shortest(4, 8, &rank_of, false, None, None).unwrap();
        assert_eq!((listed.end, listed.fed_back), (105, true));
        assert_eq!(
            listed.rule,
            "the least slack first (each microbatch due when an earlier run finished it)"
        );
    }
}
