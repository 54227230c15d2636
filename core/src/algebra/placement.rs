//! Placement: which rank runs each pipeline stage. Stages are numbered in model order, `P` per
//! region: stage `(j − 1)·P + i` is the `i`-th slab of region `j` (for a Replicated region, rank
//! `i`'s replica). The default puts slab `i` on rank `i` (`stage = rank + (region − 1)·P`, the
//! virtual stages of Megatron-LM and PyTorch); the V fold reverses every second chunk of the
//! wavefront (chunk 0 of rank `r` is stage `r`, chunk 1 is stage `2P − 1 − r`); a scenario may give
//! any map in which each region's stages sit on distinct ranks.

use crate::scenario::placement::PlacementSpec;
use crate::vocab::layout::v_fold_rank;

/// A checked stage → rank map over `regions × P` stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    ranks: usize,
    /// The rank of each stage.
    rank_of: Vec<usize>,
    /// The stage of each (region, rank), at `(region − 1)·P + rank`.
    stage_of: Vec<Option<usize>>,
}

/// Why a placement is not valid (rule `placement`), with the index of the offending stage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "rule `placement`: `placement` gives {given} stage(s); the schedule has {stages} (P per region)"
    )]
    Length { given: usize, stages: usize },
    #[error("rule `placement`: stage {stage} is on rank {rank}, but there are {ranks} ranks")]
    Rank {
        stage: usize,
        rank: usize,
        ranks: usize,
    },
    #[error(
        "rule `placement`: stages {other} and {stage} of region {region} are both on rank {rank}; each region's stages must be on distinct ranks"
    )]
    Shared {
        stage: usize,
        other: usize,
        region: usize,
        rank: usize,
    },
    #[error(
        "rule `placement`: stage {stage} is rank {rank}'s replica of the Replicated region {region}: it stays on rank {rank}"
    )]
    Replica {
        stage: usize,
        region: usize,
        rank: usize,
    },
}

impl PlacementError {
    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            PlacementError::Length { .. } => "placement".into(),
            PlacementError::Rank { stage, .. }
            | PlacementError::Shared { stage, .. }
            | PlacementError::Replica { stage, .. } => format!("placement[{stage}]"),
        }
    }
}

impl Placement {
    /// The placement `spec` describes for regions with these layouts (`true`: Sharded) over
    /// `ranks` ranks. The V fold reverses the odd-numbered Sharded regions (chunks).
    pub fn new(
        spec: &PlacementSpec,
        sharded: &[bool],
        ranks: usize,
    ) -> Result<Self, PlacementError> {
        let stages = sharded.len() * ranks;
        let rank_of: Vec<usize> = match spec {
            PlacementSpec::Default => (0..stages).map(|s| s % ranks.max(1)).collect(),
            PlacementSpec::VFold => {
                let mut chunk = 0;
                let mut out = Vec::with_capacity(stages);
                for &is_sharded in sharded {
                    out.extend((0..ranks).map(|i| {
                        if is_sharded {
                            v_fold_rank(chunk, i, ranks)
                        } else {
                            i
                        }
                    }));
                    chunk += usize::from(is_sharded);
                }
                out
            }
            PlacementSpec::Explicit(list) => {
                if list.len() != stages {
                    return Err(PlacementError::Length {
                        given: list.len(),
                        stages,
                    });
                }
                list.clone()
            }
        };
        let mut stage_of: Vec<Option<usize>> = vec![None; stages];
        for (stage, &rank) in rank_of.iter().enumerate() {
            if rank >= ranks {
                return Err(PlacementError::Rank { stage, rank, ranks });
            }
            let region = stage / ranks + 1;
            let is_sharded = sharded.get(region - 1).copied().unwrap_or(true);
            if !is_sharded && rank != stage % ranks {
                return Err(PlacementError::Replica {
                    stage,
                    region,
                    rank: stage % ranks,
                });
            }
            let key = (region - 1) * ranks + rank;
            match stage_of.get_mut(key) {
                Some(slot @ None) => *slot = Some(stage),
                Some(Some(other)) => {
                    return Err(PlacementError::Shared {
                        stage,
                        other: *other,
                        region,
                        rank,
                    });
                }
                None => return Err(PlacementError::Rank { stage, rank, ranks }),
            }
        }
        Ok(Placement {
            ranks,
            rank_of,
            stage_of,
        })
    }

    /// The stage region `region` (1-based) runs on `rank`, when both exist.
    pub fn stage(&self, region: usize, rank: usize) -> Option<usize> {
        let r = region.checked_sub(1)?;
        if rank >= self.ranks {
            return None;
        }
        self.stage_of.get(r * self.ranks + rank).copied().flatten()
    }

    /// The region (1-based) and rank of `stage`, when the stage exists.
    pub fn region_rank(&self, stage: usize) -> Option<(usize, usize)> {
        let rank = *self.rank_of.get(stage)?;
        Some((stage / self.ranks.max(1) + 1, rank))
    }

    /// The rank of every stage, in stage order.
    pub fn ranks_of_stages(&self) -> &[usize] {
        &self.rank_of
    }

    /// Region `region`'s ranks in stage order: the order its slabs are chained in.
    pub fn region_ranks(&self, region: usize) -> &[usize] {
        let p = self.ranks;
        region
            .checked_sub(1)
            .and_then(|r| self.rank_of.get(r * p..(r + 1) * p))
            .unwrap_or_default()
    }

    /// Whether this is the default map (`stage = rank + (region − 1)·P`).
    pub fn is_default(&self) -> bool {
        let p = self.ranks.max(1);
        self.rank_of.iter().enumerate().all(|(s, &r)| r == s % p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_v_fold() {
        let d = Placement::new(&PlacementSpec::Default, &[true, true], 4).unwrap();
        assert_eq!(d.ranks_of_stages(), [0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(d.stage(2, 1), Some(5));
        // No region 0 or 3, no rank 4: no stage (rank 4 is not region 2's rank 0).
        assert_eq!(
            (d.stage(0, 0), d.stage(3, 0), d.stage(1, 4)),
            (None, None, None)
        );
        assert!(d.is_default());
        let v = Placement::new(&PlacementSpec::VFold, &[true, true], 4).unwrap();
        assert_eq!(v.ranks_of_stages(), [0, 1, 2, 3, 3, 2, 1, 0]);
        // Chunk 1 of rank r is stage 2P − 1 − r.
        for r in 0..4 {
            assert_eq!(v.stage(1, r), Some(r));
            assert_eq!(v.stage(2, r), Some(7 - r));
        }
        assert_eq!(v.region_rank(6), Some((2, 1)));
        assert_eq!(v.region_ranks(2), [3, 2, 1, 0]);
        // A Replicated region in front does not count as a chunk.
        let t = Placement::new(&PlacementSpec::VFold, &[false, true, true], 2).unwrap();
        assert_eq!(t.ranks_of_stages(), [0, 1, 0, 1, 1, 0]);
    }

    #[test]
    fn explicit_maps_are_checked() {
        let sharded = [true, true];
        let new =
            |list: &[usize]| Placement::new(&PlacementSpec::Explicit(list.to_vec()), &sharded, 2);
        assert_eq!(new(&[1, 0, 0, 1]).unwrap().stage(1, 1), Some(0));
        assert_eq!(
            new(&[0, 1, 0]),
            Err(PlacementError::Length {
                given: 3,
                stages: 4
            })
        );
        assert_eq!(
            new(&[0, 1, 2, 0]),
            Err(PlacementError::Rank {
                stage: 2,
                rank: 2,
                ranks: 2
            })
        );
        assert_eq!(
            new(&[0, 1, 2, 0]).unwrap_err().to_string(),
            "rule `placement`: stage 2 is on rank 2, but there are 2 ranks"
        );
        assert_eq!(
            new(&[0, 0, 0, 1]),
            Err(PlacementError::Shared {
                stage: 1,
                other: 0,
                region: 1,
                rank: 0
            })
        );
        let replicated = Placement::new(
            &PlacementSpec::Explicit(vec![1, 0, 0, 1]),
            &[false, true],
            2,
        );
        assert_eq!(
            replicated,
            Err(PlacementError::Replica {
                stage: 0,
                region: 1,
                rank: 0
            })
        );
        let spec: PlacementSpec = serde_json::from_str("\"v_fold\"").unwrap();
        assert_eq!(spec, PlacementSpec::VFold);
        let err = serde_json::from_str::<PlacementSpec>("\"zigzag\"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown placement `zigzag`, expected `default`, `v_fold` or a list with the rank of every stage at line 1 column 8"
        );
    }
}
