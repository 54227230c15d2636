//! What `mpipe trace` prints: every rank's recovered actions in time order (aligned clock), its
//! steps, and the alignment — as JSON, or as a short table.

use super::align::Alignment;
use super::rank::RankSource;
use super::recover::{MeasuredEvent, Measurement};
use serde::Serialize;
use std::fmt::Write;

#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    pub files: Vec<String>,
    pub ranks: Vec<RankReport>,
    pub alignment: Alignment,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RankReport {
    pub rank: usize,
    /// The file(s) of the rank, comma-separated.
    pub file: String,
    pub rank_source: RankSource,
    /// Trace events in the rank's files.
    pub events: usize,
    pub steps: usize,
    pub device_side: bool,
    pub offset_ns: i64,
    pub actions: Vec<EventReport>,
    pub transfers: Vec<EventReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventReport {
    /// PyTorch's notation, as in `mpipe derive`: `0F0`, `2B1`, `1SEND_F0`.
    pub action: String,
    pub step: usize,
    /// On the aligned clock.
    pub start_ns: i64,
    pub end_ns: i64,
}

impl TraceReport {
    pub fn new(m: &Measurement, alignment: &Alignment) -> TraceReport {
        let events = |list: &[MeasuredEvent], offset: i64| {
            list.iter()
                .map(|e| EventReport {
                    action: e.label(),
                    step: e.step,
                    start_ns: e.start_ns.saturating_add(offset),
                    end_ns: e.end_ns.saturating_add(offset),
                })
                .collect()
        };
        TraceReport {
            files: m.files.clone(),
            ranks: m
                .ranks
                .iter()
                .map(|r| {
                    let offset = alignment.offset(r.rank);
                    RankReport {
                        rank: r.rank,
                        file: r
                            .files
                            .iter()
                            .filter_map(|&f| m.files.get(f))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                        rank_source: r.rank_source,
                        events: r.event_count,
                        steps: r.steps.len(),
                        device_side: r.device_side,
                        offset_ns: offset,
                        actions: events(&r.actions, offset),
                        transfers: events(&r.transfers, offset),
                    }
                })
                .collect(),
            alignment: alignment.clone(),
            warnings: m.warnings.iter().map(ToString::to_string).collect(),
        }
    }

    /// A short human summary: one block per rank with each step's action order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} file(s), {} rank(s); clocks: {}",
            self.files.len(),
            self.ranks.len(),
            match self.alignment.method {
                super::align::AlignMethod::SharedClock =>
                    "shared (epoch timestamps agree with the schedule)",
                super::align::AlignMethod::Causality => "aligned from cross-rank dependencies",
                super::align::AlignMethod::None => "as recorded",
            }
        );
        for r in &self.ranks {
            let unc = self
                .alignment
                .ranks
                .iter()
                .find(|o| o.rank == r.rank)
                .and_then(|o| o.uncertainty_ns)
                .map_or(String::new(), |u| format!(" ± {u} ns"));
            let _ = writeln!(
                out,
                "\nrank {}: {} (rank from {:?}), {} events, {} step(s), {} actions, {} transfers, offset {} ns{unc}{}",
                r.rank,
                r.file,
                r.rank_source,
                r.events,
                r.steps,
                r.actions.len(),
                r.transfers.len(),
                r.offset_ns,
                if r.device_side {
                    ", device-side annotations"
                } else {
                    ""
                }
            );
            let steps = r.actions.iter().map(|a| a.step).max().map_or(0, |s| s + 1);
            for step in 0..steps {
                let order: Vec<&str> = r
                    .actions
                    .iter()
                    .filter(|a| a.step == step)
                    .map(|a| a.action.as_str())
                    .collect();
                let _ = writeln!(out, "  step {step}: {}", order.join(" "));
            }
        }
        for note in &self.alignment.notes {
            let _ = writeln!(out, "note: {note}");
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}
