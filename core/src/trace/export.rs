//! Writing Chrome Trace Event Format JSON that Perfetto and chrome://tracing open: a prediction
//! (one process per rank: compute on thread 0, transfers on thread 1; flow arrows for every
//! dependency between two tracks) or an imported measurement (recovered actions and transfers
//! per rank on the aligned clock, arrows for the cross-rank stage dependencies). Actions are named
//! as PyTorch pipelining names them (`PP:0F3`) and processes `rank N (...)`, so an exported file
//! imports again with the built-in rules.

use super::align::Alignment;
use super::recover::{MeasuredEvent, Measurement};
use super::rules::ActionKind;
use crate::graph::event::{EdgeKind, Event};
use crate::sim::run::Simulation;
use crate::vocab::action::Step;
use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::json;
use std::io::Write;

#[derive(Serialize)]
struct Slice<'a> {
    ph: &'static str,
    name: &'a str,
    cat: &'static str,
    pid: usize,
    tid: usize,
    ts: f64,
    dur: f64,
    args: serde_json::Value,
}

#[derive(Serialize)]
struct FlowEnd {
    ph: &'static str,
    name: &'static str,
    cat: &'static str,
    id: usize,
    pid: usize,
    tid: usize,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
}

const COMPUTE: usize = 0;
const LINKS: usize = 1;
/// The copy stream of activation offload.
const COPIES: usize = 2;

/// Streams `{"traceEvents": [...], ...}` to `out`, one event at a time.
struct Writer<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Writer<W> {
    fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        Ok(Writer { out, first: true })
    }

    fn event(&mut self, value: &impl Serialize) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, value).map_err(std::io::Error::other)
    }

    fn names(&mut self, ranks: impl Iterator<Item = usize>, what: &str) -> std::io::Result<()> {
        for rank in ranks {
            self.event(&json!({"ph":"M","name":"process_name","pid":rank,"tid":0,"args":{"name":format!("rank {rank} ({what})")}}))?;
            self.event(&json!({"ph":"M","name":"process_sort_index","pid":rank,"tid":0,"args":{"sort_index":rank}}))?;
            self.event(&json!({"ph":"M","name":"thread_name","pid":rank,"tid":COMPUTE,"args":{"name":"compute"}}))?;
            self.event(&json!({"ph":"M","name":"thread_name","pid":rank,"tid":LINKS,"args":{"name":"transfers"}}))?;
        }
        Ok(())
    }

    fn flow(
        &mut self,
        id: usize,
        from: (usize, usize, f64),
        to: (usize, usize, f64),
        cat: &'static str,
    ) -> std::io::Result<()> {
        self.event(&FlowEnd {
            ph: "s",
            name: "dependency",
            cat,
            id,
            pid: from.0,
            tid: from.1,
            ts: from.2,
            bp: None,
        })?;
        self.event(&FlowEnd {
            ph: "f",
            name: "dependency",
            cat,
            id,
            pid: to.0,
            tid: to.1,
            ts: to.2,
            bp: Some("e"),
        })
    }

    fn finish(mut self, other: serde_json::Value) -> std::io::Result<()> {
        self.out.write_all(b"\n],\"otherData\":")?;
        serde_json::to_writer(&mut self.out, &other).map_err(std::io::Error::other)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()
    }
}

/// Where an event of the order graph is drawn: `(pid, tid)`; `None` for the step barrier.
fn track(event: &Event) -> Option<(usize, usize)> {
    match *event {
        Event::Coll { from_rank, .. } => Some((from_rank.into(), LINKS)),
        Event::Copy { rank, .. } => Some((rank.into(), COPIES)),
        Event::StepBarrier => None,
        _ => event.rank().map(|r| (r, COMPUTE)),
    }
}

/// Writes a simulated step as a Chrome trace; times are µs from the step's start.
pub fn write_prediction(sim: &Simulation, name: &str, out: impl Write) -> std::io::Result<()> {
    let d = &sim.derivation;
    let g = &d.order.graph;
    let ranks = d.plan.ranks;
    let mut w = Writer::new(out)?;
    w.names(0..ranks, "predicted")?;
    if g.node_weights().any(|e| matches!(e, Event::Copy { .. })) {
        for rank in 0..ranks {
            w.event(&json!({"ph":"M","name":"thread_name","pid":rank,"tid":COPIES,"args":{"name":"copies"}}))?;
        }
    }
    let us = |s: f64| s * 1e6;
    let slack = sim.slack();
    // Looked up once per event: a set, not a search of the path (quadratic on a long step).
    let critical: rustc_hash::FxHashSet<petgraph::graph::NodeIndex> =
        sim.critical_path.iter().copied().collect();
    // An overlapped pair is one span, as PyTorch records it: `PP:(<F>;<B>)OVERLAP_F_B`.
    let paired_backward: rustc_hash::FxHashSet<usize> =
        d.order.pairs.iter().map(|p| p[1].index()).collect();
    let pair_of: FxHashMap<usize, petgraph::graph::NodeIndex> =
        d.order.pairs.iter().map(|p| (p[0].index(), p[1])).collect();
    let switch = crate::sim::cost::switch_shares(&d.plan, &d.order);
    for n in g.node_indices() {
        let Some(event) = g.node_weight(n) else {
            continue;
        };
        let Some((pid, tid)) = track(event) else {
            continue;
        };
        if paired_backward.contains(&n.index()) {
            continue;
        }
        if let Some(&b) = pair_of.get(&n.index())
            && let (Some(fa), Some(ba)) =
                (event.action(), g.node_weight(b).and_then(|e| e.action()))
        {
            let (Some(start), Some(end)) = (sim.timeline.start_of(n), sim.timeline.end_of(b))
            else {
                continue;
            };
            for (node, backward) in [(n, false), (b, true)] {
                compute_op(sim, &switch, &mut w, (pid, tid), node, backward)?;
            }
            w.event(&Slice {
                ph: "X",
                name: &format!("PP:{}", Step::Overlap(fa, ba)),
                cat: "overlapped",
                pid,
                tid,
                ts: us(start),
                dur: us(end - start),
                args: json!({
                    "mb": event.mb(),
                    "slack_s": slack.get(n.index()),
                    "critical": critical.contains(&n) || critical.contains(&b),
                }),
            })?;
            continue;
        }
        let (cat, label) = match event {
            Event::Fwd { .. } => ("forward", event.action().map(|a| format!("PP:{a}"))),
            Event::Bwd { .. } => ("backward", event.action().map(|a| format!("PP:{a}"))),
            Event::FourPhase { phase, .. } => (
                if phase.is_backward() {
                    "backward"
                } else {
                    "forward"
                },
                event.action().map(|a| format!("PP:{a}")),
            ),
            Event::Coll { .. } => ("transfer", Some(event.label())),
            Event::Copy { .. } => ("offload", Some(event.label())),
            Event::Recompute { .. } => ("recompute", event.action().map(|a| format!("PP:{a}"))),
            Event::DpReduce { .. } => ("reduce", Some(event.label())),
            Event::Loss { .. } => ("loss", Some(event.label())),
            Event::StepBarrier => continue,
        };
        let label = label.unwrap_or_default();
        let Some((start, end)) = sim.timeline.span_of(n) else {
            continue;
        };
        if event.is_compute() {
            compute_op(sim, &switch, &mut w, (pid, tid), n, cat == "backward")?;
        }
        w.event(&Slice {
            ph: "X",
            name: &label,
            cat,
            pid,
            tid,
            ts: us(start),
            dur: us(end - start),
            args: json!({
                "mb": event.mb(),
                "slack_s": slack.get(n.index()),
                "critical": critical.contains(&n),
            }),
        })?;
    }
    write_flows(sim, &mut w)?;
    w.finish(json!({"generator": "mpipe", "kind": "prediction", "scenario": name, "makespan_s": sim.makespan_s}))
}

/// The compute of a predicted action as one op inside its span, after the runtime's own share
/// ([`Simulation::runtime_s`]: overhead, posting) and its wait for its host's launch, and holding
/// its switch (cold reads are slower compute), so that the file reads again as it was
/// predicted: compute as compute, the runtime's share as the gap before it, and each half of an
/// overlapped pair by what it is (a backward's op is the autograd engine's, as PyTorch records
/// it).
fn compute_op<W: Write>(
    sim: &Simulation,
    switch: &[f64],
    w: &mut Writer<W>,
    (pid, tid): (usize, usize),
    n: petgraph::graph::NodeIndex,
    backward: bool,
) -> std::io::Result<()> {
    let Some((start, end)) = sim.timeline.span_of(n) else {
        return Ok(());
    };
    let runtime = sim.not_work_s(n.index()) - switch.get(n.index()).copied().unwrap_or(0.0);
    let from = (start + runtime).min(end);
    w.event(&Slice {
        ph: "X",
        name: if backward {
            "autograd::engine::evaluate_function: mpipe::compute"
        } else {
            "mpipe::compute"
        },
        cat: "cpu_op",
        pid,
        tid,
        ts: from * 1e6,
        dur: (end - from) * 1e6,
        args: json!({}),
    })
}

/// An arrow for every data dependency between two tracks, from the producer's start to the
/// consumer's.
fn write_flows<W: Write>(sim: &Simulation, w: &mut Writer<W>) -> std::io::Result<()> {
    let g = &sim.derivation.order.graph;
    let us = |s: f64| s * 1e6;
    let mut id = 0;
    for edge in g.edge_references() {
        if matches!(*edge.weight(), EdgeKind::Sequence | EdgeKind::Overlap) {
            continue;
        }
        let (u, v) = (edge.source(), edge.target());
        let (Some(tu), Some(tv)) = (
            g.node_weight(u).and_then(track),
            g.node_weight(v).and_then(track),
        ) else {
            continue;
        };
        let (Some(su), Some(sv)) = (sim.timeline.start_of(u), sim.timeline.start_of(v)) else {
            continue;
        };
        if tu == tv {
            continue;
        }
        id += 1;
        w.flow(id, (tu.0, tu.1, us(su)), (tv.0, tv.1, us(sv)), "dependency")?;
    }
    Ok(())
}

/// Writes a measurement (recovered events, aligned clocks) as a Chrome trace; times are µs from
/// the earliest recovered event.
pub fn write_measurement(
    m: &Measurement,
    alignment: &Alignment,
    out: impl Write,
) -> std::io::Result<()> {
    let mut w = Writer::new(out)?;
    w.names(m.ranks.iter().map(|r| r.rank), "measured")?;
    let t0 = m
        .ranks
        .iter()
        .flat_map(|r| {
            let offset = alignment.offset(r.rank);
            r.actions
                .iter()
                .chain(&r.transfers)
                .map(move |e| e.start_ns.saturating_add(offset))
        })
        .min()
        .unwrap_or(0);
    let us = |ns: i64| ns.saturating_sub(t0) as f64 / 1000.0;
    for r in &m.ranks {
        let offset = alignment.offset(r.rank);
        for (e, tid) in r
            .actions
            .iter()
            .map(|e| (e, COMPUTE))
            .chain(r.transfers.iter().map(|e| (e, LINKS)))
        {
            let cat = match e.kind.phase() {
                Some(p) if p.is_backward() => "backward",
                Some(_) => "forward",
                None => "transfer",
            };
            w.event(&Slice {
                ph: "X",
                name: &format!("PP:{}", e.label()),
                cat,
                pid: r.rank,
                tid,
                ts: us(e.start_ns.saturating_add(offset)),
                dur: e.dur_ns() as f64 / 1000.0,
                args: json!({"step": e.step, "mb": e.mb, "file": m.files.get(e.source.file)}),
            })?;
        }
    }
    // Cross-rank stage dependencies: F(s) → F(s+1), B(s+1) → B(s), per microbatch and step.
    let mut index: FxHashMap<(usize, ActionKind, usize, usize), (usize, &MeasuredEvent)> =
        FxHashMap::default();
    for r in &m.ranks {
        for a in &r.actions {
            index
                .entry((a.stage, a.kind, a.mb, a.step))
                .or_insert((r.rank, a));
        }
    }
    let find = |stage: usize, kind: ActionKind, mb: usize, step: usize| {
        index.get(&(stage, kind, mb, step)).copied()
    };
    let mut id = 0;
    for r in &m.ranks {
        for a in &r.actions {
            let next = match a.kind {
                ActionKind::Forward => find(a.stage + 1, ActionKind::Forward, a.mb, a.step),
                ActionKind::Backward => a
                    .stage
                    .checked_sub(1)
                    .and_then(|s| find(s, ActionKind::Backward, a.mb, a.step)),
                _ => None,
            };
            if let Some((rank, b)) = next.filter(|(rank, _)| *rank != r.rank) {
                id += 1;
                w.flow(
                    id,
                    (
                        r.rank,
                        COMPUTE,
                        us(a.start_ns.saturating_add(alignment.offset(r.rank))),
                    ),
                    (
                        rank,
                        COMPUTE,
                        us(b.start_ns.saturating_add(alignment.offset(rank))),
                    ),
                    "dependency",
                )?;
            }
        }
    }
    w.finish(json!({"generator": "mpipe", "kind": "measurement", "files": m.files, "alignment": alignment}))
}
