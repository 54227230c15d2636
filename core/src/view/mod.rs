//! What a painter draws and a teacher reads, computed from a simulation: each event's and
//! transfer's timing, the scene both painters (the app's Gantt and the SVG writer) draw with its
//! colours, what a rank does at an instant, and finding events.

pub mod explain;
pub mod palette;
pub mod scene;
pub mod search;
pub mod timings;
