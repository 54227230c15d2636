//! Searches that call the simulator, run after `derive`: the cost-based owner maps.

pub mod owners;
