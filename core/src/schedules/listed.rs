//! An order list-scheduled over any placement of a plain wavefront's stages (forwards and
//! whole backwards): the ranks run the pipeline with forwards taking one unit of time and
//! backwards two; whenever a rank is free it starts one of its ready actions, a forward only
//! while it holds fewer than `(v + 1)·P − 1` stages' activations (interleaved 1F1B's peak on its
//! first rank with rounds of `P`; when every rank waits on that bound with nothing running, the
//! most urgent ready forward runs anyway, so a run always ends). Which ready action a rank
//! starts is a [`Rule`]; up to five runs are made — 1F1B's priorities (the oldest microbatch's
//! backward first) and four earliest-deadline rules — and the shortest is kept (the first of
//! equals). The per-rank orders are read off that one run, so they are a projection of one
//! topological order of the dependencies: deadlock-free for any costs. Hanayo's waves run it over
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

/// Time a forward and a backward take in the runs the order is read from.
pub const FORWARD: u64 = 1;
pub const BACKWARD: u64 = 2;

/// An action of a run: `(backward, stage, microbatch)`.
pub type Act = (bool, usize, usize);
/// A rank's ready actions of one kind, most urgent first: `(priority, tie, stage, microbatch)`.
type Ready = BinaryHeap<Reverse<(i64, i64, usize, usize)>>;
/// The actions under way, soonest end first: `(end, rank, backward, stage, microbatch)`.
type Running = BinaryHeap<Reverse<(u64, usize, bool, usize, usize)>>;

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

    /// The key of `act` in its rank's ready list, over `stages` stages.
    fn key(self, (backward, s, mb): Act, stages: usize) -> (i64, i64, usize, usize) {
        let (si, total, mbi) = (s as i64, stages as i64, mb as i64);
        match self {
            Rule::Oldest => (mbi, if backward { -si } else { si }, s, mb),
            Rule::Deadline { spacing } => {
                // The longest path from the action's start to its microbatch's last backward.
                let tail = if backward {
                    (si + 1) * BACKWARD as i64
                } else {
                    (total - si) * FORWARD as i64 + total * BACKWARD as i64
                };
                (mbi.saturating_mul(spacing) - 2 * tail, mbi, s, mb)
            }
        }
    }
}

/// The shortest run over a placement: each rank's actions in order, the rule and the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Each rank's actions `(backward, stage, microbatch)`, in the order it starts them.
    pub actions: Vec<Vec<Act>>,
    /// Which rule gave it, in words.
    pub rule: String,
    /// The run's end, in units of time (a forward one, a backward two): what the order's own
    /// earliest-start replay takes at most.
    pub end: u64,
}

/// The placement's shape, as the runs read it.
struct Shape<'a> {
    ranks: usize,
    stages: usize,
    microbatches: usize,
    rank_of: &'a [usize],
    /// Stages' activations a rank may hold before it starts another forward (unforced).
    bound: usize,
}

/// The shortest of the runs of [`Rule::tried`] over `ranks` ranks, `microbatches` microbatches
/// and the stages `rank_of` places (stage `s` on rank `rank_of[s]`, the chain in stage order),
/// or `None` where there is nothing to run (no stage, no microbatch, a stage without a rank).
pub fn shortest(ranks: usize, microbatches: usize, rank_of: &[usize]) -> Option<Listed> {
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
        // Interleaved 1F1B's peak on its first rank with rounds of `P`: `(v − 1)·P + 2(P − 1) + 1`.
        bound: (chunks + 1).saturating_mul(ranks) - 1,
    };
    let mut best: Option<(u64, Rule, Vec<Vec<Act>>)> = None;
    let rules = Rule::tried(chunks);
    for (i, &rule) in rules.iter().enumerate() {
        // Two to four chunks make the first deadline rule a later one: run once.
        if rules.get(..i).is_some_and(|before| before.contains(&rule)) {
            continue;
        }
        let Some((end, run)) = run(&shape, rule) else {
            continue;
        };
        if best.as_ref().is_none_or(|(shortest, ..)| end < *shortest) {
            best = Some((end, rule, run));
        }
    }
    let (end, rule, actions) = best?;
    Some(Listed {
        actions,
        rule: rule.describe(),
        end,
    })
}

/// One run under `rule`: its end (in units of time) and each rank's actions in the order it
/// started them; `None` if it does not finish (it always does: the data edges alone form no
/// cycle, and a forced forward breaks every wait on the bound).
fn run(shape: &Shape, rule: Rule) -> Option<(u64, Vec<Vec<Act>>)> {
    let Shape {
        ranks,
        stages,
        microbatches: m,
        rank_of,
        bound,
    } = *shape;
    let total = stages.checked_mul(m)?.checked_mul(2)?;
    let id = |(backward, s, mb): Act| (usize::from(backward) * stages + s) * m + mb;
    // Inputs still missing: a forward waits for the stage before; the last stage's backward for
    // its forward; any other backward for its forward and the backward of the stage after.
    let mut missing = vec![0u8; total];
    for s in 0..stages {
        for mb in 0..m {
            if let Some(slot) = missing.get_mut(id((false, s, mb))) {
                *slot = u8::from(s > 0);
            }
            if let Some(slot) = missing.get_mut(id((true, s, mb))) {
                *slot = if s + 1 == stages { 1 } else { 2 };
            }
        }
    }
    // Per rank, the ready backwards and forwards, most urgent first.
    let mut backwards: Vec<Ready> = vec![BinaryHeap::new(); ranks];
    let mut forwards: Vec<Ready> = vec![BinaryHeap::new(); ranks];
    let first = forwards.get_mut(*rank_of.first()?)?;
    for mb in 0..m {
        first.push(Reverse(rule.key((false, 0, mb), stages)));
    }
    let mut held = vec![0usize; ranks];
    let mut free = vec![true; ranks];
    let mut out: Vec<Vec<Act>> = vec![Vec::new(); ranks];
    let mut running: Running = BinaryHeap::new();
    let mut now = 0u64;
    let mut done = 0usize;
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
            if let Some(act) = pick(rule, r, &mut backwards, &mut forwards, under) {
                start(act, r, now, &mut running, &mut free, &mut held, &mut out);
                started = true;
            }
        }
        if started {
            continue;
        }
        let Some(Reverse((end, r, backward, s, mb))) = running.pop() else {
            // Nothing runs and nothing may start under the bound: the most urgent ready forward
            // runs.
            let r = (0..ranks)
                .filter(|&r| free.get(r).copied().unwrap_or(false))
                .filter_map(|r| forwards.get(r)?.peek().map(|Reverse(k)| (*k, r)))
                .min()?
                .1;
            let act = pick(rule, r, &mut backwards, &mut forwards, true)?;
            start(act, r, now, &mut running, &mut free, &mut held, &mut out);
            continue;
        };
        now = end;
        // Everything that ends now ends before any rank picks again (a backward readied at this
        // instant is weighed with the forwards).
        let mut ended = vec![(r, backward, s, mb)];
        while let Some(Reverse((e, ..))) = running.peek()
            && *e == now
        {
            let Some(Reverse((_, r, backward, s, mb))) = running.pop() else {
                break;
            };
            ended.push((r, backward, s, mb));
        }
        let mut ready = |act: Act| -> Option<()> {
            let slot = missing.get_mut(id(act))?;
            *slot = slot.saturating_sub(1);
            if *slot == 0 {
                let on = *rank_of.get(act.1)?;
                let list = if act.0 { &mut backwards } else { &mut forwards };
                list.get_mut(on)?.push(Reverse(rule.key(act, stages)));
            }
            Some(())
        };
        for (r, backward, s, mb) in ended {
            *free.get_mut(r)? = true;
            done += 1;
            if backward {
                *held.get_mut(r)? = held.get(r)?.saturating_sub(1);
                if s > 0 {
                    ready((true, s - 1, mb))?;
                }
            } else {
                if s + 1 < stages {
                    ready((false, s + 1, mb))?;
                }
                ready((true, s, mb))?;
            }
        }
    }
    None
}

/// What rank `r` runs next under `rule`, a forward only where `forwards_allowed` (under the
/// activation bound, or forced).
fn pick(
    rule: Rule,
    r: usize,
    backwards: &mut [Ready],
    forwards: &mut [Ready],
    forwards_allowed: bool,
) -> Option<Act> {
    let backward = backwards.get(r)?.peek().map(|Reverse(k)| k.0);
    let forward = if forwards_allowed {
        forwards.get(r)?.peek().map(|Reverse(k)| k.0)
    } else {
        None
    };
    let take_backward = match (backward, forward) {
        (None, None) => return None,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        // 1F1B's priorities run any ready backward first; a deadline rule the more urgent, a
        // backward among equals.
        (Some(b), Some(f)) => rule == Rule::Oldest || b <= f,
    };
    let list = if take_backward { backwards } else { forwards };
    let Reverse((_, _, s, mb)) = list.get_mut(r)?.pop()?;
    Some((take_backward, s, mb))
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
    let (backward, s, mb) = act;
    let cost = if backward { BACKWARD } else { FORWARD };
    running.push(Reverse((now + cost, r, backward, s, mb)));
    if let Some(f) = free.get_mut(r) {
        *f = false;
    }
    if !backward && let Some(h) = held.get_mut(r) {
        *h += 1;
    }
    if let Some(order) = out.get_mut(r) {
        order.push(act);
    }
}
