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

/// How a rank's steps were told apart (DESIGN.md §5 "Reading a run right").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// The trace's step markers (`ProfilerStep#N`).
    Markers,
    /// The ops that close a step (the optimizer's step, zeroing the gradients), in a trace
    /// without markers.
    StepEnds,
    /// A compute action of a known microbatch running again.
    Repetition,
    /// The run's structure: its sequence of forwards and backwards repeats every
    /// `forwards` forwards (the shortest period common to every rank).
    Structure { forwards: usize },
    /// Nothing tells the steps apart: the whole trace is read as one step.
    Unknown,
}

impl StepSource {
    /// For reports: "from its ProfilerStep# markers".
    pub fn phrase(self) -> String {
        match self {
            StepSource::Markers => "from its step markers (ProfilerStep#)".to_string(),
            StepSource::StepEnds => {
                "from the optimizer's ops that close each step (no step markers)".to_string()
            }
            StepSource::Repetition => {
                "from actions repeating (no step markers or optimizer ops)".to_string()
            }
            StepSource::Structure { forwards } => format!(
                "from the run's structure: its forwards and backwards repeat every {forwards} forward(s) (no step markers or optimizer ops)"
            ),
            StepSource::Unknown => "not told apart: the whole trace is one step".to_string(),
        }
    }
}
