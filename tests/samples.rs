//! Every sample scenario loads, derives, survives a save/load round trip, and is in the app's menu.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use mpipe::Scenario;
use mpipe_e2e::sample_files;

fn load(path: &std::path::Path) -> Scenario {
    let text = std::fs::read_to_string(path).unwrap();
    Scenario::from_json_str(&text, &path.display().to_string()).unwrap()
}

#[test]
fn there_are_the_issue_samples() {
    let names: Vec<String> = sample_files()
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(
        names,
        [
            "1f1b.json",
            "dualpipe.json",
            "gpipe.json",
            "hanayo.json",
            "jamba.json",
            "llm-over-capacity.json",
            "mllm-generation.json",
            "mllm-understanding.json",
            "moe-1f1b.json",
            "moe-dualpipev-no-overlap.json",
            "moe-dualpipev.json",
            "moe-interleaved.json",
            "mpipe-large-scale-baseline.json",
            "mpipe-large-scale.json",
            "mpipe-vit-llm-frozen.json",
            "mpipe-vit-llm.json",
            "nemotron-h.json",
            "uma-1.2b.json",
            "vpp3.json"
        ]
    );
}

#[test]
fn every_sample_derives() {
    for path in sample_files() {
        let scenario = load(&path);
        let d = mpipe::derive(&scenario).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(d.plan.ranks, scenario.ranks);
        for rank in 0..d.plan.ranks {
            assert!(!d.order.actions(rank).is_empty(), "{}", path.display());
        }
    }
}

#[test]
fn every_sample_round_trips_identically() {
    for path in sample_files() {
        let scenario = load(&path);
        let mut bytes = Vec::new();
        scenario.save(&mut bytes).unwrap();
        let again = Scenario::load(bytes.as_slice(), "saved.json").unwrap();
        assert_eq!(scenario, again, "{}", path.display());
        // Saving the reloaded scenario gives the same bytes: the format is stable.
        let mut bytes_again = Vec::new();
        again.save(&mut bytes_again).unwrap();
        assert_eq!(bytes, bytes_again);
    }
}

#[test]
fn the_app_embeds_every_sample_and_opens_on_mpipe() {
    let embedded: Vec<&str> = mpipe_studio::samples::SAMPLES
        .iter()
        .map(|s| s.file)
        .collect();
    for path in sample_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            embedded.contains(&name.as_str()),
            "{name} is not in the app's samples menu"
        );
        let sample = mpipe_studio::samples::SAMPLES
            .iter()
            .find(|s| s.file == name)
            .unwrap();
        assert_eq!(sample.json, std::fs::read_to_string(&path).unwrap());
    }
    assert_eq!(embedded.first(), Some(&"mpipe-vit-llm.json"));
}

#[test]
fn mpipe_sample_has_the_paper_shape() {
    let d = mpipe::tune::owners::derive_tuned(
        &load(&mpipe_e2e::repo_root().join("samples/mpipe-vit-llm.json")),
        mpipe::sim::engine::SimOptions::default(),
        &mut |_| true,
    )
    .unwrap();
    let actions = |r| -> Vec<String> { d.order.actions(r).iter().map(|a| a.to_string()).collect() };
    // Encoder forwards of the owned microbatches first (greedy_slack: the heaviest encodes go to
    // the ranks with the longest warmup windows), then 1F1B on stages 4..8, then the encoder
    // backwards in the cooldown.
    assert_eq!(
        actions(0).join(" "),
        "0F5 4F0 4F1 4F2 4F3 4B0 4F4 4B1 4F5 4B2 4F6 4B3 4F7 4B4 4B5 4B6 4B7 0B5"
    );
    assert_eq!(d.plan.owner, [3, 2, 2, 1, 1, 0, 3, 1]);
    assert_eq!(
        actions(3).join(" "),
        "3F0 3F6 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 7F4 7B4 7F5 7B5 7F6 7B6 7F7 7B7 3B0 3B6"
    );
}
