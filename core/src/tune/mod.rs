//! Searches that call the simulator, run after `derive`: the orders of schedules that order by
//! the stages' costs, the cost-based owner maps (and with them
//! the one pipeline from a scenario to its simulation), the nested encoder placed in real time,
//! BigMac's three designs compared over the number of microbatches, OctoPipe's tuner,
//! JanusPipe's WaveK sweep, GARS packing compared, and a schedule fitted under the device's
//! capacity by offload and recomputation.

pub mod costed;
pub mod designs;
pub mod fit_memory;
pub mod nested;
pub mod octopipe;
pub mod owners;
pub mod packing;
pub mod pipeline;
pub mod wave_sweep;

/// One step of a search run in steps (BigMac's designs, the WaveK sweep): more to do, the
/// result, or stopped by its caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Stepped<T> {
    Again,
    Done(T),
    Cancelled,
}
