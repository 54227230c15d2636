//! The compositional reading of cost (the paper's (max,+) remark): each region's timing
//! denotation maps the arrival times of its inputs to the completion times of its events; the
//! seam collectives are transfer functions between regions; composing them — threading each
//! rank's state (the per-rank sequence edges that cross regions) through the composition and
//! iterating to the least fixed point — gives the same completion times as the operational
//! longest path of [`crate::sim::engine`]. Kept as an independent check of the simulator: it reads
//! the graph's edges (its questions, newest first) and `nodes(r)` directly, not the flat lists
//! the simulator walks.

use crate::graph::event::Event;
use crate::graph::order::Order;
use crate::graph::time::Launches;
use petgraph::Direction;
use petgraph::graph::NodeIndex;

/// Which block an event belongs to: a region's own events, or a seam's transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Block {
    /// Region `j`'s forwards, backwards, reduces and slab-to-slab hops.
    Region(usize),
    /// The collectives of seam `(j, j+1)`.
    Seam(usize),
    /// Losses and the step barrier, after every region.
    End,
}

fn block_of(event: &Event, last_region: usize) -> Block {
    match *event {
        Event::Fwd { region, .. }
        | Event::Bwd { region, .. }
        | Event::FourPhase { region, .. }
        | Event::DpReduce { region, .. }
        | Event::Recompute { region, .. }
        | Event::Copy { region, .. } => Block::Region(region.into()),
        Event::Coll { seam, .. } if seam.from == seam.to => Block::Region(seam.from.into()),
        Event::Coll { seam, .. } => Block::Seam(seam.from.into()),
        Event::Loss { .. } => Block::Region(last_region),
        Event::StepBarrier => Block::End,
    }
}

/// Completion time of every node by composing per-region denotations through the seams.
pub fn composed_completion(order: &Order, durations: &[f64], regions: usize) -> Vec<f64> {
    composed_completion_launched(order, durations, regions, &Launches::default())
}

/// [`composed_completion`] with each event held to its host's launch: in the (max,+) reading
/// a launch is one more term of an event's start (`max(inputs, launch start)`) and of its end
/// (`max(start + work, launch end)`).
pub fn composed_completion_launched(
    order: &Order,
    durations: &[f64],
    regions: usize,
    launches: &Launches,
) -> Vec<f64> {
    let g = &order.graph;
    let n = g.node_count();
    let mut prev_on_rank: Vec<Option<NodeIndex>> = vec![None; n];
    for list in &order.nodes {
        for pair in list.windows(2) {
            if let [a, b] = *pair
                && let Some(slot) = prev_on_rank.get_mut(b.index())
            {
                *slot = Some(a);
            }
        }
    }
    // A topological order of data + sequence edges orders the nodes inside each block.
    let topo = topological(order, &prev_on_rank);
    let mut blocks: Vec<(Block, Vec<NodeIndex>)> = Vec::new();
    for &v in &topo {
        let Some(event) = g.node_weight(v) else {
            continue;
        };
        let b = block_of(event, regions);
        match blocks.iter_mut().find(|(k, _)| *k == b) {
            Some((_, list)) => list.push(v),
            None => blocks.push((b, vec![v])),
        }
    }
    // Region 1, seam (1,2), region 2, …, region k, then the end block.
    blocks.sort_by_key(|(b, _)| match *b {
        Block::Region(j) => (j, 0),
        Block::Seam(j) => (j, 1),
        Block::End => (usize::MAX, 0),
    });

    let mut end = vec![0.0f64; n];
    loop {
        let mut changed = false;
        for (_, nodes) in &blocks {
            // The block's denotation: longest path inside the block, given current inputs.
            for &v in nodes {
                let inputs = g
                    .neighbors_directed(v, Direction::Incoming)
                    .chain(prev_on_rank.get(v.index()).copied().flatten());
                let i = v.index();
                let ready = inputs
                    .map(|p| end.get(p.index()).copied().unwrap_or(0.0))
                    .fold(0.0, f64::max);
                // The launch's two terms, by the simulator's one rule (so that a stretched end
                // is the same float: `start + (launch end − start)`).
                let (start, work, _) =
                    launches.bind(i, ready, durations.get(i).copied().unwrap_or(0.0));
                let e = start + work;
                if let Some(slot) = end.get_mut(v.index())
                    && e > *slot
                {
                    *slot = e;
                    changed = true;
                }
            }
        }
        if !changed {
            return end;
        }
    }
}

fn topological(order: &Order, prev_on_rank: &[Option<NodeIndex>]) -> Vec<NodeIndex> {
    let g = &order.graph;
    let n = g.node_count();
    let mut next_on_rank: Vec<Option<NodeIndex>> = vec![None; n];
    for (i, p) in prev_on_rank.iter().enumerate() {
        if let Some(p) = p
            && let Some(slot) = next_on_rank.get_mut(p.index())
        {
            *slot = Some(NodeIndex::new(i));
        }
    }
    let mut indegree: Vec<usize> = g
        .node_indices()
        .map(|v| {
            g.neighbors_directed(v, Direction::Incoming).count()
                + usize::from(prev_on_rank.get(v.index()).copied().flatten().is_some())
        })
        .collect();
    let mut queue: std::collections::VecDeque<NodeIndex> = g
        .node_indices()
        .filter(|v| indegree.get(v.index()) == Some(&0))
        .collect();
    let mut out = Vec::with_capacity(n);
    while let Some(v) = queue.pop_front() {
        out.push(v);
        for s in g
            .neighbors_directed(v, Direction::Outgoing)
            .chain(next_on_rank.get(v.index()).copied().flatten())
        {
            if let Some(d) = indegree.get_mut(s.index()) {
                *d -= 1;
                if *d == 0 {
                    queue.push_back(s);
                }
            }
        }
    }
    out
}
