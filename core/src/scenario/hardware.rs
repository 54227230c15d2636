//! `hardware`: the device and its links, and the cost functions read off them — the roofline of a
//! piece of work, one point-to-point transfer, a ring all-reduce. Missing hardware means free
//! communication.

use serde::{Deserialize, Serialize};

/// `hardware`: device and link parameters. Missing hardware means free communication.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_flops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_alpha_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<f64>,
    /// `e` in an overlapped pair's slot `t_F + t_B − e·min(t_F, t_B)`: how much of the shorter
    /// half the overlap hides (0 to 1; absent: 0, the halves back to back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fb_overlap: Option<f64>,
    /// Seconds every compute action costs beyond its layers' work: the runtime's own per-action
    /// work (dispatch, posting its sends and receives, bookkeeping), on the rank's compute
    /// stream (absent: 0). `compare-trace` fits it from the gaps between a rank's actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_overhead_s: Option<f64>,
    /// Gradient buffers of the step (DESIGN.md §3.1): bytes per parameter byte a stage allocates
    /// at its first backward of the step (its first weight gradient) and holds until the step
    /// ends, as PyTorch does when the trainer zeroes gradients to `None` (absent: 0, the
    /// gradients are static, in `static_memory_factor`). `compare-trace` fits it from what the
    /// measured memory still holds after a rank's last backward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_grad_bytes_per_param_byte: Option<f64>,
    /// What a weight half holds while it runs (DESIGN.md §3.1, "what `W` keeps"): bytes per
    /// parameter byte of its stage, the weight gradients it computes before it accumulates them
    /// (PyTorch's split backward: about 1); the half's transient is the larger of this and the
    /// layers' `workspace_bytes` (absent: 0, the workspace alone). The gradients beyond the
    /// workspace are made as the half runs: half of them from its start, all from its middle, to
    /// its end (PyTorch computes one parameter group's after another). A stage's first weight
    /// half of the step holds none beside the step's gradient buffers where those are made there
    /// (`step_grad_bytes_per_param_byte`): its gradients become them. `compare-trace` fits it
    /// from the weight halves' measured transients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_transient_bytes_per_param_byte: Option<f64>,
    /// What an input half allocates and holds until its weight half ends (DESIGN.md §3.1, "the
    /// memory each operation holds"), as a share of the activations its forward saved:
    /// PyTorch's `stage_backward_input` keeps the gradients at the weight operations' outputs
    /// for the weight half (and frees none of the saved activations: its layers'
    /// `activation_input_share` is then 0). Absent: 0. `compare-trace` fits it, with the layers'
    /// `activation_input_share`, from the input halves' net change of memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_half_held_share: Option<f64>,
    /// What a split backward's input half costs (DESIGN.md §3.1, "what the runtime spends"), as
    /// a multiple of the share of the whole backward its layers give it: a runtime that splits
    /// the backward may not split it for free (PyTorch's `stage_backward_input` and
    /// `stage_backward_weight` walk the autograd graph once each). Absent: 1, the halves sum to
    /// the whole backward; above 0. `compare-trace` fits it, with `weight_half_factor`, where a
    /// run's halves can be set against whole backwards (its region's own, else its first
    /// stage's run whole in its weight half, else every region's against every region's); a
    /// run that never split cannot show them, and where the scenario gives neither its
    /// calibration takes PyTorch's measured split (`trace::calibrate::PYTORCH_HALF_FACTORS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_half_factor: Option<f64>,
    /// What the pipeline's last stage keeps of each microbatch's output (DESIGN.md §3.1, "the
    /// runtime's own caches"), as a share of its last layer's `output_bytes`, from its backward's
    /// end (until then the output is among what the forward saved: the loss keeps its input) to
    /// the step's end: PyTorch's schedules keep every microbatch's output to merge them when the
    /// step returns (1). Absent: 0. First-order schedules only; a last layer that recomputes
    /// or offloads its activations has the output on the device from its forward on, which the
    /// model counts from the backward still. `compare-trace` takes PyTorch's where a run's
    /// memory was measured and the scenario gives none, and leaves it out of the gradient
    /// buffers it fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_held_share: Option<f64>,
    /// What a split backward's weight half costs, as a multiple of its layers' share of the
    /// whole backward, as `input_half_factor` says of the input half (absent: 1; above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_half_factor: Option<f64>,
    /// Where the pipeline's first stage runs a split backward (DESIGN.md §3.1): `split` (the
    /// default: its input and weight halves as the schedule writes them) or `in_weight`
    /// (PyTorch's pipelining: the model's input needs no gradient, so the first stage's input
    /// half computes nothing, and its weight half runs the whole backward — its time, a whole
    /// backward's workspace, every activation freed at its end). The first stage is the unit
    /// that holds the model's first layer. `compare-trace` sets `in_weight` where the run's
    /// first-stage input halves took under a tenth of its weight halves and `split` where they
    /// took more; where none ran it keeps the scenario's, else `in_weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_stage_backward: Option<FirstStageBackward>,
    /// Bytes per second between the device and the host, for activation offload (DESIGN.md
    /// §3.1): each rank copies on one copy stream beside its compute, one copy at a time
    /// (absent: copies are free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bytes_per_s: Option<f64>,
    /// Point-to-point semantics (DESIGN.md §3.1): `async` (NCCL-like, the default: a transfer
    /// runs on the link beside compute, the receiver waits only for its arrival) or `blocking`
    /// (gloo on CPU: the sender's stream is busy for the whole transfer too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p: Option<P2p>,
    /// Seconds of the sender's own stream per send it posts (launching it; receives are posted
    /// ahead, while the rank waits), on the action that sends (absent: 0). `compare-trace`
    /// measures it from the send spans and reports it; it does not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_post_s: Option<f64>,
    /// Seconds a compute action of each phase costs beyond its layers' work when the action
    /// before it on its rank ran another stage or phase (the step's first action included):
    /// what it reads is cold — a forward after a forward of its own stage finds the stage's
    /// weights in cache (absent: 0). `compare-trace` measures it per phase (such actions'
    /// compute against those that follow their own stage and phase) and reports it; it does
    /// not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_switch_s: Option<PhaseSeconds>,
    /// The per-action overhead by action phase (`{"F": …, "W": …}`): where a phase is given it
    /// replaces `action_overhead_s` for that phase's actions. `compare-trace` measures each
    /// phase it saw often enough and reports it; it does not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_overhead_by_phase_s: Option<PhaseSeconds>,
    /// The host that launches each rank's work (DESIGN.md §3.1, a host-bound runtime): seconds
    /// of the host's time to launch one layer's work of each phase (`{"F": …, "B": …, "I": …,
    /// "W": …}`; an input or weight half not given takes the whole backward's, a second-order
    /// phase its first-order kind's, a recomputed layer adds its forward's to its first backward
    /// phase). Given, each rank has one host thread that launches its compute actions in the
    /// rank's order, back to back from the step's start, each taking its layers' launch; an
    /// action's device work starts no earlier than its launch starts and ends no earlier than
    /// its launch ends (on an accelerator the host runs ahead of the device unless it launches
    /// slower than the device runs). Absent: the host is never the bound (a CPU run, where host
    /// and device are one). `compare-trace` fits it from an accelerator run's action spans
    /// (per phase, the mean host time per layer from one launch to the next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_launch_per_layer_s: Option<PhaseSeconds>,
    /// Bytes each rank holds through the whole step beyond its parameters × `static_memory_factor`
    /// (DESIGN.md §3.1, "the memory the runtime holds"): the trainer's batch, the runtime's
    /// receive buffers kept from one step to the next, libraries' workspaces — static bytes, by
    /// rank (a rank past the list holds the last entry's; absent: none). `compare-trace` fits it
    /// from an accelerator's run (whose allocator counts from the device's start): the level at
    /// the fit step's start less the rank's parameters × `static_memory_factor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_bytes: Option<Vec<f64>>,
    /// `α` of the links inside a node, for the collectives inside a stage whose group fits in
    /// one node (absent: `link_alpha_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_link_alpha_s: Option<f64>,
    /// Bytes per second of the links inside a node (absent: `link_bytes_per_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_link_bytes_per_s: Option<f64>,
    /// Devices per node: a stage's collective group spanning more devices than this crosses
    /// nodes and runs at `link_*` (absent: every group inside one node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_devices: Option<usize>,
}

impl Hardware {
    /// Every number the hardware gives, by field path (`hardware.action_switch_s.F`): what rule
    /// `hardware` checks (each finite and ≥ 0) and rule `finite` bounds, so a field added here is
    /// checked; a test holds every numeric field of the file format to this list.
    pub fn numbers(&self) -> Vec<(String, Option<f64>)> {
        let mut out: Vec<(String, Option<f64>)> = [
            ("peak_flops", self.peak_flops),
            ("hbm_bytes_per_s", self.hbm_bytes_per_s),
            ("link_alpha_s", self.link_alpha_s),
            ("link_bytes_per_s", self.link_bytes_per_s),
            ("memory_bytes", self.memory_bytes),
            ("fb_overlap", self.fb_overlap),
            ("action_overhead_s", self.action_overhead_s),
            (
                "step_grad_bytes_per_param_byte",
                self.step_grad_bytes_per_param_byte,
            ),
            (
                "weight_transient_bytes_per_param_byte",
                self.weight_transient_bytes_per_param_byte,
            ),
            ("p2p_post_s", self.p2p_post_s),
            ("input_half_held_share", self.input_half_held_share),
            ("input_half_factor", self.input_half_factor),
            ("output_held_share", self.output_held_share),
            ("weight_half_factor", self.weight_half_factor),
            ("host_bytes_per_s", self.host_bytes_per_s),
            ("intra_link_alpha_s", self.intra_link_alpha_s),
            ("intra_link_bytes_per_s", self.intra_link_bytes_per_s),
            ("node_devices", self.node_devices.map(|n| n as f64)),
        ]
        .into_iter()
        .map(|(name, v)| (format!("hardware.{name}"), v))
        .collect();
        for (i, bytes) in self.resident_bytes.iter().flatten().enumerate() {
            out.push((format!("hardware.resident_bytes[{i}]"), Some(*bytes)));
        }
        for (name, given) in [
            ("action_switch_s", self.action_switch_s),
            (
                "action_overhead_by_phase_s",
                self.action_overhead_by_phase_s,
            ),
            ("host_launch_per_layer_s", self.host_launch_per_layer_s),
        ] {
            if let Some(phases) = given {
                for (phase, v) in phases.entries() {
                    out.push((format!("hardware.{name}.{phase}"), v));
                }
            }
        }
        out
    }
}

/// Seconds per action phase (`{"F": 0.0004, "B": 0}`); a phase left out costs nothing.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PhaseSeconds {
    #[serde(rename = "F", default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<f64>,
    #[serde(rename = "B", default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<f64>,
    #[serde(rename = "I", default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    #[serde(rename = "W", default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

impl PhaseSeconds {
    /// The seconds of `phase` (0 for one not given, and for the second-order phases).
    pub fn of(&self, phase: crate::vocab::phase::Phase) -> f64 {
        self.given(phase).unwrap_or(0.0)
    }

    /// The seconds of `phase`, when given.
    pub fn given(&self, phase: crate::vocab::phase::Phase) -> Option<f64> {
        use crate::vocab::phase::Phase;
        match phase {
            Phase::Forward => self.forward,
            Phase::Backward => self.backward,
            Phase::Input => self.input,
            Phase::Weight => self.weight,
            _ => None,
        }
    }

    /// Each phase with its value, for checks and reports.
    pub fn entries(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("F", self.forward),
            ("B", self.backward),
            ("I", self.input),
            ("W", self.weight),
        ]
    }
}

/// How a point-to-point transfer occupies its sender.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum P2p {
    /// The transfer runs on the link; the sender goes on (NCCL).
    Async,
    /// The sender's stream is busy for the transfer (gloo on CPU).
    Blocking,
}

/// Where the first stage runs a split backward ([`Hardware::first_stage_backward`]).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FirstStageBackward {
    /// Its input and weight halves as the schedule writes them.
    Split,
    /// Its input half runs nothing; its weight half runs the whole backward (PyTorch).
    InWeight,
}

impl Hardware {
    /// Whether the first stage's split backward runs whole in its weight half.
    pub fn first_stage_in_weight(&self) -> bool {
        self.first_stage_backward == Some(FirstStageBackward::InWeight)
    }

    /// The bytes rank `rank` holds through the step beyond its parameters
    /// ([`Hardware::resident_bytes`]: its entry, else the last one, else 0).
    pub fn resident_of(&self, rank: usize) -> f64 {
        self.resident_bytes.as_ref().map_or(0.0, |list| {
            list.get(rank)
                .or_else(|| list.last())
                .copied()
                .unwrap_or(0.0)
        })
    }

    /// The split backward's two factors, each with its field's path (for the checks).
    pub fn half_factor_fields(&self) -> [(&'static str, Option<f64>); 2] {
        [
            ("hardware.input_half_factor", self.input_half_factor),
            ("hardware.weight_half_factor", self.weight_half_factor),
        ]
    }

    /// What a split backward's half of `phase` costs over its layers' share of the whole
    /// backward ([`Hardware::input_half_factor`], [`Hardware::weight_half_factor`]; 1 for any
    /// other phase and where not given).
    pub fn half_factor(&self, phase: crate::vocab::phase::Phase) -> f64 {
        use crate::vocab::phase::Phase;
        match phase {
            Phase::Input => self.input_half_factor,
            Phase::Weight => self.weight_half_factor,
            _ => None,
        }
        .unwrap_or(1.0)
    }

    /// Seconds the host takes to launch one layer's work of `phase`
    /// ([`Hardware::host_launch_per_layer_s`]; 0 without a host model): an input or weight half
    /// not given takes the whole backward's, a second-order phase its first-order kind's, an
    /// early recomputation the forward's.
    pub fn host_launch_per_layer(&self, phase: crate::vocab::phase::Phase) -> f64 {
        use crate::vocab::phase::Phase;
        let Some(host) = self.host_launch_per_layer_s else {
            return 0.0;
        };
        let kind = match phase {
            Phase::Forward | Phase::EnergyForward | Phase::ForceForward | Phase::Recompute => {
                Phase::Forward
            }
            Phase::Backward | Phase::ForceBackward | Phase::EnergyBackward => Phase::Backward,
            Phase::Input | Phase::Weight => phase,
        };
        host.given(kind)
            .or_else(|| {
                host.given(Phase::Backward)
                    .filter(|_| kind != Phase::Forward)
            })
            .unwrap_or(0.0)
    }
}

/// `max(W/F, D/B)`; zero work costs nothing.
pub fn roofline(hw: &Hardware, flops: f64, bytes: f64) -> f64 {
    let per = |work: f64, rate: Option<f64>| match rate {
        Some(r) if r > 0.0 && work > 0.0 => work / r,
        _ => 0.0,
    };
    per(flops, hw.peak_flops).max(per(bytes, hw.hbm_bytes_per_s))
}

/// `α + β·n` for one point-to-point transfer; free without link parameters.
pub fn transfer_time(hw: &Hardware, bytes: f64) -> f64 {
    let alpha = hw.link_alpha_s.unwrap_or(0.0);
    let beta = match hw.link_bytes_per_s {
        Some(b) if b > 0.0 => bytes / b,
        _ => 0.0,
    };
    alpha + beta
}

/// Seconds to copy `bytes` between the device and the host; free without `host_bytes_per_s`.
pub fn host_copy_time(hw: &Hardware, bytes: f64) -> f64 {
    match hw.host_bytes_per_s {
        Some(b) if b > 0.0 => bytes / b,
        _ => 0.0,
    }
}

/// Ring all-reduce of `bytes` over `members` on the pipeline's links:
/// `2(g−1)·α + 2(g−1)/g · β·n`; nothing for `g ≤ 1`.
pub fn allreduce_time(hw: &Hardware, members: usize, bytes: f64) -> f64 {
    hw.link().allreduce_time(members, bytes)
}

/// One class of link: its latency `α` and its bandwidth (free where not given).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub alpha_s: f64,
    pub bytes_per_s: Option<f64>,
}

impl Link {
    /// `β·n`: seconds to move `bytes` at the link's bandwidth (0 without one).
    fn beta(&self, bytes: f64) -> f64 {
        match self.bytes_per_s {
            Some(b) if b > 0.0 => bytes / b,
            _ => 0.0,
        }
    }

    /// Ring all-reduce of `bytes` over `members`: `2(g−1)·α + 2(g−1)/g · β·n`; nothing for
    /// `g ≤ 1`. A reduce-scatter followed by an all-gather (sequence parallelism) is the same.
    pub fn allreduce_time(&self, members: usize, bytes: f64) -> f64 {
        2.0 * self.ring_time(members, bytes)
    }

    /// `(g−1)·α + (g−1)/g · β·n`: an all-to-all in which each of `members` sends `bytes` in
    /// all (`n/g` to each member, itself included), by `g − 1` pairwise exchanges — and a
    /// ring passing blocks of `n/g` round `g − 1` times (context parallelism's keys and
    /// values); nothing for `g ≤ 1`.
    pub fn ring_time(&self, members: usize, bytes: f64) -> f64 {
        if members <= 1 {
            return 0.0;
        }
        let g = members as f64;
        (g - 1.0) * self.alpha_s + (g - 1.0) / g * self.beta(bytes)
    }
}

impl Hardware {
    /// The links between nodes: the pipeline's seams, the gradient reduce, and a stage's
    /// collectives that cross nodes.
    pub fn link(&self) -> Link {
        Link {
            alpha_s: self.link_alpha_s.unwrap_or(0.0),
            bytes_per_s: self.link_bytes_per_s,
        }
    }

    /// The link a stage's collective group runs on when its members span `span` devices: inside
    /// a node (`intra_link_*`, each absent one the inter-node figure) unless it spans more than
    /// `node_devices`.
    pub fn stage_link(&self, span: usize) -> Link {
        if self.node_devices.is_some_and(|n| span > n) {
            return self.link();
        }
        Link {
            alpha_s: self.intra_link_alpha_s.or(self.link_alpha_s).unwrap_or(0.0),
            bytes_per_s: self.intra_link_bytes_per_s.or(self.link_bytes_per_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hw() -> Hardware {
        Hardware {
            peak_flops: Some(100.0),
            hbm_bytes_per_s: Some(10.0),
            link_alpha_s: Some(0.5),
            link_bytes_per_s: Some(4.0),
            ..Hardware::default()
        }
    }

    #[test]
    fn roofline_takes_the_slower_of_compute_and_memory() {
        assert_eq!(roofline(&hw(), 200.0, 10.0), 2.0);
        assert_eq!(roofline(&hw(), 100.0, 30.0), 3.0);
        assert_eq!(roofline(&Hardware::default(), 100.0, 30.0), 0.0);
    }

    #[test]
    fn collectives_follow_alpha_beta() {
        assert_eq!(transfer_time(&hw(), 8.0), 0.5 + 2.0);
        assert_eq!(allreduce_time(&hw(), 1, 8.0), 0.0);
        // g = 4: 2·3·0.5 + 2·3/4 · 8/4 = 3 + 3.
        assert_eq!(allreduce_time(&hw(), 4, 8.0), 6.0);
        assert_eq!(transfer_time(&Hardware::default(), 8.0), 0.0);
    }

    #[test]
    fn an_all_to_all_is_half_a_ring_all_reduce() {
        // g = 4: 3·0.5 + 3/4 · 8/4 = 1.5 + 1.5.
        assert_eq!(hw().link().ring_time(4, 8.0), 3.0);
        assert_eq!(hw().link().ring_time(1, 8.0), 0.0);
    }

    #[test]
    fn a_group_inside_a_node_runs_on_the_intra_node_link() {
        let h = Hardware {
            intra_link_bytes_per_s: Some(40.0),
            node_devices: Some(8),
            ..hw()
        };
        assert_eq!(h.stage_link(8).bytes_per_s, Some(40.0));
        assert_eq!(h.stage_link(8).alpha_s, 0.5);
        assert_eq!(h.stage_link(16), h.link());
        assert_eq!(hw().stage_link(1 << 16), hw().link());
    }
}
