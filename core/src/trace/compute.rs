//! What an action span spent computing. An annotated span (`PP:0F3`, `Forward 3`, an NVTX range)
//! holds the action's compute *and* its wait for inputs; its compute is the union of the compute
//! ops inside it on the same thread — every span there other than communication (`c10d::…`,
//! `gloo:…`, `nccl:…`, `record_param_comms`), profiler bookkeeping (step markers, user
//! annotations) and schedule annotations themselves. On a device stream (the GPU copies of the
//! annotations) the ops inside are the kernels. The rest of the span is its wait.

use super::raw::RawTrace;
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
}

/// Every compute op of one file, per thread, sorted by start: `(start, end, glue)` in ns.
#[derive(Debug, Default)]
pub struct ComputeOps {
    by_thread: FxHashMap<u32, Vec<(i64, i64, bool)>>,
}

impl ComputeOps {
    /// The compute ops of `trace`: spans the rules do not read as actions, transfers or steps,
    /// and that are neither communication nor bookkeeping.
    pub fn new(trace: &RawTrace, rules: &Compiled) -> ComputeOps {
        // Per distinct (name, category): `None` not an op, else whether it is glue.
        let mut is_op: FxHashMap<(u32, u32), Option<bool>> = FxHashMap::default();
        let mut by_thread: FxHashMap<u32, Vec<(i64, i64, bool)>> = FxHashMap::default();
        for span in &trace.spans {
            let op = *is_op.entry((span.name, span.cat)).or_insert_with(|| {
                let name = trace.string(span.name);
                (rules.classify(name).is_none()
                    && rules.step(name).is_none()
                    && !not_compute(name, trace.string(span.cat)))
                .then(|| is_glue(name))
            });
            if let Some(glue) = op
                && span.dur_ns > 0
            {
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
        ComputeOps { by_thread }
    }

    /// Whether the file has no compute op at all (annotations only).
    pub fn is_empty(&self) -> bool {
        self.by_thread.is_empty()
    }

    /// Nanoseconds of `[start, end)` on `thread` covered by compute ops that lie inside it.
    pub fn compute_ns(&self, thread: u32, start: i64, end: i64) -> i64 {
        self.compute(thread, start, end).0
    }

    /// Nanoseconds of `[start, end)` on `thread` covered by compute ops that lie inside it, and
    /// when the first of them starts and the last ends (`None` when there is none). Glue (the
    /// receive buffer allocated before a wait) counts as compute but does not start or end it.
    pub fn compute(&self, thread: u32, start: i64, end: i64) -> (i64, Option<(i64, i64)>) {
        let Some(ops) = self.by_thread.get(&thread) else {
            return (0, None);
        };
        let mut first_start = None;
        let mut last_end = i64::MIN;
        let first = ops.partition_point(|&(s, _, _)| s < start);
        let (mut total, mut open): (i64, Option<(i64, i64)>) = (0, None);
        for &(s, e, glue) in ops.get(first..).unwrap_or_default() {
            if s >= end {
                break;
            }
            if e > end {
                continue;
            }
            if !glue {
                first_start.get_or_insert(s);
                last_end = last_end.max(e);
            }
            open = match open {
                Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
                Some((os, oe)) => {
                    total = total.saturating_add(oe - os);
                    Some((s, e))
                }
                None => Some((s, e)),
            };
        }
        if let Some((os, oe)) = open {
            total = total.saturating_add(oe - os);
        }
        (
            total.min(end.saturating_sub(start)).max(0),
            first_start.map(|s| (s, last_end)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_is_the_union_of_the_ops_inside() {
        let mut by_thread = FxHashMap::default();
        // Nested (10..40 holds 15..20), overlapping (50..70, 60..80), one sticking out (95..120).
        let ops = [(10, 40), (15, 20), (50, 70), (60, 80), (95, 120)];
        by_thread.insert(1, ops.map(|(s, e)| (s, e, false)).to_vec());
        // A glue op (an allocation) before the rest: compute, but not where compute starts.
        by_thread.insert(3, vec![(0, 2, true), (5, 9, false)]);
        let ops = ComputeOps { by_thread };
        assert_eq!(ops.compute_ns(1, 0, 100), 30 + 30);
        assert_eq!(ops.compute_ns(1, 45, 100), 30);
        assert_eq!(ops.compute_ns(2, 0, 100), 0);
        assert_eq!(ops.compute(1, 45, 100), (30, Some((50, 80))));
        assert_eq!(ops.compute(1, 85, 100), (0, None));
        assert_eq!(ops.compute(3, 0, 10), (6, Some((5, 9))));
        assert!(!not_compute("aten::addmm", "cpu_op"));
        assert!(not_compute("c10d::recv_", "cpu_op"));
        assert!(not_compute("gloo:send", "user_annotation"));
    }
}
