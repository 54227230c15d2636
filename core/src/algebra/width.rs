//! Each layer's width, resolved (DESIGN.md §3.1, "a region's width"): a layer group's own
//! `width`, else its region's entry of the scenario's `width` list; then the devices it runs on —
//! each rank is as many devices as the widest layer it runs needs (`devices`, else `tp × cp`), and
//! a layer runs on the fewest devices among the ranks that run it, the devices beyond its
//! `tp × cp` running data-parallel inside the stage.

use crate::algebra::model::{Layer, StageWidth};
use crate::algebra::plan::{Region, RegionOwner};
use crate::scenario::width::{WidthError, WidthSpec};

/// Why the widths cannot be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WidthRule {
    #[error("rule `width`: `width` has {given} entries but there are {regions} regions")]
    Length { given: usize, regions: usize },
    #[error("rule `width`: `width[{index}]`: {source}")]
    Field { index: usize, source: WidthError },
    #[error(
        "rule `width`: layer `{layer}` needs tp × cp = {group} devices, which do not divide the {devices} devices of rank {rank} (as layer `{widest}` asks); give the layers that share a rank widths whose devices are multiples of each other's tp × cp"
    )]
    Devices {
        layer: String,
        /// The layer that makes the rank as wide as it is.
        widest: String,
        region: usize,
        /// The layer group (its index in `model.layers`) when its own width is the cause.
        own: Option<usize>,
        group: usize,
        devices: usize,
        rank: usize,
    },
    #[error(
        "rule `width`: layer `{layer}` has ep = {ep}, which does not divide its {peers} expert-parallel peers (devices / tp = {shares} × data_parallel = {data_parallel}): expert parallelism is carved out of the data- and context-parallel devices"
    )]
    ExpertGroup {
        layer: String,
        region: usize,
        /// The layer group (its index in `model.layers`) when its own width is the cause.
        own: Option<usize>,
        ep: usize,
        peers: usize,
        shares: usize,
        data_parallel: usize,
    },
}

impl WidthRule {
    /// The scenario field the error is about.
    pub fn field(&self) -> String {
        match self {
            WidthRule::Length { .. } => "width".into(),
            WidthRule::Field { index, source } => format!("width[{index}].{}", source.field()),
            WidthRule::Devices {
                own: Some(spec), ..
            } => format!("model.layers[{spec}].width"),
            WidthRule::ExpertGroup {
                own: Some(spec), ..
            } => format!("model.layers[{spec}].width.ep"),
            WidthRule::Devices { region, .. } => format!("width[{}]", region - 1),
            WidthRule::ExpertGroup { region, .. } => format!("width[{}].ep", region - 1),
        }
    }
}

/// Checks the scenario's `width` list against its `regions` (of the model's cut).
pub fn check_list(widths: Option<&[WidthSpec]>, regions: usize) -> Result<(), WidthRule> {
    let Some(widths) = widths else {
        return Ok(());
    };
    if widths.len() != regions {
        return Err(WidthRule::Length {
            given: widths.len(),
            regions,
        });
    }
    for (index, w) in widths.iter().enumerate() {
        w.check()
            .map_err(|source| WidthRule::Field { index, source })?;
    }
    Ok(())
}

/// The layer group (index in `model.layers`, of the given `counts`) layer `layer` expands from.
fn group_of(counts: &[usize], layer: usize) -> Option<usize> {
    let mut end = 0usize;
    counts.iter().position(|&c| {
        end = end.saturating_add(c);
        layer < end
    })
}

/// Gives every layer its width: its own, else its region's (`widths`, aligned with the model's
/// regions), on the devices of the ranks that run it (`regions` with their mirrors placed);
/// `counts` are the layer groups' counts, to name a group whose own width is wrong.
pub fn resolve(
    layers: &mut [Layer],
    regions: &[Region],
    widths: Option<&[WidthSpec]>,
    (ranks, data_parallel): (usize, usize),
    counts: &[usize],
) -> Result<(), WidthRule> {
    let own = |i: usize, layer: &Layer| layer.own_width.then(|| group_of(counts, i)).flatten();
    for region in regions.iter().filter(|r| r.mirror_of.is_none()) {
        let Some(spec) = widths.and_then(|w| w.get(region.index.saturating_sub(1))) else {
            continue;
        };
        for layer in layers.get_mut(region.layers.clone()).unwrap_or_default() {
            if !layer.own_width {
                layer.width = StageWidth::from_spec(spec);
            }
        }
    }
    if widths.is_none() && !layers.iter().any(|l| l.own_width) {
        // Every stage one device: nothing to resolve.
        return Ok(());
    }
    // The widest layer of each region (its devices and index): what a Replicated region asks
    // of every rank.
    let widest_of = |range: std::ops::Range<usize>| {
        range
            .filter_map(|i| Some((layers.get(i)?.width.devices, i)))
            .fold((1, 0), |best, d| if d.0 > best.0 { d } else { best })
    };
    let region_widest: Vec<(usize, usize)> = regions
        .iter()
        .map(|r| widest_of(r.layers.clone()))
        .collect();
    // Each rank: as many devices as the widest layer it runs asks for.
    let mut rank_devices: Vec<(usize, usize)> = vec![(1, 0); ranks];
    for (region, &widest) in regions.iter().zip(&region_widest) {
        for (rank, slot) in rank_devices.iter_mut().enumerate() {
            let here = match &region.owner {
                RegionOwner::ByLayer { slabs, .. } => {
                    widest_of(slabs.get(rank).cloned().unwrap_or(0..0))
                }
                RegionOwner::ByMicrobatch => widest,
            };
            if here.0 > slot.0 {
                *slot = here;
            }
        }
    }
    // The devices a rank can have, each once with the first rank that has it (a Replicated
    // region runs on every rank).
    let mut distinct: Vec<(usize, usize, usize)> = Vec::new();
    for (rank, &(devices, widest)) in rank_devices.iter().enumerate() {
        if !distinct.iter().any(|d| d.0 == devices) {
            distinct.push((devices, rank, widest));
        }
    }
    // Each layer: the fewest devices among the ranks that run it, each a multiple of its
    // `tp × cp`.
    let mut fewest: Vec<Option<usize>> = vec![None; layers.len()];
    for region in regions {
        let on: Vec<(std::ops::Range<usize>, (usize, usize, usize))> = match &region.owner {
            RegionOwner::ByLayer { slabs, .. } => rank_devices
                .iter()
                .enumerate()
                .map(|(rank, &(devices, widest))| {
                    (
                        slabs.get(rank).cloned().unwrap_or(0..0),
                        (devices, rank, widest),
                    )
                })
                .filter(|(slab, _)| !slab.is_empty())
                .collect(),
            RegionOwner::ByMicrobatch => distinct
                .iter()
                .map(|&d| (region.layers.clone(), d))
                .collect(),
        };
        for (range, (devices, rank, widest)) in on {
            for i in range {
                let (Some(layer), Some(slot)) = (layers.get(i), fewest.get_mut(i)) else {
                    continue;
                };
                let group = layer.width.tp.saturating_mul(layer.width.cp).max(1);
                if devices % group != 0 {
                    return Err(WidthRule::Devices {
                        layer: layer.name.clone(),
                        widest: layers
                            .get(widest)
                            .map_or_else(String::new, |l| l.name.clone()),
                        region: region.mirror_of.unwrap_or(region.index),
                        own: own(i, layer),
                        group,
                        devices,
                        rank,
                    });
                }
                *slot = Some(slot.map_or(devices, |d| d.min(devices)));
            }
        }
    }
    for (layer, devices) in layers.iter_mut().zip(fewest) {
        if let Some(d) = devices {
            layer.width.devices = d;
        }
    }
    for region in regions.iter().filter(|r| r.mirror_of.is_none()) {
        for i in region.layers.clone() {
            let Some(layer) = layers.get(i) else {
                continue;
            };
            let w = layer.width;
            let shares = w.devices / w.tp.max(1);
            let peers = shares.saturating_mul(data_parallel);
            if w.ep > 1 && peers % w.ep != 0 {
                return Err(WidthRule::ExpertGroup {
                    layer: layer.name.clone(),
                    region: region.index,
                    own: own(i, layer),
                    ep: w.ep,
                    peers,
                    shares,
                    data_parallel,
                });
            }
        }
    }
    Ok(())
}
