//! Check a scenario file: exit 0 when valid, 2 with the broken rule (and the normal form) when not.

use crate::input::derive_file;
use crate::output::emit;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub file: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args { file } = args;
    let (scenario, d) = derive_file(&file, None)?;
    let schedule: Vec<_> = d.plan.schedule();
    emit(&format!(
        "{}: valid: {} over {} layers, P = {}, M = {}{}\n",
        file.display(),
        mpipe::schedules::skeleton::schedule_to_string(&schedule),
        d.plan.layers.len(),
        d.plan.ranks,
        d.plan.microbatches,
        if scenario.name.is_empty() {
            String::new()
        } else {
            format!(" ({})", scenario.name)
        }
    ))?;
    Ok(())
}
