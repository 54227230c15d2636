//! What `mpipe derive` prints: the JSON object (shape documented in the README) and a readable
//! table.

use crate::algebra::collectives::Collectives;
use crate::algebra::gates::Gates;
use crate::algebra::plan::RegionOwner;
use crate::graph::derive::Derivation;
use crate::graph::event::{EdgeKind, Event};
use crate::schedules::skeleton::{Skeleton, schedule_to_string};
use crate::vocab::action::{Action, Step};
use crate::vocab::layout::Layout;
use serde::Serialize;
use std::fmt::Write as _;

/// The `--json` output of `mpipe derive`.
#[derive(Serialize, Debug)]
pub struct DeriveReport {
    pub name: String,
    pub schedule: Vec<Skeleton>,
    pub cut: Vec<usize>,
    pub num_ranks: usize,
    pub num_microbatches: usize,
    /// How stages map to ranks, in words: the default formula, or the V fold / an explicit map.
    pub stage_index: &'static str,
    /// The rank of every stage (stage `s` runs on rank `stage_ranks[s]`).
    pub stage_ranks: Vec<usize>,
    pub ranks: Vec<RankReport>,
    pub placement: Vec<RegionPlacement>,
    pub collectives: Collectives,
    pub events: Vec<EventRecord>,
    pub edges: Vec<EdgeRecord>,
}

/// One rank: its compute actions in execution order, and all its compute-stream events by id.
#[derive(Serialize, Debug)]
pub struct RankReport {
    pub rank: usize,
    /// Compute slots in PyTorch's notation (an overlapped pair as one `(…;…)OVERLAP_F_B`).
    pub actions: Vec<Step>,
    pub order: Vec<usize>,
}

/// One region's placement.
#[derive(Serialize, Debug)]
pub struct RegionPlacement {
    pub region: usize,
    pub skeleton: Skeleton,
    pub layout: Layout,
    /// `[first, end)` layer indices.
    pub layers: [usize; 2],
    /// A bidirectional schedule's mirror: the region whose layers it runs for the second half
    /// of the microbatches (absent for a region of the model's cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror_of: Option<usize>,
    pub trainable: bool,
    pub gates: Gates,
    pub owner: OwnerReport,
    /// Stage indices `rank + (region − 1)·P` of the ranks that run work of this region.
    pub stages: Vec<crate::vocab::ids::Stage>,
}

/// `{"by_layer": [[first, end], ...]}` (per rank) or `{"by_microbatch": [rank, ...]}` (per
/// microbatch).
#[derive(Serialize, Debug)]
#[serde(rename_all = "snake_case")]
pub enum OwnerReport {
    ByLayer(Vec<[usize; 2]>),
    ByMicrobatch(Vec<usize>),
}

/// An event of the order graph, with its id.
#[derive(Serialize, Debug)]
pub struct EventRecord {
    pub id: usize,
    #[serde(flatten)]
    pub event: Event,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}

/// A typed edge between two event ids.
#[derive(Serialize, Debug)]
pub struct EdgeRecord {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
}

impl DeriveReport {
    pub fn new(name: &str, d: &Derivation) -> Self {
        let plan = &d.plan;
        let placement = plan
            .regions
            .iter()
            .zip(plan.gates.iter().copied())
            .map(|(r, g)| {
                let (owner, ranks) = match &r.owner {
                    RegionOwner::ByLayer { slabs, .. } => (
                        OwnerReport::ByLayer(slabs.iter().map(|s| [s.start, s.end]).collect()),
                        r.sharded_ranks(),
                    ),
                    RegionOwner::ByMicrobatch => {
                        let mut owners = plan.owner.clone();
                        let ranks = {
                            owners.sort_unstable();
                            owners.dedup();
                            owners
                        };
                        (OwnerReport::ByMicrobatch(plan.owner.clone()), ranks)
                    }
                };
                RegionPlacement {
                    region: r.index,
                    skeleton: r.skeleton,
                    layout: r.layout(),
                    layers: [r.layers.start, r.layers.end],
                    mirror_of: r.mirror_of,
                    trainable: r.trainable,
                    gates: g,
                    owner,
                    stages: ranks
                        .into_iter()
                        .filter_map(|rank| plan.stage_index(r.index, rank))
                        .collect(),
                }
            })
            .collect();
        let g = &d.order.graph;
        let events = g
            .node_indices()
            .filter_map(|n| {
                g.node_weight(n).map(|&event| EventRecord {
                    id: n.index(),
                    event,
                    action: event.action(),
                })
            })
            .collect();
        let edges = g
            .edge_references()
            .map(|e| EdgeRecord {
                from: e.source().index(),
                to: e.target().index(),
                kind: *e.weight(),
            })
            .collect();
        let ranks = (0..plan.ranks)
            .map(|rank| RankReport {
                rank,
                actions: d.order.steps(rank),
                order: d
                    .order
                    .nodes
                    .get(rank)
                    .map(|ns| ns.iter().map(|n| n.index()).collect())
                    .unwrap_or_default(),
            })
            .collect();
        DeriveReport {
            name: name.to_string(),
            schedule: plan.schedule(),
            cut: plan
                .model_regions()
                .skip(1)
                .map(|r| r.layers.start)
                .collect(),
            num_ranks: plan.ranks,
            num_microbatches: plan.microbatches,
            stage_index: if plan.placement.is_default() {
                "rank + (region - 1) * num_ranks"
            } else {
                "stage_ranks[stage]"
            },
            stage_ranks: plan.placement.ranks_of_stages().to_vec(),
            ranks,
            placement,
            collectives: d.collectives.clone(),
            events,
            edges,
        }
    }
}

fn range_names(d: &Derivation, first: usize, end: usize) -> String {
    let name = |i: usize| d.plan.layers.get(i).map_or("?", |l| l.name.as_str());
    match end.saturating_sub(first) {
        0 => "no layers".to_string(),
        1 => name(first).to_string(),
        _ => format!("{}–{}", name(first), name(end - 1)),
    }
}

/// The collectives inside the stages, one line for each width a region's layers run with:
/// its devices and degrees, and which collectives its layers run (none for a stage of one
/// device).
pub fn stage_collectives_in_words(plan: &crate::algebra::plan::Plan) -> Vec<String> {
    let mut lines = Vec::new();
    for region in plan.model_regions() {
        let layers = plan.layers.get(region.layers.clone()).unwrap_or_default();
        let mut widths: Vec<crate::algebra::model::StageWidth> = Vec::new();
        for l in layers {
            if !widths.contains(&l.width) {
                widths.push(l.width);
            }
        }
        for w in widths {
            let of: Vec<&crate::algebra::model::Layer> =
                layers.iter().filter(|l| l.width == w).collect();
            let mut kinds = Vec::new();
            if w.tp > 1
                && of
                    .iter()
                    .any(|l| l.output_bytes > 0.0 && l.tp_collectives > 0.0)
            {
                let each = of.iter().map(|l| l.tp_collectives).fold(0.0, f64::max);
                kinds.push(format!(
                    "tensor-parallel all-reduces of the output ({each} a layer each way{})",
                    if w.sp {
                        ", as reduce-scatter + all-gather"
                    } else {
                        ""
                    }
                ));
            }
            let moe = of.iter().filter(|l| l.moe_dispatch_bytes > 0.0).count();
            if w.ep > 1 && moe > 0 {
                kinds.push(format!(
                    "expert-parallel dispatch and combine all-to-alls ({moe} MoE layer{})",
                    if moe == 1 { "" } else { "s" }
                ));
            }
            if w.cp > 1 && of.iter().any(|l| l.cp_exchange_bytes > 0.0) {
                kinds.push("a context-parallel ring of keys and values".to_string());
            }
            if w.devices <= 1 && kinds.is_empty() {
                continue;
            }
            let hidden: Vec<String> = crate::scenario::width::KINDS
                .iter()
                .zip(w.overlaps)
                .filter(|(_, share)| *share > 0.0)
                .map(|(kind, share)| format!("{kind} {:.0} % hidden", 100.0 * share))
                .collect();
            lines.push(format!(
                "inside region {}'s stages ({} device{}: tp {}, ep {}, cp {}{}{}{}): {}",
                region.index,
                w.devices,
                if w.devices == 1 { "" } else { "s" },
                w.tp,
                w.ep,
                w.cp,
                if w.sp { ", sequence parallel" } else { "" },
                if hidden.is_empty() {
                    String::new()
                } else {
                    format!("; {}", hidden.join(", "))
                },
                if of.len() < layers.len() {
                    format!(
                        "; layers {}",
                        of.iter()
                            .map(|l| l.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                },
                if kinds.is_empty() {
                    "no collectives (data-parallel inside the stage)".to_string()
                } else {
                    kinds.join("; ")
                }
            ));
        }
    }
    lines
}

/// The derived collectives in words, one line each (the CLI table and the app both show these).
pub fn collectives_in_words(c: &Collectives) -> Vec<String> {
    let mut lines = Vec::new();
    for s in &c.seams {
        lines.push(format!(
            "seam {}→{}: forward {:?}, backward {}",
            s.seam.from,
            s.seam.to,
            s.forward,
            s.backward.map_or(
                "none (no trainable region upstream)".to_string(),
                |c| format!("{c:?}")
            )
        ));
    }
    for s in &c.internal {
        lines.push(format!(
            "inside region {}: forward {:?} between slabs, backward {}",
            s.seam.from,
            s.forward,
            s.backward.map_or("none".to_string(), |c| format!("{c:?}"))
        ));
    }
    for red in &c.reduces {
        lines.push(format!(
            "reduce region {} weight gradients over {:?} ({} member{}{})",
            red.region,
            red.group,
            red.members,
            if red.members == 1 { "" } else { "s" },
            if red.noop { ", a no-op" } else { "" }
        ));
    }
    if c.reduces.is_empty() {
        lines.push("no reduces (nothing is trainable)".to_string());
    }
    lines
}

/// The readable form of `mpipe derive`: placement, collectives in words, and a per-rank table.
pub fn text(name: &str, d: &Derivation) -> String {
    let plan = &d.plan;
    let schedule: Vec<Skeleton> = plan.schedule();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}{} — {}, {} layers",
        if name.is_empty() {
            String::new()
        } else {
            format!("{name}: ")
        },
        schedule_to_string(&schedule),
        plan.shape(),
        plan.layers.len()
    );
    if plan.placement.is_default() {
        let _ = writeln!(out, "\nplacement (stage index = rank + (region − 1)·P):");
    } else {
        let ranks: Vec<String> = plan
            .placement
            .ranks_of_stages()
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = writeln!(
            out,
            "\nplacement (rank of each stage: {}):",
            ranks.join(" ")
        );
    }
    for r in &plan.regions {
        let _ = write!(
            out,
            "  region {} {:<9} {:<10} layers {}..{} ({}), {}: ",
            r.index,
            r.skeleton.name(),
            r.layout().to_string(),
            r.layers.start,
            r.layers.end,
            range_names(d, r.layers.start, r.layers.end),
            if r.trainable { "trainable" } else { "frozen" }
        );
        match &r.owner {
            RegionOwner::ByLayer { slabs, .. } => {
                let parts: Vec<String> = slabs
                    .iter()
                    .enumerate()
                    .filter_map(|(rank, s)| {
                        let stage = plan.stage_index(r.index, rank)?;
                        Some(format!("r{rank}={}..{} (stage {stage})", s.start, s.end))
                    })
                    .collect();
                let mirror = match (r.mirror_of, plan.second_direction_from()) {
                    (Some(of), Some(from)) => format!(
                        "; mirror of region {of}: its copy for microbatches {from}..{}",
                        plan.microbatches
                    ),
                    _ => String::new(),
                };
                let _ = writeln!(out, "ByLayer {}{mirror}", parts.join(", "));
            }
            RegionOwner::ByMicrobatch => {
                let _ = writeln!(out, "ByMicrobatch owner {:?}", plan.owner);
            }
        }
    }
    let _ = writeln!(out, "\ncollectives:");
    for line in collectives_in_words(&d.collectives)
        .into_iter()
        .chain(stage_collectives_in_words(plan))
    {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "\nper-rank order (compute actions <stage><F|B|I|W|FE|FF|BF|BE><mb>, overlapped pairs (…;…)OVERLAP_F_B):"
    );
    for rank in 0..plan.ranks {
        let actions: Vec<String> = d.order.steps(rank).iter().map(|a| a.to_string()).collect();
        let _ = writeln!(out, "  rank {rank}: {}", actions.join(" "));
    }
    let events = d.order.graph.node_count();
    let colls = d
        .order
        .graph
        .node_weights()
        .filter(|e| matches!(e, Event::Coll { .. }))
        .count();
    let _ = writeln!(
        out,
        "\n{events} events ({colls} collectives), {} edges",
        d.order.graph.edge_count()
    );
    out
}
