//! BigMac's three designs of the scenario on screen (`mpipe compare-designs`), computed on a
//! worker on request and shown only while the document is the one they were computed from.

use super::jobs::Job;
use mpipe::tune::designs::DesignComparison;

/// The numbers of microbatches the app compares the designs at.
pub const MICROBATCHES: [usize; 4] = [8, 16, 32, 64];

/// A comparison running, and the document generation it started from.
#[derive(Debug)]
pub struct Running {
    pub job: Job<Option<Result<DesignComparison, String>>>,
    pub generation: u64,
}

/// The designs panel's state.
#[derive(Debug, Default)]
pub struct Designs {
    pub running: Option<Running>,
    /// The last comparison and the document generation it was computed from.
    pub result: Option<(u64, DesignComparison)>,
}

impl Designs {
    /// The comparison of the document at `generation`, if that is the one computed.
    pub fn current(&self, generation: u64) -> Option<&DesignComparison> {
        self.result
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .map(|(_, c)| c)
    }
}
