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
    /// `sequences`, each node's successors and predecessors in the order the pairs come (the
    /// graph's edges first, then each list's). Counted once, then filled backwards from each
    /// node's end, which leaves every count at its node's start: no second copy of the counts.
    pub fn new<N, E>(graph: &DiGraph<N, E>, sequences: &[Vec<NodeIndex>]) -> Self {
        let n = graph.node_count();
        let edges = graph.raw_edges();
        // `count[v]` of every node, then (summed) its list's end; the extra last is the total.
        let mut out_start = vec![0u32; n + 1];
        let mut in_start = vec![0u32; n + 1];
        // A pair naming no node of the graph is left out (never counted into the last entry).
        let mut count = |a: usize, b: usize| {
            if a < n
                && b < n
                && let (Some(x), Some(y)) = (out_start.get_mut(a), in_start.get_mut(b))
            {
                *x += 1;
                *y += 1;
            }
        };
        for e in edges {
            count(e.source().index(), e.target().index());
        }
        for list in sequences {
            for w in list.windows(2) {
                if let [a, b] = *w {
                    count(a.index(), b.index());
                }
            }
        }
        let (mut out_sum, mut in_sum) = (0u32, 0u32);
        for (o, i) in out_start.iter_mut().zip(in_start.iter_mut()) {
            out_sum += *o;
            in_sum += *i;
            *o = out_sum;
            *i = in_sum;
        }
        let pairs = out_start.get(n).copied().unwrap_or(0) as usize;
        let mut out = vec![0u32; pairs];
        let mut inn = vec![0u32; pairs];
        // Backwards through the pairs, each one's slot just before its node's filled ones.
        let mut place = |a: usize, b: usize| {
            if a < n
                && b < n
                && let (Some(fo), Some(fi)) = (out_start.get_mut(a), in_start.get_mut(b))
            {
                *fo -= 1;
                *fi -= 1;
                if let Some(slot) = out.get_mut(*fo as usize) {
                    *slot = b as u32;
                }
                if let Some(slot) = inn.get_mut(*fi as usize) {
                    *slot = a as u32;
                }
            }
        };
        for list in sequences.iter().rev() {
            for w in list.windows(2).rev() {
                if let [a, b] = *w {
                    place(a.index(), b.index());
                }
            }
        }
        for e in edges.iter().rev() {
            place(e.source().index(), e.target().index());
        }
        Adjacency {
            out_start,
            out,
            in_start,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_each_nodes_neighbours_in_the_order_the_pairs_come() {
        // Edges 0→2, 1→2, 0→1, 2→3, then the sequence 3, 0, 2 (pairs 3→0, 0→2) and 1, 3.
        let mut g: DiGraph<(), ()> = DiGraph::new();
        let n: Vec<NodeIndex> = (0..5).map(|_| g.add_node(())).collect();
        for (a, b) in [(0, 2), (1, 2), (0, 1), (2, 3)] {
            g.add_edge(n[a], n[b], ());
        }
        // A pair naming no node of the graph (9) is left out.
        let stray = NodeIndex::new(9);
        let adj = Adjacency::new(
            &g,
            &[
                vec![n[3], n[0], n[2]],
                vec![n[1], n[3]],
                vec![n[4]],
                vec![n[4], stray, n[4]],
            ],
        );
        assert_eq!(adj.node_count(), 5);
        let succs: Vec<&[u32]> = (0..5).map(|v| adj.succs(v)).collect();
        let preds: Vec<&[u32]> = (0..5).map(|v| adj.preds(v)).collect();
        assert_eq!(succs, [&[2, 1, 2][..], &[2, 3], &[3], &[0], &[]]);
        assert_eq!(preds, [&[3][..], &[0], &[0, 1, 0], &[2, 1], &[]]);
        assert_eq!(adj.in_degrees(), [1, 1, 3, 2, 0]);
        assert!(adj.succs(5).is_empty());
    }
}
