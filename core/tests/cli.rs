//! The `mpipe` binary as a user runs it: exit codes, messages, JSON shape.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use std::path::PathBuf;
mod common;
use common::mpipe;

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

/// Writes `text` to a fresh file in the temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpipe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn validate_accepts_every_sample() {
    for name in [
        "mpipe-vit-llm.json",
        "mpipe-vit-llm-frozen.json",
        "1f1b.json",
        "gpipe.json",
        "vpp3.json",
    ] {
        let path = samples().join(name);
        let (code, out, err) = mpipe(&["validate", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(out.contains(": valid: "), "{out}");
    }
}

#[test]
fn validate_names_the_rule_and_offers_the_normal_form() {
    let text = std::fs::read_to_string(samples().join("mpipe-vit-llm.json"))
        .unwrap()
        .replace("\"cut\": [4]", "\"cut\": [2, 4]")
        .replace(
            "[\"transpose\", \"1f1b\"]",
            "[\"transpose\", \"transpose\", \"1f1b\"]",
        );
    let path = temp_file("adjacent.json", &text);
    let (code, out, err) = mpipe(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    let p = path.display();
    assert_eq!(
        err,
        format!(
            "error: {p}:14:29: field `schedule[1]`: rule `no-adjacent-replicated`: regions 1 and 2 are both Replicated in ⟨transpose, transpose, 1f1b⟩; adjacent transposes share one owner map and collapse into one region. Normal form: cut [4], schedule ⟨transpose, 1f1b⟩\nfix: replace them with \"cut\": [4], \"schedule\": [\"transpose\", \"1f1b\"]\n"
        )
    );
}

#[test]
fn the_normal_form_fix_carries_the_regions_widths() {
    // Two adjacent transposes of different widths merge into one: the merged region takes the
    // width of the one its last layer was in, and the first one's layer group keeps its own
    // (one device a copy, on the two devices of its ranks), so no layer changes its width.
    let text = r#"{"format": "mpipe-scenario/1", "model": {"layers": [
        {"name": "a", "role": "encoder", "count": 2, "fwd_s": 1.0},
        {"name": "b", "role": "encoder", "count": 2, "fwd_s": 1.0},
        {"name": "llm", "count": 4, "fwd_s": 1.0}]},
        "cut": [2, 4], "schedule": ["transpose", "transpose", "1f1b"], "ranks": 2,
        "microbatches": 2, "width": [{}, {"tp": 2}, {"tp": 2}]}"#;
    let path = temp_file("adjacent-widths.json", text);
    let (code, _, err) = mpipe(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.ends_with(
            "\nfix: replace them with \"cut\": [4], \"schedule\": [\"transpose\", \"1f1b\"], \"width\": [{\"tp\":2},{\"tp\":2}], \"model.layers[0].width\": {\"devices\":2}\n"
        ),
        "{err}"
    );
}

#[test]
fn validate_offers_one_rank_a_layer_as_the_file_says_it() {
    let text = std::fs::read_to_string(samples().join("1f1b.json"))
        .unwrap()
        .replace("\"ranks\": 4", "\"ranks\": 10");
    let path = temp_file("few-layers.json", &text);
    let (code, _, err) = mpipe(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "error: {}:11:16: field `schedule[0]`: rule `sharded-slabs`: region 1 (1f1b) has 8 layer(s) for 10 ranks; give per-rank layer counts in `slabs[0]` (zeros allowed)\nfix: Give region 1's 8 layer(s) one rank each (slabs[0]; the other ranks get none):\n\"slabs\": [[1,1,1,1,1,1,1,1,0,0]]\n",
            path.display()
        )
    );
}

#[test]
fn malformed_files_exit_2_with_file_and_position() {
    let path = temp_file(
        "truncated.json",
        "{\n  \"format\": \"mpipe-scenario/1\",\n  \"model\": {",
    );
    let (code, _, err) = mpipe(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "error: {}:3:12: EOF while parsing an object\n",
            path.display()
        )
    );

    let (code, _, err) = mpipe(&["derive", "/nonexistent/x.json"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: /nonexistent/x.json: cannot read: "),
        "{err}"
    );
}

#[test]
fn derive_prints_a_readable_table() {
    let path = samples().join("1f1b.json");
    let (code, out, _) = mpipe(&["derive", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("  rank 0: 0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7\n"),
        "{out}"
    );
    assert!(
        out.contains("inside region 1: forward Send between slabs, backward RecvGrad"),
        "{out}"
    );
    assert!(
        out.contains("reduce region 1 weight gradients over DataGroup (1 member, a no-op)"),
        "{out}"
    );
}

#[test]
fn derive_table_is_the_global_operator_table() {
    // ⟨transpose, 1f1b⟩ as BigMac's table: the transposed encoder's forwards (`VF`) fill the
    // warmup bubble, and every rank runs, slot by slot, exactly its derived order (the
    // encoder's actions read `VF<mb>`/`VB<mb>`, the backbone's `F<mb>`/`B<mb>`).
    let path = samples().join("mpipe-vit-llm.json");
    let file = path.to_str().unwrap();
    let (code, out, err) = mpipe(&["derive", file, "--table"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0][..3], ["slot", "0", "1"]);
    assert_eq!(rows[1][..4], ["rank", "0", "VF5", "F0"]);
    let (_, json, _) = mpipe(&["derive", file, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for rank in 0..4 {
        let cells: Vec<&str> = rows[rank + 1][2..]
            .iter()
            .copied()
            .filter(|c| *c != "IDLE")
            .collect();
        let derived: Vec<String> = v["ranks"][rank]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let a = a.as_str().unwrap();
                let at = a.find(['F', 'B']).unwrap();
                // Region 1 (the encoder) is stages 0 to 3, the backbone 4 to 7.
                let stage: usize = a[..at].parse().unwrap();
                let module = if stage < 4 { "V" } else { "" };
                format!("{module}{}", &a[at..])
            })
            .collect();
        assert_eq!(cells, derived, "rank {rank}");
    }
    // Not both at once.
    let (code, _, err) = mpipe(&["derive", file, "--table", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn derive_json_has_the_documented_shape() {
    let path = samples().join("mpipe-vit-llm.json");
    let (code, out, _) = mpipe(&["derive", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["num_ranks"], 4);
    assert_eq!(v["num_microbatches"], 8);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    assert_eq!(ranks[0]["rank"], 0);
    let actions: Vec<&str> = ranks[0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(actions[..4], ["0F5", "4F0", "4F1", "4F2"]);
    assert_eq!(v["placement"][0]["layout"], "Replicated");
    assert_eq!(
        v["placement"][0]["owner"]["by_microbatch"],
        serde_json::json!([3, 2, 2, 1, 1, 0, 3, 1])
    );
    assert_eq!(
        v["placement"][1]["owner"]["by_layer"][0],
        serde_json::json!([4, 6])
    );
    assert_eq!(v["placement"][1]["stages"], serde_json::json!([4, 5, 6, 7]));
    assert_eq!(
        v["collectives"]["seams"][0],
        serde_json::json!({"seam": {"from": 1, "to": 2}, "forward": "Gather", "backward": "Scatter"})
    );
    assert_eq!(v["collectives"]["reduces"][0]["group"], "ReplicaGroup");
    // Edges reference event ids; every id exists and every kind is one of the five.
    let events = v["events"].as_array().unwrap();
    let edges = v["edges"].as_array().unwrap();
    assert!(!edges.is_empty());
    for e in edges {
        for end in ["from", "to"] {
            let id = e[end].as_u64().unwrap() as usize;
            assert_eq!(events[id]["id"].as_u64(), Some(id as u64));
        }
        assert!(
            [
                "Activation",
                "Gradient",
                "Turnaround",
                "Accumulate",
                "Sequence"
            ]
            .contains(&e["kind"].as_str().unwrap())
        );
    }
    // The per-rank order lists event ids, the first being the first encoder forward.
    let first = ranks[0]["order"][0].as_u64().unwrap() as usize;
    assert_eq!(events[first]["event"], "Fwd");
    assert_eq!(events[first]["action"], "0F5");
}

#[test]
fn simulate_json_has_the_fixed_keys() {
    let path = samples().join("1f1b.json");
    let (code, out, err) = mpipe(&["simulate", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 1F1B, P = 4, M = 8, two 1 s / 2 s layers per stage, free communication: (M + P − 1)·6 s.
    assert_eq!(v["makespan_s"], 66.0);
    assert_eq!(v["bubble_fraction"], 18.0 / 66.0);
    let r0 = &v["ranks"][0];
    for key in [
        "rank",
        "busy_s",
        "idle_s",
        "bubble_s",
        "bubble",
        "warmup_window_s",
        "encoder_work_s",
        "spill_s",
        "peak_memory_bytes",
    ] {
        assert!(r0.get(key).is_some(), "missing {key}");
    }
    for key in ["warmup_s", "steady_s", "cooldown_s", "comm_s"] {
        assert!(r0["bubble"].get(key).is_some(), "missing bubble.{key}");
    }
    assert_eq!(r0["busy_s"], 48.0);
    assert_eq!(r0["bubble_s"], 18.0);
    assert_eq!(r0["warmup_window_s"], serde_json::Value::Null);
    // 1F1B rank 0 holds four microbatches of two 1 GB activations, plus 2 GB of parameters.
    assert_eq!(r0["peak_memory_bytes"], 2.0e9 + 4.0 * 2.0e9);
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 4 * 16);
    assert_eq!(
        events[0],
        serde_json::json!({"rank": 0, "action": "0F0", "region": 1, "mb": 0, "backward": false, "start_s": 0.0, "end_s": 2.0})
    );
    assert_eq!(v["memory"][0]["points"][0], serde_json::json!([0.0, 2.0e9]));
    assert_eq!(v["memory"][0]["points"][1], serde_json::json!([0.0, 4.0e9]));
    assert!(v["critical_path"].as_array().unwrap().len() > 1);

    // Rank 3 waits 6 s for its first forward and, done with its last backward at 54 s, 12 s
    // for the others (the worked example's warmup and cooldown).
    let bubbles: Vec<&serde_json::Value> = v["bubbles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["rank"] == 3)
        .collect();
    assert_eq!(
        bubbles,
        [
            &serde_json::json!({"rank": 3, "start_s": 0.0, "end_s": 6.0, "kind": "Warmup"}),
            &serde_json::json!({"rank": 3, "start_s": 54.0, "end_s": 66.0, "kind": "Cooldown"})
        ]
    );

    // The textbook formula beside the simulation, as the text prints it: in its setting here.
    assert_eq!(
        v["formula"],
        serde_json::json!({
            "schedule": "1f1b", "t_f_s": 2.0, "t_b_s": 4.0,
            "step": "(M + P − 1)·(t_F + t_B)", "step_s": 66.0,
            "bubble": "(P − 1)/(M + P − 1)", "bubble_fraction": 3.0 / 11.0,
            "activations": "min(P, M)·A", "peak_activations": 4.0,
            "simulated_step_s": 66.0, "simulated_bubble_fraction": 18.0 / 66.0,
            "simulated_peak_activations": 4.0, "departures": []
        })
    );
    assert!(v.get("no_formula").is_none());

    let (_, out, _) = mpipe(&["simulate", path.to_str().unwrap(), "--json", "--no-events"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("events").is_none());
    assert!(v.get("bubbles").is_none());
    assert_eq!(v["makespan_s"], 66.0);
}

#[test]
fn simulate_json_reads_the_formula_or_says_why_there_is_none() {
    let json = |sample: &str| -> serde_json::Value {
        let path = samples().join(sample);
        let (code, out, err) =
            mpipe(&["simulate", path.to_str().unwrap(), "--json", "--no-events"]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    // Mpipe's transposed encoder: its spill over the backbone's 1F1B, and the departures named.
    let v = json("mpipe-vit-llm.json");
    let f = &v["formula"];
    assert_eq!(
        f["step"],
        "(M + P − 1)·(t_F + t_B) + max_r max(0, E_r − w_r)"
    );
    assert_eq!(
        f["spill"],
        serde_json::json!({
            "backbone_step_s": 66.0, "max_s": 2.0, "worst_rank": 0,
            "warmup_s": [0.0, 2.0, 4.0, 6.0], "work_s": [2.0, 3.4, 5.6, 8.0]
        })
    );
    assert_eq!(f["step_s"], 68.0);
    assert_eq!(f["simulated_step_s"], v["makespan_s"]);
    assert_eq!(f["simulated_peak_activations"], serde_json::Value::Null);
    let departures: Vec<&str> = f["departures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(departures.len(), 2, "{departures:?}");
    assert!(
        departures[0].starts_with("transfers take time"),
        "{departures:?}"
    );
    assert!(
        departures[1].starts_with("the encoder trains"),
        "{departures:?}"
    );
    // A nested encoder (BigMac) runs outside every formula: `null`, and why.
    let v = json("mllm-generation.json");
    assert_eq!(v["formula"], serde_json::Value::Null);
    assert_eq!(
        v["no_formula"],
        "no textbook formula: region 1 (nested) runs outside the pipeline's formula (its encodes run just in time in the backbone's idle slots, placed by a greedy search, so its step has no closed form)"
    );
}

#[test]
fn simulate_at_says_what_every_rank_does_and_why_it_waits() {
    let path = samples().join("1f1b.json");
    let (code, out, err) = mpipe(&["simulate", path.to_str().unwrap(), "--at", "9"]);
    assert_eq!(code, 0, "{err}");
    let tail: Vec<&str> = out
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(
        tail,
        [
            "at 9.000 s:",
            "  rank 0: idle — waiting for 1B0 from rank 1 (done at 20.000 s) before it can run 0B0 · holds 10.00 GB",
            "  rank 1: idle — waiting for 2B0 from rank 2 (done at 16.000 s) before it can run 1B0 · holds 8.00 GB",
            "  rank 2: idle — waiting for 3B0 from rank 3 (done at 12.000 s) before it can run 2B0 · holds 6.00 GB",
            "  rank 3: 3B0 (backward of microbatch 0) · holds 4.00 GB",
        ]
    );
    let (code, out, _) = mpipe(&["simulate", path.to_str().unwrap(), "--at", "9", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["at"]["t_s"], 9.0);
    assert_eq!(
        v["at"]["ranks"][0]["idle"],
        serde_json::json!({"reason": "waiting", "next": "0B0", "waiting_for": {"what": "1B0", "rank": 1, "end_s": 20.0}})
    );
    let (code, _, err) = mpipe(&["simulate", path.to_str().unwrap(), "--at", "inf"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim(), "error: --at inf: give a finite time in seconds");
}

#[test]
fn simulate_table_shows_the_transpose_columns() {
    let path = samples().join("mpipe-vit-llm.json");
    let (code, out, _) = mpipe(&["simulate", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.contains("w_r")
            && out.contains("E_r")
            && out.contains("spill")
            && out.contains("sim.extra"),
        "{out}"
    );
    assert!(out.contains("critical path: "), "{out}");
}

/// `mpipe simulate` prints the schedule's textbook formula beside the simulated figures, or why
/// none applies (issue 26, item 4).
#[test]
fn simulate_prints_the_textbook_formula_beside_the_simulation() {
    let run = |file: &str| {
        let path = samples().join(file);
        let (code, out, _) = mpipe(&["simulate", path.to_str().unwrap()]);
        assert_eq!(code, 0);
        out
    };
    let out = run("gpipe.json");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[2],
        "formula (gpipe, t_F = 2.000 s, t_B = 4.000 s): step (M + P − 1)·(t_F + t_B) = 66.000 s (simulated 66.000 s, +0.0 %); bubble (P − 1)/(M + P − 1) = 27.3 % (simulated 27.3 %); activations held M·A = 8 A (simulated 8 A)"
    );
    assert_eq!(
        lines[3],
        "the simulation is in the formula's setting (uniform stages, free links, no overhead)"
    );
    let out = run("nemotron-h.json");
    assert!(
        out.contains("the simulation departs from the formula: forwards differ between stages or microbatches ("),
        "{out}"
    );
}

/// A placement the schedule does not assume (issue 26, item 2, in part): where no order is
/// list-scheduled in its place, the CLI blames `placement`, offers the schedule's own placement
/// first and the reordering that keeps the placement second.
#[test]
fn a_deadlocking_fold_is_blamed_on_placement_with_its_fix() {
    let text = std::fs::read_to_string(samples().join("vpp3.json")).unwrap();
    let mut s = mpipe::Scenario::from_json_str(&text, "vpp3.json").unwrap();
    // DualPipeV (forwards and backwards overlapped in pairs) under the default placement rather
    // than its own V.
    let mut dual = s.clone();
    dual.cut = vec![6];
    dual.schedule = vec![mpipe::schedules::DUALPIPEV; 2];
    dual.placement = Some(mpipe::scenario::placement::PlacementSpec::Default);
    let path = temp_file("fold.json", &dual.to_json_string());
    let (code, _, err) = mpipe(&["simulate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].contains("field `placement`: rule `deadlock-free`: the order the schedule derives under `placement` default (its slots assume its own placement) deadlocks"),
        "{err}"
    );
    assert_eq!(
        lines[1],
        "fix: Use the schedule's own placement (remove `placement` default)"
    );
    assert!(
        lines[2].starts_with("or, keeping the placement, run rank "),
        "{err}"
    );
    assert!(lines[3].starts_with("\"orders\": [["), "{err}");
    s.placement = Some(mpipe::scenario::placement::PlacementSpec::VFold);
    // Interleaved zero bubble under the fold (its slots deadlock there) is derived, and says how:
    // as fast as under its own placement (75 s, the formula's step).
    s.schedule = vec![mpipe::schedules::ZB1P; 3];
    let path = temp_file("fold-zb1p.json", &s.to_json_string());
    let (code, out, _) = mpipe(&["simulate", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().nth(1),
        Some("makespan 75.000 s, bubble 4.0 %, utilisation 96.0 %")
    );
    assert_eq!(
        out.lines().nth(2),
        Some(
            "order: the schedule's slots deadlock under this placement (they assume its own): the order is list-scheduled over it — the least slack first (microbatches due every 1.5·(F + B)), the shortest of up to five rules under each of two bounds on held activations (of equally short runs the one holding least), a forward only while a rank holds under v·P = 12 stages' activations unless every rank waits on that (the run holds at most 12 on a rank) (a forward taking one unit of time, an input or weight half one; a weight half where its rank has nothing else it may start)"
        )
    );
    // It holds what interleaved zero bubble holds under its own placement.
    assert!(
        out.lines()
            .nth(3)
            .is_some_and(|l| l.ends_with("= 12 A (simulated 12 A)")),
        "{out}"
    );
    // Interleaved 1F1B under the same fold is derived, and says how; it runs as fast as the
    // schedule's own placement (81 s, the formula's step; 95 s with 1F1B's priorities alone).
    s.schedule = vec![mpipe::schedules::ONE_F_ONE_B; 3];
    let path = temp_file("fold-1f1b.json", &s.to_json_string());
    let (code, out, _) = mpipe(&["simulate", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().nth(1),
        Some("makespan 81.000 s, bubble 11.1 %, utilisation 88.9 %")
    );
    assert_eq!(
        out.lines().nth(2),
        Some(
            "order: the schedule's slots deadlock under this placement (they assume its own): the order is list-scheduled over it — the least slack first (microbatches due every 1·(F + B)), the shortest of up to five rules, a forward only while a rank holds under (v + 1)·P − 1 = 15 stages' activations unless every rank waits on that (the run holds at most 15 on a rank) (a forward taking one unit of time, a backward two)"
        )
    );
}

#[test]
fn compare_prints_the_speedup() {
    let gpipe = samples().join("gpipe.json");
    let one = samples().join("1f1b.json");
    let (code, out, _) = mpipe(&[
        "compare",
        gpipe.to_str().unwrap(),
        one.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Same makespan; 1F1B holds fewer activations on every rank but the last.
    assert_eq!(v["speedup"], 1.0);
    assert!(v["ranks"][0]["peak_memory_delta_bytes"].as_f64().unwrap() < 0.0);
    assert_eq!(
        v["ranks"][3]["peak_memory_delta_bytes"].as_f64().unwrap(),
        -7.0 * 2.0e9
    );
    let (code, out, _) = mpipe(&["compare", gpipe.to_str().unwrap(), one.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("speedup of B over A: 1.000×"), "{out}");
}

#[test]
fn render_writes_an_svg_gantt() {
    let out_path = temp_file("gantt.svg", "old contents");
    let path = samples().join("mpipe-vit-llm.json");
    let (code, out, err) = mpipe(&[
        "render",
        path.to_str().unwrap(),
        "--svg",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("wrote {}\n", out_path.display()));
    let svg = std::fs::read_to_string(&out_path).unwrap();
    assert!(svg.starts_with("<svg "));
    assert!(svg.trim_end().ends_with("</svg>"));
    for rank in 0..4 {
        assert!(svg.contains(&format!(">rank {rank}</text>")));
    }
    assert!(svg.contains("warmup window"));
    assert!(svg.contains("encoder spill"));
    assert!(svg.contains(">time (s)</text>"));
    // No temporary file is left beside the output.
    let dir = out_path.parent().unwrap();
    assert!(
        std::fs::read_dir(dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp-"))
    );
}

#[test]
fn share_prints_a_link_that_carries_the_scenario_and_refuses_a_broken_one() {
    let path = samples().join("vpp3.json");
    let (code, out, err) = mpipe(&[
        "share",
        path.to_str().unwrap(),
        "--base",
        "https://example.org/studio/#old",
    ]);
    assert_eq!(code, 0, "{err}");
    let link = out.trim_end();
    let fragment = link
        .strip_prefix("https://example.org/studio/#")
        .unwrap_or_else(|| panic!("{link}"));
    let text = mpipe::scenario::share::from_fragment(fragment)
        .unwrap()
        .unwrap();
    let file = std::fs::read_to_string(&path).unwrap();
    let want = mpipe::Scenario::from_json_str(&file, "vpp3.json").unwrap();
    let got = mpipe::Scenario::from_json_str(&text, "the link").unwrap();
    assert_eq!(got.to_json_string(), want.to_json_string());
    // Without --base: the fragment alone.
    let (code, out, _) = mpipe(&["share", path.to_str().unwrap()]);
    assert_eq!((code, out.trim_end()), (0, format!("#{fragment}").as_str()));

    let broken = temp_file("share-broken.json", "{\n  \"ranks\": 0\n}\n");
    let (code, out, err) = mpipe(&["share", broken.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with(&format!("error: {}:", broken.display())),
        "{err}"
    );
}
