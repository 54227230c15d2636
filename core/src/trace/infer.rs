//! Actions of a trace that has no per-action annotations (torch 2.15's `Schedule1F1B` records
//! none), inferred from its structure. The ops a rank runs at top level (not inside another op
//! of its thread) are, in time order, forwards (the model's ops), backwards (the autograd
//! engine's `autograd::engine::evaluate_function: …`) and communication (`c10d::send`, a
//! receive): a forward is a run of model ops, a backward a run of autograd ops, and a run ends
//! where the other kind begins, the rank sends or receives, or the optimizer closes the step
//! (its ops are no action). Runs of bookkeeping alone (a
//! `detach`, the empty receive buffer, the gradient scaling after the last backward) are not
//! actions. What this cannot tell is said where it is used: which of several stages of a rank
//! an action belongs to (one stage per rank is assumed), and `I`/`W` halves (a split backward
//! reads as two backwards).

use super::compute::{is_communication, is_glue, not_compute};
use super::raw::{RawTrace, Span};
use super::rules::{ActionKind, Compiled};
use super::step::StepWindow;
use rustc_hash::FxHashMap;

/// An inferred action: its kind, and the first and last op of its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InferredAction {
    pub kind: ActionKind,
    pub start_ns: i64,
    pub end_ns: i64,
    pub thread: u32,
    /// The run's first op, in the file's spans.
    pub span: usize,
}

/// What a top-level op is, for the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Forward,
    Backward,
    /// Tensor bookkeeping that may stand inside a forward but is no action by itself.
    Glue,
    /// A send, a receive, a collective, the optimizer closing the step: ends a run, and what
    /// runs inside it is no action.
    Boundary,
}

fn role(name: &str, cat: &str, rules: &Compiled) -> Option<Role> {
    if let Some(c) = rules.classify(name) {
        return (!c.kind.is_compute()).then_some(Role::Boundary);
    }
    if is_communication(name) || rules.ends_step(name) {
        return Some(Role::Boundary);
    }
    if not_compute(name, cat) || rules.step(name).is_some() {
        return None;
    }
    if name.starts_with("autograd::") {
        return Some(Role::Backward);
    }
    Some(if is_glue(name) {
        Role::Glue
    } else {
        Role::Forward
    })
}

/// The actions of `trace` inferred from its top-level ops, in time order. `steps` are the
/// file's step windows (a run does not cross a step's start).
pub fn infer(trace: &RawTrace, rules: &Compiled, steps: &[StepWindow]) -> Vec<InferredAction> {
    // Top-level ops of each thread: not inside another op of the thread.
    let mut roles: FxHashMap<u32, Option<Role>> = FxHashMap::default();
    let mut by_thread: FxHashMap<u32, Vec<(usize, Span, Role)>> = FxHashMap::default();
    for (i, span) in trace.spans.iter().enumerate() {
        let role = *roles
            .entry(span.kind)
            .or_insert_with(|| role(trace.name(span), trace.cat(span), rules));
        if let Some(role) = role {
            by_thread
                .entry(span.thread)
                .or_default()
                .push((i, *span, role));
        }
    }
    let mut top: Vec<(usize, Span, Role)> = Vec::new();
    for ops in by_thread.values_mut() {
        ops.sort_by_key(|(_, s, _)| (s.start_ns, std::cmp::Reverse(s.dur_ns)));
        let mut open_end = i64::MIN;
        for &(i, s, role) in ops.iter() {
            if s.start_ns >= open_end {
                top.push((i, s, role));
                open_end = s.end_ns();
            }
        }
    }
    top.sort_by_key(|(_, s, _)| (s.start_ns, s.end_ns()));

    let step_of = |t: i64| steps.iter().rposition(|w| w.start_ns <= t);
    let mut out = Vec::new();
    // The open run: its kind, its first op, its end, its step, and whether it holds more than glue.
    let mut run: Option<(Role, InferredAction, Option<usize>, bool)> = None;
    let close = |run: &mut Option<(Role, InferredAction, Option<usize>, bool)>,
                 out: &mut Vec<InferredAction>| {
        if let Some((_, action, _, real)) = run.take()
            && real
        {
            out.push(action);
        }
    };
    for (i, s, role) in top {
        let step = step_of(s.start_ns);
        let kind = match role {
            Role::Boundary => {
                close(&mut run, &mut out);
                continue;
            }
            Role::Backward => Role::Backward,
            Role::Forward | Role::Glue => Role::Forward,
        };
        let continues = run
            .as_ref()
            .is_some_and(|(k, _, st, _)| *k == kind && *st == step);
        if !continues {
            close(&mut run, &mut out);
            run = Some((
                kind,
                InferredAction {
                    kind: if kind == Role::Backward {
                        ActionKind::Backward
                    } else {
                        ActionKind::Forward
                    },
                    start_ns: s.start_ns,
                    end_ns: s.end_ns(),
                    thread: s.thread,
                    span: i,
                },
                step,
                false,
            ));
        }
        if let Some((_, action, _, real)) = run.as_mut() {
            // The action starts at its first real op (the chunking before the first forward,
            // a receive buffer, is not part of it).
            if role != Role::Glue && !*real {
                action.start_ns = s.start_ns;
                action.span = i;
                *real = true;
            }
            action.end_ns = action.end_ns.max(s.end_ns());
        }
    }
    close(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::SpanKind;
    use crate::trace::rules::RuleSet;

    /// A trace of one thread with the given `(name, start, dur)` ops (µs as ns).
    fn trace(ops: &[(&str, i64, i64)]) -> RawTrace {
        let mut t = RawTrace {
            file: "t.json".into(),
            strings: vec!["".into(), "cpu_op".into()],
            ..RawTrace::default()
        };
        for &(name, start, dur) in ops {
            let id = t.strings.len() as u32;
            t.strings.push(name.into());
            let kind = t.kinds.len() as u32;
            t.kinds.push(SpanKind { name: id, cat: 1 });
            t.spans.push(Span {
                kind,
                thread: 0,
                start_ns: start,
                dur_ns: dur,
            });
        }
        t
    }

    fn kinds(ops: &[(&str, i64, i64)]) -> Vec<(&'static str, i64, i64)> {
        let rules = RuleSet::default().compile().unwrap();
        infer(&trace(ops), &rules, &[])
            .iter()
            .map(|a| (a.kind.code().unwrap(), a.start_ns, a.end_ns))
            .collect()
    }

    #[test]
    fn forwards_and_backwards_are_runs_between_transfers() {
        let bwd = "autograd::engine::evaluate_function: AddmmBackward0";
        let got = kinds(&[
            ("aten::tensor_split", 0, 1),
            ("aten::linear", 2, 5),
            ("aten::addmm", 3, 2), // inside the linear: not top level
            ("aten::relu", 8, 1),
            ("c10d::send", 10, 1),
            ("aten::linear", 12, 3),
            ("aten::mse_loss", 15, 1),
            (bwd, 17, 4), // a forward followed directly by its backward
            ("aten::empty_strided", 22, 1),
            ("c10d::recv_", 24, 1),
            (bwd, 30, 2),
            ("aten::div_", 33, 1), // the gradient scaling: glue alone
            ("aten::div_", 35, 1),
        ]);
        assert_eq!(
            got,
            [("F", 2, 9), ("F", 12, 16), ("B", 17, 21), ("B", 30, 32)]
        );
    }
}
