//! Derive placement, collectives and per-rank order of a scenario.

use crate::input::{SimArgs, derive_file};
use crate::output::{emit, emit_json};
use mpipe::report::derive::DeriveReport;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub file: PathBuf,
    /// Print the derivation as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the global operator table (time slot × rank, BigMac's `VF0 F0 … B3 VB3`) instead.
    #[arg(long, conflicts_with = "json")]
    pub table: bool,
    /// How a cost-based owner map (`greedy_slack`, `optimized`) simulates while it is chosen.
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        file,
        json,
        table,
        sim,
    } = args;
    let (scenario, d) = derive_file(&file, Some(sim.options()))?;
    if table {
        emit(&mpipe::report::table::OperatorTable::new(&d).text())?;
    } else if json {
        emit_json(&DeriveReport::new(&scenario.name, &d))?;
    } else {
        emit(&mpipe::report::derive::text(&scenario.name, &d))?;
    }
    Ok(())
}
