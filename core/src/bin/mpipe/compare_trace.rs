//! Compare a scenario's prediction with measured traces, calibrate it, and report the errors.

use crate::input::{
    InputError, SimArgs, TraceArgs, load_traces, read_scenario, refuse_to_overwrite, simulate_file,
};
use crate::output::{emit, emit_json};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    pub scenario: PathBuf,
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long)]
    pub json: bool,
    /// The step to fit on (default 0; the next step, when there is one, checks the fit), or
    /// `all`: fit on every step of the run (step 0 gives the memory; checked in-sample).
    #[arg(long, default_value = "0", value_parser = parse_fit_step)]
    pub fit_step: FitStep,
    /// Write the calibrated scenario here.
    #[arg(long, value_name = "OUT.json")]
    pub calibrated: Option<PathBuf>,
    /// What-if: predict this scenario (another schedule of the same model) with the costs and
    /// memory fitted on the traces.
    #[arg(long, value_name = "OTHER.json")]
    pub what_if: Option<PathBuf>,
    /// What-if over every schedule: predict every registered schedule that fits the model (over
    /// one stage per rank and over the run's) with the fitted costs, ranked by step time.
    #[arg(long)]
    pub what_if_all: bool,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// `--fit-step`: one step, or every step of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitStep {
    One(usize),
    All,
}

fn parse_fit_step(text: &str) -> Result<FitStep, String> {
    if text == "all" {
        return Ok(FitStep::All);
    }
    text.parse()
        .map(FitStep::One)
        .map_err(|_| format!("`{text}` is neither a step number nor `all`"))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Args {
        scenario,
        files,
        json,
        fit_step,
        calibrated,
        what_if,
        what_if_all,
        trace,
        sim,
    } = args;
    if let Some(out) = &calibrated {
        // Every file read is an input: the scenario, the traces, the rules, the what-if.
        let inputs: Vec<&Path> = std::iter::once(scenario.as_path())
            .chain(files.iter().map(PathBuf::as_path))
            .chain(trace.rules.as_deref())
            .chain(what_if.as_deref())
            .collect();
        refuse_to_overwrite(out, &inputs)?;
    }
    let (model, simulation) = simulate_file(&scenario, sim)?;
    // A trace's collectives inside a stage are not read yet: calibrating their actions' compute
    // would count them twice.
    if simulation.stage_comm.any() {
        return Err(InputError(format!(
            "{}: its stages run collectives inside them (a width with tp, ep or cp above 1); compare-trace does not read a trace's tensor-, expert- or context-parallel collectives yet, so it cannot calibrate this scenario",
            scenario.display()
        ))
        .into());
    }
    let (measurement, alignment) = load_traces(&files, &trace)?;
    // A rank with no recovered action would read as a perfect, empty match: refuse to fit.
    if let Some(why) = measurement.refusal() {
        return Err(InputError(why).into());
    }
    let steps = measurement.common_steps();
    let (fit_step, every_step) = match fit_step {
        FitStep::One(step) => (step, false),
        FitStep::All => (0, true),
    };
    if fit_step >= steps.max(1) {
        return Err(InputError(format!(
            "--fit-step {fit_step}: the traces have {steps} step(s) on every rank"
        ))
        .into());
    }
    // Checked on another step; with one step only, the report says it is not checked.
    let check_step = mpipe::trace::calibrate::check_step(fit_step, steps).unwrap_or(fit_step);
    let calibration = mpipe::trace::calibrate::calibrate(&mpipe::trace::calibrate::Fit {
        scenario: &model,
        predicted: &simulation,
        measurement: &measurement,
        alignment: &alignment,
        fit_step,
        check_step,
        every_step,
        options: sim.options(),
    })
    .map_err(|e| {
        // The calibrated scenario is derived from the file: its errors name the file
        // and the field (it has no text of its own to give a line and column).
        InputError(format!(
            "{}: the calibrated scenario: field `{}`: {e}",
            scenario.display(),
            e.field()
        ))
    })?;
    let name = if model.name.is_empty() {
        scenario.display().to_string()
    } else {
        model.name.clone()
    };
    let mut report = mpipe::trace::report::CompareTraceReport::new(
        &name,
        &calibration,
        &alignment,
        &measurement,
    );
    if let Some(other) = &what_if {
        let (target, _) = read_scenario(other)?;
        let fitted = mpipe::trace::calibrate::with_fitted_costs(&target, &calibration.scenario)
            .map_err(|e| InputError(format!("{}: {e}", other.display())))?;
        let simulation =
            mpipe::tune::pipeline::simulate_scenario(&fitted, sim.options()).map_err(|e| {
                InputError(format!(
                    "{}: with the fitted costs: field `{}`: {e}",
                    other.display(),
                    e.field()
                ))
            })?;
        let expected = mpipe::sim::jitter::expected(
            &simulation,
            &calibration.jitter,
            sim.options(),
            &mut |_| true,
        );
        let mut what_if = mpipe::trace::report::WhatIf::new(
            &other.display().to_string(),
            &fitted,
            &simulation,
            report.memory_basis,
            expected,
        );
        // Where the run could not show its split's cost: the target's step over the measured
        // split's range too.
        what_if.split_range_s = mpipe::trace::whatif::split_range_s(
            &fitted,
            &simulation,
            expected.map_or(simulation.makespan_s, |e| e.median_s),
            report.split_range(),
            (sim.options(), &mut || true),
        );
        report.what_if = Some(what_if);
    }
    let identification = mpipe::trace::whatif::identify(
        &model,
        &simulation,
        &measurement,
        &alignment,
        fit_step,
        sim.options(),
    );
    if what_if_all {
        let ran = identification
            .ranked
            .first()
            .filter(|b| b.order_agreement >= 1.0 - 1e-9)
            .map(|b| b.schedule.clone());
        // The calibrated scenario is the model (the app has only it after a calibration: both
        // rank the same candidates).
        report.what_if_all = mpipe::trace::whatif::what_if_all(
            &calibration.scenario,
            &calibration.scenario,
            &mpipe::trace::whatif::RunShape {
                chunks: mpipe::trace::whatif::measured_chunks(&measurement),
                microbatches: mpipe::trace::whatif::measured_microbatches(&measurement, fit_step),
                ran: ran.as_deref(),
                basis: report.memory_basis,
                jitter: Some(&calibration.jitter),
                split_range: report.split_range(),
            },
            sim.options(),
        );
    }
    report.identified(identification);
    if let Some(out) = calibrated {
        crate::input::write_output(&out, calibration.scenario.to_json_string().as_bytes())?;
    }
    if json {
        emit_json(&report)?;
    } else {
        emit(&report.text())?;
    }
    Ok(())
}
