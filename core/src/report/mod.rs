//! What the commands print and draw: the derive and simulate reports (JSON and text), the SVG
//! Gantt chart, the operator table and PyTorch's pipeline CSV.

pub mod derive;
pub mod formula;
pub mod orders_csv;
pub mod schedules;
pub mod simulate;
pub mod svg;
pub mod table;
