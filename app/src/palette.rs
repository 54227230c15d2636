//! The core's palette as egui colours.

use egui::Color32;

/// The fill of a compute chip of `region` (1-based).
pub fn chip(region: usize, backward: bool) -> Color32 {
    let (r, g, b) = mpipe::palette::chip(region, backward);
    Color32::from_rgb(r, g, b)
}
