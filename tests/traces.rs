//! Every real trace in `tests/fixtures/traces/shared/` (copied from `shared/traces/`, licences in
//! its README) imports; ranks, steps and event counts are those the traces README documents; and
//! the pipeline-parallel fixture recorded with torch.distributed.pipelining gives back exactly the
//! order its runtime executed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use mpipe::trace::rank::RankSource;
use mpipe::trace::raw::ClockBase;
use mpipe::trace::{Measurement, RawTrace, RuleSet, align, import, recover};
use mpipe_e2e::trace_fixture;
use std::io::Read;

fn load(relative: &str) -> RawTrace {
    let path = trace_fixture(relative);
    let file = std::fs::File::open(&path).unwrap();
    import(file, relative, &mut |_| true).unwrap_or_else(|e| panic!("{e}"))
}

fn measure(traces: &[RawTrace]) -> Measurement {
    recover(traces, &RuleSet::default().compile().unwrap(), &[])
}

/// The eight per-rank files inside param's `dlrm_kineto.tar.gz`, in member order.
fn dlrm() -> Vec<RawTrace> {
    let file = std::fs::File::open(trace_fixture("shared/param/dlrm_kineto.tar.gz")).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut traces = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        if !name.ends_with(".json") {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        traces.push(mpipe::trace::import_bytes(&bytes, &name).unwrap());
    }
    traces.sort_by(|a, b| a.file.cmp(&b.file));
    traces
}

#[test]
fn every_shared_trace_imports_with_the_documented_event_count() {
    let expected = [
        ("shared/hta/trace_filter/sampled_rank-0.json.gz", 4_855),
        ("shared/hta/trace_filter/sampled_rank-1.json.gz", 4_720),
        ("shared/hta/nccl_parser_config/nccl_data.json.gz", 40_573),
        (
            "shared/hta/negative_queue_length_values_check/rank0.json.gz",
            108_936,
        ),
        (
            "shared/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            220,
        ),
        ("shared/pippy/pipe_visualized.json", 36),
        ("shared/tracelens/b200/eager_trace.json.gz", 24_656),
        ("shared/mindinsight/device_0/msprof_0_2_1.json", 1_108),
        ("shared/mindinsight/device_1/msprof_1_0_1.json", 1_119),
        ("shared/ascend-mstt/trace_view.json", 3_670),
    ];
    for (file, events) in expected {
        let t = load(file);
        assert_eq!(t.event_count, events, "{file}");
        assert!(!t.spans.is_empty(), "{file}");
    }
    let counts: Vec<usize> = dlrm().iter().map(|t| t.event_count).collect();
    assert_eq!(
        counts,
        [3_290, 3_424, 3_268, 3_474, 3_310, 3_250, 3_272, 3_250]
    );
}

#[test]
fn timestamps_of_every_form_become_nanoseconds() {
    // torch_npu writes `ts` as a string with nanosecond digits.
    let npu = load("shared/ascend-mstt/trace_view.json");
    assert!(
        npu.spans
            .iter()
            .all(|s| s.start_ns > 1_704_000_000_000_000_000)
    );
    assert_eq!(npu.clock_base(), ClockBase::Epoch);
    // Newer Kineto: float µs relative to baseTimeNanoseconds; this run was on 2024-05-23 UTC.
    let kineto = load("shared/hta/nccl_parser_config/nccl_data.json.gz");
    let (start, end) = kineto.span_ns().unwrap();
    assert!(
        (1_716_422_400_000_000_000..1_716_508_800_000_000_000).contains(&start),
        "{start}"
    );
    assert_eq!(kineto.clock_base(), ClockBase::Epoch);
    // The README's 729,031 µs also counts flow and instant events; complete events span this much.
    assert_eq!(end - start, 713_092_254);
    // Ascend msprof: device-relative floats, not epoch.
    assert_eq!(
        load("shared/mindinsight/device_0/msprof_0_2_1.json").clock_base(),
        ClockBase::Local
    );
    // GPU streams keep their names, trailing space and all.
    let streams: Vec<&str> = kineto
        .threads
        .iter()
        .filter_map(|t| t.name.as_deref())
        .filter(|n| n.starts_with("stream "))
        .collect();
    assert!(streams.contains(&"stream 7 "), "{streams:?}");
}

#[test]
fn ranks_come_from_distributed_info_file_names_and_threads() {
    let m = measure(&[
        load("shared/hta/trace_filter/sampled_rank-1.json.gz"),
        load("shared/hta/trace_filter/sampled_rank-0.json.gz"),
    ]);
    let ranks: Vec<(usize, RankSource, usize)> = m
        .ranks
        .iter()
        .map(|r| (r.rank, r.rank_source, r.steps.len()))
        .collect();
    assert_eq!(
        ranks,
        [
            (0, RankSource::DistributedInfo, 2),
            (1, RankSource::DistributedInfo, 2)
        ]
    );
    // `## forward ##` / `## backward ##` phase markers: one forward and one backward per step.
    let order: Vec<String> = m.ranks[0]
        .actions
        .iter()
        .map(|a| format!("{}@{}", a.label(), a.step))
        .collect();
    assert_eq!(order, ["0F0@0", "0B0@0", "0F0@1", "0B0@1"]);

    let m = measure(&dlrm());
    assert_eq!(
        m.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    assert!(
        m.ranks
            .iter()
            .all(|r| r.rank_source == RankSource::DistributedInfo && r.steps.len() == 1)
    );
    assert_eq!(m.ranks[3].event_count, 3_474);

    let m = measure(&[
        load("shared/mindinsight/device_1/msprof_1_0_1.json"),
        load("shared/mindinsight/device_0/msprof_0_2_1.json"),
    ]);
    let ranks: Vec<(usize, RankSource, usize, Option<i64>)> = m
        .ranks
        .iter()
        .map(|r| {
            (
                r.rank,
                r.rank_source,
                r.steps.len(),
                r.steps.first().and_then(|s| s.number),
            )
        })
        .collect();
    assert_eq!(
        ranks,
        [
            (0, RankSource::FileName, 1, Some(1)),
            (1, RankSource::FileName, 1, Some(1))
        ]
    );
    assert!(
        m.warnings
            .iter()
            .any(|w| w.message.starts_with("no schedule annotations"))
    );
}

#[test]
fn pippy_stages_are_ranks_and_the_last_stage_runs_one_forward_one_backward() {
    let m = measure(&[load("shared/pippy/pipe_visualized.json")]);
    assert_eq!(m.ranks.len(), 4);
    assert!(
        m.ranks
            .iter()
            .all(|r| r.rank_source == RankSource::Thread && r.actions.len() == 8)
    );
    let last: Vec<String> = m.ranks[3].actions.iter().map(|a| a.label()).collect();
    assert_eq!(
        last,
        ["3F0", "3F1", "3B0", "3F2", "3B1", "3F3", "3B2", "3B3"]
    );
    let first: Vec<String> = m.ranks[0].actions.iter().map(|a| a.label()).collect();
    assert_eq!(
        first,
        ["0F0", "0F1", "0F2", "0F3", "0B0", "0B1", "0B2", "0B3"]
    );
}

#[test]
fn a_trace_without_schedule_annotations_says_so() {
    let m = measure(&[load("shared/tracelens/b200/eager_trace.json.gz")]);
    assert_eq!(m.ranks.len(), 1);
    assert!(m.ranks[0].actions.is_empty());
    let messages: Vec<String> = m.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "shared/tracelens/b200/eager_trace.json.gz: no schedule annotations (no event name matches a rule): \
          the rank has no actions; add a rule for this trace's names, or annotate the run \
          (torch.distributed.pipelining does)"
        ]
    );
}

mod pipelining_fixture {
    use super::*;

    fn executed() -> serde_json::Value {
        let text = std::fs::read_to_string(trace_fixture("pp-interleaved/executed.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn run() -> Measurement {
        measure(&[
            load("pp-interleaved/rank1.json.gz"),
            load("pp-interleaved/rank0.json.gz"),
        ])
    }

    #[test]
    fn recovered_actions_are_the_order_the_run_executed_in_every_step() {
        let m = run();
        let executed = executed();
        assert_eq!(m.ranks.len(), 2);
        for r in &m.ranks {
            assert_eq!(r.rank_source, RankSource::DistributedInfo);
            assert_eq!(r.steps.len(), 2, "rank {}", r.rank);
            let want: Vec<String> = executed["executed_per_step"][format!("rank{}", r.rank)]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            assert_eq!(want.len(), 16);
            for step in 0..2 {
                let got: Vec<String> = r
                    .actions
                    .iter()
                    .filter(|a| a.step == step)
                    .map(|a| a.label())
                    .collect();
                assert_eq!(got, want, "rank {} step {step}", r.rank);
            }
            // 24 transfers a step: each stage's sends and receives of activations and gradients.
            assert_eq!(r.transfers.len(), 48, "rank {}", r.rank);
        }
    }

    #[test]
    fn the_derived_order_of_the_matching_scenario_is_the_executed_one() {
        let text = std::fs::read_to_string(trace_fixture("pp-interleaved/scenario.json")).unwrap();
        let scenario = mpipe::Scenario::from_json_str(&text, "scenario.json").unwrap();
        let d = mpipe::derive(&scenario).unwrap();
        let m = run();
        for r in &m.ranks {
            let derived: Vec<String> = d
                .order
                .actions(r.rank)
                .iter()
                .map(ToString::to_string)
                .collect();
            let measured: Vec<String> = r
                .actions
                .iter()
                .filter(|a| a.step == 0)
                .map(|a| a.label())
                .collect();
            assert_eq!(derived, measured, "rank {}", r.rank);
        }
    }

    #[test]
    fn a_calibration_reports_its_progress_and_stops_when_told() {
        use mpipe::trace::calibrate::{Fit, calibrate, calibrate_cancellable};
        use mpipe::tune::pipeline::SimulationError;
        let text = std::fs::read_to_string(trace_fixture("pp-interleaved/scenario.json")).unwrap();
        let scenario = mpipe::Scenario::from_json_str(&text, "scenario.json").unwrap();
        let sim = mpipe::tune::pipeline::simulate_scenario(&scenario, Default::default()).unwrap();
        let m = run();
        let a = align(&m);
        let fit = Fit {
            scenario: &scenario,
            predicted: &sim,
            measurement: &m,
            alignment: &a,
            fit_step: 0,
            check_step: 1,
            every_step: false,
            options: Default::default(),
        };
        let whole = calibrate(&fit).unwrap();
        let mut seen = Vec::new();
        let same = calibrate_cancellable(&fit, &mut |f| {
            seen.push(f);
            true
        })
        .unwrap();
        assert_eq!(same.scenario, whole.scenario);
        // Before the fit, after reading the fitted step, the link fit, the simulation, each of
        // the 200 draws of the expected step under the run's jitter, and each of the two steps'
        // comparisons.
        assert_eq!(seen[..4], [0.0, 0.1, 0.2, 0.3], "{seen:?}");
        let draws = &seen[4..seen.len() - 2];
        assert_eq!(draws.len(), 200, "{seen:?}");
        assert!(
            draws.windows(2).all(|w| w[0] < w[1]) && draws.iter().all(|f| (0.3..0.5).contains(f)),
            "{seen:?}"
        );
        assert_eq!(seen[seen.len() - 2..], [0.5, 0.75], "{seen:?}");
        let mut asked = 0;
        let stopped = calibrate_cancellable(&fit, &mut |_| {
            asked += 1;
            asked < 4
        });
        assert_eq!(stopped.err(), Some(SimulationError::Cancelled));
        assert_eq!(asked, 4);
    }

    #[test]
    fn both_ranks_share_the_host_clock() {
        let a = align(&run());
        assert_eq!(a.method, mpipe::trace::align::AlignMethod::SharedClock);
        assert!(a.ranks.iter().all(|r| r.offset_ns == 0));
        // Interleaving gives dependencies both ways, so the interval is bounded on both sides.
        let r1 = &a.ranks[1];
        assert!(r1.min_ns.unwrap() <= 0 && r1.max_ns.unwrap() >= 0, "{r1:?}");
    }
}

#[test]
fn inputs_the_fuzzer_found_import_recover_align_and_export_without_panicking() {
    let dir = mpipe_e2e::trace_fixture("fuzz-regressions");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for path in names {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        if let Ok(trace) = mpipe::trace::import_bytes(&bytes, &name) {
            let m = measure(std::slice::from_ref(&trace));
            let a = align(&m);
            let mut out = Vec::new();
            mpipe::trace::export::write_measurement(&m, &a, &mut out).unwrap();
        }
    }
}
