//! `mpipe`: the headless command line of Mpipe Studio.

use anyhow::Context;
use clap::{Parser, Subcommand};
use mpipe::report::{self, DeriveReport};
use mpipe::sim_report::{self, CompareReport, SimulateReport};
use mpipe::simulate::SimOptions;
use mpipe::simulation::Simulation;
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
    /// Simulate a scenario: makespan, bubbles, warmup windows, encoder spill, memory, critical path.
    Simulate {
        file: PathBuf,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Leave the per-event timeline out of the JSON.
        #[arg(long)]
        no_events: bool,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Simulate two scenarios and print the speedup of B over A and the per-rank differences.
    Compare {
        a: PathBuf,
        b: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Draw the simulated Gantt chart as SVG.
    Render {
        file: PathBuf,
        /// Where to write the SVG.
        #[arg(long, value_name = "OUT.svg")]
        svg: PathBuf,
        #[command(flatten)]
        sim: SimArgs,
    },
}

#[derive(clap::Args, Debug, Clone, Copy)]
struct SimArgs {
    /// Transfers on one directed rank pair run one at a time.
    #[arg(long)]
    serialize_links: bool,
}

impl SimArgs {
    fn options(self) -> SimOptions {
        SimOptions {
            serialize_links: self.serialize_links,
        }
    }
}

fn simulate_file(path: &Path, sim: SimArgs) -> Result<(Scenario, Simulation), InputError> {
    let (scenario, d) = derive_file(path)?;
    let simulation = mpipe::simulation::run(d, sim.options());
    Ok((scenario, simulation))
}

/// A failure the user caused (bad file, invalid schedule): exit status 2, anything else 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
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

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Validate { file } => {
            let (scenario, d) = derive_file(&file)?;
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
            Ok(())
        }
        Command::Derive { file, json } => {
            let (scenario, d) = derive_file(&file)?;
            if json {
                let report = DeriveReport::new(&scenario.name, &d);
                let text = serde_json::to_string(&report).context("serialising the derivation")?;
                emit(&(text + "\n"))?;
            } else {
                emit(&report::text(&scenario.name, &d))?;
            }
            Ok(())
        }
        Command::Simulate {
            file,
            json,
            no_events,
            sim,
        } => {
            let (scenario, simulation) = simulate_file(&file, sim)?;
            if json {
                let report = SimulateReport::new(&scenario.name, &simulation, !no_events);
                emit(
                    &(serde_json::to_string(&report).context("serialising the simulation")? + "\n"),
                )?;
            } else {
                emit(&sim_report::text(&scenario.name, &simulation))?;
            }
            Ok(())
        }
        Command::Compare { a, b, json, sim } => {
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
                emit(
                    &(serde_json::to_string(&report).context("serialising the comparison")? + "\n"),
                )?;
            } else {
                emit(&sim_report::compare_text(&an, &a_sim, &bn, &b_sim))?;
            }
            Ok(())
        }
        Command::Render { file, svg, sim } => {
            let (scenario, simulation) = simulate_file(&file, sim)?;
            mpipe::io::write_atomic(
                &svg,
                mpipe::svg::render(&scenario.name, &simulation).as_bytes(),
            )
            .with_context(|| format!("writing {}", svg.display()))?;
            emit(&format!("wrote {}\n", svg.display()))?;
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.downcast_ref::<InputError>().is_some() => {
            eprintln!("error: {err}");
            ExitCode::from(2)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
