//! Edits of a scenario, one field at a time, as the app's editors make them. Each edit changes
//! exactly what it names and keeps the fields that depend on it in step (a cut and the
//! schedule and per-rank slabs; `M` and the per-microbatch lists); nothing else is touched, so
//! a value the user did not edit is never rewritten (a loaded `fwd_s: 1e308` stays 1e308).
//! Edits do not validate: an edit may make the scenario invalid, which `derive` then says.

use crate::scenario::Scenario;
use crate::scenario::hardware::Hardware;
use crate::scenario::owner::OwnerSpec;
use crate::scenario::placement::PlacementSpec;
use crate::schedules::skeleton::Skeleton;
use crate::vocab::parameter::Parameter;
use crate::vocab::role::Role;

/// One change to a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// `P`.
    Ranks(usize),
    /// `M`; per-microbatch lists follow (see [`resize_per_microbatch_lists`]).
    Microbatches(usize),
    DataParallel(usize),
    /// The skeleton of region `region` (1-based).
    Skeleton {
        region: usize,
        skeleton: Skeleton,
    },
    /// One skeleton for each of `regions` (1-based), in one step (a wavefront made uniform).
    Skeletons {
        regions: Vec<usize>,
        skeleton: Skeleton,
    },
    /// Sets cut `index` to `to` as typed (no clamping: an invalid cut is reported by `derive`).
    SetCut {
        index: usize,
        to: usize,
    },
    /// Drags cut `index` towards `to`, kept strictly increasing inside `(0, layers)`.
    MoveCut {
        index: usize,
        to: usize,
    },
    /// Cuts in front of layer `at`; the new region copies the skeleton it was split from.
    AddCut {
        at: usize,
    },
    /// Removes cut `index`, merging the two regions into the left one.
    RemoveCut {
        index: usize,
    },
    /// Swaps the skeletons of region `region` (1-based, ≥ 2) and the region above it.
    SwapWithAbove {
        region: usize,
    },
    /// Replaces cut and schedule (the normal form of an invalid schedule).
    CutAndSchedule {
        cut: Vec<usize>,
        schedule: Vec<Skeleton>,
    },
    /// Per-rank layer counts of region `region` (1-based); `None` for balanced.
    Slabs {
        region: usize,
        counts: Option<Vec<usize>>,
    },
    /// Moves interior stage boundary `boundary` of Sharded region `region` (1-based) to layer
    /// offset `to` inside the region (clamped between its neighbours): the layers between move
    /// from one stage to the next, and the region's slabs become explicit.
    StageBoundary {
        region: usize,
        boundary: usize,
        to: usize,
    },
    /// Stages `a` and `b` trade ranks: the placement becomes explicit, `ranks` (the rank of every
    /// stage, as the derivation on screen placed them) with the two swapped. Under a
    /// bidirectional schedule (DualPipe, Chimera), where each rank holds a stage of each
    /// direction, the two ranks trade every stage they hold (and their hand-written orders): a
    /// mirror's stage stays on the rank of its region's stage in reverse, as the schedule's slots
    /// assume. Two stages on one rank trade nothing.
    SwapStageRanks {
        ranks: Vec<usize>,
        a: usize,
        b: usize,
    },
    /// Moves step `from` of rank `rank`'s order to position `to` (counted without it): the
    /// orders (every rank's steps, as derived) become hand-written. Hand orders name the rank of
    /// every Replicated action, so a cost-based owner map is pinned to `owner`, the one they were
    /// derived with. Nothing changes when `from == to`.
    MoveStep {
        orders: Vec<Vec<String>>,
        rank: usize,
        from: usize,
        to: usize,
        owner: Vec<usize>,
    },
    Owner(OwnerSpec),
    /// Which rank runs each stage (`None`: the skeleton's own placement).
    Placement(Option<PlacementSpec>),
    /// Hand-written per-rank orders (`None`: derived ones); they replace any `orders_csv`.
    Orders(Option<Vec<Vec<String>>>),
    /// Starts a per-microbatch list of encoder workload scales (all 1).
    VaryWorkload,
    /// The encoder workload scale of microbatch `mb`.
    WorkloadScale {
        mb: usize,
        scale: f64,
    },
    Hardware(Box<Option<Hardware>>),
    LayerName {
        layer: usize,
        name: String,
    },
    LayerRole {
        layer: usize,
        role: Role,
    },
    LayerCount {
        layer: usize,
        count: usize,
    },
    LayerFwd {
        layer: usize,
        seconds: f64,
    },
    LayerBwd {
        layer: usize,
        seconds: f64,
    },
    LayerTrainable {
        layer: usize,
        trainable: bool,
    },
    /// Full recomputation of a layer group on or off.
    LayerRecompute {
        layer: usize,
        recompute: bool,
    },
    /// Selective recomputation of a layer group with its shares (the share of the activations
    /// dropped, the share of the forward re-run).
    LayerSelective {
        layer: usize,
        activation_share: f64,
        cost_share: f64,
    },
    /// A layer group's recomputation placed early (Mario) or in the backward.
    LayerRecomputeEarly {
        layer: usize,
        early: bool,
    },
    /// The share of a layer group's kept activations offloaded to the host (0: none).
    LayerOffload {
        layer: usize,
        share: f64,
    },
    /// Region `region`'s (1-based) width: the `width` list is made when a region first gets one
    /// and dropped when every region is one device again.
    RegionWidth {
        region: usize,
        width: crate::scenario::width::WidthSpec,
    },
    /// A second-order phase's time (`fe_s`, `ff_s`, `bf_s` or `be_s`; other phases: nothing).
    LayerPhase {
        layer: usize,
        phase: crate::vocab::phase::Phase,
        seconds: f64,
    },
    /// WaveK's unit size (`None`: the default, `P`); a schedule given a `k` runs as the one of
    /// its op set that reads it (`Skeleton::given`).
    WaveK(Option<usize>),
    /// The automatic zero-bubble scheduler's memory limit (`None`: its default, `P`).
    ActivationLimit(Option<usize>),
    /// How `workload.graphs` is packed into microbatches (nothing without graphs).
    Packing(crate::workload::gars::Packing),
    /// The whole scenario (a calibrated one, say).
    Replace(Box<Scenario>),
}

/// A one-click change that makes an invalid scenario valid, carried by the error that calls for
/// it (`DeriveError::remedy`): the app offers the reported error's remedy as a button, the CLI
/// prints it as a `fix:` line (a new cut and schedule in the file's terms, any other by its
/// label; a deadlock's proposed order with its `"orders"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Remedy {
    /// What it does, as the button says it.
    pub label: String,
    pub edit: Edit,
}

/// Regions `regions` (1-based) to `skeleton`; a parameter goes with the last region whose
/// schedule reads it.
fn set_skeletons(s: &mut Scenario, regions: &[usize], skeleton: Skeleton) {
    for region in regions {
        if let Some(slot) = region.checked_sub(1).and_then(|i| s.schedule.get_mut(i)) {
            *slot = skeleton;
        }
    }
    // A parameter no region reads any more is dropped (an unread one is a validity error).
    for parameter in Parameter::ALL {
        if !s.schedule.iter().any(|k| k.reads(parameter)) {
            Edit::parameter(parameter, None).apply(s);
        }
    }
}

/// The number of layers after `count` expansion.
pub fn layer_count(s: &Scenario) -> usize {
    s.model
        .layers
        .iter()
        .fold(0usize, |n, l| n.saturating_add(l.count))
}

impl Edit {
    /// The edit that sets a schedule's `parameter` to `value` (`None`: its default).
    pub fn parameter(parameter: Parameter, value: Option<usize>) -> Edit {
        match parameter {
            Parameter::WaveK => Edit::WaveK(value),
            Parameter::ActivationLimit => Edit::ActivationLimit(value),
        }
    }

    /// Applies the edit to `s`.
    pub fn apply(&self, s: &mut Scenario) {
        match self {
            Edit::Ranks(p) => s.ranks = *p,
            Edit::Microbatches(m) => {
                s.microbatches = *m;
                resize_per_microbatch_lists(s);
            }
            Edit::DataParallel(d) => s.data_parallel = *d,
            Edit::Skeleton { region, skeleton } => set_skeletons(s, &[*region], *skeleton),
            Edit::Skeletons { regions, skeleton } => set_skeletons(s, regions, *skeleton),
            Edit::SetCut { index, to } => {
                if let Some(b) = s.cut.get_mut(*index) {
                    *b = *to;
                }
            }
            Edit::MoveCut { index, to } => move_cut(s, *index, *to),
            Edit::AddCut { at } => add_cut(s, *at),
            Edit::RemoveCut { index } => remove_cut(s, *index),
            Edit::SwapWithAbove { region } => {
                if *region >= 2 && *region <= s.schedule.len() {
                    s.schedule.swap(region - 2, region - 1);
                }
            }
            Edit::CutAndSchedule { cut, schedule } => {
                let old_cut = std::mem::replace(&mut s.cut, cut.clone());
                s.schedule = schedule.clone();
                s.slabs = None;
                carry_widths(s, &old_cut);
            }
            Edit::Slabs { region, counts } => set_slabs(s, *region, counts.clone()),
            Edit::StageBoundary {
                region,
                boundary,
                to,
            } => {
                let counts = stage_counts(s, *region);
                let next = move_stage_boundary(&counts, *boundary, *to);
                if next != counts {
                    set_slabs(s, *region, Some(next));
                }
            }
            Edit::SwapStageRanks { ranks, a, b } => {
                if let (Some(&x), Some(&y)) = (ranks.get(*a), ranks.get(*b))
                    && a != b
                    && x != y
                {
                    let swapped = if s.schedule.iter().any(|k| k.bidirectional()) {
                        let trade = |r: usize| match r {
                            r if r == x => y,
                            r if r == y => x,
                            r => r,
                        };
                        // Hand-written orders go with their ranks' stages.
                        if let Some(orders) = s.orders.as_mut()
                            && x < orders.len()
                            && y < orders.len()
                        {
                            orders.swap(x, y);
                        }
                        ranks.iter().map(|&r| trade(r)).collect()
                    } else {
                        let mut swapped = ranks.clone();
                        swapped.swap(*a, *b);
                        swapped
                    };
                    s.placement = Some(PlacementSpec::Explicit(swapped));
                }
            }
            Edit::MoveStep {
                orders,
                rank,
                from,
                to,
                owner,
            } => move_step(s, orders, (*rank, *from, *to), owner),
            Edit::Owner(spec) => s.owner = spec.clone(),
            Edit::Placement(p) => s.placement = p.clone(),
            Edit::Orders(orders) => {
                s.orders = orders.clone();
                s.orders_csv = None;
                s.orders_from_csv = None;
            }
            Edit::VaryWorkload => {
                let m = s.microbatches;
                s.workload
                    .get_or_insert_with(Default::default)
                    .encoder_scale = Some(vec![1.0; m]);
            }
            Edit::WorkloadScale { mb, scale } => {
                if let Some(slot) = s
                    .workload
                    .as_mut()
                    .and_then(|w| w.encoder_scale.as_mut())
                    .and_then(|list| list.get_mut(*mb))
                {
                    *slot = *scale;
                }
            }
            Edit::Hardware(h) => s.hardware = (**h).clone(),
            Edit::LayerName { layer, name } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.name = name.clone();
                }
            }
            Edit::LayerRole { layer, role } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.role = *role;
                }
            }
            Edit::LayerCount { layer, count } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.count = *count;
                }
            }
            Edit::LayerFwd { layer, seconds } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.fwd_s = Some(*seconds);
                }
            }
            Edit::LayerBwd { layer, seconds } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.bwd_s = Some(*seconds);
                }
            }
            Edit::LayerTrainable { layer, trainable } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.trainable = *trainable;
                }
            }
            Edit::LayerRecompute { layer, recompute } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    // Full recomputation on or off; a selective one's shares go with it, and
                    // without a recomputation its early placement.
                    l.recompute = recompute.then_some(crate::scenario::layer::Recompute::Full);
                    l.recompute_activation_share = None;
                    l.recompute_cost_share = None;
                    l.recompute_early &= recompute;
                }
            }
            Edit::LayerSelective {
                layer,
                activation_share,
                cost_share,
            } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.recompute = Some(crate::scenario::layer::Recompute::Selective);
                    l.recompute_activation_share = Some(*activation_share);
                    l.recompute_cost_share = Some(*cost_share);
                }
            }
            Edit::LayerRecomputeEarly { layer, early } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.recompute_early = *early;
                }
            }
            Edit::LayerOffload { layer, share } => {
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    l.offload_share = (*share > 0.0).then_some(*share);
                }
            }
            Edit::RegionWidth { region, width } => set_width(s, *region, *width),
            Edit::LayerPhase {
                layer,
                phase,
                seconds,
            } => {
                use crate::vocab::phase::Phase;
                if let Some(l) = s.model.layers.get_mut(*layer) {
                    let field = match phase {
                        Phase::EnergyForward => &mut l.fe_s,
                        Phase::ForceForward => &mut l.ff_s,
                        Phase::ForceBackward => &mut l.bf_s,
                        Phase::EnergyBackward => &mut l.be_s,
                        _ => return,
                    };
                    *field = Some(*seconds);
                }
            }
            Edit::WaveK(k) => {
                if k.is_some() {
                    // A schedule given a `k` runs as the one of its op set that reads it.
                    for skeleton in &mut s.schedule {
                        if let Some(reader) = skeleton.given(Parameter::WaveK) {
                            *skeleton = reader;
                        }
                    }
                }
                s.wave_k = *k;
            }
            Edit::ActivationLimit(limit) => s.activation_limit = *limit,
            Edit::Packing(packing) => {
                if let Some(g) = s.workload.as_mut().and_then(|w| w.graphs.as_mut()) {
                    g.packing = *packing;
                }
            }
            Edit::Replace(scenario) => *s = (**scenario).clone(),
        }
    }
}

/// Moves step `from` of `rank`'s order to position `to` and makes the orders hand-written (see
/// [`Edit::MoveStep`]).
fn move_step(
    s: &mut Scenario,
    orders: &[Vec<String>],
    (rank, from, to): (usize, usize, usize),
    owner: &[usize],
) {
    let mut orders = orders.to_vec();
    let Some(list) = orders.get_mut(rank) else {
        return;
    };
    if from == to || from >= list.len() || to >= list.len() {
        return;
    }
    let step = list.remove(from);
    list.insert(to, step);
    if s.owner.needs_costs() {
        s.owner = OwnerSpec::Explicit(owner.to_vec());
    }
    Edit::Orders(Some(orders)).apply(s);
}

/// A region's interior stage boundaries, as layer offsets into it, from its layers per stage.
pub fn stage_boundaries(counts: &[usize]) -> Vec<usize> {
    let mut at = 0usize;
    let mut out = Vec::with_capacity(counts.len().saturating_sub(1));
    for &c in counts.iter().take(counts.len().saturating_sub(1)) {
        at = at.saturating_add(c);
        out.push(at);
    }
    out
}

/// `counts` with interior boundary `i` moved to layer offset `to` (clamped between its
/// neighbours, so a stage may end with no layers): the layers between move from one stage to the
/// next.
pub fn move_stage_boundary(counts: &[usize], i: usize, to: usize) -> Vec<usize> {
    let bounds = stage_boundaries(counts);
    let total: usize = counts.iter().fold(0, |a, &b| a.saturating_add(b));
    let lo = i
        .checked_sub(1)
        .and_then(|j| bounds.get(j))
        .copied()
        .unwrap_or(0);
    let hi = bounds.get(i.saturating_add(1)).copied().unwrap_or(total);
    let to = to.clamp(lo, hi.max(lo));
    let mut out = counts.to_vec();
    let next = i.saturating_add(1);
    if let (Some(a), Some(b)) = (out.get(i).copied(), out.get(next).copied()) {
        let pair = a.saturating_add(b);
        let left = to.saturating_sub(lo);
        if let Some(x) = out.get_mut(i) {
            *x = left;
        }
        if let Some(x) = out.get_mut(next) {
            *x = pair.saturating_sub(left);
        }
    }
    out
}

/// Keeps per-microbatch lists (workload scales, an explicit owner map) as long as `M`: new
/// microbatches get scale 1 and a round-robin owner, removed ones are dropped.
pub fn resize_per_microbatch_lists(s: &mut Scenario) {
    let m = s.microbatches;
    if let Some(scales) = s.workload.as_mut().and_then(|w| w.encoder_scale.as_mut()) {
        scales.resize(m, 1.0);
    }
    if let OwnerSpec::Explicit(list) = &mut s.owner {
        let p = s.ranks.max(1);
        let old = list.len();
        list.truncate(m);
        list.extend((old..m).map(|mb| mb % p));
    }
}

/// Moves cut `i` to boundary `to`, keeping the cut strictly increasing inside `(0, layers)`.
pub fn move_cut(s: &mut Scenario, i: usize, to: usize) {
    let layers = layer_count(s);
    let lo = if i == 0 {
        1
    } else {
        s.cut.get(i - 1).map_or(1, |&b| b + 1)
    };
    let hi = s
        .cut
        .get(i + 1)
        .map_or(layers.saturating_sub(1), |&b| b.saturating_sub(1));
    if let Some(b) = s.cut.get_mut(i) {
        *b = to.clamp(lo, hi.max(lo));
    }
}

/// Cuts in front of layer `at` (no-op at 0, at the end, or on an existing cut); the new region
/// copies the skeleton of the region it was split from, and both halves go back to balanced slabs.
pub fn add_cut(s: &mut Scenario, at: usize) {
    if at == 0 || at >= layer_count(s) || s.cut.contains(&at) {
        return;
    }
    let region = s.cut.iter().filter(|&&b| b < at).count();
    let skeleton = s.schedule.get(region).copied().unwrap_or_default();
    s.cut.insert(region.min(s.cut.len()), at);
    s.schedule
        .insert((region + 1).min(s.schedule.len()), skeleton);
    if let Some(slabs) = s.slabs.as_mut() {
        slabs.insert((region + 1).min(slabs.len()), None);
        if let Some(split) = slabs.get_mut(region) {
            *split = None;
        }
    }
    // Both halves keep the width of the region they were split from.
    if let Some(widths) = s.width.as_mut()
        && let Some(&split) = widths.get(region)
    {
        widths.insert((region + 1).min(widths.len()), split);
    }
}

/// Removes cut `i`, merging the regions on both sides into the left one (balanced slabs).
pub fn remove_cut(s: &mut Scenario, i: usize) {
    if i >= s.cut.len() {
        return;
    }
    s.cut.remove(i);
    if i + 1 < s.schedule.len() {
        s.schedule.remove(i + 1);
    }
    if let Some(slabs) = s.slabs.as_mut() {
        if i + 1 < slabs.len() {
            slabs.remove(i + 1);
        }
        if let Some(merged) = slabs.get_mut(i) {
            *merged = None;
        }
    }
    // The merged region keeps the left one's width.
    if let Some(widths) = s.width.as_mut()
        && i + 1 < widths.len()
    {
        widths.remove(i + 1);
    }
}

/// After `s.cut` was `old_cut` and `s.cut` and `s.schedule` were replaced (a normal form, a
/// design, a finer interleaving): each region takes the width of the region that held its last
/// layer, and a layer group wholly inside one old region keeps that region's width as its own
/// where a region it now falls in has another — on as many devices as the first of them, when
/// it gave none. A layer group that straddled an old cut takes its new regions' widths.
pub fn carry_widths(s: &mut Scenario, old_cut: &[usize]) {
    use crate::scenario::width::WidthSpec;
    let Some(old) = s.width.take() else {
        return;
    };
    let old_width = |layer: usize| {
        old.get(old_cut.iter().filter(|&&c| c <= layer).count())
            .copied()
            .unwrap_or_default()
    };
    let total = layer_count(s);
    let new: Vec<WidthSpec> = s
        .cut
        .iter()
        .copied()
        .chain(std::iter::once(total))
        .map(|end| old_width(end.saturating_sub(1)))
        .collect();
    let new_region = |layer: usize| s.cut.iter().filter(|&&c| c <= layer).count();
    // Where each layer group starts.
    let starts: Vec<usize> = {
        let mut first = 0usize;
        s.model
            .layers
            .iter()
            .map(|spec| {
                let start = first;
                first = first.saturating_add(spec.count);
                start
            })
            .collect()
    };
    for (spec, &start) in s.model.layers.iter_mut().zip(&starts) {
        let end = start.saturating_add(spec.count);
        if spec.width.is_some() || spec.count == 0 {
            continue;
        }
        let was = old_width(start);
        let joins = new.get(new_region(start)).copied().unwrap_or_default();
        // Wholly inside one old region, and some new region it falls in has another width.
        let inside = old_cut.iter().all(|&c| c <= start || c >= end);
        let differs = (new_region(start)..=new_region(end.saturating_sub(1)))
            .any(|j| new.get(j).copied().unwrap_or_default() != was);
        if inside && differs {
            let devices = was
                .devices
                .or_else(|| Some(was.group().max(joins.devices.unwrap_or(joins.group()))))
                .filter(|&d| d != was.group());
            spec.width = Some(WidthSpec { devices, ..was });
        }
    }
    if !new.iter().all(WidthSpec::is_single) {
        s.width = Some(new);
    }
}

/// Sets region `region`'s (1-based) width, making the `width` list (one device for every other
/// region) when needed and dropping it again when every region is one device.
pub fn set_width(s: &mut Scenario, region: usize, width: crate::scenario::width::WidthSpec) {
    let Some(index) = region.checked_sub(1) else {
        return;
    };
    let regions = s.schedule.len();
    if index >= regions {
        return;
    }
    let widths = s
        .width
        .get_or_insert_with(|| vec![crate::scenario::width::WidthSpec::single(); regions]);
    if widths.len() < regions {
        widths.resize(regions, crate::scenario::width::WidthSpec::single());
    }
    if let Some(slot) = widths.get_mut(index) {
        // Devices as many as `tp × cp` are its default: not written.
        *slot = crate::scenario::width::WidthSpec {
            devices: width.devices.filter(|&d| d != width.group()),
            ..width
        };
    }
    if widths
        .iter()
        .all(crate::scenario::width::WidthSpec::is_single)
    {
        s.width = None;
    }
}

/// Sets region `region`'s per-rank layer counts, creating the `slabs` list when needed and
/// dropping it again when every region is balanced.
pub fn set_slabs(s: &mut Scenario, region: usize, counts: Option<Vec<usize>>) {
    let Some(index) = region.checked_sub(1) else {
        return;
    };
    let regions = s.schedule.len();
    if index >= regions {
        return;
    }
    let slabs = s.slabs.get_or_insert_with(|| vec![None; regions]);
    if slabs.len() < regions {
        slabs.resize(regions, None);
    }
    if let Some(slot) = slabs.get_mut(index) {
        *slot = counts;
    }
    if slabs.iter().all(Option::is_none) {
        s.slabs = None;
    }
}

/// Region `region`'s (1-based) layers per stage, in stage order: its `slabs` entry, or the
/// balanced split of its layers over the ranks (at most `MAX_RANKS` of them, whatever the file
/// says).
pub fn stage_counts(s: &Scenario, region: usize) -> Vec<usize> {
    let given = region.checked_sub(1).and_then(|i| {
        s.slabs
            .as_ref()
            .and_then(|all| all.get(i).cloned().flatten())
    });
    given.unwrap_or_else(|| {
        let layers = region_layers(s, region).map_or(0, |r| r.len());
        crate::scenario::slab::balanced_counts(
            layers,
            s.ranks.clamp(1, crate::vocab::limits::MAX_RANKS),
        )
    })
}

/// The layers of region `region` (1-based) of `s`, as `[first, end)`, from its cut.
pub fn region_layers(s: &Scenario, region: usize) -> Option<std::ops::Range<usize>> {
    let index = region.checked_sub(1)?;
    let start = if index == 0 {
        0
    } else {
        *s.cut.get(index - 1)?
    };
    let end = s.cut.get(index).copied().unwrap_or_else(|| layer_count(s));
    Some(start..end.max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = r#"{"format": "mpipe-scenario/1",
            "model": {"layers": [{"name": "l", "count": 12, "fwd_s": 1}]},
            "cut": [4, 8], "schedule": ["1f1b", "1f1b", "1f1b"], "ranks": 4, "microbatches": 8}"#;
        Scenario::from_json_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn moving_keeps_cuts_increasing_and_inside() {
        let mut s = scenario(); // cut [4, 8] over 12 layers
        move_cut(&mut s, 0, 10);
        assert_eq!(s.cut, [7, 8]);
        move_cut(&mut s, 1, 0);
        assert_eq!(s.cut, [7, 8]);
        move_cut(&mut s, 1, 11);
        assert_eq!(s.cut, [7, 11]);
        move_cut(&mut s, 0, 0);
        assert_eq!(s.cut, [1, 11]);
    }

    #[test]
    fn adding_and_removing_cuts_splits_and_merges_regions() {
        let mut s = scenario();
        add_cut(&mut s, 6);
        assert_eq!(s.cut, [4, 6, 8]);
        assert_eq!(s.schedule.len(), 4);
        add_cut(&mut s, 6);
        add_cut(&mut s, 0);
        add_cut(&mut s, 12);
        assert_eq!(s.cut, [4, 6, 8]);
        remove_cut(&mut s, 0);
        assert_eq!(s.cut, [6, 8]);
        assert_eq!(s.schedule.len(), 3);
    }

    #[test]
    fn widths_follow_their_regions_and_are_dropped_when_all_single() {
        use crate::scenario::width::WidthSpec;
        let mut s = scenario();
        let tp4 = WidthSpec {
            tp: 4,
            ..WidthSpec::single()
        };
        Edit::RegionWidth {
            region: 2,
            width: tp4,
        }
        .apply(&mut s);
        let one = WidthSpec::single();
        assert_eq!(s.width, Some(vec![one, tp4, one]));
        if let Err(e) = crate::derive(&s) {
            panic!("{e}");
        }
        // Splitting region 2 gives both halves its width; merging keeps the left one's.
        add_cut(&mut s, 6);
        assert_eq!(s.width, Some(vec![one, tp4, tp4, one]));
        remove_cut(&mut s, 0);
        assert_eq!(s.width, Some(vec![one, tp4, one]));
        for region in 1..=3 {
            Edit::RegionWidth { region, width: one }.apply(&mut s);
        }
        assert_eq!(s.width, None);
        // A region that does not exist changes nothing.
        Edit::RegionWidth {
            region: 9,
            width: tp4,
        }
        .apply(&mut s);
        assert_eq!(s.width, None);
    }

    #[test]
    fn a_new_cut_keeps_every_layer_groups_width() {
        use crate::scenario::width::WidthSpec;
        let text = r#"{"format": "mpipe-scenario/1",
            "model": {"layers": [{"name": "a", "count": 4, "fwd_s": 1},
                                 {"name": "b", "count": 4, "fwd_s": 1}]},
            "cut": [4], "schedule": ["1f1b", "1f1b"], "ranks": 2, "microbatches": 4,
            "width": [{}, {"tp": 2}]}"#;
        let mut s = Scenario::from_json_str(text, "t.json").unwrap_or_else(|e| panic!("{e}"));
        let tp2 = WidthSpec {
            tp: 2,
            ..WidthSpec::single()
        };
        // Re-cut at 2 and 5: the regions take their last layer's width; `a`'s layers 2 and 3
        // now sit in a tp-2 region, so `a` keeps its single-device width as its own (still
        // run data-parallel on the two devices of its ranks); `b` is tp 2 wherever it lands.
        let old = std::mem::replace(&mut s.cut, vec![2, 5]);
        s.schedule = vec![s.schedule[0]; 3];
        carry_widths(&mut s, &old);
        assert_eq!(s.width, Some(vec![WidthSpec::single(), tp2, tp2]));
        assert_eq!(s.model.layers[0].width, Some(WidthSpec::single()));
        assert_eq!(s.model.layers[1].width, None);
        let d = crate::derive(&s).unwrap_or_else(|e| panic!("{e}"));
        let tps: Vec<(usize, usize)> = d
            .plan
            .layers
            .iter()
            .map(|l| (l.width.tp, l.width.devices))
            .collect();
        assert_eq!(
            tps,
            [
                (1, 2),
                (1, 2),
                (1, 2),
                (1, 2),
                (2, 2),
                (2, 2),
                (2, 2),
                (2, 2)
            ]
        );
    }

    #[test]
    fn slabs_are_set_per_region_and_dropped_when_all_balanced() {
        let mut s = scenario();
        Edit::Slabs {
            region: 2,
            counts: Some(vec![1, 1, 2, 0]),
        }
        .apply(&mut s);
        assert_eq!(s.slabs, Some(vec![None, Some(vec![1, 1, 2, 0]), None]));
        Edit::Slabs {
            region: 2,
            counts: None,
        }
        .apply(&mut s);
        assert_eq!(s.slabs, None);
        assert_eq!(region_layers(&s, 2), Some(4..8));
        assert_eq!(region_layers(&s, 3), Some(8..12));
        assert_eq!(region_layers(&s, 4), None);
    }

    #[test]
    fn an_edit_changes_only_its_field() {
        let mut s = scenario();
        s.model.layers[0].fwd_s = Some(1e308);
        let before = s.clone();
        Edit::Microbatches(4).apply(&mut s);
        let mut expected = before;
        expected.microbatches = 4;
        assert_eq!(s, expected);
    }

    #[test]
    fn a_stage_boundary_moves_layers_between_its_two_stages_only() {
        assert_eq!(stage_boundaries(&[2, 2, 2, 2]), [2, 4, 6]);
        assert_eq!(move_stage_boundary(&[2, 2, 2, 2], 1, 5), [2, 3, 1, 2]);
        // Clamped by the neighbours: stage 2 may be emptied, not more.
        assert_eq!(move_stage_boundary(&[2, 2, 2, 2], 1, 9), [2, 4, 0, 2]);
        assert_eq!(move_stage_boundary(&[2, 2, 2, 2], 0, 0), [0, 4, 2, 2]);
        assert_eq!(move_stage_boundary(&[0, 4, 2, 2], 0, 3), [3, 1, 2, 2]);
        // As an edit: region 2 (layers 4..8 over 4 ranks) gets explicit slabs; a boundary left
        // where it is changes nothing.
        let mut s = scenario();
        Edit::StageBoundary {
            region: 2,
            boundary: 1,
            to: 2,
        }
        .apply(&mut s);
        assert_eq!(s.slabs, None);
        Edit::StageBoundary {
            region: 2,
            boundary: 1,
            to: 3,
        }
        .apply(&mut s);
        assert_eq!(s.slabs, Some(vec![None, Some(vec![1, 2, 0, 1]), None]));
    }

    #[test]
    fn two_stages_trade_ranks_in_an_explicit_placement() {
        let mut s = scenario();
        let ranks = vec![0, 1, 2, 3, 3, 2, 1, 0];
        Edit::SwapStageRanks {
            ranks: ranks.clone(),
            a: 4,
            b: 6,
        }
        .apply(&mut s);
        assert_eq!(
            s.placement,
            Some(PlacementSpec::Explicit(vec![0, 1, 2, 3, 1, 2, 3, 0]))
        );
        // A stage that does not exist, or a stage with itself: nothing.
        let mut t = scenario();
        for (a, b) in [(0, 8), (2, 2)] {
            Edit::SwapStageRanks {
                ranks: ranks.clone(),
                a,
                b,
            }
            .apply(&mut t);
        }
        assert_eq!(t.placement, None);
        // Under DualPipe each rank holds a stage of each direction: stages 0 and 1 trade ranks
        // 0 and 1 whole, their mirrors' stages (7 and 6) with them.
        let mut two = scenario();
        two.schedule = vec![crate::schedules::DUALPIPE];
        Edit::SwapStageRanks {
            ranks: ranks.clone(),
            a: 0,
            b: 1,
        }
        .apply(&mut two);
        assert_eq!(
            two.placement,
            Some(PlacementSpec::Explicit(vec![1, 0, 2, 3, 3, 2, 0, 1]))
        );
        // Hand-written orders go with them; a stage and its mirror on one rank trade nothing.
        let mut written = two.clone();
        written.placement = None;
        written.orders = Some(vec![vec!["0F0".into()], vec!["1F0".into()], vec![], vec![]]);
        Edit::SwapStageRanks {
            ranks: ranks.clone(),
            a: 0,
            b: 1,
        }
        .apply(&mut written);
        assert_eq!(
            written.orders,
            Some(vec![vec!["1F0".into()], vec!["0F0".into()], vec![], vec![]])
        );
        let mut same = two.clone();
        same.placement = None;
        Edit::SwapStageRanks { ranks, a: 0, b: 7 }.apply(&mut same);
        assert_eq!(same.placement, None);
    }

    #[test]
    fn a_moved_step_makes_the_orders_hand_written_and_pins_a_cost_based_owner_map() {
        let orders = vec![
            vec!["0F0".to_string(), "0F1".into(), "0B0".into(), "0B1".into()],
            vec!["1F0".to_string(), "1B0".into()],
        ];
        let mut s = scenario();
        s.owner = OwnerSpec::GreedySlack;
        s.orders_csv = Some("o.csv".into());
        let moved = |from, to| Edit::MoveStep {
            orders: orders.clone(),
            rank: 0,
            from,
            to,
            owner: vec![1, 0],
        };
        // Not moved: nothing changes.
        let before = s.clone();
        moved(2, 2).apply(&mut s);
        assert_eq!(s, before);
        moved(2, 0).apply(&mut s);
        assert_eq!(
            s.orders,
            Some(vec![
                vec!["0B0".to_string(), "0F0".into(), "0F1".into(), "0B1".into()],
                vec!["1F0".to_string(), "1B0".into()],
            ])
        );
        assert_eq!(
            (s.orders_csv, s.owner),
            (None, OwnerSpec::Explicit(vec![1, 0]))
        );
    }
}
