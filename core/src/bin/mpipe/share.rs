//! A scenario as a link to the web build: `mpipe share FILE --base URL` prints the URL whose
//! fragment carries the scenario (`mpipe::scenario::share`), after checking that it derives.

use crate::input::derive_file;
use crate::output::emit;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    pub file: PathBuf,
    /// The address of the web build the link opens (e.g. `https://example.org/studio/`); without
    /// it only the fragment (`#scenario=…`) is printed.
    #[arg(long, default_value = "")]
    pub base: String,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args { file, base } = args;
    // A link to a scenario that does not derive would open to an error: refused here instead.
    // The pipeline CSV a scenario names is read in, so the link carries its orders.
    let (scenario, _) = derive_file(&file, None)?;
    let base = base.split('#').next().unwrap_or_default();
    let fragment = mpipe::scenario::share::to_fragment(&scenario.to_json_string());
    emit(&format!("{base}#{fragment}\n"))?;
    Ok(())
}
