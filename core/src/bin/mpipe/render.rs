//! Draw the simulated Gantt chart as SVG.

use crate::input::{SimArgs, refuse_to_overwrite, simulate_file_for};
use crate::output::emit;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub file: PathBuf,
    /// Where to write the SVG.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: PathBuf,
    #[command(flatten)]
    pub sim: SimArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args { file, svg, sim } = args;
    refuse_to_overwrite(&svg, &[&file])?;
    let (scenario, simulation) =
        simulate_file_for(&file, sim, mpipe::algebra::budget::Use::Render)?;
    crate::input::write_output(
        &svg,
        mpipe::report::svg::render(&scenario.chart_title(), &simulation).as_bytes(),
    )?;
    emit(&format!("wrote {}\n", svg.display()))?;
    Ok(())
}
