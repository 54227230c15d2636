//! Every number a valid scenario derives stays finite: hardware figures are finite and ≥ 0, every
//! layer's times (defaults included: `bwd = 2 × fwd`) and sizes are finite, and so are the step's
//! totals — the sum of every event's time over every microbatch, and the bytes a rank can hold.
//! Each total bounds what the simulator computes from it (a makespan is at most the sum of all
//! durations), so a scenario that passes cannot produce ∞ anywhere downstream: no `null` makespan,
//! no endless axis, no 0× speedup. A scenario that fails is rejected with the field that overflows.

use crate::scenario::Scenario;
use crate::scenario::hardware::Hardware;
use crate::scenario::layer::Cost;

/// A figure a scenario gives, or a total it derives, that is not finite (or out of its range).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FiniteError {
    #[error("rule `hardware`: `{field}` = {value} must be a finite number ≥ 0")]
    Hardware { field: String, value: f64 },
    #[error(
        "rule `hardware`: `hardware.fb_overlap` = {value} must be between 0 (an overlapped pair's halves back to back) and 1 (the shorter one hidden entirely)"
    )]
    Overlap { value: f64 },
    #[error("rule `hardware`: `hardware.node_devices` must be at least 1")]
    NodeDevices,
    #[error(
        "rule `hardware`: `{field}` = 0 must be above 0 (what a split backward's half costs over its share of the whole backward; a half that costs nothing is one with no share: give the layers' `bwd_input_s` or `bwd_weight_s`)"
    )]
    HalfFactor { field: &'static str },
    #[error("rule `jitter`: `{field}` {problem}")]
    Jitter { field: String, problem: String },
    #[error(
        "rule `finite`: {what} overflows to ∞; every time, size and total a scenario derives must stay finite"
    )]
    Overflow {
        /// The field whose figure makes it overflow.
        field: String,
        what: String,
    },
}

impl FiniteError {
    /// The short name of the rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            FiniteError::Hardware { .. }
            | FiniteError::Overlap { .. }
            | FiniteError::NodeDevices
            | FiniteError::HalfFactor { .. } => "hardware",
            FiniteError::Jitter { .. } => "jitter",
            FiniteError::Overflow { .. } => "finite",
        }
    }

    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            FiniteError::Hardware { field, .. } => field.clone(),
            FiniteError::Overlap { .. } => "hardware.fb_overlap".into(),
            FiniteError::NodeDevices => "hardware.node_devices".into(),
            FiniteError::HalfFactor { field } => (*field).into(),
            FiniteError::Jitter { field, .. } | FiniteError::Overflow { field, .. } => {
                field.clone()
            }
        }
    }
}

/// Checks the hardware figures: each finite and ≥ 0 (every one [`Hardware::numbers`] lists),
/// `fb_overlap` at most 1, `node_devices` and the split backward's factors above 0.
pub fn check_hardware(hardware: Option<&Hardware>) -> Result<(), FiniteError> {
    let Some(h) = hardware else {
        return Ok(());
    };
    for (field, value) in h.numbers() {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(FiniteError::Hardware { field, value: v });
        }
    }
    if let Some(v) = h.fb_overlap
        && !(0.0..=1.0).contains(&v)
    {
        return Err(FiniteError::Overlap { value: v });
    }
    if h.node_devices == Some(0) {
        return Err(FiniteError::NodeDevices);
    }
    for (field, factor) in h.half_factor_fields() {
        if factor == Some(0.0) {
            return Err(FiniteError::HalfFactor { field });
        }
    }
    Ok(())
}

/// Checks a scenario's `jitter` figure by figure ([`crate::scenario::jitter::Jitter::problem`]).
pub fn check_jitter(jitter: Option<&crate::scenario::jitter::Jitter>) -> Result<(), FiniteError> {
    match jitter.and_then(|j| j.problem()) {
        Some((field, problem)) => Err(FiniteError::Jitter { field, problem }),
        None => Ok(()),
    }
}

/// The largest multiple of a figure a layer gives that a default derived from it can take:
/// `BF` = 1.25 × the backward = 2.5 × the forward (`bwd_s` = 2 × `fwd_s`).
const DEFAULT_MULTIPLE: f64 = 2.5;

/// Every number a layer gives ([`crate::scenario::layer::LayerSpec::numbers`]), taken over the
/// step — times its copies, the microbatches and the largest workload factor, and the largest
/// multiple a default derives from it — must stay finite: the one check every time and byte
/// count of a layer goes through, whatever phase or curve it feeds.
fn check_layer_numbers(scenario: &Scenario, max_factor: f64) -> Result<(), FiniteError> {
    let m = scenario.microbatches as f64;
    let mut all = 0.0f64;
    for (index, spec) in scenario.model.layers.iter().enumerate() {
        let scale = spec.count as f64 * m * max_factor * DEFAULT_MULTIPLE;
        for (name, value) in spec.numbers() {
            let Some(v) = value else { continue };
            all += v * scale;
            if !(v * scale).is_finite() {
                return Err(overflow(
                    format!("model.layers[{index}].{name}"),
                    format!(
                        "`{name}` over the step ({} copies × {} microbatches, with the defaults derived from it)",
                        spec.count, scenario.microbatches
                    ),
                ));
            }
        }
    }
    if !all.is_finite() {
        return Err(overflow(
            "model.layers".into(),
            "the sum of every layer's figures over the step".into(),
        ));
    }
    Ok(())
}

/// Every seconds figure of the hardware, charged at most once per event of the step (each
/// action, transfer and reduce), must stay finite.
fn check_hardware_numbers(scenario: &Scenario, hw: &Hardware) -> Result<(), FiniteError> {
    let (m, p) = (scenario.microbatches as f64, scenario.ranks as f64);
    let events = 4.0 * m * (layers_f64(scenario) + p + 1.0) * p.max(1.0);
    for (field, value) in hw.numbers() {
        // Seconds, not a rate (`…_per_s`): a rate or a capacity only makes the step faster.
        let seconds =
            (field.ends_with("_s") && !field.ends_with("_per_s")) || field.contains("_s.");
        if let Some(v) = value.filter(|_| seconds)
            && !(v * events).is_finite()
        {
            return Err(overflow(
                field,
                "the step's total of it (once per action, transfer and reduce)".into(),
            ));
        }
    }
    Ok(())
}

fn overflow(field: String, what: String) -> FiniteError {
    FiniteError::Overflow { field, what }
}

/// Per-microbatch seconds of one layer forward and backward, from its cost and the hardware.
fn layer_seconds(cost: Cost, hw: &Hardware) -> (f64, f64) {
    match cost {
        Cost::Explicit { fwd_s, bwd_s } => (fwd_s, bwd_s),
        Cost::Roofline {
            fwd_flops,
            bwd_flops,
            fwd_bytes,
            bwd_bytes,
        } => (
            crate::scenario::hardware::roofline(hw, fwd_flops, fwd_bytes),
            crate::scenario::hardware::roofline(hw, bwd_flops, bwd_bytes),
        ),
    }
}

/// Checks that every layer's times and sizes, and the step's totals, stay finite. `factors` are
/// the per-microbatch workload factors already drawn.
pub fn check_totals(
    scenario: &Scenario,
    factors: &[f64],
    static_memory_factor: f64,
) -> Result<(), FiniteError> {
    let hw = scenario.hardware.clone().unwrap_or_default();
    let m = scenario.microbatches as f64;
    let p = scenario.ranks as f64;
    // The copies of a parameter: every rank's, every data-parallel replica's, and the devices
    // inside the widest stage.
    let inside = every_width(scenario)
        .map(|w| w.devices.unwrap_or(w.group()))
        .fold(1, usize::max);
    let replicas = p * scenario.data_parallel as f64 * inside as f64;
    let max_factor = factors.iter().copied().fold(1.0, f64::max);
    let Totals {
        compute,
        plain,
        params,
        saved,
        widest_output,
        heaviest,
    } = totals(scenario, factors, &hw)?;
    if !compute.is_finite() && plain.is_finite() {
        // Finite with every factor 1: the workload's factors are what overflows.
        return Err(overflow(
            "workload".into(),
            format!("the step's compute time with the workload factors (up to {max_factor:e})"),
        ));
    }
    // Every figure of every layer, each through one check (naming the field that overflows).
    check_layer_numbers(scenario, max_factor)?;
    if !compute.is_finite() {
        let at = heaviest.map_or(0, |(i, _)| i);
        return Err(overflow(
            format!("model.layers[{at}]"),
            "the step's compute time (every layer's forward and backward over every microbatch)"
                .into(),
        ));
    }
    // A split backward's halves cost at most the larger of their factors times the whole.
    for (field, factor) in hw.half_factor_fields() {
        if !(compute * factor.unwrap_or(1.0).max(1.0)).is_finite() {
            return Err(overflow(
                field.into(),
                "the step's compute time with a split backward's half scaled by it".into(),
            ));
        }
    }
    // Transfers: at most two per microbatch and layer boundary (or rank hop); reduces: one ring
    // all-reduce of every parameter over every replica.
    let transfers = 2.0 * m * (layers_f64(scenario) + p + 1.0);
    let per_transfer = crate::scenario::hardware::transfer_time(&hw, widest_output);
    let reduces =
        crate::scenario::hardware::allreduce_time(&hw, replicas.max(1.0) as usize, params) * p;
    let comm = per_transfer * transfers + reduces;
    if !comm.is_finite() {
        return Err(overflow(
            "hardware.link_alpha_s".into(),
            "the step's communication time (every transfer and gradient reduce)".into(),
        ));
    }
    // The per-action overhead: at most three actions (F, I, W) per microbatch and layer.
    let overhead = hw.action_overhead_s.unwrap_or(0.0) * 3.0 * m * layers_f64(scenario) * p;
    if !overhead.is_finite() {
        return Err(overflow(
            "hardware.action_overhead_s".into(),
            "the step's per-action overhead (every compute action's)".into(),
        ));
    }
    // Offload copies every offloaded byte out and back at most once, on the critical path at
    // worst.
    let offloaded = scenario
        .model
        .layers
        .iter()
        .filter_map(|l| l.offload_share)
        .fold(0.0, f64::max);
    let copies = if offloaded > 0.0 {
        2.0 * crate::scenario::hardware::host_copy_time(&hw, saved * offloaded)
    } else {
        0.0
    };
    if !copies.is_finite() {
        return Err(overflow(
            "hardware.host_bytes_per_s".into(),
            "the step's offload copies (the saved activations to the host and back)".into(),
        ));
    }
    let stage = stage_comm_bound(scenario, &hw, max_factor);
    if !stage.is_finite() {
        return Err(overflow(
            "hardware.intra_link_alpha_s".into(),
            "the step's collectives inside the stages (every layer's tensor-, expert- and context-parallel exchanges)".into(),
        ));
    }
    if !(compute + comm + overhead + copies + stage).is_finite() {
        return Err(overflow(
            "hardware".into(),
            "the step's total time (compute plus communication)".into(),
        ));
    }
    // The expected step draws every cost at most at the jitter's extremes: compute scaled, and
    // seconds added to each event (at most four a microbatch, layer and rank hop).
    if let Some(jitter) = scenario.jitter.as_ref() {
        let (scale, seconds) = jitter.extremes();
        let events = 4.0 * m * (layers_f64(scenario) + p + 1.0) * p.max(1.0);
        let drawn = (compute + comm + overhead + copies + stage) * scale + seconds * events;
        if !drawn.is_finite() {
            return Err(overflow(
                "jitter".into(),
                "the step's total time with every cost drawn at the jitter's extremes".into(),
            ));
        }
    }
    let step_grads = hw.step_grad_bytes_per_param_byte.unwrap_or(0.0);
    if !(params * step_grads).is_finite() {
        return Err(overflow(
            "hardware.step_grad_bytes_per_param_byte".into(),
            "the step's gradient buffers (its bytes per parameter byte × the parameter bytes)"
                .into(),
        ));
    }
    let transient = hw.weight_transient_bytes_per_param_byte.unwrap_or(0.0);
    if !(params * transient).is_finite() {
        return Err(overflow(
            "hardware.weight_transient_bytes_per_param_byte".into(),
            "a weight half's transient (its bytes per parameter byte × the parameter bytes)".into(),
        ));
    }
    let resident: f64 = hw.resident_bytes.iter().flatten().sum();
    if !resident.is_finite() {
        return Err(overflow(
            "hardware.resident_bytes".into(),
            "the bytes the ranks hold through the step (their sum)".into(),
        ));
    }
    let held = hw.input_half_held_share.unwrap_or(0.0);
    if !(saved * held).is_finite() {
        return Err(overflow(
            "hardware.input_half_held_share".into(),
            "what the input halves hold for their weight halves (its share × the saved activations)"
                .into(),
        ));
    }
    let outputs = hw.output_held_share.unwrap_or(0.0) * m * widest_output;
    if !outputs.is_finite() {
        return Err(overflow(
            "hardware.output_held_share".into(),
            "what the last stage keeps of the microbatches' outputs (its share × every microbatch's output bytes)"
                .into(),
        ));
    }
    let memory = params * (static_memory_factor + step_grads + transient) * replicas
        + saved * (1.0 + held)
        + outputs
        + resident;
    if !memory.is_finite() {
        return Err(overflow(
            "model.layers".into(),
            "the bytes the ranks hold (parameters × static_memory_factor, saved activations and resident bytes)"
                .into(),
        ));
    }
    // Every hardware figure charged per event (a switch cost, the posting of a send).
    check_hardware_numbers(scenario, &hw)
}

/// What the step's totals are summed from, over every layer and microbatch.
struct Totals {
    /// Compute seconds with the workload factors.
    compute: f64,
    /// Compute seconds with every factor 1.
    plain: f64,
    params: f64,
    /// Activation bytes saved, with the largest factor.
    saved: f64,
    widest_output: f64,
    /// The layer with the most compute, and its seconds.
    heaviest: Option<(usize, f64)>,
}

/// The totals of `scenario`'s layers; a layer whose defaults (`bwd = 2 × fwd`) or roofline time
/// overflow is rejected with its field.
fn totals(scenario: &Scenario, factors: &[f64], hw: &Hardware) -> Result<Totals, FiniteError> {
    let m = scenario.microbatches as f64;
    let max_factor = factors.iter().copied().fold(1.0, f64::max);
    let sum_factor: f64 = factors.iter().sum();
    let (mut compute, mut plain) = (0.0f64, 0.0f64);
    let (mut params, mut saved, mut widest_output) = (0.0f64, 0.0f64, 0.0f64);
    let mut heaviest: Option<(usize, f64)> = None;
    for (index, spec) in scenario.model.layers.iter().enumerate() {
        let Ok(cost) = spec.cost() else { continue };
        let field = |name: &str| format!("model.layers[{index}].{name}");
        // Defaults derived from a given figure: `bwd = 2 × fwd`.
        match cost {
            Cost::Explicit { bwd_s, .. } if !bwd_s.is_finite() => {
                return Err(overflow(
                    field("fwd_s"),
                    "the backward time it implies (2 × fwd_s)".into(),
                ));
            }
            Cost::Roofline {
                bwd_flops,
                bwd_bytes,
                ..
            } if !(bwd_flops.is_finite() && bwd_bytes.is_finite()) => {
                let name = if bwd_flops.is_finite() {
                    "fwd_bytes"
                } else {
                    "fwd_flops"
                };
                return Err(overflow(
                    field(name),
                    "the backward work it implies (2 × the forward's)".into(),
                ));
            }
            _ => {}
        }
        let (f, b) = layer_seconds(cost, hw);
        if !(f.is_finite() && b.is_finite()) {
            return Err(overflow(
                "hardware.peak_flops".into(),
                format!(
                    "layer `{}`'s roofline time (its work over the peak rate)",
                    spec.name
                ),
            ));
        }
        let count = spec.count as f64;
        let scale = if spec.workload_varies { sum_factor } else { m };
        let work = (f + b) * count * scale;
        if heaviest.is_none_or(|(_, w)| work > w) {
            heaviest = Some((index, work));
        }
        compute += work;
        plain += (f + b) * count * m;
        params += spec.param_bytes.unwrap_or(0.0) * count;
        let grow = if spec.workload_varies {
            max_factor
        } else {
            1.0
        };
        saved += spec.activation_bytes.unwrap_or(0.0) * count * grow * m;
        widest_output = widest_output.max(spec.output_bytes.unwrap_or(0.0) * grow);
    }
    Ok(Totals {
        compute,
        plain,
        params,
        saved,
        widest_output,
        heaviest,
    })
}

/// Every width the scenario gives: its regions' and its layer groups' own.
fn every_width(scenario: &Scenario) -> impl Iterator<Item = &crate::scenario::width::WidthSpec> {
    scenario.width.iter().flatten().chain(
        scenario
            .model
            .layers
            .iter()
            .filter_map(|l| l.width.as_ref()),
    )
}

/// An upper bound of the step's collectives inside the stages: every layer's (of the widest
/// group any width gives), each run at most 2.5 times per microbatch (a backward's, a rerun's)
/// on the slower link.
fn stage_comm_bound(scenario: &Scenario, hw: &Hardware, max_factor: f64) -> f64 {
    let g = every_width(scenario)
        .flat_map(|w| [w.tp, w.ep, w.cp])
        .fold(1, usize::max) as f64;
    if g <= 1.0 {
        return 0.0;
    }
    let alpha = hw
        .link_alpha_s
        .unwrap_or(0.0)
        .max(hw.intra_link_alpha_s.unwrap_or(0.0));
    let slowest = [hw.link_bytes_per_s, hw.intra_link_bytes_per_s]
        .into_iter()
        .flatten()
        .filter(|&b| b > 0.0)
        .fold(f64::INFINITY, f64::min);
    let m = scenario.microbatches as f64;
    scenario
        .model
        .layers
        .iter()
        .map(|l| {
            let out = l.output_bytes.unwrap_or(0.0);
            let bytes = out
                .max(l.moe_dispatch_bytes.unwrap_or(0.0))
                .max(l.cp_exchange_bytes.unwrap_or(2.0 * out));
            let per_byte = if slowest.is_finite() {
                bytes / slowest
            } else {
                0.0
            };
            let collectives = 2.0 * l.tp_collectives.unwrap_or(2.0) + 4.0 + 3.0;
            collectives
                * 2.0
                * ((g - 1.0) * alpha + per_byte)
                * 2.5
                * l.count as f64
                * m
                * max_factor
        })
        .sum()
}

/// The number of layers after `count` expansion, as a float for bounds.
fn layers_f64(scenario: &Scenario) -> f64 {
    scenario.model.layers.iter().map(|l| l.count as f64).sum()
}
