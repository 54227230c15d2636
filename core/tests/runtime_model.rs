//! Issue 23 on the seven-schedule fixtures (`tests/fixtures/traces/seven/`, generate.py beside
//! them): real torch.distributed.pipelining runs of one model under GPipe, 1F1B, interleaved
//! 1F1B, Looped BFS, interleaved zero bubble, ZB-V and DualPipeV (2 ranks, 10 profiled steps,
//! `profile_memory=True`), some with step markers and some without. Each run is read right
//! (steps, overlapped pairs, its schedule identified, one memory basis), and one calibration
//! predicts every schedule (`--what-if-all`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use std::path::PathBuf;
mod common;
use common::{median, mpipe};

/// The runs, with the schedule each is (as `mpipe derive` writes it) and how its steps are told.
const RUNS: [(&str, &str, &str); 7] = [
    ("gpipe", "⟨gpipe⟩", "markers"),
    ("1f1b", "⟨1f1b⟩", "step_ends"),
    ("interleaved", "⟨1f1b, 1f1b⟩", "markers"),
    ("looped-bfs", "⟨looped_bfs, looped_bfs⟩", "step_ends"),
    ("interleaved-zb", "⟨zb1p, zb1p⟩", "markers"),
    ("zbv", "⟨zbv, zbv⟩", "markers"),
    ("dualpipev", "⟨dualpipev, dualpipev⟩", "step_ends"),
];

fn seven(run: &str, file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/traces/seven")
        .join(run)
        .join(file)
        .display()
        .to_string()
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = mpipe(args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// `mpipe compare-trace --json` of `run`'s traces against `scenario_of`'s scenario.
fn compare(scenario_of: &str, run: &str, extra: &[&str]) -> serde_json::Value {
    let scenario = seven(scenario_of, "scenario.json");
    let (r0, r1) = (seven(run, "rank0.json.gz"), seven(run, "rank1.json.gz"));
    let mut args = vec!["compare-trace", "--json", &scenario, &r0, &r1];
    args.extend(extra);
    json(&args)
}

#[test]
fn every_run_reads_back_what_ran_however_its_steps_are_told_apart() {
    // `1f1b-bare` has no step markers, no optimizer and no per-action annotation: its steps
    // come from the structure alone (the unannotated run was read as ONE step).
    let runs = RUNS
        .iter()
        .map(|&(run, _, source)| (run, source))
        .chain([("1f1b-bare", "structure")]);
    for (run, source) in runs {
        let executed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(seven(run, "executed.json")).unwrap())
                .unwrap();
        let v = json(&[
            "trace",
            "--json",
            &seven(run, "rank0.json.gz"),
            &seven(run, "rank1.json.gz"),
        ]);
        for rank in 0..2 {
            let r = &v["ranks"][rank];
            let kind = match &r["step_source"] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Object(o) => o.keys().next().unwrap().clone(),
                other => panic!("{other}"),
            };
            assert_eq!(kind, source, "{run} rank {rank}");
            let steps = executed["per_rank"][format!("rank{rank}")]["executed"]
                .as_array()
                .unwrap();
            assert_eq!(steps.len(), 10, "{run}");
            assert_eq!(r["steps"], 10, "{run} rank {rank}");
            let actions = r["actions"].as_array().unwrap();
            for (step, want) in steps.iter().enumerate() {
                assert_eq!(
                    common::actions_of_step(actions, step),
                    common::strings(want),
                    "{run} rank {rank} step {step}"
                );
            }
        }
    }
    // Any step of the bare run fits (the issue's `--fit-step 1` was refused).
    let v = compare("1f1b", "1f1b-bare", &["--fit-step", "1"]);
    assert_eq!(v["order_agreement"], 1.0);
    assert_eq!(v["steps"].as_array().unwrap().len(), 10);
}

#[test]
fn each_run_is_identified_as_its_own_schedule_and_a_wrong_one_gets_no_verdict() {
    for &(run, schedule, _) in &RUNS {
        let v = compare(run, run, &[]);
        let id = &v["identification"];
        assert_eq!(id["scenario"]["schedule"], schedule, "{run}");
        assert_eq!(id["scenario"]["order_agreement"], 1.0, "{run}");
        assert_eq!(id["ranked"][0]["schedule"], schedule, "{run}");
        assert_eq!(id["ranked"][0]["order_agreement"], 1.0, "{run}");
        // No other candidate explains the orders fully.
        assert!(
            id["ranked"][1]["order_agreement"].as_f64().unwrap() < 1.0,
            "{run}"
        );
    }
    // The cases: a ZB-V trace read against DualPipeV and against interleaved 1F1B, a
    // GPipe trace against 1F1B and Looped BFS against interleaved 1F1B: each warned, the run's
    // schedule named, no verdict.
    for (scenario, run, best) in [
        ("dualpipev", "zbv", "⟨zbv, zbv⟩"),
        ("interleaved", "zbv", "⟨zbv, zbv⟩"),
        ("1f1b", "gpipe", "⟨gpipe⟩"),
        ("interleaved", "looped-bfs", "⟨looped_bfs, looped_bfs⟩"),
    ] {
        let (code, out, err) = mpipe(&[
            "compare-trace",
            &seven(scenario, "scenario.json"),
            &seven(run, "rank0.json.gz"),
            &seven(run, "rank1.json.gz"),
        ]);
        assert_eq!(code, 0, "{err}");
        let want = format!("the best match among the registered schedules is {best}");
        assert!(
            out.contains("warning: the scenario's schedule") && out.contains(&want),
            "{scenario} vs {run}: {out}"
        );
        assert!(out.contains("(no verdict: see the warnings)"), "{out}");
        assert!(!out.contains("within the spread"), "{out}");
    }
}

#[test]
fn memory_is_predicted_and_measured_on_one_basis() {
    // The CPU allocator counts from the profiler's start: peaks are dynamic bytes everywhere,
    // the what-if's too (the what-if printed 22.8 MB with static bytes beside 6.0 MB).
    let zbv = seven("zbv", "scenario.json");
    let v = compare("zbv", "zbv", &["--what-if", &zbv]);
    assert_eq!(v["memory_basis"], "dynamic");
    assert_eq!(v["what_if"]["basis"], "dynamic");
    for rank in 0..2 {
        assert_eq!(
            v["what_if"]["peak_bytes"][rank], v["ranks"][rank]["calibrated_peak_bytes"],
            "rank {rank}"
        );
    }
}

#[test]
fn one_calibration_predicts_every_schedule_ranked() {
    let v = compare("zbv", "zbv", &["--what-if-all"]);
    let all = v["what_if_all"].as_array().unwrap();
    let steps: Vec<f64> = all.iter().map(|p| p["step_s"].as_f64().unwrap()).collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    for &(_, schedule, _) in &RUNS {
        assert!(
            all.iter().any(|p| p["schedule"] == schedule),
            "{schedule} missing"
        );
    }
    let ran: Vec<&serde_json::Value> = all.iter().filter(|p| p["ran"] == true).collect();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0]["schedule"], "⟨zbv, zbv⟩");
    // Ranked by the expected step under the run's jitter: the calibration's own for the one
    // that ran (the same scenario, the same seeded draws), beside its simulated step.
    assert_eq!(ran[0]["step_s"], v["expected"]["median_s"]);
    assert_eq!(ran[0]["simulated_s"], v["makespan_calibrated_s"]);
    // Printed as a ranked table too.
    let (code, out, err) = mpipe(&[
        "compare-trace",
        "--what-if-all",
        &seven("zbv", "scenario.json"),
        &seven("zbv", "rank0.json.gz"),
        &seven("zbv", "rank1.json.gz"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("what-if over every schedule that fits the model")
            && out.contains("⟨zbv, zbv⟩")
            && out.contains("← ran"),
        "{out}"
    );
}

/// Average ranks of `values`; neighbours in sorted order that `tie` joins share one.
fn tied_ranks(values: &[f64], tie: impl Fn(usize, usize) -> bool) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match groups.last_mut() {
            Some(g) if tie(g[0], i) => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    let mut ranks = vec![0.0; values.len()];
    let mut at = 0.0;
    for g in groups {
        let n = g.len() as f64;
        for i in g {
            ranks[i] = at + (n - 1.0) / 2.0;
        }
        at += n;
    }
    ranks
}

fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let da: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let db: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    num / (da * db).sqrt()
}

/// The 7×7 matrix: calibrated on each run (with `fit`: `--fit-step all` or nothing, step 0),
/// every schedule's predicted step against its own run's measured median, the predicted order
/// against the measured one (Spearman, medians closer than the runs' noise — the standard error
/// of a median, 1.2533·σ/√n — tied), and every rank's predicted memory peak against its run's.
/// Also each run's own comparison (step 0).
struct Matrix {
    /// `(predicted − measured) / measured`, every source × target.
    time_errors: Vec<f64>,
    memory_errors: Vec<f64>,
    /// Per source.
    spearman: Vec<f64>,
    own: Vec<serde_json::Value>,
    /// Each run's calibration the predictions came from.
    sources: Vec<serde_json::Value>,
}

fn matrix(fit: &[&str]) -> Matrix {
    let own: Vec<serde_json::Value> = RUNS
        .iter()
        .map(|&(run, _, _)| compare(run, run, &["--what-if-all"]))
        .collect();
    let sources: Vec<serde_json::Value> = if fit.is_empty() {
        own.clone()
    } else {
        let mut extra = vec!["--what-if-all"];
        extra.extend(fit);
        RUNS.iter()
            .map(|&(run, _, _)| compare(run, run, &extra))
            .collect()
    };
    let steps: Vec<Vec<f64>> = own
        .iter()
        .map(|v| {
            v["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["measured_s"].as_f64().unwrap())
                .collect()
        })
        .collect();
    let measured_median: Vec<f64> = steps.iter().map(|v| median(v.clone())).collect();
    let noise: Vec<f64> = steps
        .iter()
        .map(|v| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            1.2533 * sd / n.sqrt()
        })
        .collect();
    let measured_ranks = tied_ranks(&measured_median, |i, j| {
        measured_median[j] - measured_median[i] <= noise[i].max(noise[j])
    });
    let mut time_errors = Vec::new();
    let mut memory_errors = Vec::new();
    let mut spearman = Vec::new();
    for source in &sources {
        let mut predicted = Vec::new();
        for (t, &(_, schedule, _)) in RUNS.iter().enumerate() {
            let chunks = if schedule.contains(',') { 2 } else { 1 };
            let p = source["what_if_all"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["schedule"] == schedule && p["chunks"] == chunks)
                .unwrap();
            let step = p["step_s"].as_f64().unwrap();
            predicted.push(step);
            time_errors.push((step - measured_median[t]) / measured_median[t]);
            for rank in 0..2 {
                let measured = own[t]["ranks"][rank]["measured_peak_bytes"]
                    .as_f64()
                    .unwrap();
                let predicted = p["peak_bytes"][rank].as_f64().unwrap();
                memory_errors.push((predicted - measured) / measured);
            }
        }
        spearman.push(pearson(
            &measured_ranks,
            &tied_ranks(&predicted, |_, _| false),
        ));
    }
    Matrix {
        time_errors,
        memory_errors,
        spearman,
        own,
        sources,
    }
}

impl Matrix {
    /// Median and worst |error| of the step times.
    fn times(&self) -> (f64, f64) {
        let abs: Vec<f64> = self.time_errors.iter().map(|e| e.abs()).collect();
        (median(abs.clone()), abs.iter().copied().fold(0.0, f64::max))
    }

    fn mean_spearman(&self) -> f64 {
        self.spearman.iter().sum::<f64>() / self.spearman.len() as f64
    }

    fn memory(&self) -> (f64, f64) {
        let abs: Vec<f64> = self.memory_errors.iter().map(|e| e.abs()).collect();
        (median(abs.clone()), abs.iter().copied().fold(0.0, f64::max))
    }
}

/// Calibrated on each run's step 0. The thresholds are what this model reaches now (README
/// "Diagnosis", `measure.py` beside the fixtures): the median |error| ≤ 10 % holds (4.3 %;
/// 5.5 % before a run that never split took PyTorch's split); none beyond 20 % does not (22.1 %;
/// 32.7 % before the split backward was priced apart: the interleaved zero-bubble run's step 0,
/// its slowest at 181–186 ms against a 150.6 ms median, fits slow costs), nor Spearman ≥ 0.8
/// from every source (mean 0.68; the DualPipeV run's costs, fitted from one step, rank the
/// schedules no better than chance: −0.02). Fitted on every step (below) the targets hold.
#[test]
fn one_calibration_predicts_the_other_schedules_within_the_stated_thresholds() {
    let m = matrix(&[]);
    let (median_error, worst) = m.times();
    assert!(median_error <= 0.05, "median |error| {:?}", m.time_errors);
    assert!(worst <= 0.25, "worst {worst}");
    assert!(
        m.spearman.iter().all(|&r| r >= -0.1) && m.mean_spearman() >= 0.65,
        "{:?}",
        m.spearman
    );
    let (mem_median, mem_worst) = m.memory();
    // The memory target: every rank's peak within 10 % (98 of 98, median 1.2 %, worst
    // 8.0 %; 1.7 %, 8.6 % before the last stage's outputs were kept to the step's end; 84 of 98, 3.9 %, 21.2 % before the first stage's split backward ran whole in its
    // weight half and the gradient buffers were read once the last backward had returned —
    // DualPipeV's rank 0 was 11–21 % high from every source; 70, 5.9 % before a run that never
    // splits its backward gave the split schedules PyTorch's weight-half transient).
    assert!(mem_median <= 0.02, "{:?}", m.memory_errors);
    assert!(mem_worst <= 0.10, "{:?}", m.memory_errors);
    // The calibrated memory curves against the measured ones over the whole step (the mean
    // distance over the measured peak: 11.6 % median, 25.3 % worst now: ZB-V rank 1; 11.7 %,
    // 27.7 % while a weight half held its whole transient from its start and a stage's first
    // held it beside the gradient buffers).
    let shapes: Vec<f64> = m
        .own
        .iter()
        .flat_map(|v| {
            v["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["calibrated_memory_shape_error"].as_f64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(median(shapes.clone()) <= 0.12, "{shapes:?}");
    assert!(shapes.iter().all(|&e| e <= 0.26), "{shapes:?}");
}

/// Calibrated on every step of each run (`--fit-step all`): a step's noise averages out, the
/// switch is fitted from enough actions to be applied (40–190 per phase against 4–15 on one
/// step), and the measured jitter from enough samples to be drawn (every distribution from at
/// least 32), each rank's pace too. The step-time targets hold (median |error| 3.5 %,
/// none beyond 20 %: worst 16.7 %; mean signed −2.8 %, −1.2 % while the zero-bubble runs' costs
/// put every whole-backward schedule 13–18 % long and so lifted the mean), its memory target
/// (every peak within 10 %) and its ranking target on the mean (Spearman 0.69–0.88, mean 0.81 —
/// the runs' own noise puts the ceiling at 0.81: a predictor equal to five of each run's steps;
/// 0.75 before a run that never split took PyTorch's split, 0.63 before the split backward was
/// priced apart, 0.57 before the ranks' paces were drawn). The split's prior comes in part from
/// three of these runs: from the GPU run's alone (×0.90/×1.39) the mean is 0.79.
#[test]
fn calibrated_on_every_step_the_schedules_are_predicted_within_the_targets() {
    let m = matrix(&["--fit-step", "all"]);
    assert!(m.sources.iter().all(|v| v["every_step"] == true));
    let (median_error, worst) = m.times();
    assert!(median_error <= 0.04, "median |error| {:?}", m.time_errors);
    assert!(worst <= 0.20, "worst {worst}");
    let signed = m.time_errors.iter().sum::<f64>() / m.time_errors.len() as f64;
    assert!((-0.04..=0.02).contains(&signed), "mean signed {signed}");
    assert!(
        m.spearman.iter().all(|&r| r >= 0.65) && m.mean_spearman() >= 0.8,
        "{:?}",
        m.spearman
    );
    let (mem_median, mem_worst) = m.memory();
    assert!(
        mem_median <= 0.025 && mem_worst <= 0.10,
        "{:?}",
        m.memory_errors
    );
}

/// DualPipeV's rank 0 holds the model's first stage and its last. PyTorch runs the first
/// stage's split backward whole in its weight half (its input halves take some 46 µs and
/// allocate nothing: the model's input needs no gradient), and a weight half holds the
/// gradients `autograd.grad` returned until it returns. Read so, the calibration sets
/// `first_stage_backward` to `in_weight` (ZB-V's too: its first stage runs the same way), reads
/// the gradient buffers once the last backward has returned (about one byte per parameter byte,
/// not the 1.28 its last op's end showed on rank 1), and both ranks' peaks come within 2 %
/// (rank 0 was 12.8 % high; −0.3 % and +1.5 % with the input halves' held share, −0.3 % and
/// −1.0 % without it).
#[test]
fn the_first_stages_split_backward_is_read_as_pytorch_runs_it() {
    let dir = std::env::temp_dir().join(format!("mpipe-first-stage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for run in ["dualpipev", "zbv"] {
        let out = dir.join(format!("{run}.json"));
        let out = out.to_str().unwrap();
        let v = compare(run, run, &["--calibrated", out]);
        let calibrated: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        assert_eq!(
            calibrated["hardware"]["first_stage_backward"], "in_weight",
            "{run}"
        );
        // Every rank holds two blocks of 8,398,848 parameter bytes.
        let params = 2.0 * 8_398_848.0;
        for m in v["memory"].as_array().unwrap() {
            let held = m["step_held_bytes"].as_f64().unwrap() / params;
            assert!((1.0..1.07).contains(&held), "{run}: {m}");
        }
        // The calibrated scenario calibrated again on the same run is where it was: the first
        // stage's weight halves fitted as its whole backward (factor 1), none of its halves
        // left unfitted, the same step and peaks.
        let again = json(&[
            "compare-trace",
            "--json",
            out,
            &seven(run, "rank0.json.gz"),
            &seven(run, "rank1.json.gz"),
        ]);
        let first = |v: &serde_json::Value| {
            v["factors"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["stage"] == 0)
                .map(|f| {
                    (
                        f["phase"].as_str().unwrap().to_string(),
                        f["factor"].as_f64().unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let phases: Vec<String> = first(&again).into_iter().map(|(p, _)| p).collect();
        assert_eq!(phases, ["F", "B"], "{run}");
        for (phase, factor) in first(&again) {
            assert!((factor - 1.0).abs() < 1e-9, "{run}: {phase} ×{factor}");
        }
        let step = |v: &serde_json::Value| v["makespan_calibrated_s"].as_f64().unwrap();
        assert!((step(&again) - step(&v)).abs() < 1e-9 * step(&v), "{run}");
        for (a, b) in again["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["ranks"].as_array().unwrap())
        {
            assert_eq!(
                a["calibrated_peak_bytes"], b["calibrated_peak_bytes"],
                "{run}"
            );
        }
        if run == "dualpipev" {
            for r in v["ranks"].as_array().unwrap() {
                let measured = r["measured_peak_bytes"].as_f64().unwrap();
                let calibrated = r["calibrated_peak_bytes"].as_f64().unwrap();
                assert!((calibrated - measured).abs() <= 0.02 * measured, "{r}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_scenario_with_the_wrong_microbatch_count_is_told_so_not_read_as_another_schedule() {
    // The GPipe run has 8 microbatches; a scenario of 4 reads half its orders. The report says
    // what to set, identifies GPipe over 8 microbatches, and gives no verdict.
    let dir = std::env::temp_dir().join(format!("mpipe-m4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = std::fs::read_to_string(seven("gpipe", "scenario.json"))
        .unwrap()
        .replace("\"microbatches\": 8", "\"microbatches\": 4");
    let path = dir.join("m4.json");
    std::fs::write(&path, scenario).unwrap();
    let (code, out, err) = mpipe(&[
        "compare-trace",
        path.to_str().unwrap(),
        &seven("gpipe", "rank0.json.gz"),
        &seven("gpipe", "rank1.json.gz"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("warning: the trace runs 8 microbatches per step (forwards of a stage on step 0), the scenario 4: set `microbatches` to 8\n"),
        "{out}"
    );
    assert!(
        out.contains("the best match among the registered schedules is ⟨gpipe⟩ (1 stage(s) per rank, 8 microbatches: 100.0%)"),
        "{out}"
    );
    assert!(out.contains("(no verdict: see the warnings)"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn whole_backwards_measured_beside_halves_set_the_backward_and_the_halves_only_part_it() {
    // DualPipeV runs whole backwards (most) and split ones (one or two per stage). The
    // calibrated scenario's backward is the whole backwards' factor (fitted on 6–7 actions), not
    // the sum of halves fitted on 1–2; the halves part it in their measured proportion.
    let dir = std::env::temp_dir().join(format!("mpipe-dual-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("calibrated.json");
    let v = compare(
        "dualpipev",
        "dualpipev",
        &["--calibrated", out.to_str().unwrap()],
    );
    let calibrated: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let fitted = |stage: u64, phase: &str| {
        v["factors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["stage"] == stage && f["phase"] == phase)
            .map(|f| f["factor"].as_f64().unwrap())
    };
    let factor = |stage: u64, phase: &str| fitted(stage, phase).unwrap();
    // One block per stage, in stage order (stage s holds layer s: the V puts stages 0 and 3
    // on rank 0, but the layers run in stage order).
    let layers = calibrated["model"]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 4);
    for (stage, layer) in layers.iter().enumerate() {
        let stage = stage as u64;
        let bwd = layer["bwd_s"].as_f64().unwrap();
        assert!((bwd - 0.004 * factor(stage, "B")).abs() < 1e-12, "{layer}");
        let (i, w) = (
            layer["bwd_input_s"].as_f64().unwrap(),
            layer["bwd_weight_s"].as_f64().unwrap(),
        );
        assert!((i + w - bwd).abs() < 1e-12, "{layer}");
        // The first stage runs its split backward whole in its weight half (PyTorch): its weight
        // halves are fitted as its whole backward, and no half of it on its own.
        if stage == 0 {
            assert_eq!((fitted(0, "I"), fitted(0, "W")), (None, None));
            continue;
        }
        let share = factor(stage, "I") / (factor(stage, "I") + factor(stage, "W"));
        assert!((i / bwd - share).abs() < 1e-9, "{layer}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_switch_costs_the_action_after_another_stage_or_phase_exactly() {
    // 1F1B, P = 2, M = 2, t_F = 1, t_B = 2, a switch of 0.5 for forwards and backwards. Rank 0 runs F0 F1 B0 B1: F0 and B0
    // follow another phase (F0 the step's start), F1 and B1 their own; rank 1 runs F0 B0 F1 B1,
    // every one after another phase. By hand: r0 F0 [0, 1.5], F1 [1.5, 2.5]; r1 F0 [1.5, 3],
    // B0 [3, 5.5], F1 [5.5, 7], B1 [7, 9.5]; r0 B0 [5.5, 8], B1 [9.5, 11.5]. Without the switch
    // it is (M + P − 1)(t_F + t_B) = 9.
    use mpipe::scenario::hardware::{Hardware, PhaseSeconds};
    use mpipe::scenario::layer::LayerSpec;
    use mpipe::vocab::role::Role;
    let mut s = common::scenario(
        vec![LayerSpec::timed("x", Role::Backbone, 2, 1.0)],
        &[],
        &[mpipe::schedules::ONE_F_ONE_B],
        2,
        2,
    );
    let simulate = |s: &mpipe::Scenario| {
        mpipe::tune::pipeline::simulate_scenario(s, Default::default())
            .unwrap()
            .makespan_s
    };
    assert_eq!(simulate(&s), 9.0);
    s.hardware = Some(Hardware {
        action_switch_s: Some(PhaseSeconds {
            forward: Some(0.5),
            backward: Some(0.5),
            ..PhaseSeconds::default()
        }),
        ..Hardware::default()
    });
    assert_eq!(simulate(&s), 11.5);
    // A phase given no switch costs none: with the forwards' alone, r1 F0 [1.5, 3], B0 [3, 5],
    // F1 [5, 6.5], B1 [6.5, 8.5]; r0 B0 [5, 7], B1 [8.5, 10.5].
    s.hardware = Some(Hardware {
        action_switch_s: Some(PhaseSeconds {
            forward: Some(0.5),
            ..PhaseSeconds::default()
        }),
        ..Hardware::default()
    });
    assert_eq!(simulate(&s), 10.5);
    // An overhead by phase is charged to every action of its phase, cold or not: with forwards
    // at 0.5 and no scalar overhead, every forward lasts 1.5 and the timeline is the one above.
    s.hardware = Some(Hardware {
        action_overhead_by_phase_s: Some(PhaseSeconds {
            forward: Some(0.5),
            ..PhaseSeconds::default()
        }),
        ..Hardware::default()
    });
    assert_eq!(simulate(&s), 10.5);
    // The scalar overhead stays for the phases the map leaves out: backwards last 2 + 0.25.
    s.hardware = Some(Hardware {
        action_overhead_s: Some(0.25),
        action_overhead_by_phase_s: Some(PhaseSeconds {
            forward: Some(0.5),
            ..PhaseSeconds::default()
        }),
        ..Hardware::default()
    });
    // r0 F0 [0, 1.5], F1 [1.5, 3]; r1 F0 [1.5, 3], B0 [3, 5.25], F1 [5.25, 6.75],
    // B1 [6.75, 9]; r0 B0 [5.25, 7.5], B1 [9, 11.25].
    assert_eq!(simulate(&s), 11.25);
}

/// The identification a schedule a step — what the web build runs between frames after a
/// calibration's fit: each step simulates one registered schedule (the progress the fraction of
/// skeletons tried), the steps come to what `identify` gives (ZB-V's run named ZB-V), and a
/// stop is heard at the next step.
#[test]
fn the_identification_runs_a_schedule_a_step() {
    use mpipe::trace::whatif::{IdentifySteps, identify};
    use mpipe::tune::Stepped;
    let traces: Vec<_> = ["rank0.json.gz", "rank1.json.gz"]
        .iter()
        .map(|f| {
            let path = seven("zbv", f);
            mpipe::trace::chrome::import_bytes(&std::fs::read(&path).unwrap(), &path).unwrap()
        })
        .collect();
    let rules = mpipe::trace::RuleSet::default().compile().unwrap();
    let m = mpipe::trace::recover(&traces, &rules, &[None, None]);
    let alignment = mpipe::trace::align(&m);
    let text = std::fs::read_to_string(seven("zbv", "scenario.json")).unwrap();
    let scenario = mpipe::Scenario::from_json_str(&text, "scenario.json").unwrap();
    let sim = mpipe::simulate_scenario(&scenario, Default::default()).unwrap();
    let whole = identify(&scenario, &sim, &m, &alignment, 0, Default::default());
    assert_eq!(whole.ranked[0].schedule, "⟨zbv, zbv⟩");
    assert_eq!(whole.ranked[0].order_agreement, 1.0);
    let mut steps = IdentifySteps::new(&scenario, &sim, (&m, &alignment, 0), Default::default());
    let (mut again, mut fractions) = (0, Vec::new());
    let stepped = loop {
        match steps.step((&m, &alignment), &mut |f| {
            fractions.push(f);
            true
        }) {
            Stepped::Again => again += 1,
            Stepped::Done(id) => break id,
            Stepped::Cancelled => panic!("not cancelled"),
        }
    };
    assert_eq!(stepped, whole);
    assert_eq!(again, whole.ranked.len());
    let skeletons = mpipe::schedules::skeleton::Skeleton::all().len();
    let expected: Vec<f32> = (0..skeletons)
        .map(|i| i as f32 / skeletons as f32)
        .collect();
    assert_eq!(fractions, expected);
    let mut steps = IdentifySteps::new(&scenario, &sim, (&m, &alignment, 0), Default::default());
    assert_eq!(steps.step((&m, &alignment), &mut |_| true), Stepped::Again);
    assert_eq!(
        steps.step((&m, &alignment), &mut |_| false),
        Stepped::Cancelled
    );
}

/// Steps read from actions grouped once (`Steps`, what a calibration reads every step with)
/// are each step as `measured_step` searches it out — on every recorded run, every step and
/// one past the last, and with each rank's actions reversed, so that steps interleave.
#[test]
fn steps_grouped_once_read_as_each_step_searched_for() {
    use mpipe::trace::compare::{Steps, measured_step};
    for (run, _, _) in RUNS {
        let traces: Vec<_> = ["rank0.json.gz", "rank1.json.gz"]
            .iter()
            .map(|f| {
                let path = seven(run, f);
                mpipe::trace::chrome::import_bytes(&std::fs::read(&path).unwrap(), &path).unwrap()
            })
            .collect();
        let rules = mpipe::trace::RuleSet::default().compile().unwrap();
        let mut m = mpipe::trace::recover(&traces, &rules, &[None, None]);
        let alignment = mpipe::trace::align(&m);
        for reversed in [false, true] {
            if reversed {
                for r in &mut m.ranks {
                    r.actions.reverse();
                }
            }
            let steps = Steps::new(&m);
            let count = m.common_steps();
            assert!(count >= 10, "{run}");
            for k in 0..=count {
                let want = measured_step(&m, &alignment, k);
                assert_eq!(steps.step(&alignment, k), want, "{run} step {k}");
                assert_eq!(
                    want.2.iter().all(|(_, a)| a.is_empty()),
                    k == count,
                    "{run} {k}"
                );
            }
        }
    }
}

#[test]
fn a_run_that_never_splits_its_backward_gives_the_weight_half_pytorchs_transient() {
    // GPipe never splits its backward: no weight half measures what one holds, so the
    // calibrated scenario takes PyTorch's (its stage's weight gradients, returned all at once
    // before they are accumulated: 1 byte per parameter byte), and the split schedules'
    // what-ifs hold it; ZB-V's weight halves measure their own; a scenario's own is kept.
    let dir = std::env::temp_dir().join(format!("mpipe-transient-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("calibrated.json").display().to_string();
    let transient = |scenario: &str, run: &str| {
        let (r0, r1) = (seven(run, "rank0.json.gz"), seven(run, "rank1.json.gz"));
        let (code, _, err) = mpipe(&["compare-trace", scenario, &r0, &r1, "--calibrated", &out]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        v["hardware"]["weight_transient_bytes_per_param_byte"].as_f64()
    };
    assert_eq!(
        transient(&seven("gpipe", "scenario.json"), "gpipe"),
        Some(1.0)
    );
    let measured = transient(&seven("zbv", "scenario.json"), "zbv").unwrap();
    assert!(
        measured != 1.0 && (0.9..1.1).contains(&measured),
        "{measured}"
    );
    let mut own: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(seven("gpipe", "scenario.json")).unwrap())
            .unwrap();
    own["hardware"]["weight_transient_bytes_per_param_byte"] = serde_json::json!(0.5);
    let given = dir.join("given.json").display().to_string();
    std::fs::write(&given, own.to_string()).unwrap();
    assert_eq!(transient(&given, "gpipe"), Some(0.5));
    // From the GPipe run, ZB-V's predicted peaks now hold its weight halves' transients: within
    // 10 % of the ZB-V run's measured peaks (they were 15–16 % low).
    let from_gpipe = compare("gpipe", "gpipe", &["--what-if-all"]);
    let zbv = from_gpipe["what_if_all"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["schedule"] == "⟨zbv, zbv⟩" && p["chunks"] == 2)
        .unwrap();
    let measured = compare("zbv", "zbv", &[]);
    for rank in 0..2 {
        let m = measured["ranks"][rank]["measured_peak_bytes"]
            .as_f64()
            .unwrap();
        let p = zbv["peak_bytes"][rank].as_f64().unwrap();
        assert!(((p - m) / m).abs() <= 0.10, "rank {rank}: {p} vs {m}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rank's pace, fitted on every step: each step's compute on the rank over what the fitted
/// costs make of it, the rank's mean across the steps 1. On the ZB-V run it follows the rank's
/// measured compute that step over its mean (within 0.05: the switch the fit charges apart, the
/// actions it matches, and the mean taken here over the nine steps a calibration is checked on,
/// 1–9, where the pace's is over all ten) and spans what the run did — rank 1 from about 0.8 to 1.2 of its
/// mean, rank 0 less. One step fitted has no pace (its factors are fitted to it).
#[test]
fn a_ranks_pace_is_fitted_per_step_from_its_measured_compute() {
    let all = compare("zbv", "zbv", &["--fit-step", "all"]);
    let pace: Vec<Vec<f64>> = all["jitter"]["pace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(pace.len(), 10);
    assert!(pace.iter().all(|row| row.len() == 2), "{pace:?}");
    for rank in 0..2 {
        let mean = pace.iter().map(|row| row[rank]).sum::<f64>() / 10.0;
        assert!((mean - 1.0).abs() < 1e-9, "rank {rank}: {mean}");
    }
    // Each step's measured compute per rank, from the calibration checked on it.
    let measured: Vec<(usize, Vec<f64>)> = (0..9)
        .map(|k| {
            let v = compare("zbv", "zbv", &["--fit-step", &k.to_string()]);
            let ranks = v["ranks"].as_array().unwrap();
            (
                v["check_step"].as_u64().unwrap() as usize,
                ranks
                    .iter()
                    .map(|r| r["measured_compute_s"].as_f64().unwrap())
                    .collect(),
            )
        })
        .collect();
    for rank in 0..2 {
        let mean = measured.iter().map(|(_, c)| c[rank]).sum::<f64>() / measured.len() as f64;
        for (step, compute) in &measured {
            let (fitted, seen) = (pace[*step][rank], compute[rank] / mean);
            assert!(
                (fitted - seen).abs() <= 0.05,
                "step {step} rank {rank}: pace {fitted}, measured {seen}"
            );
        }
    }
    let spread = |rank: usize| {
        let v: Vec<f64> = pace.iter().map(|row| row[rank]).collect();
        v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
    };
    assert!(spread(1) >= 0.35 && spread(0) < spread(1), "{pace:?}");
    let one = compare("zbv", "zbv", &[]);
    assert_eq!(one["jitter"]["pace"], serde_json::json!([]));
}

/// A calibrated scenario carries how its run varied (`jitter`: the distributions and the ranks'
/// paces): `mpipe simulate` of what `--calibrated` wrote gives the expected step the calibration
/// gave, the same draws to the bit, beside the simulated one; the scenario as the user wrote it
/// (no jitter) gives none.
#[test]
fn a_calibrated_scenario_carries_its_runs_jitter_to_simulate() {
    let dir = std::env::temp_dir().join(format!("mpipe-jitter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zbv-calibrated.json");
    let path = path.to_str().unwrap();
    let v = compare("zbv", "zbv", &["--fit-step", "all", "--calibrated", path]);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(written["jitter"], v["jitter"]);
    let simulated = json(&["simulate", "--json", "--no-events", path]);
    assert_eq!(simulated["expected"], v["expected"]);
    assert_eq!(simulated["makespan_s"], v["makespan_calibrated_s"]);
    let (code, text, err) = mpipe(&["simulate", path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.lines().nth(2)
            == Some(
                "expected under the run's measured jitter: 136.184 ms (the median of 200 draws; \
                 10–90%: 113.331 ms to 151.782 ms), +8.5% against the simulated step"
            ),
        "{text}"
    );
    let plain = json(&[
        "simulate",
        "--json",
        "--no-events",
        &seven("zbv", "scenario.json"),
    ]);
    assert!(plain.get("expected").is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PyTorch's split backward costs more than its whole one (`stage_backward_input`, then
/// `stage_backward_weight` walking the graph again): on the interleaved zero-bubble run the input
/// halves cost ×0.84 and the weight halves ×1.84 of their shares of a whole backward, fitted
/// against the first stage's whole backwards (its region's only ones: the first stage runs its
/// split backward whole in its weight half). The calibrated scenario prices the halves so
/// (`hardware.input_half_factor`, `weight_half_factor`) and its other stages' whole backwards are
/// their halves unpriced; the what-if from this run put every whole-backward schedule 13–18 %
/// long when the halves summed to the whole backward, and now within 6 %.
#[test]
fn a_split_backward_is_priced_apart_from_the_whole_backward() {
    let dir = std::env::temp_dir().join(format!("mpipe-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("calibrated.json");
    let v = compare(
        "interleaved-zb",
        "interleaved-zb",
        &[
            "--fit-step",
            "all",
            "--what-if-all",
            "--calibrated",
            out.to_str().unwrap(),
        ],
    );
    let calibrated: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let factor = |stage: u64, phase: &str| {
        v["factors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["stage"] == stage && f["phase"] == phase)
            .map(|f| f["factor"].as_f64().unwrap())
            .unwrap()
    };
    // Region 1 holds stages 0 and 1: stage 1's halves against stage 0's whole backwards (region
    // 2's stages ran halves only).
    let split = &v["split"];
    let (input, weight) = (
        split["input"].as_f64().unwrap(),
        split["weight"].as_f64().unwrap(),
    );
    assert!(
        (input - factor(1, "I") / factor(0, "B")).abs() < 1e-12,
        "{split}"
    );
    assert!(
        (weight - factor(1, "W") / factor(0, "B")).abs() < 1e-12,
        "{split}"
    );
    assert!(input < 1.0 && weight > 1.5, "{split}");
    assert_eq!(
        (
            &split["input_actions"],
            &split["weight_actions"],
            &split["whole_actions"],
            &split["first_stage_whole"]
        ),
        (
            &serde_json::json!(80),
            &serde_json::json!(80),
            &serde_json::json!(80),
            &serde_json::json!(true)
        )
    );
    assert_eq!(v["half_factors"], serde_json::json!([input, weight]));
    let hw = &calibrated["hardware"];
    assert_eq!(hw["input_half_factor"].as_f64(), Some(input));
    assert_eq!(hw["weight_half_factor"].as_f64(), Some(weight));
    // Each stage's halves as priced are what its halves measured (the scenario's: 2 ms each).
    let layers = calibrated["model"]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 4);
    for stage in 1..4u64 {
        let layer = &layers[stage as usize];
        let (i, w, bwd) = (
            layer["bwd_input_s"].as_f64().unwrap(),
            layer["bwd_weight_s"].as_f64().unwrap(),
            layer["bwd_s"].as_f64().unwrap(),
        );
        assert!(
            (i * input - 0.002 * factor(stage, "I")).abs() < 1e-12,
            "{layer}"
        );
        assert!(
            (w * weight - 0.002 * factor(stage, "W")).abs() < 1e-12,
            "{layer}"
        );
        assert!((i + w - bwd).abs() < 1e-12, "{layer}");
    }
    // The whole-backward schedules from this run, against their own runs' medians.
    for (run, schedule, _) in &RUNS[..4] {
        let steps: Vec<f64> = compare(run, run, &[])["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["measured_s"].as_f64().unwrap())
            .collect();
        let measured = median(steps);
        let chunks = if schedule.contains(',') { 2 } else { 1 };
        let predicted = v["what_if_all"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["schedule"] == *schedule && p["chunks"] == chunks)
            .unwrap()["step_s"]
            .as_f64()
            .unwrap();
        let error = (predicted - measured) / measured;
        assert!(error.abs() < 0.06, "{run}: {error:+.3}");
    }
}

/// Calibrating the calibrated scenario again on the same run finds the split priced as it is:
/// the factors are a fixed point (the halves' layers keep what they measured with the factors
/// divided out, and the first stage's whole backward is set against the scenario's whole one).
#[test]
fn calibrating_again_keeps_the_split_it_priced() {
    let dir = std::env::temp_dir().join(format!("mpipe-split-again-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (first, second) = (dir.join("first.json"), dir.join("second.json"));
    let (r0, r1) = (
        seven("interleaved-zb", "rank0.json.gz"),
        seven("interleaved-zb", "rank1.json.gz"),
    );
    let calibrate = |scenario: &str, out: &std::path::Path| {
        json(&[
            "compare-trace",
            "--json",
            "--fit-step",
            "all",
            "--calibrated",
            out.to_str().unwrap(),
            scenario,
            &r0,
            &r1,
        ])
    };
    let once = calibrate(&seven("interleaved-zb", "scenario.json"), &first);
    let twice = calibrate(first.to_str().unwrap(), &second);
    std::fs::remove_dir_all(&dir).unwrap();
    for v in [&once, &twice] {
        assert_eq!(v["split_pricing"], "fitted");
        assert_eq!(v["run_split"], true);
    }
    for half in ["input", "weight"] {
        let (a, b) = (
            once["split"][half].as_f64().unwrap(),
            twice["split"][half].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 1e-9 * a, "{half}: {a} then {b}");
    }
}

/// A run that never split its backward cannot price the split: where the scenario gives no
/// factor the calibration takes PyTorch's measured split, says so once in the text (the what-if
/// table points to it), and the calibrated scenario carries it; calibrated again, the factors
/// are the scenario's and the text says the run split none.
#[test]
fn a_run_without_split_backwards_prices_the_split_at_pytorchs() {
    let v = compare("1f1b", "1f1b", &[]);
    assert_eq!(v["split"], serde_json::Value::Null);
    assert_eq!(v["split_pricing"], "pytorch_prior");
    assert_eq!(v["run_split"], false);
    assert_eq!(v["half_factors"], serde_json::json!([0.9, 1.5]));
    let scenario = seven("1f1b", "scenario.json");
    let (r0, r1) = (
        seven("1f1b", "rank0.json.gz"),
        seven("1f1b", "rank1.json.gz"),
    );
    let (code, text, err) = mpipe(&["compare-trace", "--what-if-all", &scenario, &r0, &r1]);
    assert_eq!(code, 0, "{err}");
    let note = "a split backward's halves are priced at ×0.900 (input) and ×1.500 (weight) of their shares of the whole backward, PyTorch's split, the traces' runtime taken to be PyTorch's pipelining (recorded runs measured ×0.73–0.93 for the input half, ×1.14–1.96 for the weight half): this run split no backward";
    assert!(
        text.contains(&format!("  split backward: {note}")),
        "{text}"
    );
    assert_eq!(text.matches(note).count(), 1, "{text}");
    // Under the what-if table, a pointer to it.
    assert!(
        text.contains("the split schedules' halves are priced at ×0.900 (input) and ×1.500 (weight), as `split backward:` above says"),
        "{text}"
    );
    assert!(!text.contains("fitted split backward"), "{text}");
    // The calibrated scenario carries them, for every what-if made from it.
    let out = std::env::temp_dir().join(format!("mpipe-split-prior-{}.json", std::process::id()));
    let (code, _, err) = mpipe(&[
        "compare-trace",
        "--calibrated",
        out.to_str().unwrap(),
        &scenario,
        &r0,
        &r1,
    ]);
    assert_eq!(code, 0, "{err}");
    let calibrated: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(calibrated["hardware"]["input_half_factor"], 0.9);
    assert_eq!(calibrated["hardware"]["weight_half_factor"], 1.5);
    // Calibrated again on the same run: the factors are now the scenario's, and the text says
    // the run split none (not that its halves could not be fitted).
    let again = out.with_extension("again.json");
    std::fs::write(&again, calibrated.to_string()).unwrap();
    let (code, text, err) = mpipe(&["compare-trace", again.to_str().unwrap(), &r0, &r1]);
    let (_, json_again, _) = mpipe(&["compare-trace", "--json", again.to_str().unwrap(), &r0, &r1]);
    std::fs::remove_file(&again).unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("  split backward: a split backward's halves are priced at ×0.900 (input) and ×1.500 (weight) of their shares of the whole backward, the scenario's: this run split no backward, so it cannot show what its runtime's split costs"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&json_again).unwrap();
    assert_eq!(v["split_pricing"], "scenario");
    assert_eq!(v["half_factors"], serde_json::json!([0.9, 1.5]));
}

/// Where the run could not show what its split costs, the what-if prices each split schedule at
/// the low and the high end of what recorded runs measured too: its step's range brackets the
/// step at the prior, widens with the weight half's share of the step, and is absent from the
/// schedules that never split — and from every schedule where the run fitted its split.
#[test]
fn the_what_if_gives_a_split_schedules_range_where_the_run_never_split() {
    let v = compare("gpipe", "gpipe", &["--what-if-all", "--fit-step", "all"]);
    let ranked = v["what_if_all"].as_array().unwrap();
    // The registered first-order schedules that may split their backward.
    let splitting: Vec<&str> = mpipe::schedules::REGISTRY
        .iter()
        .filter(|s| s.may_split_backward() && !s.second_order())
        .map(|s| s.name())
        .collect();
    let (mut split, mut whole) = (0, 0);
    for p in ranked {
        let schedule = p["schedule"].as_str().unwrap();
        let names: Vec<&str> = schedule
            .trim_start_matches('⟨')
            .trim_end_matches('⟩')
            .split(", ")
            .collect();
        let splits = names.iter().any(|n| splitting.contains(n));
        match p["split_range_s"].as_array() {
            Some(range) => {
                let (low, high) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
                let step = p["step_s"].as_f64().unwrap();
                assert!(splits, "{schedule}");
                assert!(low <= high, "{schedule}: {low} {high}");
                // A fixed order takes longer the dearer its halves: the range brackets the
                // step (each end scaled to the step's footing: equal to it within rounding);
                // `zb_auto` orders by its costs, so its ends may be other orders.
                let eps = step * 1e-12;
                assert!(
                    names.contains(&"zb_auto") || (low <= step + eps && step <= high + eps),
                    "{schedule}: {low} {step} {high}"
                );
                if schedule == "⟨zbv, zbv⟩" {
                    assert!(low < step && step < high, "{low} {step} {high}");
                }
                split += 1;
            }
            None => {
                assert!(!splits, "{schedule}");
                whole += 1;
            }
        }
    }
    assert!(split >= 3 && whole >= 4, "{split} {whole}");
    let scenario = seven("gpipe", "scenario.json");
    let (r0, r1) = (
        seven("gpipe", "rank0.json.gz"),
        seven("gpipe", "rank1.json.gz"),
    );
    let (code, text, err) = mpipe(&["compare-trace", "--what-if-all", &scenario, &r0, &r1]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(
            " with the split priced at the low and the high end of what recorded runs measured)"
        ),
        "{text}"
    );
    // A run that fitted its split: no range.
    let v = compare("interleaved-zb", "interleaved-zb", &["--what-if-all"]);
    assert!(
        v["what_if_all"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["split_range_s"].is_null())
    );
}

/// A run whose halves ran but met too few whole backwards to fit the split (the DualPipeV run's
/// step 0: its whole backwards are halves of overlapped pairs but a few) keeps the scenario's
/// factors, not PyTorch's: its layers hold the halves' measured times, which a prior would scale
/// twice. The text says why.
#[test]
fn halves_too_few_to_fit_keep_the_scenarios_split() {
    let v = compare("dualpipev", "dualpipev", &[]);
    assert_eq!(v["split"], serde_json::Value::Null);
    assert_eq!(v["run_split"], true);
    assert_eq!(v["split_pricing"], "scenario");
    assert_eq!(v["half_factors"], serde_json::json!([1.0, 1.0]));
    let scenario = seven("dualpipev", "scenario.json");
    let (r0, r1) = (
        seven("dualpipev", "rank0.json.gz"),
        seven("dualpipev", "rank1.json.gz"),
    );
    let (code, text, err) = mpipe(&["compare-trace", "--what-if-all", &scenario, &r0, &r1]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("a split backward's halves are priced at ×1.000 (input) and ×1.000 (weight) of their shares of the whole backward, the scenario's: this run's split backwards met too few whole ones (at least 4 of each) to fit what its runtime's split costs"),
        "{text}"
    );
    assert!(!text.contains("split backward: "), "{text}");
}

/// A scenario that gives its own split factors keeps them on a run that never split: the
/// runtime's prior is for a scenario with no word on it.
#[test]
fn a_scenarios_own_split_factors_are_kept_where_the_run_never_split() {
    let dir = std::env::temp_dir().join(format!("mpipe-split-given-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(seven("1f1b", "scenario.json")).unwrap())
            .unwrap();
    scenario["hardware"]["weight_half_factor"] = serde_json::json!(1.25);
    let path = dir.join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let (r0, r1) = (
        seven("1f1b", "rank0.json.gz"),
        seven("1f1b", "rank1.json.gz"),
    );
    let (code, text, err) = mpipe(&["compare-trace", "--json", path.to_str().unwrap(), &r0, &r1]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["split_pricing"], "scenario");
    assert_eq!(v["half_factors"], serde_json::json!([1.0, 1.25]));
    let (code, text, err) = mpipe(&[
        "compare-trace",
        "--what-if-all",
        path.to_str().unwrap(),
        &r0,
        &r1,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("  split backward: a split backward's halves are priced at ×1.000 (input) and ×1.250 (weight) of their shares of the whole backward, the scenario's: this run split no backward"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
