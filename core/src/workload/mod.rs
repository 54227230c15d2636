//! Per-microbatch workload factors of data-dependent layers (the encoder): an explicit list, a
//! seeded distribution, or a batch of graphs packed into the microbatches ([`gars`]). The same
//! seed always gives the same factors (ChaCha8, platform-independent).

pub mod gars;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution as _, LogNormal};
use serde::{Deserialize, Serialize};

/// `workload` in a scenario: one of `encoder_scale` or `distribution` (with an optional `seed`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// One factor per microbatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder_scale: Option<Vec<f64>>,
    /// Factors drawn from a distribution, one per microbatch in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,
    /// Seed of the draw (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// A global batch of graphs packed into the microbatches: each microbatch's factor is its
    /// edges over the mean microbatch's ([`gars`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphs: Option<gars::Graphs>,
}

/// A distribution of workload factors.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Distribution {
    /// Every microbatch the same.
    Constant { value: f64 },
    /// Uniform on `[low, high]`.
    Uniform { low: f64, high: f64 },
    /// Log-normal with the given median (`e^μ`) and `σ` of the underlying normal.
    Lognormal { median: f64, sigma: f64 },
    /// Drawn with replacement from measured values (for example images per sample).
    Empirical { values: Vec<f64> },
}

/// Why a workload cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    #[error("`workload.{field}` has {given} entries for {microbatches} microbatches")]
    Length {
        field: &'static str,
        given: usize,
        microbatches: usize,
    },
    #[error("`workload.{field}` = {value} must be a finite number ≥ 0")]
    Value { field: String, value: f64 },
    #[error("`workload` gives both `encoder_scale` and `distribution`; give one")]
    Both,
    #[error(
        "`workload` gives `graphs` and per-microbatch factors (`encoder_scale` or `distribution`); give one"
    )]
    GraphsAndFactors,
    #[error("`workload.distribution`: {0}")]
    Parameters(String),
    #[error("`workload.graphs`: {0}")]
    Graphs(String),
}

impl WorkloadError {
    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            WorkloadError::Length { field, .. } => format!("workload.{field}"),
            WorkloadError::Value { field, .. } => format!("workload.{field}"),
            WorkloadError::Both | WorkloadError::GraphsAndFactors => "workload".into(),
            WorkloadError::Parameters(_) => "workload.distribution".into(),
            WorkloadError::Graphs(_) => "workload.graphs".into(),
        }
    }
}

fn check(field: impl Fn() -> String, value: f64) -> Result<(), WorkloadError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(WorkloadError::Value {
            field: field(),
            value,
        })
    }
}

impl Workload {
    /// The factor of every microbatch; `1.0` each without a workload.
    pub fn factors(
        workload: Option<&Workload>,
        microbatches: usize,
    ) -> Result<Vec<f64>, WorkloadError> {
        let Some(w) = workload else {
            return Ok(vec![1.0; microbatches]);
        };
        if let Some(graphs) = &w.graphs {
            if w.encoder_scale.is_some() || w.distribution.is_some() {
                return Err(WorkloadError::GraphsAndFactors);
            }
            return Ok(graphs.pack(microbatches)?.factors());
        }
        match (&w.encoder_scale, &w.distribution) {
            (Some(_), Some(_)) => Err(WorkloadError::Both),
            (None, None) => Ok(vec![1.0; microbatches]),
            (Some(list), None) => {
                if list.len() != microbatches {
                    return Err(WorkloadError::Length {
                        field: "encoder_scale",
                        given: list.len(),
                        microbatches,
                    });
                }
                for (mb, &v) in list.iter().enumerate() {
                    check(|| format!("encoder_scale[{mb}]"), v)?;
                }
                Ok(list.clone())
            }
            (None, Some(d)) => {
                let factors = d.draw(w.seed.unwrap_or(0), microbatches)?;
                // A distribution of finite parameters can still draw ∞ (uniform up to f64::MAX,
                // a lognormal with a huge sigma).
                match factors.iter().position(|f| !f.is_finite()) {
                    Some(mb) => Err(WorkloadError::Parameters(format!(
                        "microbatch {mb}'s factor, drawn with seed {}, overflows to ∞; give parameters whose draws stay finite",
                        w.seed.unwrap_or(0),
                    ))),
                    None => Ok(factors),
                }
            }
        }
    }
}

impl Distribution {
    /// `n` factors drawn with `seed`.
    pub fn draw(&self, seed: u64, n: usize) -> Result<Vec<f64>, WorkloadError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let bad = |m: String| WorkloadError::Parameters(m);
        match self {
            Distribution::Constant { value } => {
                check(|| "distribution.value".into(), *value)?;
                Ok(vec![*value; n])
            }
            Distribution::Uniform { low, high } => {
                check(|| "distribution.low".into(), *low)?;
                check(|| "distribution.high".into(), *high)?;
                if low > high {
                    return Err(bad(format!(
                        "uniform needs low ≤ high, got low = {low}, high = {high}"
                    )));
                }
                Ok((0..n).map(|_| rng.random_range(*low..=*high)).collect())
            }
            Distribution::Lognormal { median, sigma } => {
                check(|| "distribution.median".into(), *median)?;
                check(|| "distribution.sigma".into(), *sigma)?;
                if *median <= 0.0 {
                    return Err(bad(format!("lognormal needs median > 0, got {median}")));
                }
                let dist = LogNormal::new(median.ln(), *sigma)
                    .map_err(|e| bad(format!("lognormal: {e}")))?;
                Ok((0..n).map(|_| dist.sample(&mut rng)).collect())
            }
            Distribution::Empirical { values } => {
                if values.is_empty() {
                    return Err(bad("empirical needs at least one value".into()));
                }
                for (i, &v) in values.iter().enumerate() {
                    check(|| format!("distribution.values[{i}]"), v)?;
                }
                Ok((0..n)
                    .map(|_| {
                        values
                            .get(rng.random_range(0..values.len()))
                            .copied()
                            .unwrap_or(1.0)
                    })
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_factors_other_seed_other_factors() {
        let d = Distribution::Lognormal {
            median: 1.0,
            sigma: 0.5,
        };
        let a = d.draw(7, 16).unwrap();
        assert_eq!(a, d.draw(7, 16).unwrap());
        assert_ne!(a, d.draw(8, 16).unwrap());
        assert!(a.iter().all(|&x| x > 0.0));
        let u = Distribution::Uniform {
            low: 0.5,
            high: 2.0,
        }
        .draw(1, 100)
        .unwrap();
        assert!(u.iter().all(|&x| (0.5..=2.0).contains(&x)));
        let e = Distribution::Empirical {
            values: vec![1.0, 4.0],
        }
        .draw(3, 50)
        .unwrap();
        assert!(e.iter().all(|&x| x == 1.0 || x == 4.0));
        assert!(e.contains(&1.0) && e.contains(&4.0));
    }

    #[test]
    fn parameters_are_checked() {
        let w = Workload {
            encoder_scale: Some(vec![1.0]),
            distribution: Some(Distribution::Constant { value: 1.0 }),
            seed: None,
            graphs: None,
        };
        assert_eq!(Workload::factors(Some(&w), 1), Err(WorkloadError::Both));
        assert_eq!(
            Distribution::Uniform {
                low: 2.0,
                high: 1.0
            }
            .draw(0, 1)
            .unwrap_err()
            .to_string(),
            "`workload.distribution`: uniform needs low ≤ high, got low = 2, high = 1"
        );
        let text =
            r#"{"distribution": {"kind": "lognormal", "median": 1.0, "sigma": 0.3, "mean": 2}}"#;
        let err = serde_json::from_str::<Workload>(text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("unknown field `mean`"), "{err}");
    }
}
