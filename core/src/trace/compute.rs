//! What an action span spent computing. An annotated span (`PP:0F3`, `Forward 3`, an NVTX range)
//! holds the action's compute *and* its wait for inputs; its compute runs from the first compute
//! op inside it on the same thread to the last one's end, the thread's time between them
//! included (the runtime's own work for the action: the autograd engine, Python; its inputs were
//! in when its first op began) but a communication call's (`c10d::recv_`) — a compute op being
//! every span there other than communication (`c10d::…`, `gloo:…`, `nccl:…`,
//! `record_param_comms`), profiler bookkeeping (step markers, user annotations) and schedule
//! annotations themselves. On a device stream (the GPU copies of the
//! annotations) the ops inside are the kernels. A CPU span whose ops launched GPU kernels (a
//! flow from the launch on its thread to the kernel on a stream, Kineto's `ac2g`) computes on the
//! device: its compute is the union of those kernels, where and when they ran. A CUDA backward
//! launches its kernels from the autograd engine's own device thread while the thread that called
//! it waits inside the action's span: the engine's launches during the span are the span's too.
//! The rest of the span is its wait.

use super::raw::{RawTrace, Span};
use super::rules::Compiled;
use rustc_hash::FxHashMap;

/// Ops that move, allocate or view tensors: inside a forward they belong to it; alone (the
/// receive buffer before a receive, the gradient scaling at the step's end) they are no action.
const GLUE: [&str; 22] = [
    "aten::detach",
    "aten::detach_",
    "aten::empty",
    "aten::empty_strided",
    "aten::empty_like",
    "aten::tensor_split",
    "aten::split",
    "aten::split_with_sizes",
    "aten::chunk",
    "aten::cat",
    "aten::stack",
    "aten::div_",
    "aten::mul_",
    "aten::zero_",
    "aten::fill_",
    "aten::zeros",
    "aten::zeros_like",
    "aten::ones_like",
    "aten::copy_",
    "aten::to",
    "aten::_to_copy",
    "aten::view",
];

/// Whether an op only moves, allocates or views tensors ([`GLUE`]).
pub(super) fn is_glue(name: &str) -> bool {
    GLUE.contains(&name)
}

/// Whether an op named `name` is communication (a collective, a send or a receive).
pub(super) fn is_communication(name: &str) -> bool {
    const COMM: [&str; 4] = ["c10d::", "gloo:", "nccl:", "record_param_comms"];
    COMM.iter().any(|p| name.starts_with(p))
}

/// Whether a span named `name` (category `cat`) is communication or bookkeeping, not compute.
pub(super) fn not_compute(name: &str, cat: &str) -> bool {
    is_communication(name)
        || name.starts_with("ProfilerStep")
        || cat == "user_annotation"
        || cat == "gpu_user_annotation"
        || cat == "Trace"
        // What `mpipe export` writes beside the actions of a prediction: its transfers, reduces
        // and losses are not work inside an action.
        || matches!(cat, "transfer" | "reduce" | "loss" | "offload")
}

/// Every compute op of one file, per thread, sorted by start: `(start, end, glue)` in ns; and
/// the GPU kernels each CPU thread launched, by launch time: `(launch, kernel start, kernel end)`.
#[derive(Debug, Default)]
pub struct ComputeOps {
    by_thread: FxHashMap<u32, Vec<(i64, i64, bool)>>,
    kernels: FxHashMap<u32, Vec<(i64, i64, i64)>>,
    /// The autograd engine's ops (`autograd::…`) of each thread, merged into disjoint intervals
    /// sorted by start: an op inside one is backward work, any other is forward work.
    autograd: FxHashMap<u32, Vec<(i64, i64)>>,
    /// Each thread's communication calls (`c10d::send`, `c10d::recv_`, …; not the annotations
    /// of a transfer's whole time), merged into disjoint intervals sorted by start: time between
    /// two of an action's ops that is not its compute.
    communication: FxHashMap<u32, Vec<(i64, i64)>>,
    /// Per process, the threads that launch kernels for the actions of another thread: threads
    /// with launches and no action of their own (PyTorch's autograd engine runs a CUDA backward
    /// on a device thread of its own). Their launches inside the engine's ops belong to the
    /// action whose span holds them.
    helpers: FxHashMap<u32, Vec<u32>>,
    /// The process of each thread (by index into the trace's threads).
    process_of: Vec<u32>,
}

/// Which of an overlapped pair's two actions an op belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpPhase {
    Forward,
    Backward,
}

impl ComputeOps {
    /// The compute ops of `trace`: spans the rules do not read as actions, transfers or steps,
    /// and that are neither communication nor bookkeeping.
    pub fn new(trace: &RawTrace, rules: &Compiled) -> ComputeOps {
        // Per distinct (name, category): `None` not an op, else whether it is glue.
        let mut is_op: FxHashMap<u32, Option<bool>> = FxHashMap::default();
        let mut op_of = |span: &Span| {
            let op = *is_op.entry(span.kind).or_insert_with(|| {
                let name = trace.name(span);
                (rules.classify(name).is_none()
                    && rules.step(name).is_none()
                    && !not_compute(name, trace.cat(span)))
                .then(|| is_glue(name))
            });
            op.filter(|_| span.dur_ns > 0)
        };
        // Each thread's ops counted first, so its list is made once at its size: grown by
        // doubling, a file's million ops were copied as the list outgrew itself and held one and
        // a half times at the peak, on top of every file of the run.
        let mut counts: FxHashMap<u32, usize> = FxHashMap::default();
        for span in &trace.spans {
            if op_of(span).is_some() {
                *counts.entry(span.thread).or_default() += 1;
            }
        }
        let mut by_thread: FxHashMap<u32, Vec<(i64, i64, bool)>> = counts
            .into_iter()
            .map(|(thread, n)| (thread, Vec::with_capacity(n)))
            .collect();
        let mut autograd: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
        let mut is_autograd: FxHashMap<u32, bool> = FxHashMap::default();
        let mut communication: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
        let mut is_communication_op: FxHashMap<u32, bool> = FxHashMap::default();
        // Whether a span (by kind) is an action the rules read; the threads that hold one.
        let mut is_action: FxHashMap<u32, bool> = FxHashMap::default();
        let mut action_threads: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
        for span in &trace.spans {
            if *is_action
                .entry(span.kind)
                .or_insert_with(|| rules.classify(trace.name(span)).is_some())
            {
                action_threads.insert(span.thread);
            }
            if *is_autograd
                .entry(span.kind)
                .or_insert_with(|| trace.name(span).starts_with("autograd::"))
            {
                autograd
                    .entry(span.thread)
                    .or_default()
                    .push((span.start_ns, span.end_ns()));
            }
            // A communication call the thread made (`c10d::recv_`), not the annotation of the
            // transfer's whole time (`gloo:recv`, `nccl:…` user annotations), which runs on
            // beside the thread's own work.
            if *is_communication_op.entry(span.kind).or_insert_with(|| {
                is_communication(trace.name(span))
                    && !matches!(trace.cat(span), "user_annotation" | "gpu_user_annotation")
            }) {
                communication
                    .entry(span.thread)
                    .or_default()
                    .push((span.start_ns, span.end_ns()));
            }
            if let Some(glue) = op_of(span) {
                by_thread.entry(span.thread).or_default().push((
                    span.start_ns,
                    span.end_ns(),
                    glue,
                ));
            }
        }
        for ops in by_thread.values_mut() {
            ops.sort_unstable();
        }
        for list in autograd.values_mut().chain(communication.values_mut()) {
            list.sort_unstable();
            let mut merged: Vec<(i64, i64)> = Vec::with_capacity(list.len());
            for &(s, e) in list.iter() {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            *list = merged;
        }
        let kernels = launched_kernels(trace, &by_thread);
        let process_of: Vec<u32> = trace.threads.iter().map(|t| t.process).collect();
        let mut helpers: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for &thread in kernels.keys().filter(|t| !action_threads.contains(t)) {
            if let Some(&process) = process_of.get(thread as usize) {
                helpers.entry(process).or_default().push(thread);
            }
        }
        for list in helpers.values_mut() {
            list.sort_unstable();
        }
        ComputeOps {
            kernels,
            by_thread,
            autograd,
            communication,
            helpers,
            process_of,
        }
    }

    /// Whether any CPU thread of the file launched GPU kernels (flows from launches to kernels).
    pub fn launches_kernels(&self) -> bool {
        !self.kernels.is_empty()
    }

    /// Whether the op `[start, end)` of `thread` is backward work: the autograd engine's, or
    /// inside one of its ops.
    fn phase_of(&self, thread: u32, start: i64) -> OpPhase {
        let inside = self.autograd.get(&thread).is_some_and(|list| {
            let i = list.partition_point(|&(s, _)| s <= start);
            i.checked_sub(1)
                .and_then(|i| list.get(i))
                .is_some_and(|&(_, e)| start < e)
        });
        if inside {
            OpPhase::Backward
        } else {
            OpPhase::Forward
        }
    }

    /// What an overlapped pair's forward (or backward) computed inside the pair's span: the
    /// union of the ops of its phase, each op given to the one it is part of, and their extent.
    /// The two halves' ops interleave, so the gaps between them are neither's.
    pub fn compute_of(
        &self,
        phase: OpPhase,
        thread: u32,
        start: i64,
        end: i64,
    ) -> (i64, Option<(i64, i64)>) {
        self.compute_where(
            thread,
            start,
            end,
            |s| self.phase_of(thread, s) == phase,
            |_, _| 0,
        )
    }

    /// Whether the file has no compute op at all (annotations only).
    pub fn is_empty(&self) -> bool {
        self.by_thread.is_empty()
    }

    /// The union of the kernels launched within `[start, end)` from `thread`, or from the
    /// autograd engine's ops on a helper thread of its process, and when the first starts and
    /// the last ends; `None` when none was launched there.
    pub fn device_compute(&self, thread: u32, start: i64, end: i64) -> Option<(i64, (i64, i64))> {
        self.device_compute_where(thread, start, end, |_| true)
    }

    /// [`ComputeOps::device_compute`] of one phase's launches only: an overlapped pair's
    /// forward (launched from the span's thread outside the autograd engine's ops) or backward
    /// (from inside them, on that thread or a helper thread).
    pub fn device_compute_of(
        &self,
        phase: OpPhase,
        thread: u32,
        start: i64,
        end: i64,
    ) -> Option<(i64, (i64, i64))> {
        self.device_compute_where(thread, start, end, |p| p == phase)
    }

    /// The union of the kernels whose launch's phase `keep` accepts, and their extent.
    fn device_compute_where(
        &self,
        thread: u32,
        start: i64,
        end: i64,
        keep: impl Fn(OpPhase) -> bool,
    ) -> Option<(i64, (i64, i64))> {
        let launched = |from: u32| {
            let launches = self.kernels.get(&from).map_or(&[][..], Vec::as_slice);
            let first = launches.partition_point(|&(l, _, _)| l < start);
            launches
                .get(first..)
                .unwrap_or_default()
                .iter()
                .take_while(move |&&(l, _, _)| l < end)
        };
        let helpers = self
            .process_of
            .get(thread as usize)
            .and_then(|p| self.helpers.get(p))
            .map_or(&[][..], Vec::as_slice);
        let from_helpers: &[u32] = if keep(OpPhase::Backward) {
            helpers
        } else {
            &[]
        };
        let mut runs: Vec<(i64, i64)> = launched(thread)
            .filter(|&&(l, _, _)| keep(self.phase_of(thread, l)))
            .chain(
                from_helpers
                    .iter()
                    .filter(|&&h| h != thread)
                    .flat_map(|&h| {
                        launched(h)
                            .filter(move |&&(l, _, _)| self.phase_of(h, l) == OpPhase::Backward)
                    }),
            )
            .map(|&(_, s, e)| (s, e))
            .collect();
        runs.sort_unstable();
        let (first, last) = (runs.first()?.0, runs.iter().map(|r| r.1).max()?);
        Some((union_ns(runs, |_, _| 0), (first, last)))
    }

    /// The compute of `[start, end)` on `thread`: the time from the first compute op that lies
    /// inside it to the last one's end (the thread's time between two of an action's ops is the
    /// action's own: the runtime's work between its kernels — the autograd engine, Python —
    /// which is no wait, as its inputs were in when its first op began), with glue before or
    /// after them (the receive buffer allocated before a wait) counted but not starting or
    /// ending it, and communication between them (a wait) left out; and when the first starts
    /// and the last ends (`None` when there is none).
    pub fn compute(&self, thread: u32, start: i64, end: i64) -> (i64, Option<(i64, i64)>) {
        let (union, extent) = self.compute_where(thread, start, end, |_| true, |_, _| 0);
        let Some((first, last)) = extent else {
            return (union, extent);
        };
        let waits = self
            .communication
            .get(&thread)
            .map_or(&[][..], Vec::as_slice);
        let gap = |from: i64, to: i64| {
            let (from, to) = (from.max(first), to.min(last));
            (to - from - covered(waits, from, to)).max(0)
        };
        self.compute_where(thread, start, end, |_| true, gap)
    }

    /// Nanoseconds of `[start, end)` on `thread` covered by the compute ops that lie inside it
    /// and whose start `keep` accepts, with what `gap` counts of each gap between them; and when
    /// the first of them (glue aside) starts and the last ends.
    fn compute_where(
        &self,
        thread: u32,
        start: i64,
        end: i64,
        keep: impl Fn(i64) -> bool,
        gap: impl Fn(i64, i64) -> i64,
    ) -> (i64, Option<(i64, i64)>) {
        let Some(ops) = self.by_thread.get(&thread) else {
            return (0, None);
        };
        let mut first_start = None;
        let mut last_end = i64::MIN;
        let first = ops.partition_point(|&(s, _, _)| s < start);
        let inside = ops
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(|&&(s, _, _)| s < end)
            .filter(|&&(s, e, _)| e <= end && keep(s))
            .inspect(|&&(s, e, glue)| {
                if !glue {
                    first_start.get_or_insert(s);
                    last_end = last_end.max(e);
                }
            })
            .map(|&(s, e, _)| (s, e));
        let total = union_ns(inside, gap);
        (
            total.min(end.saturating_sub(start)).max(0),
            first_start.map(|s| (s, last_end)),
        )
    }
}

/// The time a union of intervals covers (they come sorted by start), with what `gap` counts of
/// each gap between them (`gap(from, to)`, a part of `to − from`).
fn union_ns(intervals: impl IntoIterator<Item = (i64, i64)>, gap: impl Fn(i64, i64) -> i64) -> i64 {
    let (mut total, mut open): (i64, Option<(i64, i64)>) = (0, None);
    for (s, e) in intervals {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                total = total.saturating_add(oe - os).saturating_add(gap(oe, s));
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((os, oe)) = open {
        total = total.saturating_add(oe - os);
    }
    total
}

/// How much of `[from, to)` the disjoint intervals of `list` (sorted by start) cover.
fn covered(list: &[(i64, i64)], from: i64, to: i64) -> i64 {
    let first = list.partition_point(|&(_, e)| e <= from);
    list.get(first..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&(s, _)| s < to)
        .map(|&(s, e)| (e.min(to) - s.max(from)).max(0))
        .sum()
}

/// Flow categories that link two CPU ops, not a launch to its kernel: Kineto's `fwdbwd` joins a
/// forward op to its backward op on the autograd engine's thread.
const NOT_LAUNCHES: [&str; 1] = ["fwdbwd"];

/// The kernels each CPU thread launched: every flow (other than [`NOT_LAUNCHES`]) whose start
/// (`s`) lies on a thread with compute ops and whose end (`f`, or a `t` step) lies on another
/// thread inside a span there (the kernel, on its stream), by launch time.
fn launched_kernels(
    trace: &RawTrace,
    cpu: &FxHashMap<u32, Vec<(i64, i64, bool)>>,
) -> FxHashMap<u32, Vec<(i64, i64, i64)>> {
    let mut launch_cat: FxHashMap<u32, bool> = FxHashMap::default();
    let launches = trace.flows.iter().filter(|f| {
        *launch_cat
            .entry(f.cat)
            .or_insert_with(|| !NOT_LAUNCHES.contains(&trace.string(f.cat)))
    });
    // Each flow's starts as (id, thread, time), then sorted by id, the first of each id kept:
    // 16 bytes a start, where a hash table by id took 57 (a file of the 2.0 GB run: 3.7 MB
    // against 13.1 MB); the import numbers ids as they first appear, so they come nearly sorted.
    let mut starts: Vec<(u32, u32, i64)> = Vec::new();
    let mut ends: Vec<(u32, u32, i64)> = Vec::new();
    for f in launches {
        match f.phase {
            b's' => starts.push((f.id, f.thread, f.ts_ns)),
            b'f' | b't' => ends.push((f.id, f.thread, f.ts_ns)),
            _ => {}
        }
    }
    // A stable sort: of an id's starts, the first stays first.
    starts.sort_by_key(|s| s.0);
    starts.dedup_by_key(|s| s.0);
    if starts.is_empty() || ends.is_empty() {
        return FxHashMap::default();
    }
    // The spans of each thread that flows end on, sorted by start, to find the kernel at a time.
    let targets: rustc_hash::FxHashSet<u32> = ends.iter().map(|e| e.1).collect();
    let mut spans: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
    // Kernels only: not the stream's copies of the annotations that enclose them.
    for s in trace
        .spans
        .iter()
        .filter(|s| targets.contains(&s.thread) && !not_compute(trace.name(s), trace.cat(s)))
    {
        spans
            .entry(s.thread)
            .or_default()
            .push((s.start_ns, s.end_ns()));
    }
    for list in spans.values_mut() {
        list.sort_unstable();
    }
    let mut out: FxHashMap<u32, Vec<(i64, i64, i64)>> = FxHashMap::default();
    for (id, thread, ts) in ends {
        let Some(&(_, from, launch)) = starts
            .binary_search_by_key(&id, |s| s.0)
            .ok()
            .and_then(|k| starts.get(k))
        else {
            continue;
        };
        if from == thread || !cpu.contains_key(&from) {
            continue;
        }
        // The kernel: the last span on the stream that starts at or before the flow's end and
        // is still running then.
        let Some(list) = spans.get(&thread) else {
            continue;
        };
        let i = list.partition_point(|&(s, _)| s <= ts);
        if let Some(&(s, e)) = i.checked_sub(1).and_then(|i| list.get(i))
            && e >= ts
        {
            out.entry(from).or_default().push((launch, s, e));
        }
    }
    for list in out.values_mut() {
        list.sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each flow's first start links it, an `f` or a `t` ends it on the kernel running then,
    /// a `fwdbwd` flow links no launch, and ids need not be the import's (any numbers do).
    #[test]
    fn kernels_are_linked_by_each_flows_first_start() {
        let text = r#"{"traceEvents": [
          {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":30},
          {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":100,"dur":20},
          {"ph":"X","cat":"kernel","name":"relu","pid":0,"tid":7,"ts":130,"dur":5},
          {"ph":"X","cat":"kernel","name":"add","pid":0,"tid":7,"ts":140,"dur":5},
          {"ph":"s","id":5,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":12},
          {"ph":"s","id":5,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":99},
          {"ph":"f","id":5,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":110,"bp":"e"},
          {"ph":"s","id":6,"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":20},
          {"ph":"t","id":6,"cat":"ac2g","name":"ac2g","pid":0,"tid":7,"ts":132},
          {"ph":"s","id":9,"cat":"fwdbwd","name":"fwdbwd","pid":1,"tid":1,"ts":25},
          {"ph":"f","id":9,"cat":"fwdbwd","name":"fwdbwd","pid":0,"tid":7,"ts":142,"bp":"e"}
        ]}"#;
        let mut trace = crate::trace::import_bytes(text.as_bytes(), "t.json").unwrap();
        let rules = crate::trace::RuleSet::default().compile().unwrap();
        // The thread of the op that launched them (the first span's).
        let cpu = trace.spans[0].thread;
        let want = FxHashMap::from_iter([(
            cpu,
            vec![(12_000, 100_000, 120_000), (20_000, 130_000, 135_000)],
        )]);
        let ops = ComputeOps::new(&trace, &rules);
        assert_eq!(ops.kernels, want);
        // The same flows under ids of their own, far apart and out of order.
        for f in &mut trace.flows {
            f.id = 4_000_000_000 - f.id * 1_000_000;
        }
        assert_eq!(ComputeOps::new(&trace, &rules).kernels, want);
    }

    #[test]
    fn a_communication_call_between_two_ops_is_no_compute_nor_a_transfers_annotation_a_call() {
        // A receive called between two ops (12..20 µs) is a wait; the annotation of the
        // transfer's whole time (`gloo:recv`, 5..28, beside the thread's work) is no call.
        let text = r#"{"traceEvents":[
          {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":10},
          {"ph":"X","cat":"cpu_op","name":"c10d::recv_","pid":1,"tid":1,"ts":12,"dur":8},
          {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":25,"dur":5},
          {"ph":"X","cat":"user_annotation","name":"gloo:recv","pid":1,"tid":1,"ts":5,"dur":23}
        ]}"#;
        let trace = crate::trace::import_bytes(text.as_bytes(), "t.json").unwrap();
        let rules = crate::trace::RuleSet::default().compile().unwrap();
        let ops = ComputeOps::new(&trace, &rules);
        let thread = trace.spans[0].thread;
        assert_eq!(
            ops.compute(thread, 0, 40_000),
            (10_000 + 2_000 + 5_000 + 5_000, Some((0, 30_000)))
        );
    }

    #[test]
    fn compute_runs_from_the_first_op_inside_to_the_last() {
        let mut by_thread = FxHashMap::default();
        // Nested (10..40 holds 15..20), overlapping (50..70, 60..80), one sticking out (95..120).
        let ops = [(10, 40), (15, 20), (50, 70), (60, 80), (95, 120)];
        by_thread.insert(1, ops.map(|(s, e)| (s, e, false)).to_vec());
        // Glue (an allocation) before and after the rest: compute, but not where compute starts
        // or ends, nor what fills the gaps around it.
        by_thread.insert(3, vec![(0, 2, true), (5, 9, false), (12, 14, true)]);
        // A wait between two ops (a receive, 12..20): no compute.
        by_thread.insert(4, vec![(0, 10, false), (25, 30, false)]);
        let communication = FxHashMap::from_iter([(4, vec![(12, 20)])]);
        let ops = ComputeOps {
            by_thread,
            communication,
            ..ComputeOps::default()
        };
        // 10..80: the gap 40..50 between two ops is the action's too.
        assert_eq!(ops.compute(1, 0, 100), (70, Some((10, 80))));
        assert_eq!(ops.compute(1, 45, 100), (30, Some((50, 80))));
        assert_eq!(ops.compute(2, 0, 100).0, 0);
        assert_eq!(ops.compute(1, 85, 100), (0, None));
        assert_eq!(ops.compute(3, 0, 10), (6, Some((5, 9))));
        assert_eq!(ops.compute(3, 0, 20), (2 + 4 + 2, Some((5, 9))));
        assert_eq!(ops.compute(4, 0, 40), (10 + 2 + 5 + 5, Some((0, 30))));
        // A gap counts as far as `gap` says.
        let inside = |from: i64, to: i64| (to.min(11) - from.max(1)).max(0);
        assert_eq!(union_ns([(0, 2), (10, 12)], inside), 2 + 8 + 2);
        assert_eq!(union_ns([(0, 2), (10, 12)], |_, _| 0), 2 + 2);
        assert_eq!(union_ns([], inside), 0);
        assert_eq!(covered(&[(0, 4), (6, 8), (20, 30)], 2, 7), 2 + 1);
        assert_eq!(covered(&[(0, 4)], 4, 9), 0);
        // An overlapped pair's halves keep the union of their own ops: theirs interleave.
        assert_eq!(ops.compute_where(1, 0, 100, |_| true, |_, _| 0).0, 30 + 30);
        assert_eq!(
            ops.compute_where(1, 0, 100, |s| s >= 50, |_, _| 0),
            (30, Some((50, 80)))
        );
        assert!(!not_compute("aten::addmm", "cpu_op"));
        assert!(not_compute("c10d::recv_", "cpu_op"));
        assert!(not_compute("gloo:send", "user_annotation"));
    }
}
