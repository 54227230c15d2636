//! The order graph: typed events and edges, each rank's execution order, the deadlock check,
//! and a flat copy of the adjacency for the passes that walk a million events.

pub mod adjacency;
pub mod build;
pub mod compose;
pub mod deadlock;
pub mod event;
pub mod explicit;
pub mod order;
