//! Colours shared by the app and the SVG renderer: one hue per region, light for forward and dark
//! for backward, plus the marks for warmup windows, spill and idle time.

/// Region hues (1-based region `j` uses entry `(j − 1) mod 6`).
pub const REGION_HUES: [(u8, u8, u8); 6] = [
    (0xE4, 0x8A, 0x2C), // amber: region 1 (the encoder in Mpipe samples)
    (0x3D, 0x7E, 0xC9), // blue
    (0x4C, 0xA6, 0x6B), // green
    (0x9B, 0x5D, 0xC4), // violet
    (0xC9, 0x4C, 0x5C), // red
    (0x3A, 0xA8, 0xA8), // teal
];

/// Warmup window shading.
pub const WARMUP: (u8, u8, u8) = (0x9F, 0xC5, 0xE8);
/// Encoder spill marking.
pub const SPILL: (u8, u8, u8) = (0xD6, 0x27, 0x28);
/// Collectives.
pub const COMM: (u8, u8, u8) = (0x88, 0x88, 0x88);

/// The `i`-th hue (0-based), cycling through [`REGION_HUES`].
pub fn hue(i: usize) -> (u8, u8, u8) {
    REGION_HUES
        .get(i % REGION_HUES.len())
        .copied()
        .unwrap_or((0x80, 0x80, 0x80))
}

/// The fill of a compute event of `region` (1-based).
pub fn chip(region: usize, backward: bool) -> (u8, u8, u8) {
    let (r, g, b) = hue(region.saturating_sub(1));
    if backward {
        (r / 2 + 10, g / 2 + 10, b / 2 + 10)
    } else {
        (r, g, b)
    }
}

/// `#rrggbb`.
pub fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}
