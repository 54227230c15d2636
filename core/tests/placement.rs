//! Placement as a stage → rank map: the default, the V fold and explicit maps in the scenario,
//! with their validity rule; actions name the stage, the derive JSON carries the map.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{rank_actions, scenario, uniform};
use mpipe::Scenario;
use mpipe::scenario::placement::PlacementSpec;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B, TRANSPOSE};
use mpipe::sim::engine::SimOptions;
use mpipe::tune::pipeline::simulate_scenario;

/// ⟨gpipe, gpipe⟩ over 4 one-layer stages, P = 2, M = 2 (forward 1 s, backward 2 s a layer).
fn folded(spec: Option<PlacementSpec>) -> Scenario {
    let mut s = scenario(uniform(4), &[2], &[GPIPE, GPIPE], 2, 2);
    s.placement = spec;
    s
}

#[test]
fn the_default_placement_is_the_virtual_stage_numbering() {
    let s = folded(None);
    assert_eq!(rank_actions(&s, 0), "0F0 2F0 0F1 2F1 2B0 0B0 2B1 0B1");
    assert_eq!(rank_actions(&s, 1), "1F0 3F0 1F1 3F1 3B0 1B0 3B1 1B1");
    assert_eq!(
        mpipe::derive(&folded(Some(PlacementSpec::Default)))
            .unwrap()
            .order
            .actions(1),
        mpipe::derive(&s).unwrap().order.actions(1)
    );
}

#[test]
fn the_v_fold_runs_the_second_chunk_back_up_the_ranks() {
    let s = folded(Some(PlacementSpec::VFold));
    // Chunk 1 of rank r is stage 2P − 1 − r: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
    assert_eq!(rank_actions(&s, 0), "0F0 3F0 0F1 3F1 3B0 0B0 3B1 0B1");
    assert_eq!(rank_actions(&s, 1), "1F0 2F0 1F1 2F1 2B0 1B0 2B1 1B1");
    let d = mpipe::derive(&s).unwrap();
    assert_eq!(d.plan.placement.ranks_of_stages(), [0, 1, 1, 0]);
    // The loss is on the rank of the last stage: rank 0.
    let losses: Vec<usize> = d
        .order
        .graph
        .node_weights()
        .filter_map(|e| match e {
            mpipe::graph::event::Event::Loss { rank, .. } => Some(rank.index()),
            _ => None,
        })
        .collect();
    assert_eq!(losses, [0, 0]);
    // Stage 1 → 2 stays on rank 1 (a free hop). Rank 0 runs 0F0 [0, 1], rank 1 1F0 [1, 2] and
    // 2F0 [2, 3], rank 0 3F0 [3, 4] and then 0F1 [4, 5]; microbatch 1 reaches 3F1 at [7, 8];
    // the backwards then walk 3 → 2 → 1 → 0 for each microbatch in turn, 2 s a stage, with
    // 3B1 behind 0B0 on rank 0: 3B0 [8, 10], 2B0 [10, 12], 1B0 [12, 14], 0B0 [14, 16], 3B1
    // [16, 18], 2B1 [18, 20], 1B1 [20, 22], 0B1 [22, 24].
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    assert_eq!(sim.makespan_s, 24.0);
}

#[test]
fn an_explicit_placement_is_used_and_each_region_needs_distinct_ranks() {
    // Region 1 reversed, region 2 as the default: the chain runs r1 → r0 → r0 → r1.
    let s = folded(Some(PlacementSpec::Explicit(vec![1, 0, 0, 1])));
    assert_eq!(rank_actions(&s, 0), "1F0 2F0 1F1 2F1 2B0 1B0 2B1 1B1");
    assert_eq!(rank_actions(&s, 1), "0F0 3F0 0F1 3F1 3B0 0B0 3B1 0B1");
    for (list, field, message) in [
        (
            vec![0, 1, 0],
            "placement",
            "rule `placement`: `placement` gives 3 stage(s); the schedule has 4 (P per region)",
        ),
        (
            vec![0, 1, 2, 0],
            "placement[2]",
            "rule `placement`: stage 2 is on rank 2, but there are 2 ranks",
        ),
        (
            vec![0, 1, 1, 1],
            "placement[3]",
            "rule `placement`: stages 2 and 3 of region 2 are both on rank 1; each region's stages must be on distinct ranks",
        ),
    ] {
        let e = mpipe::derive(&folded(Some(PlacementSpec::Explicit(list)))).unwrap_err();
        assert_eq!(
            (e.rule(), e.field(), e.to_string()),
            ("placement", field.to_string(), message.to_string())
        );
    }
    // A Replicated region's stages are its replicas: they stay on their ranks.
    let mut t = scenario(
        common::vit_llm(2, 2, true),
        &[2],
        &[TRANSPOSE, ONE_F_ONE_B],
        2,
        2,
    );
    t.placement = Some(PlacementSpec::Explicit(vec![1, 0, 0, 1]));
    assert_eq!(
        mpipe::derive(&t).unwrap_err().to_string(),
        "rule `placement`: stage 0 is rank 0's replica of the Replicated region 1: it stays on rank 0"
    );
    t.placement = Some(PlacementSpec::Explicit(vec![0, 1, 1, 0]));
    let d = mpipe::derive(&t).unwrap();
    // The backbone's first slab is on rank 1: the encoder outputs are gathered there.
    assert_eq!(d.plan.regions[1].sharded_ranks(), [1, 0]);
}

#[test]
fn placement_errors_name_the_file_position_and_the_json_carries_the_map() {
    let mut s = folded(None);
    let dir = std::env::temp_dir().join(format!("mpipe-placement-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = s.to_json_string().replace(
        "\"microbatches\": 2",
        "\"microbatches\": 2,\n  \"placement\": [0, 1, 2, 0]",
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, &text).unwrap();
    let (status, _, err) = common::mpipe(&["validate", bad.to_str().unwrap()]);
    let line = text
        .lines()
        .position(|l| l.contains("\"placement\""))
        .unwrap()
        + 1;
    assert_eq!(status, 2);
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}:{line}:23: field `placement[2]`: rule `placement`: stage 2 is on rank 2, but there are 2 ranks",
            bad.display()
        )
    );
    s.placement = Some(PlacementSpec::VFold);
    let good = dir.join("v.json");
    std::fs::write(&good, s.to_json_string()).unwrap();
    let (status, out, err) = common::mpipe(&["derive", good.to_str().unwrap(), "--json"]);
    assert_eq!(status, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["stage_ranks"], serde_json::json!([0, 1, 1, 0]));
    assert_eq!(json["stage_index"], "stage_ranks[stage]");
    assert_eq!(json["ranks"][0]["actions"][1], "3F0");
    let (_, text_out, _) = common::mpipe(&["derive", good.to_str().unwrap()]);
    assert!(
        text_out.contains("placement (rank of each stage: 0 1 1 0):"),
        "{text_out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_permuted_1f1b_runs_each_stage_s_order_on_its_rank() {
    // ⟨1f1b⟩ with its stages on ranks 2, 0, 1: each rank runs the order of its stage's position.
    let default = scenario(uniform(3), &[], &[ONE_F_ONE_B], 3, 4);
    let mut permuted = default.clone();
    permuted.placement = Some(PlacementSpec::Explicit(vec![2, 0, 1]));
    for (stage, rank) in [(0, 2), (1, 0), (2, 1)] {
        assert_eq!(rank_actions(&permuted, rank), rank_actions(&default, stage));
    }
    let time = |s: &Scenario| {
        simulate_scenario(s, SimOptions::default())
            .unwrap()
            .makespan_s
    };
    // Uniform stages, free links: (M + P − 1)(t_f + t_b) either way.
    assert_eq!(time(&permuted), (4.0 + 3.0 - 1.0) * 3.0);
    assert_eq!(time(&default), time(&permuted));
}

/// A Chrome trace of one rank: `PP:` spans of 1 ms each, back to back.
fn trace(rank: usize, actions: &[&str]) -> mpipe::trace::RawTrace {
    let events: Vec<String> = actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            format!(
                r#"{{"ph":"X","name":"PP:{a}","pid":0,"tid":0,"ts":{},"dur":1000}}"#,
                i * 1000
            )
        })
        .collect();
    let text = format!(
        r#"{{"distributedInfo":{{"rank":{rank}}},"traceEvents":[{}]}}"#,
        events.join(",")
    );
    mpipe::trace::import_bytes(text.as_bytes(), &format!("rank{rank}.json")).unwrap()
}

#[test]
fn compare_trace_warns_about_actions_the_schedule_cannot_have_and_stages_placed_elsewhere() {
    // ⟨1f1b⟩, P = 2, M = 2 predicts rank 0 `0F0 0F1 0B0 0B1`, rank 1 `1F0 1B0 1F1 1B1`. The
    // trace runs the backward split in halves on rank 0 and has rank 1 run stage 0's forward.
    let s = scenario(uniform(2), &[], &[ONE_F_ONE_B], 2, 2);
    let sim = simulate_scenario(&s, SimOptions::default()).unwrap();
    let traces = [
        trace(0, &["0F0", "0F1", "0I0", "0W0", "0I1", "0W1"]),
        trace(1, &["1F0", "0F0", "1B0", "1F1", "1B1"]),
    ];
    let rules = mpipe::trace::RuleSet::default().compile().unwrap();
    let m = mpipe::trace::recover(&traces, &rules, &[None, None]);
    let alignment = mpipe::trace::align(&m);
    let c = mpipe::trace::compare::compare(&sim, &m, &alignment, 0);
    assert_eq!(
        c.warnings,
        [
            "4 measured action(s) on rank(s) 0 are split-backward halves (I, W), which the schedule ⟨1f1b⟩ cannot have: it runs each backward whole (B)",
            "stage 0 is measured on rank 1 (1 action(s)), but the scenario's placement puts it on rank 0",
        ]
    );
    // Under a placement that swaps the two stages, the trace's stage 1 on rank 1 is the one
    // measured away from its rank (the scenario puts it on rank 0).
    let mut moved = scenario(uniform(2), &[], &[ONE_F_ONE_B], 2, 2);
    moved.placement = Some(PlacementSpec::Explicit(vec![1, 0]));
    let sim = simulate_scenario(&moved, SimOptions::default()).unwrap();
    let c = mpipe::trace::compare::compare(&sim, &m, &alignment, 0);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("stage 1 is measured on rank 1")),
        "{:?}",
        c.warnings
    );
}
