//! What an action span spent computing. An annotated span (`PP:0F3`, `Forward 3`, an NVTX range)
//! holds the action's compute *and* its wait for inputs; its compute is the union of the compute
//! ops inside it on the same thread — every span there other than communication (`c10d::…`,
//! `gloo:…`, `nccl:…`, `record_param_comms`), profiler bookkeeping (step markers, user
//! annotations) and schedule annotations themselves. On a device stream (the GPU copies of the
//! annotations) the ops inside are the kernels. The rest of the span is its wait.

use super::raw::RawTrace;
use super::rules::Compiled;
use rustc_hash::FxHashMap;

/// Whether a span named `name` (category `cat`) is communication or bookkeeping, not compute.
fn not_compute(name: &str, cat: &str) -> bool {
    const COMM: [&str; 5] = [
        "c10d::",
        "gloo:",
        "nccl:",
        "record_param_comms",
        "ProfilerStep",
    ];
    COMM.iter().any(|p| name.starts_with(p))
        || cat == "user_annotation"
        || cat == "gpu_user_annotation"
        || cat == "Trace"
}

/// Every compute op of one file, per thread, sorted by start: `(start, end)` in ns.
#[derive(Debug, Default)]
pub struct ComputeOps {
    by_thread: FxHashMap<u32, Vec<(i64, i64)>>,
}

impl ComputeOps {
    /// The compute ops of `trace`: spans the rules do not read as actions, transfers or steps,
    /// and that are neither communication nor bookkeeping.
    pub fn new(trace: &RawTrace, rules: &Compiled) -> ComputeOps {
        let mut is_op: FxHashMap<(u32, u32), bool> = FxHashMap::default();
        let mut by_thread: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
        for span in &trace.spans {
            let op = *is_op.entry((span.name, span.cat)).or_insert_with(|| {
                let name = trace.string(span.name);
                rules.classify(name).is_none()
                    && rules.step(name).is_none()
                    && !not_compute(name, trace.string(span.cat))
            });
            if op && span.dur_ns > 0 {
                by_thread
                    .entry(span.thread)
                    .or_default()
                    .push((span.start_ns, span.end_ns()));
            }
        }
        for ops in by_thread.values_mut() {
            ops.sort_unstable();
        }
        ComputeOps { by_thread }
    }

    /// Nanoseconds of `[start, end)` on `thread` covered by compute ops that lie inside it.
    pub fn compute_ns(&self, thread: u32, start: i64, end: i64) -> i64 {
        let Some(ops) = self.by_thread.get(&thread) else {
            return 0;
        };
        let first = ops.partition_point(|&(s, _)| s < start);
        let (mut total, mut open): (i64, Option<(i64, i64)>) = (0, None);
        for &(s, e) in ops.get(first..).unwrap_or_default() {
            if s >= end {
                break;
            }
            if e > end {
                continue;
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
        total.min(end.saturating_sub(start)).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_is_the_union_of_the_ops_inside() {
        let mut by_thread = FxHashMap::default();
        // Nested (10..40 holds 15..20), overlapping (50..70, 60..80), one sticking out (95..120).
        by_thread.insert(1, vec![(10, 40), (15, 20), (50, 70), (60, 80), (95, 120)]);
        let ops = ComputeOps { by_thread };
        assert_eq!(ops.compute_ns(1, 0, 100), 30 + 30);
        assert_eq!(ops.compute_ns(1, 45, 100), 30);
        assert_eq!(ops.compute_ns(2, 0, 100), 0);
        assert!(!not_compute("aten::addmm", "cpu_op"));
        assert!(not_compute("c10d::recv_", "cpu_op"));
        assert!(not_compute("gloo:send", "user_annotation"));
    }
}
