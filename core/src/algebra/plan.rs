//! A validated schedule: the expanded model cut into regions, each with its skeleton, layout,
//! trainable bit and owner (`ByLayer` slabs or the `ByMicrobatch` map).

use crate::algebra::gates::Gates;
use crate::algebra::model::Layer;
use crate::algebra::placement::Placement;
use crate::scenario::hardware::Hardware;
use crate::schedules::RunCtx;
use crate::schedules::skeleton::Skeleton;
use crate::vocab::ids::Stage;
use crate::vocab::layout::Layout;
use crate::vocab::phase::Phase;
use std::ops::Range;

/// One region `Π_j` (numbered from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    pub index: usize,
    /// Layer indices `[c(j−1), c(j))`, 0-based.
    pub layers: Range<usize>,
    pub skeleton: Skeleton,
    /// Some layer of the region is trainable.
    pub trainable: bool,
    pub owner: RegionOwner,
    /// The model region this one is the mirror of (a bidirectional schedule's second direction:
    /// the same layers, a copy of their parameters, on the ranks in reverse), or `None` for a
    /// region of the model's cut.
    pub mirror_of: Option<usize>,
}

/// How a region's work is split over the ranks.
#[derive(Debug, Clone, PartialEq)]
pub enum RegionOwner {
    /// `ByLayer`: rank `r` runs the contiguous slab `slabs[r]` (possibly empty); `order` lists
    /// the ranks in stage order (the placement), the order the slabs are chained in.
    ByLayer {
        slabs: Vec<Range<usize>>,
        order: Vec<usize>,
    },
    /// `ByMicrobatch`: the whole region runs on `owner[m]` for microbatch `m`.
    ByMicrobatch,
}

impl RegionOwner {
    /// Slabs given in stage order (slab `i` is the region's `i`-th stage) placed on the ranks
    /// `ranks` lists in stage order.
    pub fn by_stage(in_stage_order: Vec<Range<usize>>, ranks: &[usize]) -> RegionOwner {
        let mut slabs = vec![0..0; in_stage_order.len()];
        for (slab, &rank) in in_stage_order.into_iter().zip(ranks) {
            if let Some(s) = slabs.get_mut(rank) {
                *s = slab;
            }
        }
        RegionOwner::ByLayer {
            slabs,
            order: ranks.to_vec(),
        }
    }
}

impl Region {
    pub fn layout(&self) -> Layout {
        self.skeleton.layout()
    }

    /// Ranks holding a non-empty slab, in stage order (Sharded regions only).
    pub fn sharded_ranks(&self) -> Vec<usize> {
        match &self.owner {
            RegionOwner::ByLayer { slabs, order } => order
                .iter()
                .copied()
                .filter(|&r| slabs.get(r).is_some_and(|s| !s.is_empty()))
                .collect(),
            RegionOwner::ByMicrobatch => Vec::new(),
        }
    }
}

/// The Sharded regions of a schedule, woven into one wavefront of `v` virtual stages per rank.
///
/// A bidirectional schedule (DualPipe, Chimera) runs each chunk in two directions: the first
/// half of the microbatches through the chunk's region, the second half through its mirror
/// (`mirrors[c]`), whose stages sit on the ranks in reverse.
///
/// A maximal run of adjacent Sharded regions is one wavefront (interleaved 1F1B when `v > 1`).
/// When Replicated regions separate Sharded ones (`⟨1f1b, transpose, 1f1b⟩`), every Sharded
/// region still belongs to the one wavefront, chunk `c` being the `c`-th Sharded region; the
/// Replicated regions between them are hops off the wavefront.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wavefront {
    /// Region indices (1-based) of the chunks, in model order.
    pub regions: Vec<usize>,
    pub skeleton: Skeleton,
    /// The mirror region of each chunk, for a bidirectional schedule (else empty).
    pub mirrors: Vec<usize>,
}

impl Wavefront {
    /// Virtual stages per rank (of one direction).
    pub fn chunks(&self) -> usize {
        self.regions.len()
    }

    /// Every region of the wavefront: its chunks, then their mirrors.
    pub fn all_regions(&self) -> impl Iterator<Item = usize> + '_ {
        self.regions.iter().chain(&self.mirrors).copied()
    }
}

/// Everything `derive` needs, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub layers: Vec<Layer>,
    pub regions: Vec<Region>,
    /// `None` when no region is Sharded (a lone `transpose`).
    pub wavefront: Option<Wavefront>,
    pub ranks: usize,
    pub microbatches: usize,
    /// Which rank runs each stage.
    pub placement: Placement,
    /// Lemma 1's gates of every region, in region order.
    pub gates: Vec<Gates>,
    pub data_parallel: usize,
    /// `ByMicrobatch` owner of each microbatch, shared by every Replicated region.
    pub owner: Vec<usize>,
    /// Workload factor of each microbatch (scales `workload_varies` layers).
    pub workload: Vec<f64>,
    pub hardware: Hardware,
    /// Static bytes per parameter byte (parameters, gradients, optimizer state).
    pub static_memory_factor: f64,
    /// WaveK's unit size, as the scenario gives it.
    pub wave_k: Option<usize>,
    /// The automatic scheduler's memory limit, as the scenario gives it.
    pub activation_limit: Option<usize>,
}

impl Plan {
    /// The regions of the model's cut, in model order (without a bidirectional schedule's
    /// mirrors).
    pub fn model_regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.iter().filter(|r| r.mirror_of.is_none())
    }

    /// The skeleton of each region of the model's cut: the schedule as the scenario writes it.
    pub fn schedule(&self) -> Vec<Skeleton> {
        self.model_regions().map(|r| r.skeleton).collect()
    }

    /// The direction microbatch `mb` runs in: 0, or 1 for the second half of the microbatches
    /// under a bidirectional schedule.
    pub fn direction(&self, mb: usize) -> usize {
        usize::from(self.second_direction_from().is_some_and(|from| mb >= from))
    }

    /// The first microbatch of a bidirectional schedule's second direction, `⌊M/2⌋` (its
    /// schedules need an even `M`); `None` for a schedule of one direction.
    pub fn second_direction_from(&self) -> Option<usize> {
        self.wavefront
            .as_ref()
            .is_some_and(|w| !w.mirrors.is_empty())
            .then_some(self.microbatches / 2)
    }

    /// The region microbatch `mb` runs `region`'s work in: the region itself, or its mirror when
    /// `mb` runs in the second direction.
    pub fn routed(&self, region: usize, mb: usize) -> usize {
        if self.direction(mb) == 0 {
            return region;
        }
        self.regions
            .iter()
            .find(|r| r.mirror_of == Some(region))
            .map_or(region, |r| r.index)
    }

    /// Members of region `region`'s weight-gradient reduce: `P × data_parallel` replicas of a
    /// Replicated region; `data_parallel` copies of a Sharded slab, twice that where a
    /// bidirectional schedule mirrors it (the region and its mirror hold the same layers).
    pub fn reduce_members(&self, region: usize) -> usize {
        match self.region(region) {
            Some(r) if r.layout() == crate::vocab::layout::Layout::Replicated => {
                self.ranks * self.data_parallel
            }
            Some(r) => {
                let mirrored = r.mirror_of.is_some()
                    || self.regions.iter().any(|m| m.mirror_of == Some(r.index));
                (1 + usize::from(mirrored)) * self.data_parallel
            }
            None => self.data_parallel,
        }
    }

    /// Region `j` (1-based).
    pub fn region(&self, index: usize) -> Option<&Region> {
        index.checked_sub(1).and_then(|i| self.regions.get(i))
    }

    /// Whether the unit holding `layers` is the pipeline's first stage: it holds the model's
    /// first layer, whose input needs no gradient.
    pub fn holds_first_layer(layers: &Range<usize>) -> bool {
        layers.start == 0 && !layers.is_empty()
    }

    /// Whether a split backward of the unit holding `layers` runs whole in its weight half: the
    /// hardware says the first stage's does (`hardware.first_stage_backward`: `in_weight`) and
    /// the unit is the first stage.
    pub fn whole_in_weight(&self, layers: &Range<usize>) -> bool {
        self.hardware.first_stage_in_weight() && Plan::holds_first_layer(layers)
    }

    /// The phase the unit holding `layers` runs where its order says `phase`: the phase itself,
    /// but for the first stage's split backward run whole in its weight half — its input half
    /// runs nothing (`None`), its weight half the whole backward.
    pub fn runs_as(&self, layers: &Range<usize>, phase: Phase) -> Option<Phase> {
        match phase {
            Phase::Input | Phase::Weight if self.whole_in_weight(layers) => {
                (phase == Phase::Weight).then_some(Phase::Backward)
            }
            _ => Some(phase),
        }
    }

    /// [`Plan::whole_in_weight`] of unit (region, rank) (its layers looked up only under
    /// `in_weight`).
    pub fn unit_whole_in_weight(&self, region: usize, rank: usize) -> bool {
        self.hardware.first_stage_in_weight()
            && self.whole_in_weight(&self.unit_layers(region, rank))
    }

    /// The layers a rank runs for a region: its slab (Sharded) or the whole region (Replicated).
    pub fn unit_layers(&self, region: usize, rank: usize) -> Range<usize> {
        match self.region(region) {
            Some(r) => match &r.owner {
                RegionOwner::ByLayer { slabs, .. } => slabs.get(rank).cloned().unwrap_or(0..0),
                RegionOwner::ByMicrobatch => r.layers.clone(),
            },
            None => 0..0,
        }
    }

    /// Whether some layer a rank runs for a region offloads activations (`offload_share > 0`).
    pub fn offloads(&self, region: usize, rank: usize) -> bool {
        self.layers
            .get(self.unit_layers(region, rank))
            .is_some_and(|ls| ls.iter().any(Layer::offloads))
    }

    /// The stage region `region` runs on `rank` (by default `rank + (region − 1)·P`), when both
    /// exist.
    pub fn stage_index(&self, region: usize, rank: usize) -> Option<Stage> {
        self.placement.stage(region, rank).map(Stage::new)
    }

    /// Inverse of [`Plan::stage_index`]: the region (1-based index) and rank of `stage`, when it
    /// exists.
    pub fn stage_to_region_rank(&self, stage: Stage) -> Option<(usize, usize)> {
        self.placement.region_rank(stage.index())
    }

    /// Lemma 1's gates of region `index` (1-based); all off for a region that does not exist.
    pub fn gates_of(&self, index: usize) -> Gates {
        index
            .checked_sub(1)
            .and_then(|i| self.gates.get(i))
            .copied()
            .unwrap_or(Gates {
                runs_backward: false,
                sends_upstream: false,
                reduces: false,
            })
    }

    /// `P = 4, M = 32`, and WaveK's unit size (`, k = 8`) when the wavefront runs `wavek`.
    pub fn shape(&self) -> String {
        let mut shape = format!("P = {}, M = {}", self.ranks, self.microbatches);
        if let Some(w) = &self.wavefront {
            let ctx = self.run_ctx(w);
            let schedule = w.skeleton.schedule();
            for &p in schedule.parameters() {
                if let Some(value) = schedule.parameter(p, &ctx) {
                    shape.push_str(&format!(", {} = {value}", p.symbol()));
                }
            }
        }
        shape
    }

    /// Whether the stages sit where a placement of `kind` puts them over the plan's regions (a
    /// schedule's own placement, when the scenario gives none).
    pub fn is_placed_as(&self, kind: crate::vocab::layout::PlacementKind) -> bool {
        let sharded: Vec<bool> = self
            .regions
            .iter()
            .map(|r| r.layout() == Layout::Sharded)
            .collect();
        let spec = crate::scenario::placement::PlacementSpec::from(kind);
        Placement::new(&spec, &sharded, self.ranks)
            .is_ok_and(|p| p.ranks_of_stages() == self.placement.ranks_of_stages())
    }

    /// The shape the wavefront's schedule is asked about.
    pub fn run_ctx(&self, wavefront: &Wavefront) -> RunCtx {
        RunCtx {
            ranks: self.ranks,
            microbatches: self.microbatches,
            chunks: wavefront.chunks(),
            wave_k: self.wave_k,
            activation_limit: self.activation_limit,
        }
    }

    /// The workload factor of microbatch `m`.
    pub fn workload_of(&self, mb: usize) -> f64 {
        self.workload.get(mb).copied().unwrap_or(1.0)
    }

    /// The owner rank of microbatch `m`.
    pub fn owner_of(&self, mb: usize) -> usize {
        self.owner.get(mb).copied().unwrap_or(0)
    }
}
