//! OctoPipe's tuner on the scenario on screen (`mpipe tune`): run on a worker on request, its
//! iterations shown as they end, Stop keeping the best pipeline so far, and the result shown
//! only while the document is the one it was tuned from.

use super::jobs::Job;
use mpipe::tune::octopipe::{Iteration, Tuned};
use std::sync::{Arc, Mutex};

/// A search running, the document generation it started from, and its iterations so far.
#[derive(Debug)]
pub struct Running {
    pub job: Job<Result<Tuned, String>>,
    pub generation: u64,
    pub live: Arc<Mutex<Vec<Iteration>>>,
    /// Iterations at most (the progress bar's end).
    pub budget: usize,
}

impl Running {
    /// The iterations that have ended, in order.
    pub fn iterations(&self) -> Vec<Iteration> {
        self.live.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// The tuner panel's state.
#[derive(Debug, Default)]
pub struct Tuner {
    pub running: Option<Running>,
    /// The last search and the document generation it started from.
    pub result: Option<(u64, Tuned)>,
    /// The scheduling phase makes OctoPipe's own move only (the split backward), as the paper's
    /// Algorithm 1; else it also tries every other schedule of the registry.
    pub own_moves_only: bool,
}

impl Tuner {
    /// The search of the document at `generation`, if that is the one tuned.
    pub fn current(&self, generation: u64) -> Option<&Tuned> {
        self.result
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .map(|(_, t)| t)
    }
}
