//! The order graph: typed events and edges stored flat, built microbatch by microbatch, each
//! rank's execution order (the wavefront's slots, Replicated work joined by its composition
//! policy, or hand-written orders) and its streams' links, early recomputation (Mario), activation
//! offload's copies, the deadlock check and its repair, logical time, and `derive`, which puts it
//! all together.

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
pub mod order_graph;
pub mod recompute;
pub mod time;
