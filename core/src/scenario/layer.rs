//! `model.layers`: one entry of the model as a scenario file gives it, with its costs read and
//! checked (explicit seconds or roofline inputs, the split-backward halves, the second-order
//! phases). The algebra expands each into its layers ([`crate::algebra::model::expand`]).

use crate::vocab::role::Role;
use serde::{Deserialize, Serialize};

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One entry of `model.layers` in a scenario file; `count` expands it into that many identical
/// layers.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LayerSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub role: Role,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: usize,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub trainable: bool,
    /// Recomputation (DESIGN.md §3.1): `full` keeps only the input of each run of recomputed
    /// layers for the backward and runs their forward again before it; `selective` drops
    /// `recompute_activation_share` of the layer's activations and re-runs
    /// `recompute_cost_share` of its forward before the backward (absent: none, every
    /// activation kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute: Option<Recompute>,
    /// Under `recompute: selective`, the share (0–1) of `activation_bytes` not kept from the
    /// forward but made again when the backward starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_activation_share: Option<f64>,
    /// Under `recompute: selective`, the share (0–1) of the forward's cost the backward runs
    /// again first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_cost_share: Option<f64>,
    /// Recomputation placed early (Mario): the recomputed forward runs as its own action `R`
    /// just before the backward, as soon as the rank is free — in the bubble where the rank
    /// waits for the backward's gradient — instead of inside the backward (needs `recompute`;
    /// first-order schedules; default false).
    #[serde(default, skip_serializing_if = "is_default")]
    pub recompute_early: bool,
    /// Activation offload (DESIGN.md §3.1): the share (0–1) of the kept activations copied to the
    /// host after the forward (on the rank's copy stream, at `hardware.host_bytes_per_s`) and
    /// back before the backward, which waits for it (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload_share: Option<f64>,
    /// Explicit forward time of one layer for one microbatch, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwd_s: Option<f64>,
    /// Explicit backward time; defaults to `2 × fwd_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwd_flops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_flops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwd_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_bytes: Option<f64>,
    /// Activation saved for backward, per microbatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_bytes: Option<f64>,
    /// Activation handed to the next layer, per microbatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<f64>,
    /// Transient bytes the layer's backward allocates and frees while it runs (gradient buffers
    /// before they are accumulated): a stage's backward holds the largest of its layers' on top
    /// of the activations (default 0; `compare-trace` fits it from measured memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_bytes: Option<f64>,
    /// The layer's cost scales with the microbatch's workload factor (an encoder, say).
    #[serde(default, skip_serializing_if = "is_default")]
    pub workload_varies: bool,
    /// The input-gradient half `I` of the backward, seconds (split-backward schedules; default
    /// half of the backward, or the backward minus `bwd_weight_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_input_s: Option<f64>,
    /// The weight-gradient half `W`, seconds (default: the backward minus the input half).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_weight_s: Option<f64>,
    /// Roofline FLOPs of the input half (default half of `bwd_flops`); its HBM bytes take the
    /// same share of `bwd_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_input_flops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwd_weight_flops: Option<f64>,
    /// The share of `activation_bytes` only the input half needs, freed when it ends; the rest
    /// is freed when the weight half ends (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_input_share: Option<f64>,
    /// Second-order schedules (`1f1b-2nd`, `wavek`): seconds of the energy forward `FE` (default
    /// the forward), the force forward `FF` (default the mean of forward and backward), the
    /// force backward `BF` (default 1.25 × the backward) and the energy backward `BE` (default
    /// the backward), so that `t_FE < t_FF < t_BE < t_BF` whenever the backward outlasts the
    /// forward. Also with roofline costs, where the defaults apply to the roofline times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fe_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ff_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bf_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub be_s: Option<f64>,
    /// Bytes the force forward `FF` saves for the force backward `BF`, per microbatch (default
    /// `activation_bytes`); `activation_bytes` is what `FE` saves for `FF` and `BE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_activation_bytes: Option<f64>,
    /// The width these layers run with, replacing their region's (`width`): an encoder with its
    /// own parallelism inside a region (DESIGN.md §3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<crate::scenario::width::WidthSpec>,
    /// Tensor-parallel all-reduces of the layer's output per forward (and as many per
    /// backward) when its width has `tp > 1` (default 2: a transformer layer's attention and
    /// MLP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_collectives: Option<f64>,
    /// An MoE layer: the bytes of routed tokens it sends in one expert-parallel all-to-all, per
    /// microbatch (the dispatch; the combine sends as many back), when its width has `ep > 1`
    /// (default 0: a dense layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_dispatch_bytes: Option<f64>,
    /// Of `param_bytes`, the experts' (split over `ep` devices; default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_param_bytes: Option<f64>,
    /// The keys and values a context-parallel ring passes around, per microbatch, when its
    /// width has `cp > 1` (default `2 × output_bytes`: keys and values as large as the hidden
    /// state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_exchange_bytes: Option<f64>,
}

/// A second-order phase's default time as shares of the layer's forward and backward, in
/// [`Phase::FOUR`]'s order: `FE` = forward, `FF` = (forward + backward)/2, `BF` = 1.25 ×
/// backward, `BE` = backward — so `t_FE < t_FF < t_BE < t_BF` whenever the backward outlasts the
/// forward (JanusPipe's Table 5 order).
///
/// [`Phase::FOUR`]: crate::vocab::phase::Phase::FOUR
pub const FOUR_PHASE_SHARES: [[f64; 2]; 4] = [[1.0, 0.0], [0.5, 0.5], [0.0, 1.25], [0.0, 1.0]];

/// How a layer's compute time is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    /// Seconds per microbatch.
    Explicit { fwd_s: f64, bwd_s: f64 },
    /// Roofline inputs: FLOPs and HBM bytes per microbatch.
    Roofline {
        fwd_flops: f64,
        bwd_flops: f64,
        fwd_bytes: f64,
        bwd_bytes: f64,
    },
}

/// Why a layer's costs cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LayerError {
    #[error(
        "give either explicit times (`fwd_s`, `bwd_s`) or roofline inputs (`fwd_flops`, `bwd_flops`, `fwd_bytes`, `bwd_bytes`), not both"
    )]
    MixedCosts,
    #[error(
        "no cost given: set `fwd_s` (and optionally `bwd_s`) or `fwd_flops` (with `fwd_bytes`)"
    )]
    NoCost,
    #[error("`count` must be at least 1")]
    ZeroCount,
    #[error("`{field}` must be a finite number ≥ 0, got {value}")]
    Negative { field: &'static str, value: f64 },
    #[error(
        "`{input}` + `{weight}` = {sum} but `{total_field}` = {total}: the two halves make the whole backward"
    )]
    SplitSum {
        input: &'static str,
        weight: &'static str,
        total_field: &'static str,
        sum: f64,
        total: f64,
    },
    #[error("`{field}` = {value} is more than the whole backward ({total})")]
    SplitExceeds {
        field: &'static str,
        value: f64,
        total: f64,
    },
    #[error("`{field}` must be between 0 and 1, got {value}")]
    Share { field: &'static str, value: f64 },
    #[error(
        "`recompute: selective` needs `recompute_activation_share` (the share of the activations dropped) and `recompute_cost_share` (the share of the forward re-run)"
    )]
    SelectiveShares,
    #[error("`{0}` is given but `recompute` is not `selective`")]
    NotSelective(&'static str),
    #[error("`recompute_early` needs a recomputation (`recompute`: `full` or `selective`)")]
    EarlyWithout,
    #[error("`expert_param_bytes` = {expert} is more than the layer's `param_bytes` = {param}")]
    ExpertsExceed { expert: f64, param: f64 },
    #[error("`width`: {0}")]
    Width(crate::scenario::width::WidthError),
}

impl LayerError {
    /// The layer's field the error is about, where it is one field's alone.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            LayerError::Share { field, .. } | LayerError::NotSelective(field) => Some(field),
            LayerError::SelectiveShares => Some("recompute"),
            LayerError::EarlyWithout => Some("recompute_early"),
            LayerError::ExpertsExceed { .. } => Some("expert_param_bytes"),
            LayerError::Width(_) => Some("width"),
            _ => None,
        }
    }
}

/// The share of a backward `total` its input half takes, from the halves a layer gives.
pub(crate) fn input_share(
    total: f64,
    (input_field, input): (&'static str, Option<f64>),
    (weight_field, weight): (&'static str, Option<f64>),
    total_field: &'static str,
) -> Result<f64, LayerError> {
    let share = |i: f64| if total > 0.0 { i / total } else { 0.5 };
    match (input, weight) {
        (None, None) => Ok(0.5),
        (Some(i), Some(w)) => {
            let sum = i + w;
            if (sum - total).abs() > 1e-9 * total.max(1.0) {
                return Err(LayerError::SplitSum {
                    input: input_field,
                    weight: weight_field,
                    total_field,
                    sum,
                    total,
                });
            }
            Ok(share(i))
        }
        (Some(v), None) | (None, Some(v)) if v > total => Err(LayerError::SplitExceeds {
            field: if input.is_some() {
                input_field
            } else {
                weight_field
            },
            value: v,
            total,
        }),
        (Some(i), None) => Ok(share(i)),
        (None, Some(w)) => Ok(share(total - w)),
    }
}

/// How a layer's activations reach its backward.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Only the input of a run of recomputed layers is kept; the backward runs their forward
    /// again first.
    Full,
    /// A stated share of the activations is dropped and made again by re-running a stated share
    /// of the forward (Megatron's selective recomputation of attention, say).
    Selective,
}

impl LayerSpec {
    /// A layer with explicit times, the shape most samples use.
    pub fn timed(name: &str, role: Role, count: usize, fwd_s: f64) -> Self {
        LayerSpec {
            name: name.to_string(),
            role,
            count,
            trainable: true,
            fwd_s: Some(fwd_s),
            ..LayerSpec::default()
        }
    }

    /// Every number the layer gives, by field name: what the checks go through (rule `finite`
    /// over all of them), so a field added here is checked; a test holds every numeric field of
    /// the file format to this list.
    pub fn numbers(&self) -> [(&'static str, Option<f64>); 27] {
        [
            ("tp_collectives", self.tp_collectives),
            ("moe_dispatch_bytes", self.moe_dispatch_bytes),
            ("expert_param_bytes", self.expert_param_bytes),
            ("cp_exchange_bytes", self.cp_exchange_bytes),
            (
                "recompute_activation_share",
                self.recompute_activation_share,
            ),
            ("recompute_cost_share", self.recompute_cost_share),
            ("offload_share", self.offload_share),
            ("fe_s", self.fe_s),
            ("ff_s", self.ff_s),
            ("bf_s", self.bf_s),
            ("be_s", self.be_s),
            ("force_activation_bytes", self.force_activation_bytes),
            ("workspace_bytes", self.workspace_bytes),
            ("bwd_input_s", self.bwd_input_s),
            ("bwd_weight_s", self.bwd_weight_s),
            ("bwd_input_flops", self.bwd_input_flops),
            ("bwd_weight_flops", self.bwd_weight_flops),
            ("activation_input_share", self.activation_input_share),
            ("fwd_s", self.fwd_s),
            ("bwd_s", self.bwd_s),
            ("fwd_flops", self.fwd_flops),
            ("bwd_flops", self.bwd_flops),
            ("fwd_bytes", self.fwd_bytes),
            ("bwd_bytes", self.bwd_bytes),
            ("param_bytes", self.param_bytes),
            ("activation_bytes", self.activation_bytes),
            ("output_bytes", self.output_bytes),
        ]
    }

    /// Reads the cost of one layer (`bwd = 2 × fwd` by default).
    pub fn cost(&self) -> Result<Cost, LayerError> {
        for (field, value) in self.numbers() {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(LayerError::Negative { field, value: v });
            }
        }
        let explicit = self.fwd_s.is_some() || self.bwd_s.is_some();
        let roofline = self.fwd_flops.is_some()
            || self.bwd_flops.is_some()
            || self.fwd_bytes.is_some()
            || self.bwd_bytes.is_some();
        let split_explicit = self.bwd_input_s.is_some() || self.bwd_weight_s.is_some();
        let split_roofline = self.bwd_input_flops.is_some() || self.bwd_weight_flops.is_some();
        if (split_explicit && roofline) || (split_roofline && explicit) {
            return Err(LayerError::MixedCosts);
        }
        match (explicit, roofline) {
            (true, true) => Err(LayerError::MixedCosts),
            // A layer of a second-order model may give its four phases only: its forward is the
            // energy forward, its backward the energy backward.
            (false, false) => match self.fe_s.or(self.be_s) {
                Some(_) => {
                    let fwd_s = self.fe_s.unwrap_or(self.be_s.unwrap_or(0.0) / 2.0);
                    Ok(Cost::Explicit {
                        fwd_s,
                        bwd_s: self.be_s.unwrap_or(2.0 * fwd_s),
                    })
                }
                None => Err(LayerError::NoCost),
            },
            (true, false) => {
                let fwd_s = self.fwd_s.unwrap_or(self.bwd_s.unwrap_or(0.0) / 2.0);
                Ok(Cost::Explicit {
                    fwd_s,
                    bwd_s: self
                        .bwd_s
                        .or(self.bwd_input_s.zip(self.bwd_weight_s).map(|(i, w)| i + w))
                        .unwrap_or(2.0 * fwd_s),
                })
            }
            (false, true) => {
                let fwd_flops = self.fwd_flops.unwrap_or(0.0);
                let fwd_bytes = self.fwd_bytes.unwrap_or(0.0);
                Ok(Cost::Roofline {
                    fwd_flops,
                    bwd_flops: self
                        .bwd_flops
                        .or(self
                            .bwd_input_flops
                            .zip(self.bwd_weight_flops)
                            .map(|(i, w)| i + w))
                        .unwrap_or(2.0 * fwd_flops),
                    fwd_bytes,
                    bwd_bytes: self.bwd_bytes.unwrap_or(2.0 * fwd_bytes),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_defaults_to_twice_forward() {
        let spec = LayerSpec::timed("llm", Role::Backbone, 1, 1.5);
        assert_eq!(
            spec.cost(),
            Ok(Cost::Explicit {
                fwd_s: 1.5,
                bwd_s: 3.0
            })
        );
        let roof = LayerSpec {
            name: "x".into(),
            fwd_flops: Some(10.0),
            fwd_bytes: Some(4.0),
            ..LayerSpec::default()
        };
        assert_eq!(
            roof.cost(),
            Ok(Cost::Roofline {
                fwd_flops: 10.0,
                bwd_flops: 20.0,
                fwd_bytes: 4.0,
                bwd_bytes: 8.0
            })
        );
    }

    #[test]
    fn cost_errors_are_named() {
        let mixed = LayerSpec {
            name: "x".into(),
            fwd_s: Some(1.0),
            fwd_flops: Some(1.0),
            ..LayerSpec::default()
        };
        assert_eq!(mixed.cost(), Err(LayerError::MixedCosts));
        let none = LayerSpec {
            name: "x".into(),
            ..LayerSpec::default()
        };
        assert_eq!(none.cost(), Err(LayerError::NoCost));
        let neg = LayerSpec::timed("x", Role::Other, 1, -1.0);
        assert_eq!(
            neg.cost().map_err(|e| e.to_string()),
            Err("`fwd_s` must be a finite number ≥ 0, got -1".to_string())
        );
    }
}
