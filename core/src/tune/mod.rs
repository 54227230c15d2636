//! Searches that call the simulator, run after `derive`: the cost-based owner maps, and BigMac's
//! three designs compared over the number of microbatches.

pub mod designs;
pub mod nested;
pub mod octopipe;
pub mod owners;
