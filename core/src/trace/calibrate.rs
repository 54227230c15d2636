//! Fitting the cost model to a measurement. For every region and phase the factor is the median,
//! over the step's matched actions, of measured over predicted duration (the median, because a
//! PyTorch action span also holds the wait for its input, which inflates some of them). The
//! calibrated scenario scales that region's layer costs by the factors (layer groups that straddle
//! a cut are split). Then the link latency `α` is fitted so that the simulated step is as long as
//! the measured one, and the calibrated scenario is simulated again; the error is checked on
//! another step when the trace has one.

use super::align::Alignment;
use super::compare::{Comparison, compare, measured_step, predicted_actions};
use super::recover::Measurement;
use crate::algebra::derive::DeriveError;
use crate::algebra::model::LayerSpec;
use crate::scenario::Scenario;
use crate::sim::engine::SimOptions;
use crate::sim::run::{Simulation, SimulationError, simulate_scenario};
use serde::Serialize;

/// One fitted factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factor {
    /// 1-based, as in `mpipe derive`.
    pub region: usize,
    /// `F` or `B`.
    pub phase: char,
    /// Measured compute over predicted duration, the median over `samples` actions (1, not
    /// fitted, when nothing was measured: `samples` is 0).
    pub factor: f64,
    /// Actions the factor was fitted on.
    pub samples: usize,
}

#[derive(Debug, Clone)]
pub struct Calibration {
    pub fit_step: usize,
    pub check_step: usize,
    pub factors: Vec<Factor>,
    /// The link latency `α` (seconds) that makes the scaled scenario's step as long as the
    /// fit step: it absorbs transfers and the per-hop overheads the model has no term for.
    pub transfer_s: Option<f64>,
    pub scenario: Scenario,
    pub simulation: Simulation,
    /// The prediction against the check step.
    pub before: Comparison,
    /// The calibrated prediction against the check step.
    pub after: Comparison,
}

impl Calibration {
    /// `|predicted − measured| / measured` on the check step, before and after calibration.
    pub fn errors(&self) -> (f64, f64) {
        let err = |c: &Comparison| {
            if c.makespan_measured_s > 0.0 {
                (c.makespan_predicted_s - c.makespan_measured_s).abs() / c.makespan_measured_s
            } else {
                0.0
            }
        };
        (err(&self.before), err(&self.after))
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => values.get(n / 2).copied(),
        _ => Some((values.get(n / 2 - 1)? + values.get(n / 2)?) / 2.0),
    }
}

/// The step a calibration fitted on `fit` is checked on: the next one, else the one before;
/// never the fit step itself (that would only measure the fit). `None` with a single step.
pub fn check_step(fit: usize, steps: usize) -> Option<usize> {
    if fit + 1 < steps {
        Some(fit + 1)
    } else if fit > 0 && fit < steps {
        Some(fit - 1)
    } else {
        None
    }
}

/// Fits `scenario` (simulated as `sim`) to step `fit_step` of the measurement and checks the
/// result on `check_step`.
pub fn calibrate(
    scenario: &Scenario,
    sim: &Simulation,
    m: &Measurement,
    alignment: &Alignment,
    fit_step: usize,
    check_step: usize,
    options: SimOptions,
) -> Result<Calibration, DeriveError> {
    let never_stop = |_| Ok(());
    calibrate_with(
        scenario, sim, m, alignment, fit_step, check_step, options, never_stop,
    )
}

/// [`calibrate`] that reports how far it got and can be stopped: before each of its simulations
/// it calls `keep_going` with the fraction done and stops with [`SimulationError::Cancelled`]
/// when that returns false.
#[allow(clippy::too_many_arguments)] // the calibration's inputs, plus the caller's stop switch
pub fn calibrate_cancellable(
    scenario: &Scenario,
    sim: &Simulation,
    m: &Measurement,
    alignment: &Alignment,
    fit_step: usize,
    check_step: usize,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Calibration, SimulationError> {
    let pass = |f| {
        if keep_going(f) {
            Ok(())
        } else {
            Err(SimulationError::Cancelled)
        }
    };
    calibrate_with(
        scenario, sim, m, alignment, fit_step, check_step, options, pass,
    )
}

/// The calibration, calling `pass` with the fraction done before each simulation and stopping
/// with the error it returns.
#[allow(clippy::too_many_arguments)] // as `calibrate_cancellable`
fn calibrate_with<E: From<DeriveError>>(
    scenario: &Scenario,
    sim: &Simulation,
    m: &Measurement,
    alignment: &Alignment,
    fit_step: usize,
    check_step: usize,
    options: SimOptions,
    mut pass: impl FnMut(f32) -> Result<(), E>,
) -> Result<Calibration, E> {
    let plan = &sim.derivation.plan;
    let predicted = predicted_actions(sim);
    let (_, _, measured) = measured_step(m, alignment, fit_step);
    let regions = plan.regions.len();
    let mut ratios: Vec<[Vec<f64>; 2]> = vec![[Vec::new(), Vec::new()]; regions];
    for (rank, actions) in &measured {
        for a in actions {
            let Some(action) = &a.action else { continue };
            let Some(&(ps, pe)) = predicted.get(&(*rank, *action)) else {
                continue;
            };
            let Some((region, _)) = plan.stage_to_region_rank(action.stage) else {
                continue;
            };
            // Both halves of a split backward scale with the backward's factor.
            let phase = usize::from(action.phase.is_backward());
            if pe - ps > 0.0
                && let Some(slot) = region
                    .checked_sub(1)
                    .and_then(|r| ratios.get_mut(r))
                    .and_then(|pair| pair.get_mut(phase))
            {
                // Measured compute over predicted time: the span's wait is not the action's cost.
                slot.push(a.compute_ns as f64 * 1e-9 / (pe - ps));
            }
        }
    }
    let factors: Vec<Factor> = ratios
        .into_iter()
        .enumerate()
        .flat_map(|(r, [fwd, bwd])| {
            [('F', fwd), ('B', bwd)].map(|(phase, values)| Factor {
                region: r + 1,
                phase,
                samples: values.len(),
                factor: median(values).unwrap_or(1.0),
            })
        })
        .collect();
    let mut calibrated = scaled(
        scenario,
        plan.regions.iter().map(|r| r.layers.clone()).collect(),
        &factors,
    );
    let (t0, t1, _) = measured_step(m, alignment, fit_step);
    let transfer_s = fit_transfer(
        &calibrated,
        t1.saturating_sub(t0) as f64 * 1e-9,
        options,
        &mut pass,
    )?;
    if let Some(t) = transfer_s {
        let hw = calibrated.hardware.get_or_insert_with(Default::default);
        hw.link_alpha_s = Some(t);
    }
    let simulation = simulate_scenario(&calibrated, options)?;
    Ok(Calibration {
        fit_step,
        check_step,
        factors,
        transfer_s,
        before: compare(sim, m, alignment, check_step),
        after: compare(&simulation, m, alignment, check_step),
        scenario: calibrated,
        simulation,
    })
}

/// The link latency `α` at which the scenario's simulated step time equals `target_s` (bisection:
/// the step time never shrinks as `α` grows). `None` when the step is at least as long with free
/// links, or the scenario has no transfer between ranks.
fn fit_transfer<E: From<DeriveError>>(
    scenario: &Scenario,
    target_s: f64,
    options: SimOptions,
    pass: &mut impl FnMut(f32) -> Result<(), E>,
) -> Result<Option<f64>, E> {
    let mut done = 0u8;
    let mut with_alpha = |alpha: f64| -> Result<f64, E> {
        // About fifty simulations in all.
        pass(f32::from(done) / 52.0)?;
        done = done.saturating_add(1);
        let mut s = scenario.clone();
        s.hardware.get_or_insert_with(Default::default).link_alpha_s = Some(alpha);
        Ok(simulate_scenario(&s, options)?.makespan_s)
    };
    let free = with_alpha(0.0)?;
    if target_s.partial_cmp(&free) != Some(std::cmp::Ordering::Greater) {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0.0, target_s);
    if with_alpha(hi)? <= free {
        return Ok(None);
    }
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        if with_alpha(mid)? < target_s {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(0.5 * (lo + hi)))
}

/// `scenario` with each region's layer costs scaled by its factors; layer groups that straddle
/// a region boundary are split so each piece gets its own region's factors.
pub fn scaled(
    scenario: &Scenario,
    regions: Vec<std::ops::Range<usize>>,
    factors: &[Factor],
) -> Scenario {
    let factor = |region: usize, phase: char| {
        factors
            .iter()
            .find(|f| f.region == region && f.phase == phase)
            .map_or(1.0, |f| f.factor)
    };
    let mut out = scenario.clone();
    let mut layers: Vec<LayerSpec> = Vec::new();
    let mut at = 0usize;
    for spec in &scenario.model.layers {
        let end = at + spec.count;
        while at < end {
            let region = regions
                .iter()
                .position(|r| r.contains(&at))
                .map_or(0, |i| i + 1);
            let stop = regions
                .get(region.wrapping_sub(1))
                .map_or(end, |r| r.end.min(end))
                .max(at + 1);
            let mut piece = spec.clone();
            piece.count = stop - at;
            let (f, b) = (factor(region, 'F'), factor(region, 'B'));
            let old_fwd = piece.fwd_s;
            piece.fwd_s = piece.fwd_s.map(|x| x * f);
            piece.bwd_s = piece.bwd_s.or(old_fwd.map(|x| 2.0 * x)).map(|x| x * b);
            piece.fwd_flops = piece.fwd_flops.map(|x| x * f);
            piece.fwd_bytes = piece.fwd_bytes.map(|x| x * f);
            piece.bwd_flops = piece.bwd_flops.map(|x| x * b);
            piece.bwd_bytes = piece.bwd_bytes.map(|x| x * b);
            layers.push(piece);
            at = stop;
        }
    }
    out.model.layers = layers;
    if !out.name.is_empty() && !out.name.ends_with(" (calibrated)") {
        out.name.push_str(" (calibrated)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_is_never_checked_on_its_fit_step() {
        assert_eq!(check_step(0, 6), Some(1));
        assert_eq!(check_step(5, 6), Some(4));
        assert_eq!(check_step(1, 2), Some(0));
        assert_eq!(check_step(0, 1), None);
        assert_eq!(check_step(3, 2), None);
    }
    use crate::algebra::model::Role;

    #[test]
    fn a_layer_group_across_a_cut_is_split_and_each_piece_scaled() {
        let scenario = Scenario {
            format: crate::scenario::FORMAT.to_string(),
            name: "s".into(),
            description: String::new(),
            model: crate::scenario::ModelSpec {
                layers: vec![LayerSpec::timed("x", Role::Backbone, 4, 1.0)],
            },
            cut: vec![1],
            schedule: vec![crate::schedules::ONE_F_ONE_B, crate::schedules::ONE_F_ONE_B],
            ranks: 1,
            microbatches: 1,
            data_parallel: 1,
            slabs: None,
            hardware: None,
            workload: None,
            owner: Default::default(),
            static_memory_factor: None,
            orders: None,
            owner_budget: None,
            placement: None,
        };
        let factors = [
            Factor {
                region: 1,
                phase: 'F',
                factor: 2.0,
                samples: 1,
            },
            Factor {
                region: 2,
                phase: 'B',
                factor: 0.5,
                samples: 1,
            },
        ];
        let out = scaled(&scenario, vec![0..1, 1..4], &factors);
        let got: Vec<(usize, Option<f64>, Option<f64>)> = out
            .model
            .layers
            .iter()
            .map(|l| (l.count, l.fwd_s, l.bwd_s))
            .collect();
        assert_eq!(got, [(1, Some(2.0), Some(2.0)), (3, Some(1.0), Some(1.0))]);
        assert_eq!(out.name, "s (calibrated)");
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
