//! The per-rank Gantt timeline: geometry (pure, tested) and the egui widget that paints it.

pub mod geometry;
pub mod measured;
pub mod widget;

pub use widget::{GanttOptions, GanttState, gantt};
