//! JanusPipe's WaveK sweep (its Fig. 12): the scenario run with each candidate unit size
//! `k`, each point's step time, throughput against `k = P` (the default) and peak memory against
//! the device's capacity; the best `k` is the fastest one that fits.

use crate::graph::derive::DeriveError;
use crate::scenario::Scenario;
use crate::schedules::skeleton::{Skeleton, schedule_to_string};
use crate::sim::engine::SimOptions;
use crate::tune::Stepped;
use crate::tune::fit_memory::{FitError, FittedPoint, fit_simulated};
use crate::tune::pipeline::simulate_scenario;
use crate::vocab::parameter::Parameter;
use serde::Serialize;
use std::ops::RangeInclusive;

/// One candidate `k`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WavePoint {
    pub k: usize,
    pub makespan_s: f64,
    /// Step time at `k = P` over this one's (Fig. 12's normalised throughput); `None` when
    /// `k = P` is not among the candidates.
    pub throughput_vs_default: Option<f64>,
    /// The highest rank's peak memory.
    pub peak_memory_bytes: f64,
    /// The peak exceeds `hardware.memory_bytes` (the run would fail with OOM).
    pub over_capacity: bool,
    /// `M mod k`: microbatches of the trailing wave when it is not full (0: `k | M`).
    pub trailing: usize,
    /// Over capacity: this `k` fitted under it by recomputation and offload
    /// ([`crate::tune::fit_memory`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted: Option<FittedPoint>,
}

/// A sweep over `k`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaveSweep {
    pub microbatches: usize,
    /// `k = P`, the default unit size.
    pub default_k: usize,
    pub capacity_bytes: Option<f64>,
    pub points: Vec<WavePoint>,
    /// The fastest `k` within the capacity (the smallest such `k` on a tie).
    pub best_k: Option<usize>,
    /// The fastest `k` once those over the capacity are fitted under it, with its step time,
    /// where that is a fitted one faster than `best_k`.
    pub best_fitted: Option<(usize, f64)>,
}

/// Why a scenario cannot be swept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error(
        "the WaveK sweep needs a schedule that runs with a unit size k ({runners}); the schedule is {schedule}"
    )]
    NoUnitSize {
        /// The scenario's schedule, as `⟨1f1b⟩`.
        schedule: String,
        /// The registry's schedules that can run with one, as `` `wavek` ``.
        runners: String,
    },
    /// The schedule run with a `k` names no default for it.
    #[error("the schedule {0} names no default unit size k")]
    NoDefault(String),
    #[error("no k of {first}..{last} is between 1 and M = {microbatches}")]
    Empty {
        first: usize,
        last: usize,
        microbatches: usize,
    },
    #[error(transparent)]
    Derive(#[from] DeriveError),
}

/// Whether `scenario` can be swept: every region's schedule runs with a unit size `k`.
pub fn sweepable(scenario: &Scenario) -> bool {
    let runs = |s: &Skeleton| s.given(Parameter::WaveK).is_some();
    !scenario.schedule.is_empty() && scenario.schedule.iter().all(runs)
}

/// The scenario run with unit size `k`: each region's skeleton replaced by the one of its op set
/// that reads it (`Skeleton::given`).
pub fn with_wave_k(scenario: &Scenario, k: usize) -> Result<Scenario, SweepError> {
    if !sweepable(scenario) {
        return Err(SweepError::NoUnitSize {
            schedule: schedule_to_string(&scenario.schedule),
            runners: Skeleton::runners(Parameter::WaveK),
        });
    }
    let mut s = scenario.clone();
    crate::scenario::edit::Edit::WaveK(Some(k)).apply(&mut s);
    Ok(s)
}

/// Sweeps `ks` (the part of it within `1..=M`); `keep_going` gets the fraction done and may stop
/// the sweep (`Ok(None)`).
pub fn sweep(
    scenario: &Scenario,
    ks: RangeInclusive<usize>,
    options: SimOptions,
    keep_going: &mut dyn FnMut(f32) -> bool,
) -> Result<Option<WaveSweep>, SweepError> {
    let mut steps = SweepSteps::new(scenario, ks, options)?;
    Stepped::run_to_end(|| steps.step(keep_going))
}

/// The sweep in steps, one unit size each (with its fit under the capacity when it is over):
/// what [`sweep`] runs in a loop, and a caller with no threads (the web build) runs a few at a
/// time between the frames it draws.
#[derive(Debug, Clone)]
pub struct SweepSteps {
    scenario: Scenario,
    options: SimOptions,
    candidates: Vec<usize>,
    default_k: usize,
    capacity: Option<f64>,
    points: Vec<WavePoint>,
}

impl SweepSteps {
    /// The steps of sweeping `ks` (the part of it within `1..=M`); refused when that part is
    /// empty or the schedule takes no unit size.
    pub fn new(
        scenario: &Scenario,
        ks: RangeInclusive<usize>,
        options: SimOptions,
    ) -> Result<SweepSteps, SweepError> {
        let m = scenario.microbatches;
        let (first, last) = (*ks.start(), *ks.end());
        // Only `1..=M` is iterated, however wide the range asked for.
        let candidates: Vec<usize> = (first.max(1)..=last.min(m)).collect();
        if candidates.is_empty() {
            return Err(SweepError::Empty {
                first,
                last,
                microbatches: m,
            });
        }
        // The unit size the schedule runs when the scenario gives none.
        let run = with_wave_k(scenario, 1)?;
        let default_k = run
            .parameter_default(Parameter::WaveK)
            .ok_or_else(|| SweepError::NoDefault(schedule_to_string(&run.schedule)))?;
        Ok(SweepSteps {
            scenario: scenario.clone(),
            options,
            points: Vec::with_capacity(candidates.len()),
            candidates,
            default_k,
            capacity: scenario.hardware.as_ref().and_then(|h| h.memory_bytes),
        })
    }

    /// Runs the next unit size: `Again` while more remain, `Done` with the sweep after the last,
    /// `Cancelled` when `keep_going` (given the fraction done before each simulation and
    /// through a fit) said stop.
    pub fn step(
        &mut self,
        keep_going: &mut dyn FnMut(f32) -> bool,
    ) -> Result<Stepped<WaveSweep>, SweepError> {
        let i = self.points.len();
        let count = self.candidates.len();
        let Some(&k) = self.candidates.get(i) else {
            return Ok(Stepped::Done(self.finish()));
        };
        if !keep_going(i as f32 / count as f32) {
            return Ok(Stepped::Cancelled);
        }
        let options = self.options;
        let run = with_wave_k(&self.scenario, k)?;
        let sim = simulate_scenario(&run, options)?;
        let (makespan_s, peak) = (sim.makespan_s, sim.peak_memory_bytes());
        let over_capacity = self.capacity.is_some_and(|c| peak > c);
        let fitted = if over_capacity {
            let at = i as f32 / count as f32;
            let share = 1.0 / count as f32;
            match fit_simulated(&run, sim, options, &mut |f| keep_going(at + f * share)) {
                Ok(fitted) => Some(fitted),
                Err(FitError::Cancelled) => return Ok(Stepped::Cancelled),
                Err(FitError::Derive(e)) => return Err(e.into()),
                // The capacity is the scenario's, checked finite and positive by validation.
                Err(_) => None,
            }
        } else {
            None
        };
        self.points.push(WavePoint {
            k,
            makespan_s,
            throughput_vs_default: None,
            peak_memory_bytes: peak,
            over_capacity,
            trailing: self.scenario.microbatches % k,
            fitted,
        });
        Ok(Stepped::Again)
    }

    /// The sweep of the points run: each one's throughput against the default unit size's, the
    /// fastest within the capacity, and the fastest fitted under it when that beats it.
    fn finish(&mut self) -> WaveSweep {
        let mut points = std::mem::take(&mut self.points);
        let default_k = self.default_k;
        if let Some(base) = points
            .iter()
            .find(|p| p.k == default_k)
            .map(|p| p.makespan_s)
        {
            for p in &mut points {
                p.throughput_vs_default = (p.makespan_s > 0.0).then(|| base / p.makespan_s);
            }
        }
        let best_k = points
            .iter()
            .filter(|p| !p.over_capacity)
            .min_by(|a, b| a.makespan_s.total_cmp(&b.makespan_s).then(a.k.cmp(&b.k)))
            .map(|p| p.k);
        let best_time = |k: Option<usize>| {
            k.and_then(|k| points.iter().find(|p| p.k == k))
                .map_or(f64::INFINITY, |p| p.makespan_s)
        };
        let best_fitted = points
            .iter()
            .filter_map(|p| Some((p.k, p.fitted.as_ref()?.makespan_s?)))
            .filter(|&(_, t)| t < best_time(best_k))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        WaveSweep {
            microbatches: self.scenario.microbatches,
            default_k,
            capacity_bytes: self.capacity,
            points,
            best_k,
            best_fitted,
        }
    }
}
