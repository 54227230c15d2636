//! `width`: how many devices a region's stage is (DESIGN.md §3.1, "collectives inside a stage") —
//! its tensor-, expert- and context-parallel degrees, sequence parallelism, how much of each
//! kind of collective its compute hides, and whether an overlapped forward/backward pair hides
//! each other's collectives (DualPipe's point). One object per region in the top-level `width`
//! list (aligned with `schedule`), or on a layer group (`model.layers[i].width`), which then
//! replaces its region's for those layers.

use serde::{Deserialize, Serialize};

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The largest degree a width may give (`tp`, `ep`, `cp`, `devices`): far beyond any real
/// cluster, small enough that every product of them stays exact.
pub const MAX_DEGREE: usize = 1 << 16;

/// A region's (or a layer group's) width. Every field defaults to a stage of one device.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WidthSpec {
    /// Tensor-parallel degree: each layer's matrices split over `tp` devices, which all-reduce
    /// the layer's output `tp_collectives` times in its forward and again in its backward.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub tp: usize,
    /// Expert-parallel degree: an MoE layer's experts (`expert_param_bytes`) split over `ep`
    /// devices, which exchange the routed tokens by an all-to-all before the experts (dispatch)
    /// and one after (combine), in the forward and again in the backward. The group is made of
    /// data-parallel and context-parallel peers (Megatron folds EP over DP × CP).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ep: usize,
    /// Context-parallel degree: the sequence split over `cp` devices, which pass the keys and
    /// values around a ring (`cp_exchange_bytes`) in the forward and twice that in the backward.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cp: usize,
    /// Sequence parallelism with the tensor parallelism: the activations outside the matrices
    /// are split over `tp` too (each all-reduce becomes a reduce-scatter and an all-gather, the
    /// same time), so every activation byte is divided by `tp` (default false: Megatron's 10 of
    /// 34 parts of a layer's activations stay whole on each device).
    #[serde(default, skip_serializing_if = "is_false")]
    pub sp: bool,
    /// Devices of each of its ranks (default `tp × cp`, or more where another region on the same
    /// rank is wider): a multiple of `tp × cp`, the rest running data-parallel inside the stage,
    /// each share taking its part of the microbatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<usize>,
    /// The share (0–1) of the tensor-parallel collectives the layer's own compute hides
    /// (Megatron's `--tp-comm-overlap`; default 0: on the compute stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_overlap: Option<f64>,
    /// The share (0–1) of the expert-parallel all-to-alls its own compute hides (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep_overlap: Option<f64>,
    /// The share (0–1) of the context-parallel ring exchange its own compute hides (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_overlap: Option<f64>,
    /// In an overlapped pair (DualPipe's F&B slot), the forward's collectives run under the
    /// backward's compute and the backward's under the forward's (Megatron's
    /// `--overlap-moe-expert-parallel-comm`); `false` runs the pair's collectives as outside a
    /// pair (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fb_comm_overlap: Option<bool>,
}

impl Default for WidthSpec {
    fn default() -> Self {
        WidthSpec::single()
    }
}

/// The three kinds of collective inside a stage, in the order of [`WidthSpec::overlaps`].
pub const KINDS: [&str; 3] = ["tp", "ep", "cp"];

impl WidthSpec {
    /// A stage of one device (the default).
    pub fn single() -> WidthSpec {
        WidthSpec {
            tp: 1,
            ep: 1,
            cp: 1,
            sp: false,
            devices: None,
            tp_overlap: None,
            ep_overlap: None,
            cp_overlap: None,
            fb_comm_overlap: None,
        }
    }

    /// Whether it is the default width (one device, nothing overlapped).
    pub fn is_single(&self) -> bool {
        *self == WidthSpec::single()
    }

    /// The degrees and the devices it gives, by field name, for the checks.
    pub fn degrees(&self) -> [(&'static str, Option<usize>); 4] {
        [
            ("tp", Some(self.tp)),
            ("ep", Some(self.ep)),
            ("cp", Some(self.cp)),
            ("devices", self.devices),
        ]
    }

    /// The overlap shares, by field name, for the checks.
    pub fn numbers(&self) -> [(&'static str, Option<f64>); 3] {
        [
            ("tp_overlap", self.tp_overlap),
            ("ep_overlap", self.ep_overlap),
            ("cp_overlap", self.cp_overlap),
        ]
    }

    /// The share of each kind ([`KINDS`]) its compute hides (0 where not given).
    pub fn overlaps(&self) -> [f64; 3] {
        self.numbers().map(|(_, v)| v.unwrap_or(0.0))
    }

    /// The devices `tp × cp` its layers need at least.
    pub fn group(&self) -> usize {
        self.tp.saturating_mul(self.cp)
    }

    /// Checks each degree (1 to [`MAX_DEGREE`]), the devices (a multiple of `tp × cp`) and each
    /// overlap share (0 to 1); the error names the field (`tp`, …) and says why.
    pub fn check(&self) -> Result<(), WidthError> {
        for (field, value) in self.degrees() {
            if let Some(v) = value
                && !(1..=MAX_DEGREE).contains(&v)
            {
                return Err(WidthError::Degree { field, value: v });
            }
        }
        if let Some(d) = self.devices
            && d % self.group() != 0
        {
            return Err(WidthError::Devices {
                devices: d,
                tp: self.tp,
                cp: self.cp,
            });
        }
        for (field, value) in self.numbers() {
            if let Some(v) = value
                && !(v.is_finite() && (0.0..=1.0).contains(&v))
            {
                return Err(WidthError::Share { field, value: v });
            }
        }
        Ok(())
    }
}

/// Why a width is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WidthError {
    #[error("`{field}` = {value} must be between 1 and {MAX_DEGREE}")]
    Degree { field: &'static str, value: usize },
    #[error("`devices` = {devices} is not a multiple of tp × cp = {tp} × {cp}")]
    Devices {
        devices: usize,
        tp: usize,
        cp: usize,
    },
    #[error("`{field}` = {value} must be between 0 and 1")]
    Share { field: &'static str, value: f64 },
}

impl WidthError {
    /// The width's field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            WidthError::Degree { field, .. } | WidthError::Share { field, .. } => field,
            WidthError::Devices { .. } => "devices",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_width_names_the_field_it_refuses() {
        let bad = WidthSpec {
            tp: 0,
            ..WidthSpec::single()
        };
        assert_eq!(
            bad.check().map_err(|e| e.to_string()),
            Err("`tp` = 0 must be between 1 and 65536".to_string())
        );
        let bad = WidthSpec {
            tp: 4,
            devices: Some(6),
            ..WidthSpec::single()
        };
        assert_eq!(
            bad.check().map_err(|e| e.to_string()),
            Err("`devices` = 6 is not a multiple of tp × cp = 4 × 1".to_string())
        );
        let bad = WidthSpec {
            ep_overlap: Some(1.5),
            ..WidthSpec::single()
        };
        assert_eq!(bad.check().map_err(|e| e.field()), Err("ep_overlap"));
        assert!(WidthSpec::single().check().is_ok());
    }

    #[test]
    fn an_empty_object_is_the_single_device_width() {
        let w: WidthSpec = serde_json::from_str("{}").unwrap_or_default();
        assert!(w.is_single());
        assert_eq!(serde_json::to_string(&w).ok().as_deref(), Some("{}"));
    }
}
