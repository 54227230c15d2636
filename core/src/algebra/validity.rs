//! Validity of a schedule and its normal form: every rule a scenario can break, each rejection
//! naming the rule and the field, and `plan` that turns a valid scenario into a [`Plan`].

use crate::algebra::budget::OverBudget;
use crate::algebra::finite::FiniteError;
use crate::algebra::gates::gates;
use crate::algebra::model::Layer;
use crate::algebra::placement::{Placement, PlacementError};
use crate::algebra::plan::{Plan, Region, RegionOwner, Wavefront};
use crate::scenario::Scenario;
use crate::scenario::edit::{Edit, Remedy};
use crate::scenario::layer::LayerError;
use crate::scenario::owner::OwnerSpec;
use crate::scenario::placement::PlacementSpec;
use crate::scenario::slab;
use crate::schedules::skeleton::{Skeleton, schedule_to_string};
use crate::schedules::{CutPosition, RunCtx, ScheduleRule};
use crate::vocab::layout::Layout;
use crate::vocab::limits::{MAX_LAYERS, MAX_MICROBATCHES, MAX_RANKS, MAX_SLOTS};
use crate::vocab::parameter::Parameter;
use crate::workload::WorkloadError;

/// A rule of the algebra (or of the file's sizes) that a scenario breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValidityError {
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// One of the wavefront's or a region's schedule's own rules.
    #[error(transparent)]
    Schedule(#[from] ScheduleRule),
    #[error("rule `sizes`: `{field}` must be at least 1")]
    ZeroSize { field: &'static str },
    #[error("rule `sizes`: the model has no layers")]
    NoLayers,
    #[error("rule `sizes`: `{field}` = {value} is larger than this version supports ({max})")]
    TooLarge {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "rule `sizes`: {regions} region(s) × {ranks} ranks × {microbatches} microbatches = {slots} slots of the order graph, more than this version supports ({max}); fewer microbatches (or ranks) fit"
    )]
    TooManySlots {
        regions: usize,
        ranks: usize,
        microbatches: usize,
        slots: usize,
        max: usize,
    },
    #[error("rule `layer-cost`: layer {index} (`{name}`): {source}")]
    LayerCost {
        index: usize,
        name: String,
        source: LayerError,
    },
    #[error(
        "rule `roofline-hardware`: layer {index} (`{name}`) gives roofline inputs, so `hardware.{missing}` must be set"
    )]
    RooflineHardware {
        index: usize,
        name: String,
        missing: &'static str,
    },
    #[error(
        "rule `cut-tiles`: cut[{index}] = {value} is outside (0, {layers}); boundaries must lie strictly inside the model's {layers} layers"
    )]
    CutOutOfRange {
        index: usize,
        value: usize,
        layers: usize,
    },
    #[error(
        "rule `cut-tiles`: cut[{index}] = {value} does not follow cut[{prev_index}] = {prev}; boundaries must be strictly increasing"
    )]
    CutNotIncreasing {
        index: usize,
        value: usize,
        prev_index: usize,
        prev: usize,
    },
    #[error(
        "rule `one-skeleton-per-region`: the cut makes {regions} region(s) but `schedule` gives {skeletons} skeleton(s)"
    )]
    SkeletonCount { regions: usize, skeletons: usize },
    #[error(
        "rule `no-adjacent-replicated`: regions {first} and {second} are both Replicated in {schedule}; adjacent transposes share one owner map and collapse into one region. Normal form: cut {normal_cut:?}, schedule {}",
        schedule_to_string(normal_schedule)
    )]
    AdjacentReplicated {
        first: usize,
        second: usize,
        schedule: String,
        normal_cut: Vec<usize>,
        normal_schedule: Vec<Skeleton>,
    },
    #[error("rule `sharded-slabs`: region {region} ({skeleton}) has {layers} layer(s) for {ranks} ranks; give per-rank layer counts in `slabs[{index}]` (zeros allowed)", index = region - 1)]
    TooFewLayers {
        region: usize,
        skeleton: Skeleton,
        layers: usize,
        ranks: usize,
    },
    #[error("rule `sharded-slabs`: `slabs` has {given} entries but there are {regions} regions")]
    SlabsLength { given: usize, regions: usize },
    #[error("rule `sharded-slabs`: `slabs[{index}]` gives counts for region {region}, which is Replicated (transpose runs whole on every rank)", index = region - 1)]
    SlabsForReplicated { region: usize },
    #[error("rule `sharded-slabs`: `slabs[{index}]` has {given} counts for {ranks} ranks", index = region - 1)]
    SlabsRanks {
        region: usize,
        given: usize,
        ranks: usize,
    },
    #[error("rule `sharded-slabs`: `slabs[{index}]` sums to {sum} but region {region} has {layers} layers", index = region - 1)]
    SlabsSum {
        region: usize,
        sum: usize,
        layers: usize,
    },
    #[error(
        "rule `{rule}`: `{field}` = {value} is set, but no region runs {readers} (the schedule is {schedule})"
    )]
    ParameterUnused {
        rule: &'static str,
        field: &'static str,
        value: usize,
        /// The schedules that read it, as `` `wavek` ``.
        readers: String,
        schedule: String,
    },
    #[error(
        "rule `four-phase-alone`: region {region} is {skeleton}, but the schedule also runs {other} (region {other_region}); second-order schedules run the whole model, four phases per microbatch, and do not compose with other skeletons yet"
    )]
    FourPhaseAlone {
        region: usize,
        skeleton: Skeleton,
        other: Skeleton,
        other_region: usize,
    },
    #[error(
        "rule `uniform-wavefront`: the Sharded regions {regions} form one wavefront but mix skeletons ({skeletons}); mixed skeletons in one wavefront are not defined yet"
    )]
    MixedRun {
        /// The Sharded regions, as `1, 2`.
        regions: String,
        /// The first region whose skeleton differs.
        culprit: usize,
        skeletons: String,
        /// The Sharded regions (1-based) and the skeleton that would make them uniform: the one
        /// fewest of them run (the one just chosen, typically), on a tie the culprit's.
        members: Vec<usize>,
        uniform: Skeleton,
    },
    #[error(
        "rule `owner`: the explicit owner map has {given} entries for {microbatches} microbatches"
    )]
    OwnerLength { given: usize, microbatches: usize },
    #[error("rule `owner`: owner[{mb}] = {rank} is not a rank (ranks are 0..{ranks})")]
    OwnerRank {
        mb: usize,
        rank: usize,
        ranks: usize,
    },
    #[error("rule `workload`: {0}")]
    Workload(#[from] WorkloadError),
    #[error("rule `static-memory`: `static_memory_factor` = {0} must be a finite number ≥ 0")]
    StaticMemory(f64),
    /// A figure, or a total derived from them, is not finite.
    #[error(transparent)]
    Finite(#[from] FiniteError),
    /// Deriving and simulating it would need more memory than this version allows.
    #[error(transparent)]
    Memory(#[from] OverBudget),
    #[error("rule `orders`: the scenario gives both `orders` and `orders_csv`; keep one of them")]
    OrdersTwice,
    /// A region's or a layer group's width.
    #[error(transparent)]
    Width(#[from] crate::algebra::width::WidthRule),
    #[error(
        "rule `orders`: `orders_csv` names `{file}`, which was not read (the CLI and the app read the files a scenario names; this caller gave its orders no file)"
    )]
    OrdersCsvUnread { file: String },
}

impl ValidityError {
    /// The short name of the rule broken.
    pub fn rule(&self) -> &'static str {
        use ValidityError::*;
        match self {
            Placement(_) => "placement",
            Schedule(e) => e.rule(),
            ZeroSize { .. } | NoLayers | TooLarge { .. } | TooManySlots { .. } => "sizes",
            LayerCost { .. } => "layer-cost",
            RooflineHardware { .. } => "roofline-hardware",
            CutOutOfRange { .. } | CutNotIncreasing { .. } => "cut-tiles",
            SkeletonCount { .. } => "one-skeleton-per-region",
            AdjacentReplicated { .. } => "no-adjacent-replicated",
            TooFewLayers { .. }
            | SlabsLength { .. }
            | SlabsForReplicated { .. }
            | SlabsRanks { .. }
            | SlabsSum { .. } => "sharded-slabs",
            MixedRun { .. } => "uniform-wavefront",
            ParameterUnused { rule, .. } => rule,
            FourPhaseAlone { .. } => "four-phase-alone",
            OwnerLength { .. } | OwnerRank { .. } => "owner",
            Workload(_) => "workload",
            StaticMemory(_) => "static-memory",
            Finite(e) => e.rule(),
            OrdersTwice | OrdersCsvUnread { .. } => "orders",
            Memory(_) => "memory",
            Width(_) => "width",
        }
    }

    /// The scenario field the error is about, as a path (`cut[1]`, `schedule`, `slabs[0]`).
    pub fn field(&self) -> String {
        use ValidityError::*;
        match self {
            Placement(e) => e.field(),
            Schedule(e) => e.field(),
            ZeroSize { field } | TooLarge { field, .. } => (*field).to_string(),
            NoLayers => "model.layers".into(),
            TooManySlots { .. } => "microbatches".into(),
            LayerCost { index, source, .. } => match source.field() {
                Some(field) => format!("model.layers[{index}].{field}"),
                None => format!("model.layers[{index}]"),
            },
            RooflineHardware { index, .. } => format!("model.layers[{index}]"),
            CutOutOfRange { index, .. } | CutNotIncreasing { index, .. } => format!("cut[{index}]"),
            SkeletonCount { .. } => "schedule".into(),
            AdjacentReplicated { second, .. } => format!("schedule[{}]", second - 1),
            TooFewLayers { region, .. } => format!("schedule[{}]", region - 1),
            SlabsLength { .. } => "slabs".into(),
            SlabsForReplicated { region } | SlabsRanks { region, .. } | SlabsSum { region, .. } => {
                format!("slabs[{}]", region - 1)
            }
            MixedRun { culprit, .. } => format!("schedule[{}]", culprit - 1),
            ParameterUnused { field, .. } => (*field).to_string(),
            FourPhaseAlone { other_region, .. } => format!("schedule[{}]", other_region - 1),
            OwnerLength { .. } => "owner".into(),
            OwnerRank { mb, .. } => format!("owner[{mb}]"),
            Workload(e) => e.field(),
            StaticMemory(_) => "static_memory_factor".into(),
            Finite(e) => e.field(),
            OrdersTwice | OrdersCsvUnread { .. } => "orders_csv".into(),
            Memory(e) => e.field().into(),
            Width(e) => e.field(),
        }
    }

    /// The change that makes the scenario valid, where one is known: the normal form, one rank a
    /// layer for a region with fewer layers than ranks, one skeleton for a mixed wavefront.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            ValidityError::AdjacentReplicated {
                normal_cut,
                normal_schedule,
                ..
            } => Some(Remedy {
                label: format!(
                    "Apply the normal form: cut {normal_cut:?}, schedule {}",
                    schedule_to_string(normal_schedule)
                ),
                edit: Edit::CutAndSchedule {
                    cut: normal_cut.clone(),
                    schedule: normal_schedule.clone(),
                },
            }),
            ValidityError::TooFewLayers {
                region,
                layers,
                ranks,
                ..
            } => Some(Remedy {
                label: format!(
                    "Give region {region}'s {layers} layer(s) one rank each (slabs[{}]; the other ranks get none)",
                    region.saturating_sub(1)
                ),
                edit: Edit::Slabs {
                    region: *region,
                    counts: Some(slab::balanced_counts(*layers, *ranks)),
                },
            }),
            ValidityError::MixedRun {
                regions,
                members,
                uniform,
                ..
            } => Some(Remedy {
                label: format!("Set every Sharded region ({regions}) to {}", uniform.name()),
                edit: Edit::Skeletons {
                    regions: members.clone(),
                    skeleton: *uniform,
                },
            }),
            _ => None,
        }
    }

    /// The normal form offered as a one-click fix, where there is one.
    pub fn normal_form(&self) -> Option<(Vec<usize>, Vec<Skeleton>)> {
        match self {
            ValidityError::AdjacentReplicated {
                normal_cut,
                normal_schedule,
                ..
            } => Some((normal_cut.clone(), normal_schedule.clone())),
            _ => None,
        }
    }
}

/// The normal form of `(cut, schedule)`: every maximal run of adjacent Replicated regions merged
/// into one `transpose` region. Assumes `cut.len() + 1 == schedule.len()`.
pub fn normal_form(cut: &[usize], schedule: &[Skeleton]) -> (Vec<usize>, Vec<Skeleton>) {
    let mut out_cut = Vec::new();
    let mut out_schedule: Vec<Skeleton> = Vec::new();
    for (j, &skeleton) in schedule.iter().enumerate() {
        let merges = skeleton.layout() == Layout::Replicated
            && out_schedule.last().map(|s| s.layout()) == Some(Layout::Replicated);
        if merges {
            continue;
        }
        if j > 0
            && let Some(&boundary) = cut.get(j - 1)
        {
            out_cut.push(boundary);
        }
        out_schedule.push(skeleton);
    }
    (out_cut, out_schedule)
}

/// Checks the cut tiles `U` and yields the regions' layer ranges.
pub fn check_cut(
    cut: &[usize],
    layers: usize,
) -> Result<Vec<std::ops::Range<usize>>, ValidityError> {
    for (index, &value) in cut.iter().enumerate() {
        if value == 0 || value >= layers {
            return Err(ValidityError::CutOutOfRange {
                index,
                value,
                layers,
            });
        }
        if let Some(prev_index) = index.checked_sub(1)
            && let Some(&prev) = cut.get(prev_index)
            && value <= prev
        {
            return Err(ValidityError::CutNotIncreasing {
                index,
                value,
                prev_index,
                prev,
            });
        }
    }
    let starts = std::iter::once(0).chain(cut.iter().copied());
    let ends = cut.iter().copied().chain(std::iter::once(layers));
    Ok(starts.zip(ends).map(|(a, b)| a..b).collect())
}

/// Checks `(cut, schedule)` against the validity rules: tiling, one skeleton per region, normal
/// form.
pub fn check_schedule(
    cut: &[usize],
    schedule: &[Skeleton],
    layers: usize,
) -> Result<Vec<std::ops::Range<usize>>, ValidityError> {
    let ranges = check_cut(cut, layers)?;
    if ranges.len() != schedule.len() {
        return Err(ValidityError::SkeletonCount {
            regions: ranges.len(),
            skeletons: schedule.len(),
        });
    }
    for (j, pair) in schedule.windows(2).enumerate() {
        if pair.iter().all(|s| s.layout() == Layout::Replicated) {
            let (normal_cut, normal_schedule) = normal_form(cut, schedule);
            return Err(ValidityError::AdjacentReplicated {
                first: j + 1,
                second: j + 2,
                schedule: schedule_to_string(schedule),
                normal_cut,
                normal_schedule,
            });
        }
    }
    Ok(ranges)
}

fn expand_layers(scenario: &Scenario) -> Result<Vec<Layer>, ValidityError> {
    let mut layers = Vec::new();
    for (index, spec) in scenario.model.layers.iter().enumerate() {
        let expanded =
            crate::algebra::model::expand(spec).map_err(|source| ValidityError::LayerCost {
                index,
                name: spec.name.clone(),
                source,
            })?;
        if spec
            .cost()
            .is_ok_and(|c| matches!(c, crate::scenario::layer::Cost::Roofline { .. }))
        {
            let hw = scenario.hardware.as_ref();
            let missing = if hw.and_then(|h| h.peak_flops).is_none() {
                Some("peak_flops")
            } else if hw.and_then(|h| h.hbm_bytes_per_s).is_none() {
                Some("hbm_bytes_per_s")
            } else {
                None
            };
            if let Some(missing) = missing {
                return Err(ValidityError::RooflineHardware {
                    index,
                    name: spec.name.clone(),
                    missing,
                });
            }
        }
        layers.extend(expanded);
    }
    if layers.is_empty() {
        return Err(ValidityError::NoLayers);
    }
    Ok(layers)
}

fn check_limits(scenario: &Scenario) -> Result<(), ValidityError> {
    let too_large = |field, value, max| ValidityError::TooLarge { field, value, max };
    for (field, value, max) in [
        ("ranks", scenario.ranks, MAX_RANKS),
        ("microbatches", scenario.microbatches, MAX_MICROBATCHES),
        ("data_parallel", scenario.data_parallel, MAX_RANKS),
    ] {
        if value > max {
            return Err(too_large(field, value, max));
        }
    }
    let layers = scenario
        .model
        .layers
        .iter()
        .try_fold(0usize, |sum, l| sum.checked_add(l.count))
        .unwrap_or(usize::MAX);
    if layers > MAX_LAYERS {
        return Err(too_large("model.layers", layers, MAX_LAYERS));
    }
    // A bidirectional schedule's mirrors are regions of the order graph too.
    let mirrors = scenario
        .schedule
        .iter()
        .filter(|s| s.bidirectional() && s.layout() == Layout::Sharded)
        .count();
    let regions = (scenario.schedule.len() + mirrors).max(1);
    let slots = regions
        .saturating_mul(scenario.ranks)
        .saturating_mul(scenario.microbatches);
    if slots > MAX_SLOTS {
        return Err(ValidityError::TooManySlots {
            regions,
            ranks: scenario.ranks,
            microbatches: scenario.microbatches,
            slots,
            max: MAX_SLOTS,
        });
    }
    Ok(())
}

/// Validates a scenario and expands it into a [`Plan`].
pub fn plan(scenario: &Scenario) -> Result<Plan, ValidityError> {
    check_sizes(scenario)?;
    let (ranks, microbatches) = (scenario.ranks, scenario.microbatches);
    let layers = expand_layers(scenario)?;
    let ranges = check_schedule(&scenario.cut, &scenario.schedule, layers.len())?;
    crate::algebra::width::check_list(scenario.width.as_deref(), ranges.len())?;
    if let Some(given) = &scenario.slabs
        && given.len() != ranges.len()
    {
        return Err(ValidityError::SlabsLength {
            given: given.len(),
            regions: ranges.len(),
        });
    }
    let sharded: Vec<bool> = scenario
        .schedule
        .iter()
        .map(|s| s.layout() == Layout::Sharded)
        .collect();
    let first_sharded = scenario
        .schedule
        .iter()
        .find(|s| s.layout() == Layout::Sharded);
    let spec = match &scenario.placement {
        Some(spec) => spec.clone(),
        None => first_sharded.map_or(PlacementSpec::Default, |s| s.schedule().placement().into()),
    };
    // A bidirectional schedule mirrors every Sharded region after the model's regions: the
    // placement covers the mirrors' stages too (the V fold reverses them).
    let mirrored: Vec<usize> = if first_sharded.is_some_and(|s| s.bidirectional()) {
        (0..sharded.len())
            .filter(|&j| sharded.get(j) == Some(&true))
            .collect()
    } else {
        Vec::new()
    };
    let placed: Vec<bool> = sharded
        .iter()
        .copied()
        .chain(mirrored.iter().map(|_| true))
        .collect();
    let placement = Placement::new(&spec, &placed, ranks)?;
    let mut regions = regions(scenario, &ranges, &layers, &placement)?;

    let mut wavefront = wavefront(&regions, scenario)?;
    check_four_phase(&regions)?;
    let ctx = RunCtx {
        ranks,
        microbatches,
        chunks: wavefront.as_ref().map_or(0, Wavefront::chunks),
        wave_k: scenario.wave_k,
        activation_limit: scenario.activation_limit,
    };
    check_parameters(&scenario.schedule, &ctx)?;
    if let Some(w) = &wavefront {
        w.skeleton.schedule().check(&ctx)?;
    }
    let owner = owners(scenario)?;
    let workload = crate::workload::Workload::factors(scenario.workload.as_ref(), microbatches)?;
    let static_memory_factor = scenario.static_memory_factor.unwrap_or(1.0);
    if !(static_memory_factor.is_finite() && static_memory_factor >= 0.0) {
        return Err(ValidityError::StaticMemory(static_memory_factor));
    }
    crate::algebra::finite::check_totals(scenario, &workload, static_memory_factor)?;

    let mut region_gates = gates(&regions.iter().map(|r| r.trainable).collect::<Vec<_>>());
    if let Some(w) = &mut wavefront {
        // Each mirror: the same layers, slabs and gates as its region, on its own stages.
        let model = regions.len();
        for (k, &j) in mirrored.iter().enumerate() {
            let (Some(original), Some(&gate)) = (regions.get(j), region_gates.get(j)) else {
                continue;
            };
            let index = model + k + 1;
            let owner = match &original.owner {
                RegionOwner::ByLayer { slabs, order } => RegionOwner::by_stage(
                    order
                        .iter()
                        .map(|&r| slabs.get(r).cloned().unwrap_or(0..0))
                        .collect(),
                    placement.region_ranks(index),
                ),
                RegionOwner::ByMicrobatch => RegionOwner::ByMicrobatch,
            };
            let mirror = Region {
                index,
                owner,
                mirror_of: Some(original.index),
                ..original.clone()
            };
            w.mirrors.push(index);
            regions.push(mirror);
            region_gates.push(gate);
        }
    }
    // Early recomputation runs as its own action on a Sharded region's stages, and on a
    // second-order schedule's never (its force backward reruns): elsewhere the backward reruns.
    let mut layers = layers;
    for r in &regions {
        if r.layout() == Layout::Replicated || r.skeleton.second_order() {
            for l in layers.get_mut(r.layers.clone()).unwrap_or_default() {
                l.recompute_early = false;
            }
        }
    }
    let counts: Vec<usize> = scenario.model.layers.iter().map(|l| l.count).collect();
    crate::algebra::width::resolve(
        &mut layers,
        &regions,
        scenario.width.as_deref(),
        (ranks, scenario.data_parallel),
        &counts,
    )?;
    Ok(Plan {
        layers,
        regions,
        wavefront,
        ranks,
        microbatches,
        placement,
        gates: region_gates,
        data_parallel: scenario.data_parallel,
        owner,
        workload,
        hardware: scenario.hardware.clone().unwrap_or_default(),
        static_memory_factor,
        wave_k: scenario.wave_k,
        activation_limit: scenario.activation_limit,
    })
}

/// The checks made before anything is expanded: sizes of at least one, one source of hand
/// orders (read), the limits, the memory budget and the hardware figures.
fn check_sizes(scenario: &Scenario) -> Result<(), ValidityError> {
    for (field, value) in [
        ("ranks", scenario.ranks),
        ("microbatches", scenario.microbatches),
        ("data_parallel", scenario.data_parallel),
    ] {
        if value == 0 {
            return Err(ValidityError::ZeroSize { field });
        }
    }
    match (
        &scenario.orders,
        &scenario.orders_csv,
        &scenario.orders_from_csv,
    ) {
        (Some(_), Some(_), _) => return Err(ValidityError::OrdersTwice),
        (None, Some(file), None) => {
            return Err(ValidityError::OrdersCsvUnread { file: file.clone() });
        }
        _ => {}
    }
    check_limits(scenario)?;
    crate::algebra::budget::check(scenario, crate::algebra::budget::MEMORY_LIMIT_BYTES, 0.0)?;
    crate::algebra::finite::check_hardware(scenario.hardware.as_ref())?;
    crate::algebra::finite::check_jitter(scenario.jitter.as_ref())?;
    Ok(())
}

/// The regions of the cut (`ranges`), each with its skeleton, whether it trains, and its owner:
/// a Sharded region's slabs (given, or balanced) placed on their ranks, a Replicated region's
/// microbatch owners.
fn regions(
    scenario: &Scenario,
    ranges: &[std::ops::Range<usize>],
    layers: &[Layer],
    placement: &Placement,
) -> Result<Vec<Region>, ValidityError> {
    let ranks = scenario.ranks;
    let slab_counts = scenario.slabs.clone().unwrap_or_default();
    let mut regions = Vec::with_capacity(ranges.len());
    for (j, (range, &skeleton)) in ranges.iter().zip(&scenario.schedule).enumerate() {
        let index = j + 1;
        let counts = match (skeleton.layout(), slab_counts.get(j).cloned().flatten()) {
            (Layout::Replicated, Some(_)) => {
                return Err(ValidityError::SlabsForReplicated { region: index });
            }
            (Layout::Replicated, None) => None,
            (Layout::Sharded, Some(counts)) => {
                if counts.len() != ranks {
                    return Err(ValidityError::SlabsRanks {
                        region: index,
                        given: counts.len(),
                        ranks,
                    });
                }
                let sum = counts
                    .iter()
                    .try_fold(0usize, |a, &b| a.checked_add(b))
                    .unwrap_or(usize::MAX);
                if sum != range.len() {
                    return Err(ValidityError::SlabsSum {
                        region: index,
                        sum,
                        layers: range.len(),
                    });
                }
                Some(counts)
            }
            (Layout::Sharded, None) => {
                if range.len() < ranks {
                    return Err(ValidityError::TooFewLayers {
                        region: index,
                        skeleton,
                        layers: range.len(),
                        ranks,
                    });
                }
                Some(slab::balanced_counts(range.len(), ranks))
            }
        };
        let owner = match counts {
            Some(counts) => RegionOwner::by_stage(
                slab::slabs_from_counts(range.start, &counts),
                placement.region_ranks(index),
            ),
            None => RegionOwner::ByMicrobatch,
        };
        let trainable = layers
            .get(range.clone())
            .is_some_and(|ls| ls.iter().any(|l| l.trainable));
        regions.push(Region {
            index,
            layers: range.clone(),
            skeleton,
            trainable,
            owner,
            mirror_of: None,
        });
    }
    Ok(regions)
}

/// The owner of every microbatch: the explicit map (checked), or the spec's.
fn owners(scenario: &Scenario) -> Result<Vec<usize>, ValidityError> {
    let (ranks, microbatches) = (scenario.ranks, scenario.microbatches);
    match &scenario.owner {
        OwnerSpec::Explicit(list) => {
            if list.len() != microbatches {
                return Err(ValidityError::OwnerLength {
                    given: list.len(),
                    microbatches,
                });
            }
            if let Some((mb, &rank)) = list.iter().enumerate().find(|(_, r)| **r >= ranks) {
                return Err(ValidityError::OwnerRank { mb, rank, ranks });
            }
            Ok(list.clone())
        }
        spec => Ok(spec.resolve(ranks, microbatches)),
    }
}

/// A second-order (four-phase) skeleton runs alone: every region of the schedule is one.
fn check_four_phase(regions: &[Region]) -> Result<(), ValidityError> {
    let four = |r: &&Region| r.skeleton.second_order();
    if let Some(first) = regions.iter().find(four)
        && let Some(other) = regions.iter().find(|r| !four(r))
    {
        return Err(ValidityError::FourPhaseAlone {
            region: first.index,
            skeleton: first.skeleton,
            other: other.skeleton,
            other_region: other.index,
        });
    }
    Ok(())
}

/// Every parameter the scenario gives is read by one of its regions' schedules.
fn check_parameters(schedule: &[Skeleton], ctx: &RunCtx) -> Result<(), ValidityError> {
    for parameter in Parameter::ALL {
        if let Some(value) = ctx.given(parameter)
            && !schedule.iter().any(|s| s.reads(parameter))
        {
            return Err(ValidityError::ParameterUnused {
                rule: parameter.rule(),
                field: parameter.field(),
                value,
                readers: Skeleton::readers(parameter),
                schedule: schedule_to_string(schedule),
            });
        }
    }
    Ok(())
}

/// All Sharded regions, woven into one wavefront; they must share one skeleton. Each region's
/// schedule may stand where it does.
fn wavefront(regions: &[Region], scenario: &Scenario) -> Result<Option<Wavefront>, ValidityError> {
    let backbone = regions.iter().any(|r| r.layout() == Layout::Sharded);
    for r in regions {
        r.skeleton.schedule().check_position(&CutPosition {
            region: r.index,
            regions: regions.len(),
            backbone,
        })?;
    }
    let members: Vec<&Region> = regions
        .iter()
        .filter(|r| r.layout() == Layout::Sharded)
        .collect();
    let Some(first) = members.first() else {
        return Ok(None);
    };
    if let Some(culprit) = members.iter().find(|r| r.skeleton != first.skeleton) {
        let list = |f: &dyn Fn(&Region) -> String| -> String {
            members.iter().map(|r| f(r)).collect::<Vec<_>>().join(", ")
        };
        let count = |k: Skeleton| members.iter().filter(|r| r.skeleton == k).count();
        // Only a skeleton whose own rules the uniform wavefront would keep (not zbv over three
        // chunks, say); the fewest regions' first, the culprit's on a tie.
        let fits = |k: Skeleton| {
            k.schedule()
                .check(&RunCtx {
                    ranks: scenario.ranks,
                    microbatches: scenario.microbatches,
                    chunks: members.len(),
                    wave_k: scenario.wave_k,
                    activation_limit: scenario.activation_limit,
                })
                .is_ok()
        };
        let uniform = members
            .iter()
            .map(|r| r.skeleton)
            .filter(|&k| k != culprit.skeleton && fits(k))
            .fold(culprit.skeleton, |best, k| {
                if !fits(best) || count(k) < count(best) {
                    k
                } else {
                    best
                }
            });
        return Err(ValidityError::MixedRun {
            regions: list(&|r| r.index.to_string()),
            culprit: culprit.index,
            skeletons: list(&|r| r.skeleton.name().to_string()),
            members: members.iter().map(|r| r.index).collect(),
            uniform,
        });
    }
    Ok(Some(Wavefront {
        regions: members.iter().map(|r| r.index).collect(),
        skeleton: first.skeleton,
        mirrors: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedules::{ONE_F_ONE_B, TRANSPOSE};

    #[test]
    fn normal_form_merges_adjacent_transposes() {
        assert_eq!(
            normal_form(&[2, 4], &[TRANSPOSE, TRANSPOSE, ONE_F_ONE_B]),
            (vec![4], vec![TRANSPOSE, ONE_F_ONE_B])
        );
        assert_eq!(
            normal_form(&[2, 4, 6], &[ONE_F_ONE_B, TRANSPOSE, TRANSPOSE, TRANSPOSE]),
            (vec![2], vec![ONE_F_ONE_B, TRANSPOSE])
        );
        assert_eq!(
            normal_form(&[2], &[TRANSPOSE, ONE_F_ONE_B]),
            (vec![2], vec![TRANSPOSE, ONE_F_ONE_B])
        );
    }
}
