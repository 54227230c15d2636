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

impl<T> Stepped<T> {
    /// Runs `step` until it is done (`Some`) or cancelled (`None`): what a search's steps come
    /// to when its caller has a thread of its own.
    pub fn run_to_end<E>(mut step: impl FnMut() -> Result<Stepped<T>, E>) -> Result<Option<T>, E> {
        loop {
            match step()? {
                Stepped::Again => {}
                Stepped::Done(t) => return Ok(Some(t)),
                Stepped::Cancelled => return Ok(None),
            }
        }
    }
}
