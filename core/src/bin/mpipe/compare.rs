//! Simulate two scenarios and print the speedup of B over A and the per-rank differences.

use crate::input::{SimArgs, simulate_file};
use crate::output::{emit, emit_json};
use mpipe::Scenario;
use mpipe::report::simulate::{self as sim_report, CompareReport};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    pub a: PathBuf,
    pub b: PathBuf,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args { a, b, json, sim } = args;
    let (sa, a_sim) = simulate_file(&a, sim)?;
    let (sb, b_sim) = simulate_file(&b, sim)?;
    let name = |s: &Scenario, p: &Path| {
        if s.name.is_empty() {
            p.display().to_string()
        } else {
            s.name.clone()
        }
    };
    let (an, bn) = (name(&sa, &a), name(&sb, &b));
    if json {
        let report = CompareReport::new(&an, &a_sim, &bn, &b_sim);
        emit_json(&report)?;
    } else {
        emit(&sim_report::compare_text(&an, &a_sim, &bn, &b_sim))?;
    }
    Ok(())
}
