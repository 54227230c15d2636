//! The order graph's own storage: its events, and its typed edges plus each rank's stream as
//! flat successor and predecessor lists (CSR), one structure for the graph's questions and for
//! the passes that walk a million events (in place of a linked-list graph and a flat copy).
//!
//! Edges are added to a pending list and laid out flat, with the streams' links, by
//! [`OrderGraph::freeze`]; the graph's questions see the pending ones too (scanned, so a builder
//! freezes before it asks much), the flat lists ([`OrderGraph::succs`], [`OrderGraph::preds`],
//! [`OrderGraph::in_degrees`]) only what the last freeze laid out. A node's neighbours come
//! newest edge first, as the linked-list graph this replaces gave them (its order is what the
//! passes that walk neighbours were written and tested against); the streams' links are no edges
//! of the graph and show only in the flat lists.

use crate::graph::event::{EdgeKind, Event};
use petgraph::Direction;
use petgraph::graph::NodeIndex;

/// One direction, flat: node `v`'s neighbours are `list[start[v]..start[v + 1]]`, its edges
/// oldest first and then its stream's links, each with its edge's kind beside it (`None`: a
/// stream's link).
#[derive(Debug, Clone, Default)]
struct Incidence {
    start: Vec<u32>,
    list: Vec<u32>,
    kind: Vec<Option<EdgeKind>>,
    /// Whether some entry is a stream's link (else every entry is an edge).
    links: bool,
}

impl Incidence {
    /// The range of node `v`'s entries (empty for a node added since the last freeze).
    fn range(&self, v: usize) -> std::ops::Range<usize> {
        match (self.start.get(v), self.start.get(v + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }

    /// Node `v`'s neighbours, its stream's links included.
    fn ids(&self, v: usize) -> &[u32] {
        self.list.get(self.range(v)).unwrap_or_default()
    }

    /// Node `v`'s entries: its neighbours and, beside them, the kinds of the edges to them.
    fn entries(&self, v: usize) -> (&[u32], &[Option<EdgeKind>]) {
        let range = self.range(v);
        (
            self.list.get(range.clone()).unwrap_or_default(),
            self.kind.get(range).unwrap_or_default(),
        )
    }

    /// Node `v`'s edges (no stream's link) as (neighbour, kind), oldest first.
    fn edges(&self, v: usize) -> impl DoubleEndedIterator<Item = (u32, EdgeKind)> + '_ {
        let (ws, ks) = self.entries(v);
        ws.iter().zip(ks).filter_map(|(&w, &k)| Some((w, k?)))
    }

    /// How many of node `v`'s entries are edges (they come before its links).
    fn edge_len(&self, v: usize) -> usize {
        if !self.links {
            return self.range(v).len();
        }
        self.entries(v).1.iter().take_while(|k| k.is_some()).count()
    }

    /// Each node's count summed into its list's end; the lists' total.
    fn ends_of(counts: &mut [u32]) -> usize {
        let mut sum = 0u32;
        for c in counts {
            sum += *c;
            *c = sum;
        }
        sum as usize
    }

    /// Copies each node's old edges in front of what `start` (at each node's first filled entry)
    /// says, leaving `start` at each node's first entry.
    fn copy_old_edges(&self, start: &mut [u32], list: &mut [u32], kind: &mut [Option<EdgeKind>]) {
        if self.list.is_empty() {
            return;
        }
        for (v, end) in start.iter_mut().enumerate() {
            let count = self.edge_len(v);
            if count == 0 {
                continue;
            }
            let (ws, ks) = self.entries(v);
            let (Some(ws), Some(ks)) = (ws.get(..count), ks.get(..count)) else {
                continue;
            };
            let from = (*end as usize).saturating_sub(count);
            let to = *end as usize;
            // A few entries a node: copied one by one, not by a call each.
            if let (Some(l), Some(kk)) = (list.get_mut(from..to), kind.get_mut(from..to)) {
                for (d, &w) in l.iter_mut().zip(ws) {
                    *d = w;
                }
                for (d, &k) in kk.iter_mut().zip(ks) {
                    *d = k;
                }
            }
            *end = from as u32;
        }
    }
}

/// Both directions' lists over `n` nodes rebuilt: each node's edges, then the `added` ones (each
/// naming nodes below `n`) in the order given, then the links of `streams` (consecutive events
/// of each list). Counted once, then filled backwards from each node's end, the old edges copied
/// in front: no second copy of the counts.
fn rebuilt(
    (out, into): (&Incidence, &Incidence),
    n: usize,
    added: &[(u32, u32, EdgeKind)],
    streams: &[Vec<NodeIndex>],
) -> (Incidence, Incidence) {
    let mut out_start = vec![0u32; n + 1];
    let mut in_start = vec![0u32; n + 1];
    if !out.list.is_empty() {
        for (v, (o, i)) in out_start.iter_mut().zip(in_start.iter_mut()).enumerate() {
            *o = out.edge_len(v) as u32;
            *i = into.edge_len(v) as u32;
        }
    }
    let mut count = |a: usize, b: usize| {
        if let (Some(x), Some(y)) = (out_start.get_mut(a), in_start.get_mut(b)) {
            *x += 1;
            *y += 1;
        }
    };
    for &(a, b, _) in added {
        count(a as usize, b as usize);
    }
    // A link naming no node is left out.
    let link = |w: &[NodeIndex]| match *w {
        [a, b] if a.index() < n && b.index() < n => Some((a.index(), b.index())),
        _ => None,
    };
    for list in streams {
        for (a, b) in list.windows(2).filter_map(link) {
            count(a, b);
        }
    }
    let total = Incidence::ends_of(&mut out_start);
    Incidence::ends_of(&mut in_start);
    let mut out_list = vec![0u32; total];
    let mut in_list = vec![0u32; total];
    let mut out_kind: Vec<Option<EdgeKind>> = vec![None; total];
    let mut in_kind: Vec<Option<EdgeKind>> = vec![None; total];
    // Backwards, each entry just before its node's filled ones (a link's kind is the `None`
    // the lists start with).
    let mut place = |a: usize, b: usize, k: Option<EdgeKind>| {
        if let (Some(fo), Some(fi)) = (out_start.get_mut(a), in_start.get_mut(b)) {
            *fo -= 1;
            *fi -= 1;
            let (o, i) = (*fo as usize, *fi as usize);
            if let Some(l) = out_list.get_mut(o) {
                *l = b as u32;
            }
            if let Some(l) = in_list.get_mut(i) {
                *l = a as u32;
            }
            if k.is_some()
                && let (Some(ko), Some(ki)) = (out_kind.get_mut(o), in_kind.get_mut(i))
            {
                *ko = k;
                *ki = k;
            }
        }
    };
    let mut links = false;
    for list in streams.iter().rev() {
        for (a, b) in list.windows(2).rev().filter_map(link) {
            place(a, b, None);
            links = true;
        }
    }
    for &(a, b, k) in added.iter().rev() {
        place(a as usize, b as usize, Some(k));
    }
    // Every node's entry but the last (the total, which stays).
    out.copy_old_edges(
        out_start.get_mut(..n).unwrap_or_default(),
        &mut out_list,
        &mut out_kind,
    );
    into.copy_old_edges(
        in_start.get_mut(..n).unwrap_or_default(),
        &mut in_list,
        &mut in_kind,
    );
    (
        Incidence {
            start: out_start,
            list: out_list,
            kind: out_kind,
            links,
        },
        Incidence {
            start: in_start,
            list: in_list,
            kind: in_kind,
            links,
        },
    )
}

/// An edge of the order graph: its ends and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    source: NodeIndex,
    target: NodeIndex,
    kind: EdgeKind,
}

impl Edge {
    pub fn source(&self) -> NodeIndex {
        self.source
    }

    pub fn target(&self) -> NodeIndex {
        self.target
    }

    /// The edge's kind.
    pub fn weight(&self) -> &EdgeKind {
        &self.kind
    }
}

/// Events joined by typed edges, stored flat (CSR lists, with the streams' links) once frozen.
#[derive(Debug, Clone, Default)]
pub struct OrderGraph {
    nodes: Vec<Event>,
    /// Edges added since the last [`OrderGraph::freeze`], oldest first.
    pending: Vec<(u32, u32, EdgeKind)>,
    out: Incidence,
    into: Incidence,
}

impl OrderGraph {
    /// An empty graph with room for `nodes` events and `edges` edges.
    pub fn with_capacity(nodes: usize, edges: usize) -> Self {
        OrderGraph {
            nodes: Vec::with_capacity(nodes),
            pending: Vec::with_capacity(edges),
            ..OrderGraph::default()
        }
    }

    pub fn add_node(&mut self, event: Event) -> NodeIndex {
        self.nodes.push(event);
        NodeIndex::new(self.nodes.len() - 1)
    }

    /// Adds the edge `from → to` of `kind` (pending until the next [`OrderGraph::freeze`]); an
    /// edge naming no node of the graph is left out.
    pub fn add_edge(&mut self, from: NodeIndex, to: NodeIndex, kind: EdgeKind) {
        if from.index().max(to.index()) < self.nodes.len() {
            self.pending
                .push((from.index() as u32, to.index() as u32, kind));
        }
    }

    /// Lays the pending edges out flat, after each node's frozen ones, and the links of
    /// `streams` (each rank's events in order) after them, in place of the last ones. A link
    /// naming no node of the graph is left out.
    pub fn freeze(&mut self, streams: &[Vec<NodeIndex>]) {
        let n = self.nodes.len();
        let pending = std::mem::take(&mut self.pending);
        (self.out, self.into) = rebuilt((&self.out, &self.into), n, &pending, streams);
    }

    /// Whether every edge is laid out (none pending, every node covered).
    pub fn is_frozen(&self) -> bool {
        self.pending.is_empty() && self.out.start.len() == self.nodes.len() + 1
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn edge_count(&self) -> usize {
        self.out.kind.iter().filter(|k| k.is_some()).count() + self.pending.len()
    }

    pub fn node_weight(&self, n: NodeIndex) -> Option<&Event> {
        self.nodes.get(n.index())
    }

    /// Every node's event, by index.
    pub fn node_weights(&self) -> impl ExactSizeIterator<Item = &Event> + '_ {
        self.nodes.iter()
    }

    /// Every node, by index.
    pub fn node_indices(&self) -> impl ExactSizeIterator<Item = NodeIndex> + use<> {
        (0..self.nodes.len()).map(NodeIndex::new)
    }

    /// What waits for node `v`'s end: its frozen edges' targets (oldest edge first), then the
    /// event after it on its stream. The flat list the passes over the whole graph read.
    pub fn succs(&self, v: usize) -> &[u32] {
        self.out.ids(v)
    }

    /// What node `v` waits for: its frozen edges' sources (oldest edge first), then the event
    /// before it on its stream.
    pub fn preds(&self, v: usize) -> &[u32] {
        self.into.ids(v)
    }

    /// The flat successor lists: node `v`'s [`OrderGraph::succs`] are
    /// `list[ends[v]..ends[v + 1]]` (a node added since the last freeze has none), for the passes
    /// that read every node's.
    pub fn successor_lists(&self) -> (&[u32], &[u32]) {
        (&self.out.start, &self.out.list)
    }

    /// How many [`OrderGraph::preds`] each node has.
    pub fn in_degrees(&self) -> Vec<u32> {
        let mut counts: Vec<u32> = self
            .into
            .start
            .windows(2)
            .map(|w| match *w {
                [a, b] => b - a,
                _ => 0,
            })
            .collect();
        counts.resize(self.nodes.len(), 0);
        counts
    }

    /// Node `n`'s pending edges in `direction` as (neighbour, kind), newest first.
    fn pending_edges(
        &self,
        n: NodeIndex,
        direction: Direction,
    ) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        let v = n.index() as u32;
        let incoming = direction == Direction::Incoming;
        self.pending.iter().rev().filter_map(move |&(a, b, kind)| {
            let (at, other) = if incoming { (b, a) } else { (a, b) };
            (at == v).then_some((other, kind))
        })
    }

    /// The flat lists of `direction`.
    fn side(&self, direction: Direction) -> &Incidence {
        match direction {
            Direction::Incoming => &self.into,
            Direction::Outgoing => &self.out,
        }
    }

    /// Node `n`'s edges in `direction`, newest first: the pending ones, then the frozen ones.
    pub fn edges_directed(
        &self,
        n: NodeIndex,
        direction: Direction,
    ) -> impl Iterator<Item = Edge> + '_ {
        let incoming = direction == Direction::Incoming;
        let pending = self.pending_edges(n, direction);
        let frozen = self.side(direction).edges(n.index()).rev();
        pending.chain(frozen).map(move |(other, kind)| {
            let other = NodeIndex::new(other as usize);
            let (source, target) = if incoming { (other, n) } else { (n, other) };
            Edge {
                source,
                target,
                kind,
            }
        })
    }

    /// Node `n`'s neighbours in `direction`, newest edge first.
    pub fn neighbors_directed(
        &self,
        n: NodeIndex,
        direction: Direction,
    ) -> impl Iterator<Item = NodeIndex> + '_ {
        self.edges_directed(n, direction).map(move |e| {
            if direction == Direction::Incoming {
                e.source
            } else {
                e.target
            }
        })
    }

    /// The first of node `n`'s neighbours in `direction` (newest edge first, as
    /// [`OrderGraph::neighbors_directed`]) along an edge of `kind` whose event `accept` takes:
    /// [`OrderGraph::edges_directed`]'s search written out, for the questions asked of every
    /// event of a million.
    pub fn find_neighbour(
        &self,
        n: NodeIndex,
        direction: Direction,
        kind: EdgeKind,
        accept: impl Fn(&Event) -> bool,
    ) -> Option<NodeIndex> {
        let takes = |other: u32| {
            self.nodes
                .get(other as usize)
                .is_some_and(&accept)
                .then(|| NodeIndex::new(other as usize))
        };
        // (Asked of every event of a million: no iterator built when nothing is pending.)
        if !self.pending.is_empty() {
            for (other, k) in self.pending_edges(n, direction) {
                if k == kind
                    && let Some(found) = takes(other)
                {
                    return Some(found);
                }
            }
        }
        let (ws, ks) = self.side(direction).entries(n.index());
        for (&w, &k) in ws.iter().zip(ks).rev() {
            if k == Some(kind)
                && let Some(found) = takes(w)
            {
                return Some(found);
            }
        }
        None
    }

    /// The backward that reads a forward's activations (its whole backward, or its input half),
    /// along their `Activation` edge.
    pub fn backward_of(&self, forward: NodeIndex) -> Option<NodeIndex> {
        self.find_neighbour(forward, Direction::Outgoing, EdgeKind::Activation, |e| {
            matches!(e, Event::Bwd { .. })
        })
    }

    /// The forward whose activations a backward reads ([`OrderGraph::backward_of`]'s inverse).
    pub fn forward_of(&self, backward: NodeIndex) -> Option<NodeIndex> {
        self.find_neighbour(backward, Direction::Incoming, EdgeKind::Activation, |e| {
            matches!(e, Event::Fwd { .. })
        })
    }

    /// Whether some edge of `kind` ends at node `n`: [`OrderGraph::find_neighbour`] without a
    /// question about the events, for the transfers' direction the costs ask of each.
    pub fn has_edge_into(&self, n: NodeIndex, kind: EdgeKind) -> bool {
        // The kinds alone (not `entries`): asked of every transfer of a million.
        let kinds = self.into.kind.get(self.into.range(n.index()));
        kinds.is_some_and(|ks| ks.contains(&Some(kind)))
            || (!self.pending.is_empty()
                && self
                    .pending_edges(n, Direction::Incoming)
                    .any(|(_, k)| k == kind))
    }

    /// Whether some edge runs `from → to`.
    pub fn contains_edge(&self, from: NodeIndex, to: NodeIndex) -> bool {
        self.neighbors_directed(from, Direction::Outgoing)
            .any(|t| t == to)
    }

    /// Every edge: the frozen ones by source node (each node's oldest first), then the pending
    /// ones in the order they were added.
    pub fn edge_references(&self) -> impl Iterator<Item = Edge> + '_ {
        let frozen = (0..self.nodes.len()).flat_map(move |v| {
            self.out.edges(v).map(move |(w, kind)| Edge {
                source: NodeIndex::new(v),
                target: NodeIndex::new(w as usize),
                kind,
            })
        });
        let pending = self.pending.iter().map(|&(a, b, kind)| Edge {
            source: NodeIndex::new(a as usize),
            target: NodeIndex::new(b as usize),
            kind,
        });
        frozen.chain(pending)
    }
}

/// `graph[n]`, as a slice indexes: it panics for a node not in the graph (for tests; code reads
/// through [`OrderGraph::node_weight`]).
impl std::ops::Index<NodeIndex> for OrderGraph {
    type Output = Event;

    #[allow(clippy::indexing_slicing)] // panics like a slice's index, by design of `Index`
    fn index(&self, n: NodeIndex) -> &Event {
        &self.nodes[n.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(g: &mut OrderGraph, mb: usize) -> NodeIndex {
        g.add_node(Event::Loss {
            mb: mb.into(),
            rank: 0usize.into(),
        })
    }

    fn listed(it: impl Iterator<Item = NodeIndex>) -> Vec<usize> {
        it.map(|n| n.index()).collect()
    }

    #[test]
    fn neighbours_come_newest_first_frozen_or_not_and_flat_lists_oldest_first_then_streams() {
        use Direction::{Incoming, Outgoing};
        let mut g = OrderGraph::default();
        let n: Vec<NodeIndex> = (0..5).map(|i| node(&mut g, i)).collect();
        for (a, b, k) in [
            (0, 2, EdgeKind::Activation),
            (1, 2, EdgeKind::Gradient),
            (0, 1, EdgeKind::Sequence),
            (2, 3, EdgeKind::Turnaround),
        ] {
            g.add_edge(n[a], n[b], k);
        }
        // A stray edge naming no node is left out.
        g.add_edge(n[0], NodeIndex::new(9), EdgeKind::Overlap);
        assert!(g.has_edge_into(n[2], EdgeKind::Gradient));
        assert!(!g.has_edge_into(n[2], EdgeKind::Turnaround));
        let before = (
            listed(g.neighbors_directed(n[0], Outgoing)),
            listed(g.neighbors_directed(n[2], Incoming)),
        );
        assert_eq!(before, (vec![1, 2], vec![1, 0]));
        // Streams 3, 0, 2 and 1, 3; 4 alone; a link naming no node (9) is left out.
        let stray = NodeIndex::new(9);
        let streams = [
            vec![n[3], n[0], n[2]],
            vec![n[1], n[3]],
            vec![n[4]],
            vec![n[4], stray, n[4]],
        ];
        g.freeze(&streams);
        assert_eq!(g.edge_count(), 4);
        assert!(g.has_edge_into(n[2], EdgeKind::Gradient));
        assert!(!g.has_edge_into(n[3], EdgeKind::Gradient));
        // The graph's questions see its edges only.
        assert_eq!(listed(g.neighbors_directed(n[0], Outgoing)), [1, 2]);
        assert_eq!(listed(g.neighbors_directed(n[2], Incoming)), [1, 0]);
        assert!(g.neighbors_directed(n[3], Outgoing).next().is_none());
        // The flat lists: edges oldest first, then the streams' links.
        let succs: Vec<&[u32]> = (0..5).map(|v| g.succs(v)).collect();
        let preds: Vec<&[u32]> = (0..5).map(|v| g.preds(v)).collect();
        assert_eq!(succs, [&[2, 1, 2][..], &[2, 3], &[3], &[0], &[]]);
        assert_eq!(preds, [&[3][..], &[0], &[0, 1, 0], &[2, 1], &[]]);
        assert_eq!(g.in_degrees(), [1, 1, 3, 2, 0]);
        assert!(g.succs(5).is_empty());
        // Added after a freeze: newest first before the next one, after the old edges (and
        // before the links) once frozen.
        let extra = node(&mut g, 5);
        g.add_edge(n[0], extra, EdgeKind::Offload);
        g.add_edge(n[3], n[0], EdgeKind::Recompute);
        assert_eq!(listed(g.neighbors_directed(n[0], Outgoing)), [5, 1, 2]);
        assert_eq!(listed(g.neighbors_directed(n[0], Incoming)), [3]);
        g.freeze(&streams);
        assert_eq!(g.succs(0), [2, 1, 5, 2]);
        assert_eq!(g.preds(0), [3, 3]);
        assert_eq!(g.preds(5), [0]);
        assert_eq!(g.in_degrees(), [2, 1, 3, 2, 0, 1]);
        let kinds: Vec<(usize, usize, EdgeKind)> = g
            .edges_directed(n[0], Outgoing)
            .map(|e| (e.source().index(), e.target().index(), *e.weight()))
            .collect();
        assert_eq!(
            kinds,
            [
                (0, 5, EdgeKind::Offload),
                (0, 1, EdgeKind::Sequence),
                (0, 2, EdgeKind::Activation)
            ]
        );
        let all: Vec<(usize, usize)> = g
            .edge_references()
            .map(|e| (e.source().index(), e.target().index()))
            .collect();
        assert_eq!(all, [(0, 2), (0, 1), (0, 5), (1, 2), (2, 3), (3, 0)]);
        assert!(g.contains_edge(n[3], n[0]) && !g.contains_edge(n[0], n[3]));
        assert_eq!(g.backward_of(n[0]), None);
        // New streams replace the old links.
        g.freeze(&[vec![n[2], n[0]]]);
        assert_eq!(g.succs(0), [2, 1, 5]);
        assert_eq!(g.preds(0), [3, 2]);
        assert_eq!(g.succs(3), [0]);
    }
}
