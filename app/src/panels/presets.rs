//! Hardware presets for the editor: rough public figures (dense bf16 peak, HBM bandwidth, one
//! direction of the rank-to-rank link, device memory). Edit the numbers after picking one.

use mpipe::scenario::hardware::Hardware;

/// A named hardware setting.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    pub hardware: Option<Hardware>,
}

fn hw(peak: f64, hbm: f64, alpha: f64, link: f64, memory: f64) -> Option<Hardware> {
    Some(Hardware {
        peak_flops: Some(peak),
        hbm_bytes_per_s: Some(hbm),
        link_alpha_s: Some(alpha),
        link_bytes_per_s: Some(link),
        memory_bytes: Some(memory),
        ..Hardware::default()
    })
}

/// Every preset, the first being "no hardware" (free communication).
pub fn presets() -> Vec<Preset> {
    vec![
        Preset {
            name: "none (free communication)",
            hardware: None,
        },
        Preset {
            name: "NVIDIA A100 80GB, NVLink",
            hardware: hw(312e12, 2.0e12, 5e-6, 300e9, 80e9),
        },
        Preset {
            name: "NVIDIA A100 80GB, PCIe 4.0",
            hardware: hw(312e12, 1.9e12, 1e-5, 25e9, 80e9),
        },
        Preset {
            name: "NVIDIA H100 80GB, NVLink",
            hardware: hw(989e12, 3.35e12, 5e-6, 450e9, 80e9),
        },
        Preset {
            name: "Ascend 910C, supernode",
            hardware: hw(752e12, 3.2e12, 1e-5, 196e9, 128e9),
        },
    ]
}

/// The preset `hardware` equals, if any.
pub fn matching(hardware: &Option<Hardware>) -> Option<&'static str> {
    presets()
        .into_iter()
        .find(|p| &p.hardware == hardware)
        .map(|p| p.name)
}
