//! BigMac's three designs of the scenario on screen (`mpipe compare-designs`), computed on a
//! worker on request and shown only while the document is the one they were computed from.

use mpipe::tune::designs::DesignComparison;

/// The numbers of microbatches the app compares the designs at.
pub const MICROBATCHES: [usize; 4] = [8, 16, 32, 64];

/// The designs panel's state: the comparison of the document it was computed from.
pub type Designs = super::analysis::Analysis<DesignComparison>;
