//! Import profiler traces (Chrome trace JSON, .json.gz): every rank's recovered schedule actions.

use crate::input::{TraceArgs, load_traces};
use crate::output::{emit, emit_json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One file per rank, or one merged file.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub trace: TraceArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args { files, json, trace } = args;
    let (measurement, alignment) = load_traces(&files, &trace)?;
    let report = mpipe::trace::report::TraceReport::new(&measurement, &alignment);
    if json {
        emit_json(&report)?;
    } else {
        emit(&report.text())?;
    }
    Ok(())
}
