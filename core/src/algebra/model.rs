//! The model `U = ⟨u1..uL⟩`: an ordered list of layers with their roles, trainable bits and costs,
//! expanded from the scenario's layer specs.

use crate::scenario::layer::{Cost, LayerError, LayerSpec, Recompute, input_share};
use crate::scenario::width::WidthSpec;
use crate::vocab::role::Role;

/// One expanded layer `u_i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub name: String,
    pub role: Role,
    pub trainable: bool,
    pub cost: Cost,
    pub param_bytes: f64,
    pub activation_bytes: f64,
    pub output_bytes: f64,
    /// Transient bytes while its backward runs.
    pub workspace_bytes: f64,
    pub workload_varies: bool,
    /// The share of the backward (time, FLOPs, bytes) that is its input half `I`.
    pub input_share: f64,
    /// The share of `activation_bytes` freed when the input half ends.
    pub activation_input_share: f64,
    /// Explicit seconds of `FE`, `FF`, `BF`, `BE` (in [`Phase::FOUR`]'s order) where given.
    ///
    /// [`Phase::FOUR`]: crate::vocab::phase::Phase::FOUR
    pub four_phase_s: [Option<f64>; 4],
    /// What `FF` saves for `BF`, per microbatch.
    pub force_activation_bytes: f64,
    /// Full recomputation: only the input of a run of recomputed layers is kept, and the
    /// backward runs their forward again first.
    pub recompute_full: bool,
    /// The share of `activation_bytes` not kept from the forward but made again when the
    /// backward starts (1 under full recomputation, 0 without).
    pub dropped_share: f64,
    /// The share of the forward the backward runs again first (1 under full recomputation).
    pub rerun_share: f64,
    /// The share of the kept activations copied to the host after the forward and back before
    /// the backward.
    pub offload_share: f64,
    /// The recomputation runs as its own action just before the backward (Mario), not in it.
    pub recompute_early: bool,
    /// Its width: the layer group's own, else its region's, with the devices of the ranks it
    /// runs on ([`crate::algebra::width`]).
    pub width: StageWidth,
    /// The layer group gives its own width (`model.layers[i].width`).
    pub own_width: bool,
    /// Tensor-parallel all-reduces of its output per forward (as many per backward).
    pub tp_collectives: f64,
    /// Bytes of routed tokens in one expert-parallel all-to-all, per microbatch (0: dense).
    pub moe_dispatch_bytes: f64,
    /// Of `param_bytes`, the experts'.
    pub expert_param_bytes: f64,
    /// Keys and values a context-parallel ring passes around, per microbatch.
    pub cp_exchange_bytes: f64,
}

/// A layer's width, resolved: its tensor-, expert- and context-parallel degrees, the devices it
/// runs on (a multiple of `tp × cp`: the rest data-parallel inside the stage), and the share of
/// each kind of collective its compute hides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageWidth {
    pub tp: usize,
    pub ep: usize,
    pub cp: usize,
    pub sp: bool,
    pub devices: usize,
    /// Hidden shares of the `tp`, `ep` and `cp` collectives (in [`crate::scenario::width::KINDS`]'s order).
    pub overlaps: [f64; 3],
    /// In an overlapped pair, its collectives run under the other half's compute.
    pub fb_comm_overlap: bool,
}

impl StageWidth {
    /// One device, nothing to hide.
    pub const SINGLE: StageWidth = StageWidth {
        tp: 1,
        ep: 1,
        cp: 1,
        sp: false,
        devices: 1,
        overlaps: [0.0; 3],
        fb_comm_overlap: true,
    };

    /// From a width spec, on its own `tp × cp` devices (or those it gives).
    pub fn from_spec(spec: &WidthSpec) -> StageWidth {
        StageWidth {
            tp: spec.tp,
            ep: spec.ep,
            cp: spec.cp,
            sp: spec.sp,
            devices: spec.devices.unwrap_or(spec.group()),
            overlaps: spec.overlaps(),
            fb_comm_overlap: spec.fb_comm_overlap.unwrap_or(true),
        }
    }

    /// Parts of the microbatch's tokens the devices hold apart (`devices / tp`: the
    /// context-parallel shares times the data-parallel ones inside the stage); each device
    /// computes `1 / devices` of the layer's work.
    pub fn token_shares(&self) -> f64 {
        self.devices as f64 / self.tp.max(1) as f64
    }

    /// The part of a microbatch's hidden state one device holds (and sends on): its tokens'
    /// share, split over `tp` too under sequence parallelism.
    pub fn hidden_share(&self) -> f64 {
        let split = if self.sp { self.tp.max(1) as f64 } else { 1.0 };
        1.0 / (self.token_shares() * split)
    }

    /// The part of a microbatch's saved activations one device holds: its tokens' share, of
    /// which tensor parallelism splits 24 of a layer's 34 parts and sequence parallelism the
    /// other 10 (Korthikanti et al., 2022).
    pub fn activation_share(&self) -> f64 {
        let t = self.tp.max(1) as f64;
        let per_token = if self.sp {
            1.0 / t
        } else {
            (10.0 + 24.0 / t) / 34.0
        };
        per_token / self.token_shares()
    }

    /// Some degree is above 1: its layers may run collectives inside the stage.
    pub fn groups_devices(&self) -> bool {
        self.tp > 1 || self.ep > 1 || self.cp > 1
    }

    /// One device's parameter bytes of `param` (of which `expert` are experts'): the dense ones
    /// split over `tp`, the experts over `tp × ep`.
    pub fn param_share(&self, param: f64, expert: f64) -> f64 {
        let t = self.tp.max(1) as f64;
        let expert = expert.min(param);
        (param - expert) / t + expert / (t * self.ep.max(1) as f64)
    }

    /// Copies of each parameter inside the stage (`devices / tp`: context- and data-parallel
    /// shares), which the gradient reduce sums over too.
    pub fn replicas(&self) -> usize {
        (self.devices / self.tp.max(1)).max(1)
    }
}

impl Layer {
    /// It copies some of its activations to the host (a share of something to copy).
    pub fn offloads(&self) -> bool {
        self.offload_share > 0.0 && self.activation_bytes > 0.0
    }
}

/// Expands a layer spec's `count` into that many layers, named `name` (count 1) or `name.0`,
/// `name.1`, …
pub fn expand(spec: &LayerSpec) -> Result<Vec<Layer>, LayerError> {
    if spec.count == 0 {
        return Err(LayerError::ZeroCount);
    }
    let cost = spec.cost()?;
    let input_share = match cost {
        Cost::Explicit { bwd_s, .. } => input_share(
            bwd_s,
            ("bwd_input_s", spec.bwd_input_s),
            ("bwd_weight_s", spec.bwd_weight_s),
            "bwd_s",
        )?,
        Cost::Roofline { bwd_flops, .. } => input_share(
            bwd_flops,
            ("bwd_input_flops", spec.bwd_input_flops),
            ("bwd_weight_flops", spec.bwd_weight_flops),
            "bwd_flops",
        )?,
    };
    let activation_input_share = spec.activation_input_share.unwrap_or(0.5);
    for (field, value) in [
        ("activation_input_share", spec.activation_input_share),
        (
            "recompute_activation_share",
            spec.recompute_activation_share,
        ),
        ("recompute_cost_share", spec.recompute_cost_share),
        ("offload_share", spec.offload_share),
    ] {
        if let Some(value) = value.filter(|&v| v > 1.0) {
            return Err(LayerError::Share { field, value });
        }
    }
    let (dropped_share, rerun_share) = match spec.recompute {
        None | Some(Recompute::Full) => {
            for (field, value) in [
                (
                    "recompute_activation_share",
                    spec.recompute_activation_share,
                ),
                ("recompute_cost_share", spec.recompute_cost_share),
            ] {
                if value.is_some() {
                    return Err(LayerError::NotSelective(field));
                }
            }
            let full = if spec.recompute.is_some() { 1.0 } else { 0.0 };
            (full, full)
        }
        Some(Recompute::Selective) => spec
            .recompute_activation_share
            .zip(spec.recompute_cost_share)
            .ok_or(LayerError::SelectiveShares)?,
    };
    if spec.recompute_early && spec.recompute.is_none() {
        return Err(LayerError::EarlyWithout);
    }
    let param = spec.param_bytes.unwrap_or(0.0);
    if let Some(expert) = spec.expert_param_bytes.filter(|&e| e > param) {
        return Err(LayerError::ExpertsExceed { expert, param });
    }
    if let Some(w) = &spec.width {
        w.check().map_err(LayerError::Width)?;
    }
    Ok((0..spec.count)
        .map(|i| Layer {
            name: if spec.count == 1 {
                spec.name.clone()
            } else {
                format!("{}.{i}", spec.name)
            },
            role: spec.role,
            trainable: spec.trainable,
            cost,
            param_bytes: spec.param_bytes.unwrap_or(0.0),
            activation_bytes: spec.activation_bytes.unwrap_or(0.0),
            output_bytes: spec.output_bytes.unwrap_or(0.0),
            workspace_bytes: spec.workspace_bytes.unwrap_or(0.0),
            workload_varies: spec.workload_varies,
            input_share,
            activation_input_share,
            four_phase_s: [spec.fe_s, spec.ff_s, spec.bf_s, spec.be_s],
            force_activation_bytes: spec
                .force_activation_bytes
                .or(spec.activation_bytes)
                .unwrap_or(0.0),
            recompute_full: spec.recompute == Some(Recompute::Full),
            dropped_share,
            rerun_share,
            offload_share: spec.offload_share.unwrap_or(0.0),
            recompute_early: spec.recompute_early,
            width: spec
                .width
                .as_ref()
                .map_or(StageWidth::SINGLE, StageWidth::from_spec),
            own_width: spec.width.is_some(),
            tp_collectives: spec.tp_collectives.unwrap_or(2.0),
            moe_dispatch_bytes: spec.moe_dispatch_bytes.unwrap_or(0.0),
            expert_param_bytes: spec.expert_param_bytes.unwrap_or(0.0),
            cp_exchange_bytes: spec
                .cp_exchange_bytes
                .unwrap_or(2.0 * spec.output_bytes.unwrap_or(0.0)),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::role::Role;

    #[test]
    fn count_expands_with_numbered_names() {
        let layers = expand(&LayerSpec::timed("vit", Role::Encoder, 3, 0.5)).unwrap_or_default();
        let names: Vec<_> = layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["vit.0", "vit.1", "vit.2"]);
    }
}
