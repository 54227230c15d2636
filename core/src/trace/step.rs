//! A training step of one rank, as the recovery finds it (a `ProfilerStep#N` marker, or the
//! repetition of the schedule) and the inference of unannotated actions reads it.

use serde::Serialize;

/// One training step of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepWindow {
    /// `N` of `ProfilerStep#N`, when the marker carries it.
    pub number: Option<i64>,
    pub start_ns: i64,
    pub end_ns: i64,
}
