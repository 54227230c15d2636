//! The model `U = ⟨u1..uL⟩`: an ordered list of layers with their roles, trainable bits and costs,
//! expanded from the scenario's layer specs.

use crate::scenario::layer::{Cost, LayerError, LayerSpec, Recompute, input_share};
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
