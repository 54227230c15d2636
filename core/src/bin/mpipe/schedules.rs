//! Every schedule the studio knows: what it is, its reference, and its textbook formulas.

use crate::output::emit;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    emit(&mpipe::report::schedules::text())
}
