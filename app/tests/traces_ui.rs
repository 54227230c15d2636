//! UI tests of the traces part of the window: import on a worker thread (progress, Cancel), the
//! predicted-vs-measured summary, calibration as an undoable edit, and the rules editor.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{choose, sized, wait};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use mpipe_studio::Studio;
use mpipe_studio::command::Command;
use mpipe_studio::state::traces::TraceSource;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/traces/pp-interleaved")
        .join(name)
}

/// The window on the traced run's scenario, with its two rank traces imported.
fn traced() -> Harness<'static, Studio> {
    traced_from(&fixture(""))
}

/// The window on `dir/scenario.json`, with `dir/rank0.json.gz` and `dir/rank1.json.gz` imported.
fn traced_from(dir: &std::path::Path) -> Harness<'static, Studio> {
    traced_with(&dir.join("scenario.json"), dir)
}

/// The app with the scenario `scenario` and the traces `rank0.json.gz`, `rank1.json.gz` of `dir`.
fn traced_with(scenario: &std::path::Path, dir: &std::path::Path) -> Harness<'static, Studio> {
    let mut studio = Studio::default();
    studio.open_path(scenario);
    let mut harness = sized(studio, egui::vec2(1500.0, 1400.0), 0.25);
    // The scenario first, then the traces: each says what it did when it is done, and the
    // traces' notice is the one the tests read (opened together, the later one wins).
    wait(&mut harness, |s| s.io.opening.is_none());
    let sources = ["rank0.json.gz", "rank1.json.gz"]
        .map(|f| TraceSource::Bytes {
            name: f.to_string(),
            bytes: std::fs::read(dir.join(f)).unwrap().into(),
        })
        .to_vec();
    harness.state_mut().open_traces(sources);
    wait(&mut harness, |s| {
        s.traces.import.is_none() && s.io.opening.is_none()
    });
    harness
}

/// Moves the pointer onto the button first (away from the chart's tooltip), then clicks it; a
/// second frame draws what the click did.
fn press(harness: &mut Harness<'static, Studio>, label: &str) {
    let at = harness.get_by_label(label).rect().center();
    harness.hover_at(at);
    harness.run();
    harness.get_by_label(label).click();
    harness.step();
    harness.step();
}

#[test]
fn imported_traces_show_under_the_prediction_with_their_agreement() {
    let harness = traced();
    assert_eq!(
        harness.state().notice.as_ref().map(|n| n.text.as_str()),
        Some("imported rank0.json.gz, rank1.json.gz")
    );
    harness.get_by_label_contains("2 file(s), 2 rank(s), shared clock · order agreement 100.0%");
    harness.get_by_label_contains("predicted 27.000 ms");
    harness.get_by_label("Calibrate");
    harness.get_by_label("of 2");
    let m = harness.state().traces.measurement.as_ref().unwrap();
    assert_eq!(m.ranks.len(), 2);
    assert!(m.ranks.iter().all(|r| r.actions.len() == 32));
    // Every chart spans the longer of the predicted (27 ms) and the measured step, so the
    // timeline, the measured lanes and the memory plot share one time axis.
    let s = harness.state();
    let measured = s
        .traces
        .cached_view(s.shown().unwrap())
        .unwrap()
        .makespan_measured_s;
    assert!(measured > 0.027);
    assert_eq!(s.span(), measured);
    assert_eq!(s.view.visible(s.span()), (0.0, measured));
}

#[test]
fn calibrate_makes_the_fitted_scenario_current_and_undo_takes_it_back() {
    let mut harness = traced();
    let before = harness.state().scenario().cloned().unwrap();
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    let after = harness.state().scenario().cloned().unwrap();
    assert_ne!(after, before);
    assert!(after.name.ends_with(" (calibrated)"));
    // The traced blocks split by stage (one block each): each scaled by its own factors.
    assert_eq!(after.model.layers.len(), 4);
    assert!(
        after
            .hardware
            .as_ref()
            .and_then(|h| h.link_alpha_s)
            .is_some()
    );
    let notice = harness.state().notice.clone().unwrap().text;
    assert!(
        notice.starts_with("calibrated on step 0: ")
            && notice.contains("% against the median of the other steps (their spread ±"),
        "{notice}"
    );
    // What it fitted, as `mpipe compare-trace` prints it: factors, links, residuals, and how
    // the prediction fares on the fit step and on the other step.
    harness.get_by_label("Calibration: fitted factors and residuals");
    harness.get_by_label("factor");
    harness.get_by_label("stage");
    harness.get_by_label("|start resid| pred → cal");
    harness.get_by_label_contains("fitted links: α ");
    harness.get_by_label_contains("fitted per-action overhead: ");
    harness.get_by_label_contains("against its own fit step: ");
    harness.get_by_label_contains("validated on the 1 other step(s): ");
    let report = harness.state().traces.calibration.clone().unwrap();
    assert_eq!(report.factors.len(), 8);
    assert_eq!(report.ranks.len(), 2);
    let shown = format!("×{:.3}", report.factors[0].factor);
    harness.get_by_label(&shown);
    press(&mut harness, "Undo");
    assert_eq!(harness.state().scenario(), Some(&before));
}

#[test]
fn a_broken_rule_is_reported_and_the_old_rules_stay() {
    let mut harness = traced();
    harness.get_by_label("Schedule rules").click();
    harness.run();
    harness.state_mut().traces.rules_text =
        r#"{"rules":[{"name":"x","pattern":"("}],"step_pattern":"s"}"#.into();
    press(&mut harness, "Apply rules");
    let error = harness.state().traces.rules_error.clone().unwrap();
    assert!(
        // Named at its field in the editor's text (issue 10: rules errors give a position).
        error.starts_with(
            "rules:1:33: field `rules[0].pattern`: rule 0 (x): bad pattern: regex parse error"
        ),
        "{error}"
    );
    harness.get_by_label_contains("rule 0 (x): bad pattern");
    assert_eq!(
        harness.state().traces.measurement.as_ref().unwrap().ranks[0]
            .actions
            .len(),
        32
    );
    // Only forwards: half the actions.
    harness.state_mut().traces.rules_text = r#"{"rules":[{"name":"F","pattern":"^PP:(?P<stage>\\d+)F(?P<mb>\\d+)$","phase":"F"}],"step_pattern":"^ProfilerStep#(?P<step>\\d+)$"}"#.into();
    press(&mut harness, "Apply rules");
    assert_eq!(harness.state().traces.rules_error, None);
    assert_eq!(
        harness.state().traces.measurement.as_ref().unwrap().ranks[0]
            .actions
            .len(),
        16
    );
}

/// 40 MB of events: long enough to still be running when Cancel is pressed.
fn long_trace() -> std::sync::Arc<[u8]> {
    let mut text = String::from("[");
    for i in 0..400_000 {
        text.push_str(&format!(r#"{{"ph":"X","name":"aten::mm","pid":1,"tid":1,"ts":{i},"dur":1,"args":{{"a":"{}"}}}},"#, "x".repeat(40)));
    }
    text.push_str(r#"{"ph":"i","ts":0}]"#);
    text.into_bytes().into()
}

/// With `studio`'s import of `files` files running, the progress line shows; Cancel ends it
/// with `notice` and nothing imported.
fn cancel_import(studio: Studio, files: usize, notice: &str) {
    let mut harness = common::harness_on(studio);
    harness.get_by_label_contains(&format!("importing {files} file(s)"));
    harness.get_by_label("Cancel import").click();
    wait(&mut harness, |s| s.traces.import.is_none());
    assert_eq!(
        harness.state().notice.as_ref().map(|n| n.text.as_str()),
        Some(notice)
    );
    assert!(harness.state().traces.raw.is_empty());
}

#[test]
fn a_long_import_shows_progress_and_can_be_cancelled() {
    let mut studio = Studio::default();
    studio.open_traces(vec![TraceSource::Bytes {
        name: "big.json".into(),
        bytes: long_trace(),
    }]);
    cancel_import(studio, 1, "big.json: import cancelled");
}

/// Several files are read on the available cores at once, with the traces of reading them one
/// after the other, and a broken file among them gives the error the reading in order gives
/// (the first broken file's), the traces imported before staying.
#[test]
fn files_read_at_once_are_the_files_read_in_order() {
    let harness = traced();
    let dir = fixture("");
    let in_order: Vec<mpipe::trace::RawTrace> = ["rank0.json.gz", "rank1.json.gz"]
        .iter()
        .map(|f| mpipe::trace::import_bytes(&std::fs::read(dir.join(f)).unwrap(), f).unwrap())
        .collect();
    assert_eq!(
        format!("{:?}", harness.state().traces.raw),
        format!("{in_order:?}")
    );
    let mut harness = harness;
    let bytes = |f: &str| TraceSource::Bytes {
        name: f.to_string(),
        bytes: std::fs::read(dir.join(f)).unwrap().into(),
    };
    let broken = |name: &str, text: &str| TraceSource::Bytes {
        name: name.into(),
        bytes: text.as_bytes().to_vec().into(),
    };
    // Four threads whatever the machine has: the reading at once is what is checked.
    let at_once = |harness: &mut Harness<'static, Studio>, sources| {
        harness
            .state_mut()
            .traces
            .start_import_on(sources, Some(4))
            .unwrap();
        wait(harness, |s| s.traces.import.is_none());
    };
    at_once(
        &mut harness,
        vec![bytes("rank0.json.gz"), bytes("rank1.json.gz")],
    );
    assert_eq!(
        format!("{:?}", harness.state().traces.raw),
        format!("{in_order:?}")
    );
    at_once(
        &mut harness,
        vec![
            bytes("rank0.json.gz"),
            broken("second.json", "[{\"ph\": }]"),
            bytes("rank1.json.gz"),
            broken("fourth.json", "{"),
        ],
    );
    harness.get_by_label_contains("second.json:1:9:");
    assert_eq!(
        format!("{:?}", harness.state().traces.raw),
        format!("{in_order:?}")
    );
}

/// Cancel stops every file read at once; nothing is imported.
#[test]
fn an_import_of_several_files_can_be_cancelled() {
    let bytes = long_trace();
    let mut studio = Studio::default();
    // Three threads whatever the machine has: Cancel must stop the reading at once.
    let sources = (0..3)
        .map(|i| TraceSource::Bytes {
            name: format!("big{i}.json"),
            bytes: bytes.clone(),
        })
        .collect();
    studio.traces.start_import_on(sources, Some(3)).unwrap();
    cancel_import(studio, 3, "big0.json: import cancelled");
}

#[test]
fn the_user_can_set_a_files_rank() {
    let mut harness = traced();
    press(&mut harness, "Files and ranks");
    harness.run();
    let first = harness
        .get_all_by_label("set rank")
        .next()
        .unwrap()
        .rect()
        .center();
    harness.hover_at(first);
    harness.run();
    harness.get_all_by_label("set rank").next().unwrap().click();
    harness.run();
    assert_eq!(harness.state().traces.user_ranks, [Some(0), None]);
    let m = harness.state().traces.measurement.as_ref().unwrap();
    assert_eq!(m.ranks[0].rank_source, mpipe::trace::rank::RankSource::User);
    assert_eq!(
        m.ranks[1].rank_source,
        mpipe::trace::rank::RankSource::DistributedInfo
    );
    harness.get_by_label_contains("rank 1 (from distributedInfo)");
    harness.get_by_label_contains("rank 0 (set by hand)");
}

/// With file 0 set by hand to rank 1 (so both files are rank 1), file 1 read "from set by the
/// user": the source was the merged rank's, not each file's.
#[test]
fn each_file_says_where_its_own_rank_came_from() {
    let mut harness = traced();
    press(&mut harness, "Files and ranks");
    harness.state_mut().apply(Command::TraceFileRank {
        file: 0,
        rank: Some(1),
    });
    harness.run();
    let m = harness.state().traces.measurement.as_ref().unwrap();
    assert_eq!(m.ranks.len(), 1);
    assert_eq!(
        harness.state().traces.file_rank(0).as_deref(),
        Some("rank 1 (set by hand)")
    );
    assert_eq!(
        harness.state().traces.file_rank(1).as_deref(),
        Some("rank 1 (from distributedInfo)")
    );
    harness.get_by_label("rank 1 (set by hand)");
    harness.get_by_label("rank 1 (from distributedInfo)");
}

/// A file that says it is rank 4,000,000,000 is one more rank: the comparison and the chart
/// take it in their stride instead of allocating a lane per rank number (issue 10).
#[test]
fn a_huge_rank_number_is_one_rank_more() {
    let mut harness = traced();
    harness.state_mut().apply(Command::TraceFileRank {
        file: 1,
        rank: Some(4_000_000_000),
    });
    harness.run();
    let s = harness.state();
    let m = s.traces.measurement.as_ref().unwrap();
    assert_eq!(
        m.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        [0, 4_000_000_000]
    );
    let c = s.traces.cached_view(s.shown().unwrap()).unwrap();
    assert_eq!(
        c.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        [0, 1, 4_000_000_000]
    );
    harness.get_by_label("predicted vs measured");
}

/// Gzip bombs (issue 10): a stream of NULs is refused at its first byte, and one event larger
/// than the limit ends the import at the limit with a message naming it; the traces imported
/// before stay, and so does their comparison.
#[test]
fn gzip_bombs_are_refused_and_the_imported_traces_stay() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;
    let bomb = |head: &[u8], fill: u8, mib: usize, tail: &[u8]| -> std::sync::Arc<[u8]> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(head).unwrap();
        let chunk = vec![fill; 1 << 20];
        for _ in 0..mib {
            gz.write_all(&chunk).unwrap();
        }
        gz.write_all(tail).unwrap();
        gz.finish().unwrap().into()
    };
    let mut harness = traced();
    let before = harness.state().traces.raw.len();
    let import = |harness: &mut Harness<'static, Studio>, name: &str, bytes| {
        harness.state_mut().open_traces(vec![TraceSource::Bytes {
            name: name.into(),
            bytes,
        }]);
        // Reading up to the limit takes seconds in a debug build: wait by the clock.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while harness.state().traces.import.is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: the import went on"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
            harness.step();
        }
        harness.run();
    };
    import(&mut harness, "zeros.json.gz", bomb(b"", 0, 64, b""));
    harness.get_by_label_contains("zeros.json.gz:1:1: not valid JSON: expected value");
    // A name of 65 MiB: one byte more than one event may hold.
    import(
        &mut harness,
        "long-name.json.gz",
        bomb(
            br#"[{"ph":"X","name":""#,
            b'a',
            65,
            br#"","ts":1,"dur":1}]"#,
        ),
    );
    harness.get_by_label_contains(
        "long-name.json.gz:1:2: one value here is larger than 64 MiB (the limit for one event; `--max-event-bytes` raises it)",
    );
    assert_eq!(harness.state().traces.raw.len(), before);
    assert_eq!(before, 2);
    harness.get_by_label("predicted vs measured");
}

#[test]
fn a_run_nothing_can_be_recovered_from_is_warned_about_and_cannot_be_calibrated() {
    // The recorded Schedule1F1B run with only its communication left (generate.py --derive).
    let diagnosis =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/diagnosis");
    let mut harness = traced_with(
        &diagnosis.join("1f1b/scenario.json"),
        &diagnosis.join("transfers-only"),
    );
    harness.get_by_label_contains(
        "⚠ rank 0 (rank0.json.gz): no compute action was recovered from the trace, so there is nothing to compare or fit",
    );
    assert!(
        harness
            .get_by_label("Calibrate")
            .accesskit_node()
            .is_disabled()
    );
    // Even asked directly, it does not calibrate.
    let before = harness.state().scenario().cloned();
    harness.state_mut().start_calibration();
    harness.run();
    assert!(harness.state().traces.calibrating.is_none());
    assert_eq!(harness.state().scenario().cloned(), before);
}

#[test]
fn a_recorded_run_is_diagnosed_and_its_fitted_costs_kept_on_another_schedule() {
    // The recorded GPipe run (profile_memory=True): its measured memory is drawn beside the
    // prediction; calibrated, the app lists what was fitted (memory included); then the user
    // asks "what would interleaved 1F1B have done?" by splitting the region and choosing 1f1b
    // for both halves: the fitted costs stay, and the prediction is `compare-trace --what-if`'s.
    let diagnosis =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/diagnosis");
    let mut harness = traced_from(&diagnosis.join("gpipe"));
    let shown = harness.state().shown().unwrap().clone();
    let view = harness.state_mut().traces.view(&shown).unwrap();
    assert_eq!(view.memory.len(), 2);
    assert!(
        view.memory
            .iter()
            .all(|m| m.relative && m.device == "cpu" && m.points.len() > 100)
    );
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    harness.get_by_label("held per F");
    harness.get_by_label_contains("validated on the 7 other step(s): ");
    let calibrated = harness.state().scenario().cloned().unwrap();
    harness.get_by_label("Add region (split the last)").click();
    harness.run();
    choose(&mut harness, "region 1", "1f1b");
    choose(&mut harness, "region 2", "1f1b");
    let what_if = harness.state().scenario().cloned().unwrap();
    assert_eq!(what_if.model, calibrated.model);
    assert_eq!(what_if.hardware, calibrated.hardware);
    let interleaved = mpipe::Scenario::from_json_str(
        &std::fs::read_to_string(diagnosis.join("interleaved/scenario.json")).unwrap(),
        "scenario.json",
    )
    .unwrap();
    let cli = mpipe::trace::calibrate::with_fitted_costs(&interleaved, &calibrated).unwrap();
    let simulate = |s: &mpipe::Scenario| {
        mpipe::tune::pipeline::simulate_scenario(s, Default::default())
            .unwrap()
            .makespan_s
    };
    assert_eq!(simulate(&what_if), simulate(&cli));
}

#[test]
fn an_unannotated_run_is_shown_as_inferred() {
    // The recorded Schedule1F1B run: torch 2.15 annotates none of its actions; the app reads
    // them from the ops and says so above the measured chart.
    let harness = traced_from(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/diagnosis/1f1b"),
    );
    harness.get_by_label(
        "⚠ rank(s) 0, 1: no per-action annotations; the actions were inferred from the trace's structure (see Import warnings)",
    );
    assert!(
        !harness
            .get_by_label("Calibrate")
            .accesskit_node()
            .is_disabled()
    );
    let m = harness.state().traces.measurement.clone().unwrap();
    assert!(m.ranks.iter().all(|r| r.inferred && r.actions.len() == 64));
}

#[test]
fn one_click_ranks_every_schedule_beside_the_measured_run() {
    // The recorded ZB-V run (tests/fixtures/traces/seven): calibrated, the run's schedule is
    // identified; "What-if: rank every schedule" predicts every registered schedule with the
    // fitted costs on a worker, and the ranked chart names what it shows. Its figures are the
    // CLI's `--what-if-all`.
    let seven = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/seven");
    let mut harness = traced_from(&seven.join("zbv"));
    // Nothing to rank before a calibration.
    assert!(
        harness
            .query_by_label("What-if: rank every schedule")
            .is_none()
    );
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    harness
        .get_by_label_contains("schedule identified from the orders of step 0: ⟨zbv, zbv⟩ 100.0%");
    press(&mut harness, "What-if: rank every schedule");
    wait(&mut harness, |s| s.traces.ranking.is_none());
    harness.run();
    let report = harness.state().traces.calibration.clone().unwrap();
    let ranked = &report.what_if_all;
    assert!(ranked.len() >= 7, "{ranked:?}");
    assert!(ranked.windows(2).all(|w| w[0].step_s <= w[1].step_s));
    let ran: Vec<_> = ranked.iter().filter(|p| p.ran).collect();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].schedule, "⟨zbv, zbv⟩");
    harness.get_by_label_contains("What-if for The traced run: 4 MLP blocks, zbv on 2 ranks");
    // The same ranking as the CLI's, from the calibrated scenario the app now holds.
    let calibrated = harness.state().scenario().cloned().unwrap();
    let cli = mpipe::trace::whatif::what_if_all(
        &calibrated,
        &calibrated,
        &mpipe::trace::whatif::RunShape {
            chunks: 2,
            microbatches: Some(8),
            ran: Some("⟨zbv, zbv⟩"),
            basis: mpipe::trace::whatif::MemoryBasis::Dynamic,
            jitter: Some(&report.jitter),
            split_range: report.split_range(),
        },
        Default::default(),
    );
    assert_eq!(&cli, ranked);
    // Ranked by the expected step under the run's measured jitter.
    assert!(
        ranked
            .iter()
            .all(|p| p.expected.is_some_and(|e| e.median_s == p.step_s))
    );
    // An edit makes the ranking stale: it says so, and the button waits for a new calibration.
    harness.state_mut().apply(Command::Undo);
    harness.run();
    harness.get_by_label_contains("stale: the scenario changed since this ranking");
    assert!(
        harness
            .get_by_label("What-if: rank every schedule")
            .accesskit_node()
            .is_disabled()
    );
}

#[test]
fn a_run_that_never_split_says_its_split_is_priced_at_pytorchs() {
    // The recorded GPipe run splits no backward: calibrated, the panel says the split schedules'
    // halves are priced at PyTorch's measured split, and the ranked what-if says it under its
    // chart, as the CLI does.
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/seven/gpipe");
    let mut harness = traced_from(&dir);
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    let note = "a split backward's halves are priced at ×0.900 (input) and ×1.500 (weight) of their shares of the whole backward, PyTorch's split, the traces' runtime taken to be PyTorch's pipelining";
    harness.get_by_label_contains(&format!("split backward: {note}"));
    let report = harness.state().traces.calibration.clone().unwrap();
    assert_eq!(report.half_factors, [0.9, 1.5]);
    press(&mut harness, "What-if: rank every schedule");
    wait(&mut harness, |s| s.traces.ranking.is_none());
    harness.run();
    assert_eq!(harness.query_all_by_label_contains(note).count(), 2);
    // Each split schedule's range over the split's measured costs, drawn under its bar and
    // named in the chart's legend; none for a schedule that splits no backward.
    let ranked = harness
        .state()
        .traces
        .calibration
        .clone()
        .unwrap()
        .what_if_all;
    let of = |schedule: &str| ranked.iter().find(|p| p.schedule == schedule).unwrap();
    let zbv = of("⟨zbv, zbv⟩");
    let [low, high] = zbv.split_range_s.unwrap();
    assert!(low < zbv.step_s && zbv.step_s < high);
    assert!(of("⟨gpipe⟩").split_range_s.is_none() && of("⟨1f1b⟩").split_range_s.is_none());
    harness.get_by_label_contains(
        "violet line under a bar: its step with the split priced at the low and the high end of what recorded runs measured",
    );
}

#[test]
fn every_step_calibrates_on_the_whole_run_as_the_cli_does() {
    // The recorded ZB-V run: with "every step" ticked, Calibrate fits the costs on all 10
    // steps — the report says so and applies the switch fitted from them — and the calibrated
    // step is the CLI's `--fit-step all`.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/seven/zbv");
    let mut harness = traced_from(&dir);
    press(&mut harness, "every step");
    assert!(harness.state().traces.every_step);
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    let report = harness.state().traces.calibration.clone().unwrap();
    assert!(report.every_step);
    assert!(report.switch.fitted.iter().any(|p| p.applied));
    harness.get_by_label_contains("fitted on every step (10; memory on step 0)");
    harness.get_by_label_contains("against the 10 step(s) it was fitted on (in-sample)");
    harness.get_by_label_contains("calibrated on every step (10): -3.1% against their median");
    // `mpipe compare-trace zbv/scenario.json zbv/rank*.json.gz --fit-step all`: calibrated
    // 125.543 ms.
    assert!(
        (report.makespan_calibrated_s - 0.125_543).abs() < 5e-7,
        "{}",
        report.makespan_calibrated_s
    );
    // The calibrated scenario carries the run's jitter: once simulated, the summary above the
    // chart gives the expected step beside the simulated one, as `mpipe simulate` does.
    wait(&mut harness, |s| s.derived.running().is_none());
    harness.run();
    harness.get_by_label_contains(
        "makespan 125.543 ms · bubble 6.3 % · utilisation 93.7 % · expected 136.184 ms under the \
         traced run's jitter (10–90 %: 113.331 ms to 151.782 ms)",
    );
}

#[test]
fn a_gpu_run_shows_its_hosts_launches_and_the_host_model_it_fitted() {
    // The ZB-V run on one GPU (one rank): calibrated, the app says which actions the host bound
    // and what the fitted host launches a layer in, and the calibrated scenario carries it.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/gpu/zbv");
    let mut studio = Studio::default();
    studio.open_path(&dir.join("scenario.json"));
    let mut harness = sized(studio, egui::vec2(1500.0, 1400.0), 0.25);
    wait(&mut harness, |s| s.io.opening.is_none());
    harness.state_mut().open_traces(vec![TraceSource::Bytes {
        name: "rank0.json.gz".to_string(),
        bytes: std::fs::read(dir.join("rank0.json.gz")).unwrap().into(),
    }]);
    wait(&mut harness, |s| {
        s.traces.import.is_none() && s.io.opening.is_none()
    });
    press(&mut harness, "Calibrate");
    wait(&mut harness, |s| s.traces.calibrating.is_none());
    harness.run();
    harness.get_by_label_contains("host-bound: stage 1 F, stage 1 I, stage 1 W (");
    harness.get_by_label_contains("fitted host: launching a layer's work takes F 0.472 ms");
    // And what its split backward cost beyond the whole one (`compare-trace`'s figures).
    harness.get_by_label_contains(
        "fitted split backward: an input half costs ×0.897 and a weight half ×1.400 of their shares",
    );
    // The calibrated chart shows where the device waits for its host, and says so.
    harness.get_by_label("waiting for its host to launch the work (host-bound)");
    let shown = harness.state().shown().unwrap().clone();
    let waited: Vec<usize> = (0..shown.scene.events.len())
        .filter(|&i| shown.host_wait(i) > 0.0)
        .collect();
    assert!(!waited.is_empty());
    let lines = shown.describe(waited[0]).unwrap();
    assert!(
        lines[2].contains("waiting for its host's launch"),
        "{lines:?}"
    );
    let calibrated = harness.state().scenario().cloned().unwrap();
    let host = calibrated
        .hardware
        .unwrap()
        .host_launch_per_layer_s
        .unwrap();
    assert!(
        (host.forward.unwrap() - 0.000_471_8).abs() < 1e-7,
        "{host:?}"
    );
}
