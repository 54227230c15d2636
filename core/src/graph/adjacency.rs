//! A compact (CSR) copy of the order graph's adjacency, plus each rank's sequence, for the passes
//! that walk a million-event graph: petgraph's linked edge lists chase pointers, these are flat
//! slices read in order.

use petgraph::graph::{DiGraph, NodeIndex};

/// Successors and predecessors of every node (data edges and, when given, the per-rank sequence).
#[derive(Debug, Clone, Default)]
pub struct Adjacency {
    out_start: Vec<u32>,
    out: Vec<u32>,
    in_start: Vec<u32>,
    inn: Vec<u32>,
}

impl Adjacency {
    /// Builds the adjacency of `graph`'s edges plus the consecutive pairs of every list in
    /// `sequences`.
    pub fn new<N, E>(graph: &DiGraph<N, E>, sequences: &[Vec<NodeIndex>]) -> Self {
        let n = graph.node_count();
        let pairs = || {
            graph
                .raw_edges()
                .iter()
                .map(|e| (e.source().index(), e.target().index()))
                .chain(sequences.iter().flat_map(|list| {
                    list.windows(2).filter_map(|w| match *w {
                        [a, b] => Some((a.index(), b.index())),
                        _ => None,
                    })
                }))
        };
        let mut out_count = vec![0u32; n + 1];
        let mut in_count = vec![0u32; n + 1];
        for (a, b) in pairs() {
            if let (Some(x), Some(y)) = (out_count.get_mut(a + 1), in_count.get_mut(b + 1)) {
                *x += 1;
                *y += 1;
            }
        }
        for i in 1..=n {
            let (po, pi) = (
                out_count.get(i - 1).copied().unwrap_or(0),
                in_count.get(i - 1).copied().unwrap_or(0),
            );
            if let (Some(o), Some(p)) = (out_count.get_mut(i), in_count.get_mut(i)) {
                *o += po;
                *p += pi;
            }
        }
        let total = out_count.get(n).copied().unwrap_or(0) as usize;
        let mut out = vec![0u32; total];
        let mut inn = vec![0u32; total];
        let mut out_fill = out_count.clone();
        let mut in_fill = in_count.clone();
        for (a, b) in pairs() {
            if let (Some(fo), Some(fi)) = (out_fill.get_mut(a), in_fill.get_mut(b)) {
                if let Some(slot) = out.get_mut(*fo as usize) {
                    *slot = b as u32;
                }
                if let Some(slot) = inn.get_mut(*fi as usize) {
                    *slot = a as u32;
                }
                *fo += 1;
                *fi += 1;
            }
        }
        Adjacency {
            out_start: out_count,
            out,
            in_start: in_count,
            inn,
        }
    }

    pub fn node_count(&self) -> usize {
        self.out_start.len().saturating_sub(1)
    }

    fn slice<'a>(start: &[u32], list: &'a [u32], v: usize) -> &'a [u32] {
        match (start.get(v), start.get(v + 1)) {
            (Some(&a), Some(&b)) => list.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Successors of node `v`.
    pub fn succs(&self, v: usize) -> &[u32] {
        Self::slice(&self.out_start, &self.out, v)
    }

    /// Predecessors of node `v`.
    pub fn preds(&self, v: usize) -> &[u32] {
        Self::slice(&self.in_start, &self.inn, v)
    }

    /// In-degree of every node.
    pub fn in_degrees(&self) -> Vec<u32> {
        self.in_start
            .windows(2)
            .map(|w| match *w {
                [a, b] => b - a,
                _ => 0,
            })
            .collect()
    }
}
