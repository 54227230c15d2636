//! `jitter`: how a run's costs varied, as a calibration measured them (DESIGN.md §3.1) — each
//! cost's distribution around its mean and each rank's pace per measured step. `compare-trace
//! --calibrated` writes it into the calibrated scenario, so that the scenario predicts the step
//! the run takes (the expected step, `sim::jitter::expected`) and not only the step with every
//! cost at its mean; a scenario without one has nothing drawn.

use serde::{Deserialize, Serialize};

/// An empirical distribution as its quantiles at evenly spaced probabilities, ascending, and its
/// samples' mean (empty: nothing measured, the cost stays at its mean). A draw reads the
/// quantile function at a uniform probability, between the stored points linearly, shifted so
/// that the draws' mean is the samples' mean exactly (the stored curve gives its end points a
/// fixed weight, which would move the mean of a heavy tail): a draw varies a cost around the
/// mean the simulation already charges, never moves it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quantiles {
    #[serde(default)]
    pub points: Vec<f64>,
    /// The mean of the samples the points were read from.
    #[serde(default)]
    pub mean: f64,
}

/// The fewest samples a distribution is kept from: with fewer, the cost stays at its mean (a
/// handful of transfers from one step — 5 to 9 on the seven-schedule runs — is not a
/// distribution).
pub const MIN_SAMPLES: usize = 32;

/// The points a distribution is kept at: 0 %, 1/32, …, 100 %.
pub const QUANTILE_POINTS: usize = 33;

impl Quantiles {
    /// The quantiles of `samples` (finite ones only) at [`QUANTILE_POINTS`] probabilities, and
    /// their mean; nothing from fewer than [`MIN_SAMPLES`].
    pub fn of(mut samples: Vec<f64>) -> Quantiles {
        samples.retain(|x| x.is_finite());
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        if n < MIN_SAMPLES {
            return Quantiles::default();
        }
        let last = (QUANTILE_POINTS - 1) as f64;
        let points: Vec<f64> = (0..QUANTILE_POINTS)
            .filter_map(|i| quantile(&samples, i as f64 / last))
            .collect();
        let mean = samples.iter().sum::<f64>() / n as f64;
        Quantiles { points, mean }
    }

    /// The mean of the stored curve (the mean of a draw before its shift): the trapezoids'.
    pub(crate) fn curve_mean(&self) -> f64 {
        let n = self.points.len();
        if n < 2 {
            return self.points.first().copied().unwrap_or(0.0);
        }
        let inner: f64 = self
            .points
            .windows(2)
            .map(|w| match w {
                [a, b] => (a + b) / 2.0,
                _ => 0.0,
            })
            .sum();
        inner / (n - 1) as f64
    }

    /// The value at probability `u` (0 to 1), shifted to keep the samples' mean; `None` when
    /// nothing was measured.
    pub fn at(&self, u: f64) -> Option<f64> {
        Some(quantile(&self.points, u)? + self.mean - self.curve_mean())
    }

    /// A draw less the mean: how far a cost is from the mean the simulation charges (the
    /// stored curve less its own mean, so that no figure as large as the mean is subtracted).
    pub fn deviation(&self, u: f64) -> Option<f64> {
        self.deviation_from(u, self.curve_mean())
    }

    /// [`Quantiles::deviation`] with the curve's mean read once beforehand (a draw of every
    /// node of an order reads it once, not per node).
    pub(crate) fn deviation_from(&self, u: f64, curve_mean: f64) -> Option<f64> {
        Some(quantile(&self.points, u)? - curve_mean)
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// How a run's costs varied, as `compare-trace` measured them; each is drawn as a deviation from
/// its own mean, added to what the simulation charges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Jitter {
    /// Each compute action's compute over its stage and phase's mean (around 1): an action's
    /// compute is scaled by `1 +` its deviation.
    pub compute: Quantiles,
    /// The gap before an action whose input was on its rank (the runtime's own work): its
    /// deviation is added to the action's overhead.
    pub gap_s: Quantiles,
    /// A waited transfer's time beyond the `β·n` the calibrated scenario charges (around `α`):
    /// its deviation is added to the transfer.
    pub transfer_s: Quantiles,
    /// A send's or receive's thread time beyond the median one (a stall in the call, whose mean
    /// the calibrated `α` holds once per end): its deviation is added to a transfer once per end.
    pub stall_s: Quantiles,
    /// Per measured step, each rank's pace: its compute that step over what its stages' fitted
    /// costs make of it, over the rank's mean across the steps (around 1). The machine's state
    /// moves a rank's actions together — one rank a tenth slow for a whole step while the other
    /// is not — and a step waits for its slower rank, which independent per-action deviations
    /// average away. A draw takes one measured step's paces, every rank's together, and scales
    /// each rank's compute by its own (a rank beyond the list, or an empty list: 1).
    pub pace: Vec<Vec<f64>>,
}

/// The most points one distribution of a scenario's `jitter` holds (a calibration writes
/// [`QUANTILE_POINTS`]).
pub const MAX_POINTS: usize = 1024;
/// The most measured steps a `jitter.pace` gives, the most ranks one step gives, and the most
/// paces it gives in all (32 MB of them).
pub const MAX_PACE_STEPS: usize = 65_536;
pub const MAX_PACE_RANKS: usize = 65_536;
pub const MAX_PACE_ENTRIES: usize = 1 << 22;

impl Jitter {
    /// Nothing to draw: every distribution empty and no pace.
    pub fn is_empty(&self) -> bool {
        self.compute.is_empty()
            && self.gap_s.is_empty()
            && self.transfer_s.is_empty()
            && self.pace.is_empty()
    }

    /// The distributions by their field names.
    fn distributions(&self) -> [(&'static str, &Quantiles); 4] {
        [
            ("compute", &self.compute),
            ("gap_s", &self.gap_s),
            ("transfer_s", &self.transfer_s),
            ("stall_s", &self.stall_s),
        ]
    }

    /// The first figure a draw cannot be made from, as (field, what is wrong with it): a
    /// distribution of more than [`MAX_POINTS`] points, a figure that is not a finite number,
    /// points that do not ascend, a compute multiplier or a pace below 0, a pace of more than
    /// [`MAX_PACE_STEPS`] steps, a step of more than [`MAX_PACE_RANKS`] ranks, or more than
    /// [`MAX_PACE_ENTRIES`] paces in all.
    pub fn problem(&self) -> Option<(String, String)> {
        for (name, q) in self.distributions() {
            if q.points.len() > MAX_POINTS {
                return Some((
                    format!("jitter.{name}.points"),
                    format!("holds {} points; at most {MAX_POINTS}", q.points.len()),
                ));
            }
            if !q.mean.is_finite() {
                return Some((
                    format!("jitter.{name}.mean"),
                    format!("= {} must be a finite number", q.mean),
                ));
            }
            let mut before: Option<f64> = None;
            for (i, &x) in q.points.iter().enumerate() {
                let field = format!("jitter.{name}.points[{i}]");
                if !x.is_finite() {
                    return Some((field, format!("= {x} must be a finite number")));
                }
                if name == "compute" && x < 0.0 {
                    return Some((
                        field,
                        format!("= {x} must be ≥ 0 (a multiplier of an action's compute)"),
                    ));
                }
                if let Some(b) = before
                    && x < b
                {
                    return Some((
                        field,
                        format!(
                            "= {x} is below the point before it ({b}): a distribution's points ascend"
                        ),
                    ));
                }
                before = Some(x);
            }
        }
        if self.pace.len() > MAX_PACE_STEPS {
            return Some((
                "jitter.pace".into(),
                format!("gives {} steps; at most {MAX_PACE_STEPS}", self.pace.len()),
            ));
        }
        let entries: usize = self.pace.iter().map(Vec::len).sum();
        if entries > MAX_PACE_ENTRIES {
            return Some((
                "jitter.pace".into(),
                format!("gives {entries} paces in all; at most {MAX_PACE_ENTRIES}"),
            ));
        }
        for (k, step) in self.pace.iter().enumerate() {
            if step.len() > MAX_PACE_RANKS {
                return Some((
                    format!("jitter.pace[{k}]"),
                    format!("gives {} ranks; at most {MAX_PACE_RANKS}", step.len()),
                ));
            }
            for (r, &x) in step.iter().enumerate() {
                if !(x.is_finite() && x >= 0.0) {
                    return Some((
                        format!("jitter.pace[{k}][{r}]"),
                        format!("= {x} must be a finite number ≥ 0 (a rank's pace that step)"),
                    ));
                }
            }
        }
        None
    }

    /// The most a draw can scale an action's compute by (its pace times one plus its compute
    /// deviation), and the most seconds a draw can add to one event (a gap's, a transfer's and
    /// its two stalls' deviations): what the step's totals are checked against.
    pub fn extremes(&self) -> (f64, f64) {
        // A deviation is a point less the stored curve's mean: at most twice the largest point.
        let largest = |q: &Quantiles| q.points.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let pace = self.pace.iter().flatten().fold(1.0f64, |m, &x| m.max(x));
        let seconds = 2.0 * largest(&self.gap_s)
            + 2.0 * largest(&self.transfer_s)
            + 4.0 * largest(&self.stall_s);
        (pace * (1.0 + 2.0 * largest(&self.compute)), seconds)
    }
}

/// The value at probability `u` (clamped to 0–1) of ascending `sorted`, between its points
/// linearly; `None` when it is empty.
pub(crate) fn quantile(sorted: &[f64], u: f64) -> Option<f64> {
    let at = u.clamp(0.0, 1.0) * sorted.len().checked_sub(1)? as f64;
    let lo = at.floor() as usize;
    let (a, b) = (sorted.get(lo)?, sorted.get(lo + 1).or(sorted.get(lo))?);
    Some(a + (b - a) * (at - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_read_back_what_they_were_made_of() {
        let q = Quantiles::of((0..=100).map(f64::from).collect());
        assert_eq!(q.points.len(), QUANTILE_POINTS);
        assert_eq!(q.mean, 50.0);
        assert_eq!(q.at(0.0), Some(0.0));
        assert_eq!(q.at(0.5), Some(50.0));
        assert_eq!(q.at(1.0), Some(100.0));
        assert_eq!(q.at(0.25), Some(25.0));
        assert_eq!(q.deviation(0.5), Some(0.0));
        assert_eq!(Quantiles::of(vec![f64::NAN; 40]).at(0.5), None);
        assert_eq!(Quantiles::of(vec![3.0; 32]).at(0.7), Some(3.0));
        // From fewer than 32 samples, nothing.
        assert!(Quantiles::of(vec![3.0; 31]).is_empty());
    }

    #[test]
    fn a_jitter_that_cannot_be_drawn_from_names_its_figure() {
        let q = |points: Vec<f64>| Quantiles { points, mean: 1.0 };
        let problem = |j: Jitter| j.problem().map(|(field, what)| format!("{field} {what}"));
        assert_eq!(problem(Jitter::default()), None);
        assert_eq!(
            problem(Jitter {
                stall_s: q(vec![-0.5, f64::INFINITY]),
                ..Jitter::default()
            }),
            Some("jitter.stall_s.points[1] = inf must be a finite number".into())
        );
        assert_eq!(
            problem(Jitter {
                compute: q(vec![-0.1, 1.0]),
                ..Jitter::default()
            }),
            Some(
                "jitter.compute.points[0] = -0.1 must be ≥ 0 (a multiplier of an action's compute)"
                    .into()
            )
        );
        assert_eq!(
            problem(Jitter {
                transfer_s: q(vec![0.0; MAX_POINTS + 1]),
                ..Jitter::default()
            }),
            Some("jitter.transfer_s.points holds 1025 points; at most 1024".into())
        );
        assert_eq!(
            problem(Jitter {
                gap_s: Quantiles {
                    points: vec![0.1],
                    mean: f64::NAN
                },
                ..Jitter::default()
            }),
            Some("jitter.gap_s.mean = NaN must be a finite number".into())
        );
        // Paces: too many in all, then one step too wide, then one below 0.
        assert_eq!(
            problem(Jitter {
                pace: vec![vec![1.0; 2048]; 2049],
                ..Jitter::default()
            }),
            Some("jitter.pace gives 4196352 paces in all; at most 4194304".into())
        );
        assert_eq!(
            problem(Jitter {
                pace: vec![vec![1.0; 2], vec![1.0; MAX_PACE_RANKS + 1]],
                ..Jitter::default()
            }),
            Some("jitter.pace[1] gives 65537 ranks; at most 65536".into())
        );
        // The extremes: the largest pace times one plus twice the largest compute point, and
        // twice the gap's and transfer's largest and four times the stall's, in seconds.
        let j = Jitter {
            compute: q(vec![0.5, 1.5]),
            gap_s: q(vec![0.0, 0.25]),
            stall_s: q(vec![-1.0, 0.5]),
            pace: vec![vec![0.9, 1.2], vec![1.1, 0.8]],
            ..Jitter::default()
        };
        assert_eq!(j.extremes(), (1.2 * 4.0, 0.5 + 4.0));
    }

    #[test]
    fn draws_keep_the_samples_mean_whatever_their_tail() {
        // 39 samples of 0.25 and one of 6: the curve alone would give the largest sample a
        // weight of 1/64 (a mean of 0.340); the draws' mean is the samples' (0.394).
        let mut samples = vec![0.25; 39];
        samples.push(6.0);
        let q = Quantiles::of(samples);
        assert!((q.mean - 0.39375).abs() < 1e-12);
        let n = 100_000;
        let drawn: f64 = (0..n)
            .map(|i| q.at((f64::from(i) + 0.5) / f64::from(n)).unwrap())
            .sum();
        assert!(
            (drawn / f64::from(n) - q.mean).abs() < 1e-6,
            "{}",
            drawn / f64::from(n)
        );
    }
}
