//! JanusPipe's GARS (graph-aware repacking and scheduling): a global batch of graphs of very
//! different sizes (atom counts) packed into the step's microbatches. *Sequential* packing, the
//! baseline, walks the graphs in dataset order and fills each microbatch up to an even share of
//! the atoms. *GARS* sorts the graphs by atom count (largest first) and gives each to the least
//! loaded microbatch so far (the lowest index on a tie), then shuffles each microbatch's graphs
//! (seeded) so that graph-parallel bins mix sizes, and tags each microbatch *comm-free* (its
//! largest graph fits the per-rank atom budget) or *dist* (it must be split across ranks, with
//! halo exchange). Sorted greedy is not always better than a lucky sequential order, so GARS
//! keeps the sequential grouping whenever that has the smaller largest microbatch (in atoms):
//! its largest load is never above sequential packing's, by construction.
//!
//! A microbatch's cost follows its edges, which grow superlinearly with atoms: a graph of `a`
//! atoms has `a^e` edges (`edge_exponent` `e`, default 1.5). The microbatch's workload factor is
//! its edge count over the mean microbatch's, and scales every layer with `workload_varies`.

use crate::workload::{Distribution, WorkloadError};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The most graphs a global batch may hold.
pub const MAX_GRAPHS: usize = 1 << 22;

/// `workload.graphs`: the step's global batch of graphs and how it is packed.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Graphs {
    /// The atom count of every graph, in dataset order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atoms: Option<Vec<u32>>,
    /// Or `count` graphs drawn from `distribution` (atom counts rounded, at least 1) with `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `gars` (the default) or `sequential`.
    #[serde(default, skip_serializing_if = "Packing::is_default")]
    pub packing: Packing,
    /// Edges of a graph of `a` atoms: `a^edge_exponent` (default 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_exponent: Option<f64>,
    /// The per-rank atom budget `C_rank`: a microbatch whose largest graph fits is comm-free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_atom_budget: Option<u64>,
}

/// How graphs are packed into microbatches.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Packing {
    #[default]
    Gars,
    Sequential,
}

impl Packing {
    fn is_default(&self) -> bool {
        *self == Packing::Gars
    }

    pub fn name(self) -> &'static str {
        match self {
            Packing::Gars => "GARS",
            Packing::Sequential => "sequential",
        }
    }
}

/// How a microbatch runs under graph parallelism.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every graph fits one rank: kept local, no halo exchange.
    CommFree,
    /// Some graph exceeds the per-rank budget: split across ranks, with halo All-Gather.
    Dist,
}

/// One packed microbatch.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Microbatch {
    /// Indices of its graphs (into the batch, dataset order), in the order they run.
    pub graphs: Vec<usize>,
    pub atoms: u64,
    /// Its edges under the edge-count model.
    pub edges: f64,
    /// With a per-rank atom budget: comm-free or dist.
    pub mode: Option<Mode>,
}

/// A global batch packed into microbatches.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Packed {
    pub packing: Packing,
    pub microbatches: Vec<Microbatch>,
    /// GARS kept the sequential grouping (its largest microbatch was no larger).
    pub kept_sequential: bool,
}

impl Packed {
    /// Each microbatch's workload factor: its edges over the mean microbatch's.
    pub fn factors(&self) -> Vec<f64> {
        let n = self.microbatches.len().max(1) as f64;
        let mean = self.microbatches.iter().map(|m| m.edges).sum::<f64>() / n;
        self.microbatches
            .iter()
            .map(|m| if mean > 0.0 { m.edges / mean } else { 1.0 })
            .collect()
    }

    /// The largest microbatch's atoms.
    pub fn max_atoms(&self) -> u64 {
        self.microbatches.iter().map(|m| m.atoms).max().unwrap_or(0)
    }
}

fn check_exponent(e: f64) -> Result<f64, WorkloadError> {
    if e.is_finite() && (0.0..=4.0).contains(&e) {
        Ok(e)
    } else {
        Err(WorkloadError::Graphs(format!(
            "`edge_exponent` = {e} must be between 0 and 4"
        )))
    }
}

impl Graphs {
    /// The atom count of every graph: the list, or the seeded draw.
    pub fn atom_counts(&self) -> Result<Vec<u32>, WorkloadError> {
        let bad = WorkloadError::Graphs;
        match (&self.atoms, self.count, &self.distribution) {
            (Some(list), None, None) => {
                if list.len() > MAX_GRAPHS {
                    return Err(bad(format!(
                        "`atoms` lists {} graphs, more than the {MAX_GRAPHS} this version allows",
                        list.len()
                    )));
                }
                if let Some(i) = list.iter().position(|&a| a == 0) {
                    return Err(bad(format!(
                        "`atoms[{i}]` is 0; a graph has at least one atom"
                    )));
                }
                Ok(list.clone())
            }
            (None, Some(count), Some(d)) => {
                if count > MAX_GRAPHS {
                    return Err(bad(format!(
                        "`count` = {count} is more than the {MAX_GRAPHS} graphs this version allows"
                    )));
                }
                let draws = d.draw(self.seed.unwrap_or(0), count).map_err(|e| match e {
                    WorkloadError::Parameters(m) => bad(format!("`distribution`: {m}")),
                    WorkloadError::Value { field, value } => WorkloadError::Value {
                        field: format!("graphs.{field}"),
                        value,
                    },
                    other => other,
                })?;
                draws
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| {
                        if x.is_finite() {
                            Ok(x.round().clamp(1.0, f64::from(u32::MAX)) as u32)
                        } else {
                            Err(bad(format!(
                                "graph {i}'s atom count, drawn with seed {}, overflows to ∞",
                                self.seed.unwrap_or(0)
                            )))
                        }
                    })
                    .collect()
            }
            _ => Err(bad(
                "give either `atoms` (one count per graph) or `count` with `distribution`".into(),
            )),
        }
    }

    /// Packs the batch into `n` microbatches as `packing` says.
    pub fn pack(&self, n: usize) -> Result<Packed, WorkloadError> {
        self.pack_with(n, self.packing)
    }

    /// Packs the batch into `n` microbatches with `packing`.
    pub fn pack_with(&self, n: usize, packing: Packing) -> Result<Packed, WorkloadError> {
        let atoms = self.atom_counts()?;
        if atoms.len() < n {
            return Err(WorkloadError::Graphs(format!(
                "{} graphs for {n} microbatches; each microbatch needs at least one",
                atoms.len()
            )));
        }
        let exponent = check_exponent(self.edge_exponent.unwrap_or(1.5))?;
        let (groups, kept_sequential) = match packing {
            Packing::Sequential => (sequential(&atoms, n), false),
            Packing::Gars => gars(&atoms, n, self.seed.unwrap_or(0)),
        };
        let microbatches = groups
            .into_iter()
            .map(|graphs| {
                let sizes = graphs.iter().filter_map(|&g| atoms.get(g).copied());
                let total: u64 = sizes.clone().map(u64::from).sum();
                let edges = sizes.clone().map(|a| f64::from(a).powf(exponent)).sum();
                let largest = sizes.max().map_or(0, u64::from);
                Microbatch {
                    graphs,
                    atoms: total,
                    edges,
                    mode: self.rank_atom_budget.map(|budget| {
                        if largest <= budget {
                            Mode::CommFree
                        } else {
                            Mode::Dist
                        }
                    }),
                }
            })
            .collect();
        Ok(Packed {
            packing,
            microbatches,
            kept_sequential,
        })
    }
}

/// Greedy sequential packing: graphs in dataset order, each microbatch filled until it holds
/// an even share of the atoms (`⌈total / n⌉`), a new one opened early when only as many graphs
/// remain as microbatches still empty; the last takes the rest. Needs `n ≤ atoms.len()`.
pub fn sequential(atoms: &[u32], n: usize) -> Vec<Vec<usize>> {
    let n = n.max(1);
    let total: u64 = atoms.iter().map(|&a| u64::from(a)).sum();
    let share = total.div_ceil(n as u64);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); n];
    let (mut current, mut load) = (0usize, 0u64);
    for (g, &a) in atoms.iter().enumerate() {
        let remaining_graphs = atoms.len() - g;
        let empty_after = n - 1 - current;
        let full = load >= share || remaining_graphs <= empty_after;
        if current + 1 < n && load > 0 && full {
            current += 1;
            load = 0;
        }
        if let Some(group) = groups.get_mut(current) {
            group.push(g);
        }
        load += u64::from(a);
    }
    groups
}

/// Sorted greedy (largest graph first, each to the least loaded microbatch, the lowest index
/// on a tie): `O(G log G + G log n)`.
pub fn sorted_greedy(atoms: &[u32], n: usize) -> Vec<Vec<usize>> {
    let n = n.max(1);
    let mut order: Vec<usize> = (0..atoms.len()).collect();
    order.sort_by_key(|&g| (Reverse(atoms.get(g).copied().unwrap_or(0)), g));
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..n).map(|j| Reverse((0, j))).collect();
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); n];
    for g in order {
        let Some(Reverse((load, j))) = heap.pop() else {
            break;
        };
        if let Some(group) = groups.get_mut(j) {
            group.push(g);
        }
        heap.push(Reverse((
            load + u64::from(atoms.get(g).copied().unwrap_or(0)),
            j,
        )));
    }
    groups
}

/// GARS: sorted greedy, or the sequential grouping when that has the smaller largest
/// microbatch; then each microbatch's graphs shuffled with `seed`. Returns the groups and
/// whether the sequential grouping was kept.
pub fn gars(atoms: &[u32], n: usize, seed: u64) -> (Vec<Vec<usize>>, bool) {
    let load = |groups: &[Vec<usize>]| -> u64 {
        groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter_map(|&i| atoms.get(i))
                    .map(|&a| u64::from(a))
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    };
    let greedy = sorted_greedy(atoms, n);
    let baseline = sequential(atoms, n);
    let keep = load(&baseline) < load(&greedy);
    let mut groups = if keep { baseline } else { greedy };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for group in &mut groups {
        group.shuffle(&mut rng);
    }
    (groups, keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packings_by_hand() {
        let atoms = [90, 10, 10, 10, 50, 40, 5, 5];
        // Sequential: an even share is ⌈220 / 3⌉ = 74 atoms.
        assert_eq!(
            sequential(&atoms, 3),
            [vec![0], vec![1, 2, 3, 4], vec![5, 6, 7]]
        );
        // Sorted greedy: 90 | 50 + 10 + 10 + 5 + 5 | 40 + 10 … by least load.
        let greedy = sorted_greedy(&atoms, 3);
        let loads: Vec<u32> = greedy
            .iter()
            .map(|g| g.iter().map(|&i| atoms[i]).sum())
            .collect();
        assert_eq!(loads, [90, 65, 65]);
        assert_eq!(greedy, [vec![0], vec![4, 2, 6], vec![5, 1, 3, 7]]);
    }
}
