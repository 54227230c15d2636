//! The `mpipe` binary as a user runs it: exit codes, messages, JSON shape.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use std::path::PathBuf;
use std::process::Command;

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

fn mpipe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
