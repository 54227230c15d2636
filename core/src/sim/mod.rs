//! Cost and simulation: a duration for every event, the event-driven engine (each rank's compute
//! stream and the transfers), the run that gathers everything a user reads off it (metrics,
//! memory, critical path), the (max,+) check, the scene both painters draw, and teaching reads
//! of a timeline (what a rank does at an instant, finding events).

pub mod cost;
pub mod encoder_free;
pub mod engine;
pub mod explain;
pub mod maxplus;
pub mod memory;
pub mod metrics;
pub mod run;
pub mod scene;
pub mod search;
