//! The collectives inside a stage (DESIGN.md §3.1): each compute action's tensor-parallel
//! all-reduces, expert-parallel all-to-alls and context-parallel ring exchange, from its layers'
//! sizes and widths, and how much of them its compute — or, in an overlapped pair, the other
//! half's compute — hides.
//!
//! Per layer and microbatch, one device's part of the tokens being `1 / (devices / tp)`:
//! - tensor parallelism: `tp_collectives` ring all-reduces of the output's part over `tp`
//!   devices in the forward, as many in the backward;
//! - expert parallelism: two all-to-alls (dispatch, combine) of `moe_dispatch_bytes`' part over
//!   `ep` devices in the forward, two in the backward — the part of the tokens the device holds
//!   (split over `tp` too under sequence parallelism);
//! - context parallelism: a ring of the keys and values (`cp_exchange_bytes`, split over `tp`
//!   heads and the data-parallel shares) over `cp` devices in the forward, twice in the
//!   backward (keys and values, then their gradients);
//!
//! each on the link its group spans ([`Hardware::stage_link`]: `tp`, `tp × ep`, `tp × cp`
//! devices). A backward (or an input half) carries the backward's and reruns the recomputed
//! forward's; a weight half none; a second-order phase its shares of forward and backward, as
//! its compute does.
//!
//! Hiding: outside a pair, an action hides `Σ share_k · comm_k` of its collectives (each kind's
//! `*_overlap`) under its own compute, at most all of the compute. In an overlapped pair whose
//! layers keep `fb_comm_overlap`, the forward's collectives first run under the backward's
//! compute and the backward's under the forward's (DualPipe), then what is left as outside a
//! pair under what compute is left.
//!
//! [`Hardware::stage_link`]: crate::scenario::hardware::Hardware::stage_link

use crate::algebra::model::Layer;
use crate::algebra::plan::Plan;
use crate::scenario::layer::FOUR_PHASE_SHARES;
use crate::vocab::phase::Phase;
use std::ops::Range;

/// An action's collectives: their seconds, and how many of them its own compute may hide.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Comm {
    pub total_s: f64,
    /// `Σ share_k · comm_k`.
    pub hideable_s: f64,
    /// Its layers let an overlapped pair hide its collectives under the other half.
    pub pair_overlap: bool,
}

/// Of every node (by index), its collectives' seconds and the part left exposed on its rank. A
/// list may be empty, and every node then reads 0 ([`StageComm::of`]): all three when no stage
/// is wider than one device, `exposed_s` and `alone_s` when no node has collectives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageComm {
    pub total_s: Vec<f64>,
    pub exposed_s: Vec<f64>,
    /// What would be exposed outside a pair (what a paired half's collectives cost it apart).
    pub alone_s: Vec<f64>,
}

impl StageComm {
    /// Whether any action has collectives inside its stage.
    pub fn any(&self) -> bool {
        self.total_s.iter().any(|&t| t > 0.0)
    }

    /// The seconds of node `n`'s collectives, and of those exposed.
    pub fn of(&self, n: usize) -> (f64, f64) {
        (
            self.total_s.get(n).copied().unwrap_or(0.0),
            self.exposed_s.get(n).copied().unwrap_or(0.0),
        )
    }
}

/// One layer's collectives in its forward and in its backward, per kind (`tp`, `ep`, `cp`), for
/// one microbatch of workload `factor`.
fn layer_comm(plan: &Plan, layer: &Layer, factor: f64) -> ([f64; 3], [f64; 3]) {
    let hw = &plan.hardware;
    let w = layer.width;
    let scale = if layer.workload_varies { factor } else { 1.0 };
    // A layer with nothing of a kind to exchange runs no such collective (a dense layer no
    // all-to-all).
    let ring = |span: usize, members: usize, bytes: f64| {
        if bytes > 0.0 {
            hw.stage_link(span).ring_time(members, bytes)
        } else {
            0.0
        }
    };
    let tp = layer.tp_collectives
        * 2.0
        * ring(w.tp, w.tp, layer.output_bytes * scale / w.token_shares());
    let ep = 2.0
        * ring(
            w.tp.saturating_mul(w.ep),
            w.ep,
            layer.moe_dispatch_bytes * scale * w.hidden_share(),
        );
    let cp_group_bytes = layer.cp_exchange_bytes * scale * w.cp as f64 / w.devices.max(1) as f64;
    let cp = ring(w.tp.saturating_mul(w.cp), w.cp, cp_group_bytes);
    ([tp, ep, cp], [tp, ep, 2.0 * cp])
}

/// The collectives of `layers` in `phase` for microbatch `mb` (see the module's rules).
pub fn comm(plan: &Plan, layers: Range<usize>, mb: usize, phase: Phase) -> Comm {
    // The first stage's split backward, run whole in its weight half (`in_weight`): its input
    // half runs nothing, its weight half the whole backward's collectives.
    let Some(phase) = plan.runs_as(&layers, phase) else {
        return Comm {
            pair_overlap: true,
            ..Comm::default()
        };
    };
    let factor = plan.workload_of(mb);
    let mut out = Comm {
        pair_overlap: true,
        ..Comm::default()
    };
    for layer in plan.layers.get(layers).unwrap_or_default() {
        let (fwd, bwd) = layer_comm(plan, layer, factor);
        let rerun = layer.rerun_share;
        // How much of the forward's and of the backward's collectives the phase runs.
        let (of_fwd, of_bwd) = match phase {
            Phase::Forward => (1.0, 0.0),
            Phase::Backward | Phase::Input => {
                (if layer.recompute_early { 0.0 } else { rerun }, 1.0)
            }
            Phase::Weight => (0.0, 0.0),
            Phase::Recompute => (if layer.recompute_early { rerun } else { 0.0 }, 0.0),
            _ => {
                let [to_fwd, to_bwd] = phase
                    .four_index()
                    .and_then(|i| FOUR_PHASE_SHARES.get(i))
                    .copied()
                    .unwrap_or([0.0, 0.0]);
                // A force backward reruns the energy and force forwards it dropped: their
                // shares of the forward's and the backward's collectives, as of their compute.
                let [[fe_f, fe_b], [ff_f, ff_b]] =
                    [0, 1].map(|i| FOUR_PHASE_SHARES.get(i).copied().unwrap_or([0.0, 0.0]));
                let rerun = if phase == Phase::ForceBackward {
                    rerun
                } else {
                    0.0
                };
                (
                    to_fwd + rerun * (fe_f + ff_f),
                    to_bwd + rerun * (fe_b + ff_b),
                )
            }
        };
        for ((f, b), share) in fwd.iter().zip(bwd).zip(layer.width.overlaps) {
            let t = of_fwd * f + of_bwd * b;
            out.total_s += t;
            out.hideable_s += share * t;
        }
        out.pair_overlap &= layer.width.fb_comm_overlap;
    }
    out
}

/// The collectives of every compute node of `graph` (a default for the others); an empty list,
/// without a walk over the graph, when every stage is one group of one (the simulator's hot
/// path for every scenario without a width).
pub fn per_node(plan: &Plan, graph: &crate::graph::order_graph::OrderGraph) -> Vec<Comm> {
    if !plan.layers.iter().any(|l| l.width.groups_devices()) {
        return Vec::new();
    }
    graph
        .node_weights()
        .map(
            |event| match (event.action(), event.region(), event.rank(), event.mb()) {
                (Some(action), Some(region), Some(rank), Some(mb)) if event.is_compute() => comm(
                    plan,
                    plan.unit_layers(region.into(), rank),
                    mb,
                    action.phase,
                ),
                _ => Comm::default(),
            },
        )
        .collect()
}

/// What an action's own compute `compute` hides of `comm`'s collectives, `left` seconds of them
/// still exposed (after a pair's cross hiding): their hideable share, at most the compute.
fn own_hidden(comm: Comm, left: f64, compute: f64) -> f64 {
    if comm.total_s <= 0.0 {
        return 0.0;
    }
    (comm.hideable_s * left / comm.total_s).min(compute.max(0.0))
}

/// The exposed seconds of every node as if outside a pair, and as it runs (its pair counted):
/// `compute` holds each node's compute seconds (what hides collectives), `pairs` the overlapped
/// pairs (forward, backward), `e` the part of a pair's shorter half its compute already
/// overlaps with the other's (`hardware.fb_overlap`): that part of each half's compute runs
/// beside the other's and hides none of its collectives.
pub fn exposed(
    comms: &[Comm],
    compute: &[f64],
    pairs: &[[usize; 2]],
    e: f64,
) -> (Vec<f64>, Vec<f64>) {
    let get = |v: &[f64], n: usize| v.get(n).copied().unwrap_or(0.0);
    let alone: Vec<f64> = comms
        .iter()
        .zip(compute)
        .map(|(&c, &t)| c.total_s - own_hidden(c, c.total_s, t))
        .collect();
    let mut out = alone.clone();
    for &[f, b] in pairs {
        let (Some(&cf), Some(&cb)) = (comms.get(f), comms.get(b)) else {
            continue;
        };
        if !(cf.pair_overlap && cb.pair_overlap) {
            continue;
        }
        let (tf, tb) = (get(compute, f), get(compute, b));
        let shared = e * tf.min(tb);
        let (tf, tb) = (tf - shared, tb - shared);
        // Each half's collectives under the other half's compute first.
        let (xf, xb) = (cf.total_s.min(tb.max(0.0)), cb.total_s.min(tf.max(0.0)));
        let ef = cf.total_s - xf - own_hidden(cf, cf.total_s - xf, tf - xb);
        let eb = cb.total_s - xb - own_hidden(cb, cb.total_s - xb, tb - xf);
        for (n, e) in [(f, ef), (b, eb)] {
            if let Some(slot) = out.get_mut(n) {
                *slot = e.max(0.0);
            }
        }
    }
    (alone, out)
}
