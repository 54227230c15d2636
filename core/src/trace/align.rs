//! Aligning the ranks' clocks. Every cross-rank dependency the schedule implies is a causality
//! constraint on the offsets: stage `s+1`'s forward of a microbatch cannot finish before stage
//! `s`'s forward of it finished, and stage `s`'s backward cannot finish before stage `s+1`'s (the
//! activation or gradient has to be sent and received in between). Transfer spans themselves are
//! not used: PyTorch posts non-blocking receives long before the matching send. Each dependency
//! is a difference constraint
//! `offset_a − offset_b ≤ c`; shortest paths give, for every rank, the interval of offsets
//! (relative to the lowest rank) that satisfies them all — its width is how sure the alignment is.
//!
//! Every rank read from one file is one timeline, whatever it counts from: kept as recorded when
//! every dependency holds in it (a file that merges unaligned clocks, where one runs backwards,
//! is solved like several). When every file counts from the Unix epoch and zero offsets satisfy
//! all constraints, the files share a clock and stay as they are; otherwise the offsets are
//! solved from the constraints, with ranks that share a file tied to one offset.

use super::raw::ClockBase;
use super::recover::Measurement;
use super::rules::ActionKind;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// How the clocks were aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignMethod {
    /// Epoch timestamps consistent with every dependency: used as they are.
    SharedClock,
    /// Every rank read from one file (or files joined through ranks they share): one timeline,
    /// whatever it counts from, with every dependency holding in it (to a microsecond): used as
    /// it is.
    OneFile,
    /// Offsets solved from send→receive causality between the stages' compute.
    Causality,
    /// Nothing to align with (one rank), or the constraints contradict each other.
    None,
}

/// One rank's clock correction: aligned time = own time + `offset_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RankOffset {
    pub rank: usize,
    pub offset_ns: i64,
    /// The offsets the constraints allow, relative to the reference (lowest) rank; `None` where
    /// unbounded.
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    /// Half the width of the allowed interval; `None` when it is unbounded on either side.
    pub uncertainty_ns: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alignment {
    pub method: AlignMethod,
    /// In rank order.
    pub ranks: Vec<RankOffset>,
    /// Cross-rank dependencies used.
    pub constraints: usize,
    /// What a user should know: why the clocks could not be aligned, which rank floats free.
    pub notes: Vec<String>,
}

impl Alignment {
    /// The offset of `rank` (0 when the rank is unknown). The ranks are in rank order (they are
    /// the measurement's), so a run of many ranks looks each up in `log R`.
    pub fn offset(&self, rank: usize) -> i64 {
        self.ranks
            .binary_search_by_key(&rank, |r| r.rank)
            .ok()
            .and_then(|i| self.ranks.get(i))
            .map_or(0, |r| r.offset_ns)
    }
}

/// `(from, to, c)`: `x_to ≤ x_from + c`.
type Edge = (usize, usize, i64);

/// How far a dependency may run backwards in one file and the file still be taken as one
/// timeline: the Chrome trace format's unit, a microsecond (an exported prediction's times are
/// rounded to nanoseconds from fractional microseconds).
const ONE_FILE_TOLERANCE_NS: i64 = 1_000;

/// Aligns the ranks of a measurement.
pub fn align(m: &Measurement) -> Alignment {
    let ranks: Vec<usize> = m.ranks.iter().map(|r| r.rank).collect();
    let index: FxHashMap<usize, usize> = ranks.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let dependencies = constraints(m, &index);
    let used = dependencies.len();
    let n = ranks.len();
    let zero = |method, notes| Alignment {
        method,
        ranks: ranks
            .iter()
            .map(|&rank| RankOffset {
                rank,
                offset_ns: 0,
                min_ns: None,
                max_ns: None,
                uncertainty_ns: None,
            })
            .collect(),
        constraints: used,
        notes,
    };
    if n < 2 {
        return zero(AlignMethod::None, Vec::new());
    }
    let (ties, one_timeline) = same_file_ties(m);
    let backwards = dependencies
        .iter()
        .map(|&(_, _, c)| c)
        .min()
        .filter(|&c| c < 0)
        .map_or(0, i64::saturating_neg);
    let mut notes = Vec::new();
    // Every rank is in one file (or files that share ranks): one timeline, kept as written when
    // every dependency holds in it; when one runs backwards it is a merge of unaligned clocks,
    // and the ranks are solved each on its own.
    let one_file = one_timeline && backwards <= ONE_FILE_TOLERANCE_NS;
    if one_timeline && !one_file {
        notes.push(format!(
            "every rank is read from one file, but a dependency of the schedule runs {backwards} ns backwards in it: offsets solved from causality"
        ));
    }
    let mut edges = dependencies;
    if !one_timeline {
        edges.extend(ties);
    }
    let Some(hi) = shortest(n, &edges, false) else {
        if one_file {
            return zero(AlignMethod::OneFile, notes);
        }
        notes.push(
            "the cross-rank dependencies contradict each other (a cycle of constraints); clocks left as they are"
                .to_string(),
        );
        return zero(AlignMethod::None, notes);
    };
    let lo: Vec<Option<i64>> = shortest(n, &edges, true)
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.map(i64::saturating_neg))
        .collect();
    let epoch = m.ranks.iter().all(|r| r.clock == ClockBase::Epoch);
    let method = if one_file {
        AlignMethod::OneFile
    } else if epoch && backwards == 0 {
        AlignMethod::SharedClock
    } else {
        if epoch {
            notes.push(
                "the files count from the epoch but disagree with the schedule's dependencies; offsets solved from causality"
                    .to_string(),
            );
        }
        AlignMethod::Causality
    };
    let offsets = offsets(method, &lo, &hi, &edges);
    let result = ranks
        .iter()
        .enumerate()
        .map(|(i, &rank)| {
            let (min_ns, max_ns) = (lo.get(i).copied().flatten(), hi.get(i).copied().flatten());
            if i > 0 && min_ns.is_none() && max_ns.is_none() && method != AlignMethod::OneFile {
                notes.push(format!(
                    "rank {rank} shares no dependency with rank {}: its clock is not aligned",
                    ranks.first().copied().unwrap_or(0)
                ));
            }
            RankOffset {
                rank,
                offset_ns: offsets.get(i).copied().unwrap_or(0),
                min_ns,
                max_ns,
                uncertainty_ns: match (min_ns, max_ns) {
                    (Some(l), Some(h)) => Some(h.saturating_sub(l) / 2),
                    _ => None,
                },
            }
        })
        .collect();
    Alignment {
        method,
        ranks: result,
        constraints: used,
        notes,
    }
}

/// Ranks that share a file are on one clock: `x_a = x_b`, as two edges of weight 0 from each
/// rank to the first rank that shares a file with it (transitively: files joined through a
/// rank read from both are one clock). And whether that makes every rank one timeline.
fn same_file_ties(m: &Measurement) -> (Vec<Edge>, bool) {
    // Union-find over the ranks, joined through the files they share.
    let n = m.ranks.len();
    let mut sets = petgraph::unionfind::UnionFind::<usize>::new(n);
    let mut first_of: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, r) in m.ranks.iter().enumerate() {
        for &file in &r.files {
            sets.union(*first_of.entry(file).or_insert(i), i);
        }
    }
    let mut ties = Vec::new();
    let mut roots = rustc_hash::FxHashSet::default();
    for i in 0..n {
        let r = sets.find_mut(i);
        roots.insert(r);
        if r != i {
            ties.push((r, i, 0));
            ties.push((i, r, 0));
        }
    }
    let every_rank_in_files = m.ranks.iter().all(|r| !r.files.is_empty());
    (ties, roots.len() == 1 && every_rank_in_files)
}

/// Each rank's offset: none on a shared clock; else the middle of its feasible range (a bound
/// where it has one), or, when those middles break a constraint, the upper bounds.
fn offsets(
    method: AlignMethod,
    lo: &[Option<i64>],
    hi: &[Option<i64>],
    edges: &[(usize, usize, i64)],
) -> Vec<i64> {
    let n = hi.len();
    if matches!(method, AlignMethod::SharedClock | AlignMethod::OneFile) {
        return vec![0; n];
    }
    let offsets: Vec<i64> = (0..n)
        .map(
            |i| match (lo.get(i).copied().flatten(), hi.get(i).copied().flatten()) {
                (Some(l), Some(h)) => ((i128::from(l) + i128::from(h)) / 2) as i64,
                (Some(l), None) => l,
                (None, Some(h)) => h,
                (None, None) => 0,
            },
        )
        .collect();
    let feasible = |x: &[i64]| {
        edges
            .iter()
            .all(|&(from, to, c)| match (x.get(from), x.get(to)) {
                (Some(&a), Some(&b)) => b <= a.saturating_add(c),
                _ => true,
            })
    };
    if feasible(&offsets) {
        offsets
    } else {
        hi.iter().map(|d| d.unwrap_or(0)).collect()
    }
}

/// The tightest constraint per ordered pair of ranks.
fn constraints(m: &Measurement, index: &FxHashMap<usize, usize>) -> Vec<Edge> {
    type Key = (usize, ActionKind, usize, usize);
    // Each action's (stage, kind, microbatch, step), its rank's index and its end — what the
    // join reads, not the whole event —, in the ranks' and actions' order (`seq`), sorted by
    // key and then that order, the first of each key kept: a list at its length rather than a
    // table grown by doubling (a million actions held 150 MB of table).
    let total = m.ranks.iter().map(|r| r.actions.len()).sum();
    let mut at: Vec<(Key, usize, usize, i64)> = Vec::with_capacity(total);
    for r in &m.ranks {
        let Some(&i) = index.get(&r.rank) else {
            continue;
        };
        for e in &r.actions {
            at.push(((e.stage, e.kind, e.mb, e.step), at.len(), i, e.end_ns));
        }
    }
    at.sort_unstable_by_key(|&(key, seq, _, _)| (key, seq));
    at.dedup_by_key(|&mut (key, _, _, _)| key);
    let find = |key: Key| {
        at.binary_search_by_key(&key, |&(k, _, _, _)| k)
            .ok()
            .and_then(|i| at.get(i))
            .map(|&(_, _, rank, end)| (rank, end))
    };
    let mut tightest: FxHashMap<(usize, usize), i64> = FxHashMap::default();
    let mut add = |earlier: (usize, i64), later: (usize, i64)| {
        // later_time + x_later ≥ earlier_time + x_earlier  ⇔  x_earlier ≤ x_later + (later − earlier)
        let ((a, t_a), (b, t_b)) = (earlier, later);
        if a != b {
            let c = t_b.saturating_sub(t_a);
            let slot = tightest.entry((b, a)).or_insert(c);
            *slot = (*slot).min(c);
        }
    };
    for &((stage, kind, mb, step), _, rank, end) in &at {
        let find = |stage: usize| find((stage, kind, mb, step));
        // What the action hands on flows to the next stage (a forward, an energy forward, a
        // force backward) or to the previous one (a backward or its input half, a force forward,
        // an energy backward); a weight half hands on nothing.
        match kind.phase() {
            Some(p) if p.flows_down() => {
                if let Some(next) = find(stage + 1) {
                    add((rank, end), next);
                }
            }
            Some(p) if p != crate::vocab::phase::Phase::Weight => {
                if let Some(prev) = stage.checked_sub(1)
                    && let Some(previous) = find(prev)
                {
                    add((rank, end), previous);
                }
            }
            _ => {}
        }
    }
    let mut edges: Vec<Edge> = tightest
        .into_iter()
        .map(|((from, to), c)| (from, to, c))
        .collect();
    edges.sort_unstable();
    edges
}

/// Shortest distances from node 0 (or, `reverse`, to node 0); `None` on a negative cycle.
///
/// Bellman–Ford with a queue (SPFA): a node is relaxed again only when its distance improved, so
/// on the chains and rings pipeline dependencies form the work is linear in the number of
/// constraints (plain rounds of Bellman–Ford were quadratic in the number of ranks: 200,000
/// ranks took minutes). A node relaxed `n` times lies on a negative cycle.
fn shortest(n: usize, edges: &[Edge], reverse: bool) -> Option<Vec<Option<i64>>> {
    // Out-edges of every node, flat.
    let mut start = vec![0usize; n + 1];
    for &(from, to, _) in edges {
        let from = if reverse { to } else { from };
        if let Some(slot) = start.get_mut(from + 1) {
            *slot += 1;
        }
    }
    for i in 1..=n {
        let before = start.get(i - 1).copied().unwrap_or(0);
        if let Some(slot) = start.get_mut(i) {
            *slot += before;
        }
    }
    let mut fill = start.clone();
    let mut out: Vec<(usize, i64)> = vec![(0, 0); edges.len()];
    for &(from, to, c) in edges {
        let (from, to) = if reverse { (to, from) } else { (from, to) };
        if let Some(at) = fill.get_mut(from)
            && let Some(slot) = out.get_mut(*at)
        {
            *slot = (to, c);
            *at += 1;
        }
    }
    let mut dist: Vec<Option<i64>> = vec![None; n];
    let mut relaxed = vec![0usize; n];
    let mut queued = vec![false; n];
    let mut queue = std::collections::VecDeque::new();
    if n > 0 {
        if let (Some(d), Some(q)) = (dist.first_mut(), queued.first_mut()) {
            *d = Some(0);
            *q = true;
        }
        queue.push_back(0usize);
    }
    while let Some(node) = queue.pop_front() {
        if let Some(q) = queued.get_mut(node) {
            *q = false;
        }
        let Some(Some(d)) = dist.get(node).copied() else {
            continue;
        };
        let (lo, hi) = (
            start.get(node).copied().unwrap_or(0),
            start.get(node + 1).copied().unwrap_or(0),
        );
        for &(to, c) in out.get(lo..hi).unwrap_or_default() {
            let candidate = d.saturating_add(c);
            let Some(slot) = dist.get_mut(to) else {
                continue;
            };
            if slot.is_none_or(|old| candidate < old) {
                *slot = Some(candidate);
                let count = relaxed.get_mut(to)?;
                *count += 1;
                if *count >= n.max(2) {
                    return None;
                }
                if let Some(q) = queued.get_mut(to)
                    && !*q
                {
                    *q = true;
                    queue.push_back(to);
                }
            }
        }
    }
    Some(dist)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::recover::MeasuredEvent;

    #[test]
    fn shortest_paths_on_a_long_chain_and_a_negative_cycle() {
        // 200,000 ranks in a chain, a constraint each way between neighbours: linear work.
        let n = 200_000;
        let mut edges: Vec<Edge> = Vec::new();
        for i in 0..n - 1 {
            edges.push((i, i + 1, 5));
            edges.push((i + 1, i, -3));
        }
        edges.sort_unstable();
        let forward = shortest(n, &edges, false).unwrap();
        assert_eq!(forward[n - 1], Some(5 * (n as i64 - 1)));
        let back = shortest(n, &edges, true).unwrap();
        assert_eq!(back[n - 1], Some(-3 * (n as i64 - 1)));
        // 0 → 1 costs 1, 1 → 0 costs −2: a negative cycle.
        assert_eq!(shortest(2, &[(0, 1, 1), (1, 0, -2)], false), None);
        assert_eq!(
            shortest(3, &[(0, 1, 1), (1, 2, 1)], false),
            Some(vec![Some(0), Some(1), Some(2)])
        );
    }
    use crate::trace::rank::RankSource;
    use crate::trace::recover::{MeasuredRank, SpanRef};

    fn ev(stage: usize, kind: ActionKind, mb: usize, start: i64, end: i64) -> MeasuredEvent {
        MeasuredEvent {
            stage,
            kind,
            direction: None,
            mb,
            start_ns: start,
            end_ns: end,
            step: 0,
            source: SpanRef { file: 0, span: 0 },
            compute_ns: end - start,
            compute_start_ns: start,
            compute_end_ns: end,
            host_start_ns: start,
            host_end_ns: end,
        }
    }

    fn rank(rank: usize, clock: ClockBase, actions: Vec<MeasuredEvent>) -> MeasuredRank {
        MeasuredRank {
            rank,
            files: vec![rank],
            rank_source: RankSource::FileName,
            sources: vec![(rank, RankSource::FileName)],
            clock,
            steps: Vec::new(),
            step_source: crate::trace::step::StepSource::Markers,
            actions,
            transfers: Vec::new(),
            device_side: false,
            timed_by_kernels: false,
            inferred: false,
            memory: None,
            event_count: 0,
        }
    }

    #[test]
    fn offsets_are_solved_from_dependencies_with_their_uncertainty() {
        use ActionKind::*;
        // Rank 1's clock runs 1000 ns ahead. True times: 0F0 ends at 100, 1F0 ends at 250,
        // 1B0 ends at 400, 0B0 ends at 600.
        let m = Measurement {
            files: vec![],
            ranks: vec![
                rank(
                    0,
                    ClockBase::Local,
                    vec![ev(0, Forward, 0, 0, 100), ev(0, Backward, 0, 450, 600)],
                ),
                rank(
                    1,
                    ClockBase::Local,
                    vec![
                        ev(1, Forward, 0, 1150, 1250),
                        ev(1, Backward, 0, 1300, 1400),
                    ],
                ),
            ],
            warnings: vec![],
        };
        let a = align(&m);
        assert_eq!(a.method, AlignMethod::Causality);
        assert_eq!(a.constraints, 2);
        // x1 ≥ 100 − 1250 = −1150 and x1 ≤ 600 − 1400 = −800.
        assert_eq!(
            a.ranks[1],
            RankOffset {
                rank: 1,
                offset_ns: -975,
                min_ns: Some(-1150),
                max_ns: Some(-800),
                uncertainty_ns: Some(175)
            }
        );
        assert_eq!(a.ranks[0].offset_ns, 0);
    }

    #[test]
    fn a_shared_epoch_clock_is_kept_when_consistent() {
        use ActionKind::*;
        let m = Measurement {
            files: vec![],
            ranks: vec![
                rank(
                    0,
                    ClockBase::Epoch,
                    vec![ev(0, Forward, 0, 0, 100), ev(0, Backward, 0, 450, 600)],
                ),
                rank(
                    1,
                    ClockBase::Epoch,
                    vec![ev(1, Forward, 0, 150, 250), ev(1, Backward, 0, 300, 400)],
                ),
            ],
            warnings: vec![],
        };
        let a = align(&m);
        assert_eq!(a.method, AlignMethod::SharedClock);
        assert_eq!(a.ranks[1].offset_ns, 0);
        assert_eq!(
            (a.ranks[1].min_ns, a.ranks[1].max_ns),
            (Some(-150), Some(200))
        );
        assert!(a.notes.is_empty());
    }

    #[test]
    fn the_ranks_of_one_file_are_one_timeline() {
        use ActionKind::*;
        let in_file = |r: usize, files: Vec<usize>, actions| MeasuredRank {
            files,
            ..rank(r, ClockBase::Local, actions)
        };
        let one_file = |rank1: Vec<MeasuredEvent>| Measurement {
            files: vec![],
            ranks: vec![
                in_file(
                    0,
                    vec![0],
                    vec![ev(0, Forward, 0, 0, 100), ev(0, Backward, 0, 450, 600)],
                ),
                in_file(1, vec![0], rank1),
            ],
            warnings: vec![],
        };
        // One file, counting from 0: kept as written, not moved to the middle of what the
        // dependencies allow (rank 1 could sit anywhere in [−150, 200]).
        let a = align(&one_file(vec![
            ev(1, Forward, 0, 150, 250),
            ev(1, Backward, 0, 300, 400),
        ]));
        assert_eq!(a.method, AlignMethod::OneFile);
        assert_eq!(a.ranks[1].offset_ns, 0);
        assert_eq!(
            (a.ranks[1].min_ns, a.ranks[1].max_ns),
            (Some(-150), Some(200))
        );
        assert!(a.notes.is_empty());
        // A dependency 10 ns backwards is the format's rounding: still one timeline.
        let a = align(&one_file(vec![
            ev(1, Forward, 0, 50, 90),
            ev(1, Backward, 0, 300, 400),
        ]));
        assert_eq!(a.method, AlignMethod::OneFile);
        assert_eq!(a.ranks[1].offset_ns, 0);
        // Rank 1 5 µs late: a merge of unaligned clocks, solved from causality and said so.
        let a = align(&one_file(vec![
            ev(1, Forward, 0, 5_150, 5_250),
            ev(1, Backward, 0, 5_300, 5_400),
        ]));
        assert_eq!(a.method, AlignMethod::Causality);
        assert_eq!(
            a.notes,
            [
                "every rank is read from one file, but a dependency of the schedule runs 4800 ns backwards in it: offsets solved from causality"
            ]
        );
        assert_eq!(a.ranks[1].offset_ns, -4975);
        // Ranks 1 and 2 share a file, rank 0 has its own: 1 and 2 move together, within what
        // both allow (untied, rank 1 could sit in [−1150, −800] and rank 2 in [−1300, −650]).
        let tied = Measurement {
            files: vec![],
            ranks: vec![
                in_file(
                    0,
                    vec![0],
                    vec![ev(0, Forward, 0, 0, 100), ev(0, Backward, 0, 700, 800)],
                ),
                in_file(
                    1,
                    vec![1],
                    vec![
                        ev(1, Forward, 0, 1150, 1250),
                        ev(1, Backward, 0, 1500, 1600),
                    ],
                ),
                in_file(
                    2,
                    vec![1, 2],
                    vec![
                        ev(2, Forward, 0, 1300, 1400),
                        ev(2, Backward, 0, 1400, 1450),
                    ],
                ),
            ],
            warnings: vec![],
        };
        let a = align(&tied);
        assert_eq!(a.method, AlignMethod::Causality);
        assert_eq!(a.constraints, 4);
        assert_eq!(
            (a.ranks[1].min_ns, a.ranks[1].max_ns),
            (a.ranks[2].min_ns, a.ranks[2].max_ns)
        );
        assert_eq!(a.ranks[1].min_ns, Some(-1150));
        assert_eq!(a.ranks[1].offset_ns, a.ranks[2].offset_ns);
    }

    #[test]
    fn a_rank_without_dependencies_is_named() {
        use ActionKind::*;
        let m = Measurement {
            files: vec![],
            ranks: vec![
                rank(0, ClockBase::Local, vec![ev(0, Forward, 0, 0, 100)]),
                rank(1, ClockBase::Local, vec![ev(5, Forward, 0, 0, 100)]),
            ],
            warnings: vec![],
        };
        let a = align(&m);
        assert_eq!(
            a.notes,
            ["rank 1 shares no dependency with rank 0: its clock is not aligned"]
        );
        assert_eq!(a.ranks[1].uncertainty_ns, None);
    }
}
