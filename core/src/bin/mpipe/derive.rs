//! Derive placement, collectives and per-rank order of a scenario.

use crate::input::{SimArgs, derive_file_with, refuse_to_overwrite};
use crate::output::{emit, emit_json};
use mpipe::report::derive::DeriveReport;
use std::path::Path;
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
    /// Also write the orders as PyTorch's pipeline CSV (`compute_only`: one row per rank, one
    /// cell per time step, empty = idle), which its `_load_csv` reads.
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Follow the orders in this pipeline CSV (PyTorch's `_dump_csv` format) instead of the
    /// scenario's.
    #[arg(long, value_name = "FILE.csv")]
    pub orders_csv: Option<PathBuf>,
    /// How a cost-based owner map (`greedy_slack`, `optimized`) simulates while it is chosen.
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        file,
        json,
        table,
        csv,
        orders_csv,
        sim,
    } = args;
    let (scenario, d) = derive_file_with(&file, Some(sim.options()), orders_csv.as_deref())?;
    if let Some(out) = &csv {
        // The CSV the scenario names (beside it) is an input too.
        let named = scenario
            .orders_csv
            .as_ref()
            .map(|name| file.parent().unwrap_or(Path::new(".")).join(name));
        let mut inputs = vec![file.as_path()];
        inputs.extend(orders_csv.as_deref());
        inputs.extend(named.as_deref());
        refuse_to_overwrite(out, &inputs)?;
        let mut bytes = Vec::new();
        mpipe::report::orders_csv::write(&d, &mut bytes)?;
        crate::input::write_output(out, &bytes)?;
    }
    if table {
        emit(&mpipe::report::table::OperatorTable::new(&d).text())?;
    } else if json {
        emit_json(&DeriveReport::new(&scenario.name, &d))?;
    } else {
        emit(&mpipe::report::derive::text(&scenario.name, &d))?;
    }
    Ok(())
}
