//! The timelines: the predicted per-rank Gantt chart, the predicted-vs-measured chart, their
//! shared time axis and the legend. The geometry (`crate::geometry`) and the tick computation
//! in `axis` are pure and unit-tested; the rest paints what `core`'s scene says. All charts keep
//! the same left margin, so their time axes line up with each other and with the memory plot.

pub mod axis;
pub mod legend;
pub mod measured;
pub mod predicted;

pub use predicted::{ChartInput, ChartOutput, chart_ui};

/// Width of the rank labels left of every chart's plot area.
pub const LABEL_W: f32 = 64.0;

/// A core palette colour as egui's.
pub fn rgb((r, g, b): mpipe::view::palette::Rgb) -> egui::Color32 {
    egui::Color32::from_rgb(r, g, b)
}

/// Zoom factor of one wheel notch's worth of scrolling (`exp(0.003 · points)`).
pub fn wheel_factor(scroll_y: f32) -> f64 {
    (f64::from(scroll_y) * 0.003).exp()
}
