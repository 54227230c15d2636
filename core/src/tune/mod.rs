//! Searches that call the simulator, run after `derive`: the cost-based owner maps, BigMac's
//! three designs compared over the number of microbatches, OctoPipe's tuner and JanusPipe's
//! WaveK sweep.

pub mod designs;
pub mod nested;
pub mod octopipe;
pub mod owners;
pub mod packing;
pub mod wave_sweep;
