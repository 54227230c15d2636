//! BigMac's three multimodal designs of one model (compute-efficient, memory-efficient, nested):
//! step time and per-rank peak memory of each as the number of microbatches grows.

use crate::input::{InputError, SimArgs, read_scenario};
use crate::output::{emit, emit_json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub scenario: PathBuf,
    /// The numbers of microbatches to compare at, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [8usize, 16, 32, 64])]
    pub microbatches: Vec<usize>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// The most microbatches one comparison simulates (every design at every count).
const MAX_MICROBATCHES: usize = 100_000;

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        scenario,
        microbatches,
        json,
        sim,
    } = args;
    if let Some(&m) = microbatches
        .iter()
        .find(|&&m| m == 0 || m > MAX_MICROBATCHES)
    {
        return Err(InputError(format!(
            "--microbatches: {m} is not between 1 and {MAX_MICROBATCHES}"
        ))
        .into());
    }
    let (s, _) = read_scenario(&scenario)?;
    let comparison = mpipe::tune::designs::compare_designs(&s, &microbatches, sim.options())
        .map_err(|e| InputError(format!("{}: {e}", scenario.display())))?;
    if json {
        emit_json(&comparison)?;
    } else {
        emit(&comparison.text())?;
    }
    Ok(())
}
