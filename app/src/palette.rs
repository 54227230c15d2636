//! Colours: one hue per region, light for forward, dark for backward.

use egui::Color32;

const REGION_HUES: [(u8, u8, u8); 6] = [
    (0xE4, 0x8A, 0x2C), // amber: region 1 (the encoder in Mpipe samples)
    (0x3D, 0x7E, 0xC9), // blue
    (0x4C, 0xA6, 0x6B), // green
    (0x9B, 0x5D, 0xC4), // violet
    (0xC9, 0x4C, 0x5C), // red
    (0x3A, 0xA8, 0xA8), // teal
];

/// The fill of a compute chip of `region` (1-based).
pub fn chip(region: usize, backward: bool) -> Color32 {
    let (r, g, b) = REGION_HUES
        .get(region.saturating_sub(1) % REGION_HUES.len())
        .copied()
        .unwrap_or((0x80, 0x80, 0x80));
    if backward {
        Color32::from_rgb(r / 2 + 10, g / 2 + 10, b / 2 + 10)
    } else {
        Color32::from_rgb(r, g, b)
    }
}
