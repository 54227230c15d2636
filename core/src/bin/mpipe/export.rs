//! Export a scenario's prediction, or imported traces, as a Chrome trace (Perfetto opens it).

use crate::input::{
    SimArgs, TraceArgs, is_scenario, load_traces, refuse_to_overwrite, simulate_file_for,
};
use crate::output::emit;
use anyhow::Context;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A scenario, or one or more trace files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_name = "OUT.json")]
    pub chrome_trace: PathBuf,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        files,
        chrome_trace,
        trace,
        sim,
    } = args;
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    refuse_to_overwrite(&chrome_trace, &inputs)?;
    let mut bytes = Vec::new();
    let what = match files.as_slice() {
        [one] if is_scenario(one) => {
            let (scenario, simulation) =
                simulate_file_for(one, sim, mpipe::algebra::budget::Use::Export)?;
            mpipe::trace::export::write_prediction(&simulation, &scenario.name, &mut bytes)
                .context("writing the trace")?;
            "prediction"
        }
        _ => {
            let (measurement, alignment) = load_traces(&files, &trace)?;
            mpipe::trace::export::write_measurement(&measurement, &alignment, &mut bytes)
                .context("writing the trace")?;
            "measurement"
        }
    };
    crate::input::write_output(&chrome_trace, &bytes)?;
    emit(&format!("wrote the {what} to {}\n", chrome_trace.display()))?;
    Ok(())
}
