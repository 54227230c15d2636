//! `mpipe`: the headless command line of Mpipe Studio.

use anyhow::Context;
use clap::{Parser, Subcommand};
use mpipe::report::{self, DeriveReport};
use mpipe::{Scenario, derive};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "mpipe",
    version,
    about = "Derive, check and print pipeline-parallel schedules (Mpipe's schedule algebra)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check a scenario file: exit 0 when valid, 2 with the broken rule (and the normal form) when not.
    Validate { file: PathBuf },
    /// Derive placement, collectives and per-rank order of a scenario.
    Derive {
        file: PathBuf,
        /// Print the derivation as one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// A failure the user caused (bad file, invalid schedule): exit status 2.
#[derive(Debug)]
struct InputError(String);

fn read_scenario(path: &Path) -> Result<(Scenario, String), InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError(format!("{file}: cannot read: {e}")))?;
    let scenario = Scenario::from_json_str(&text, &file).map_err(|e| InputError(e.to_string()))?;
    Ok((scenario, text))
}

fn derive_file(path: &Path) -> Result<(Scenario, mpipe::Derivation), InputError> {
    let (scenario, text) = read_scenario(path)?;
    let file = path.display().to_string();
    match derive(&scenario) {
        Ok(d) => Ok((scenario, d)),
        Err(err) => {
            let mut message = err.locate(&text, &file).to_string();
            if let mpipe::DeriveError::Invalid(v) = &err
                && let Some((cut, schedule)) = v.normal_form()
            {
                let names: Vec<String> = schedule.iter().map(|s| format!("\"{s}\"")).collect();
                message.push_str(&format!(
                    "\nfix: replace them with \"cut\": {cut:?}, \"schedule\": [{}]",
                    names.join(", ")
                ));
            }
            Err(InputError(message))
        }
    }
}

/// Writes to stdout; a closed pipe (`mpipe derive … | head`) ends quietly instead of panicking.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

fn run(cli: Cli) -> anyhow::Result<Result<(), InputError>> {
    match cli.command {
        Command::Validate { file } => {
            let (scenario, d) = match derive_file(&file) {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            let schedule: Vec<_> = d.plan.regions.iter().map(|r| r.skeleton).collect();
            emit(&format!(
                "{}: valid: {} over {} layers, P = {}, M = {}{}\n",
                file.display(),
                mpipe::skeleton::schedule_to_string(&schedule),
                d.plan.layers.len(),
                d.plan.ranks,
                d.plan.microbatches,
                if scenario.name.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", scenario.name)
                }
            ))?;
            Ok(Ok(()))
        }
        Command::Derive { file, json } => {
            let (scenario, d) = match derive_file(&file) {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            if json {
                let report = DeriveReport::new(&scenario.name, &d);
                let text = serde_json::to_string(&report).context("serialising the derivation")?;
                emit(&(text + "\n"))?;
            } else {
                emit(&report::text(&scenario.name, &d))?;
            }
            Ok(Ok(()))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(InputError(message))) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
