//! The order graph: typed events and edges, built microbatch by microbatch, each rank's execution
//! order (the wavefront's slots, Replicated work joined by its composition policy, or hand-written
//! orders), early recomputation (Mario), activation offload's copies, the deadlock check and its repair, logical time, a flat copy of the adjacency for the
//! passes that walk a million events, and `derive`, which puts it all together.

pub mod adjacency;
pub mod any_placement;
pub mod build;
pub mod builder;
pub mod compose;
pub mod deadlock;
pub mod derive;
pub mod event;
pub mod explicit;
pub mod offload;
pub mod order;
pub mod recompute;
pub mod time;
