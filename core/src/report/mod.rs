//! What the commands print and draw: the derive and simulate reports (JSON and text), the SVG
//! Gantt chart, the operator table and the colours the app shares.

pub mod derive;
pub mod palette;
pub mod simulate;
pub mod svg;
pub mod table;
