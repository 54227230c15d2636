//! Cost and simulation: a duration for every event, the event-driven engine (each rank's compute
//! stream and the transfers), the run that gathers everything a user reads off it (metrics,
//! memory, critical path), the encoder-free run, the (max,+) check and the expected step under
//! measured jitter. What a painter draws of
//! it is the view's ([`crate::view`]).

pub mod cost;
pub mod encoder_free;
pub mod engine;
pub mod jitter;
pub mod maxplus;
pub mod memory;
pub mod metrics;
pub mod run;
pub mod stage_comm;
