//! Import profiler traces (Chrome trace JSON, .json.gz): every rank's recovered schedule actions.

use crate::input::{TraceArgs, load_traces};
use crate::output::{emit, emit_json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One file per rank, or one merged file.
    #[arg(required_unless_present = "print_rules")]
    pub files: Vec<PathBuf>,
    #[arg(long)]
    pub json: bool,
    /// Print the schedule rules in use (the built-in set, or `--rules`'s) as JSON, to edit and
    /// give back with `--rules`, and read no trace.
    #[arg(long)]
    pub print_rules: bool,
    #[command(flatten)]
    pub trace: TraceArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        files,
        json,
        print_rules,
        trace,
    } = args;
    if print_rules {
        let rules = crate::input::load_rules(&trace)?;
        return emit(&format!("{}\n", serde_json::to_string_pretty(&rules)?));
    }
    let (measurement, alignment) = load_traces(&files, &trace)?;
    let report = mpipe::trace::report::TraceReport::new(&measurement, &alignment);
    if json {
        emit_json(&report)?;
    } else {
        emit(&report.text())?;
    }
    Ok(())
}
