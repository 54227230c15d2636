//! Scenario builders and the CLI runner shared by the core's integration tests.
#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::{FORMAT, ModelSpec, Scenario};
use mpipe::schedules::skeleton::Skeleton;
use mpipe::vocab::role::Role;

/// A scenario over the given layer specs.
pub fn scenario(
    layers: Vec<LayerSpec>,
    cut: &[usize],
    schedule: &[Skeleton],
    ranks: usize,
    microbatches: usize,
) -> Scenario {
    Scenario {
        format: FORMAT.to_string(),
        name: String::new(),
        description: String::new(),
        model: ModelSpec { layers },
        cut: cut.to_vec(),
        schedule: schedule.to_vec(),
        ranks,
        microbatches,
        data_parallel: 1,
        slabs: None,
        hardware: None,
        workload: None,
        owner: Default::default(),
        orders: None,
        orders_csv: None,
        orders_from_csv: None,
        owner_budget: None,
        placement: None,
        wave_k: None,
        activation_limit: None,
        static_memory_factor: None,
        width: None,
        jitter: None,
    }
}

/// Mpipe's shape: `enc` encoder layers and `llm` backbone layers.
pub fn vit_llm(enc: usize, llm: usize, encoder_trainable: bool) -> Vec<LayerSpec> {
    let mut vit = LayerSpec::timed("vit", Role::Encoder, enc, 0.5);
    vit.trainable = encoder_trainable;
    vec![vit, LayerSpec::timed("llm", Role::Backbone, llm, 1.0)]
}

/// `n` uniform backbone layers.
pub fn uniform(n: usize) -> Vec<LayerSpec> {
    vec![LayerSpec::timed("layer", Role::Backbone, n, 1.0)]
}

/// Rank `rank`'s derived compute actions, space-separated (`0F0 0F1 0B0 …`).
pub fn rank_actions(s: &Scenario, rank: usize) -> String {
    let d = mpipe::derive(s).unwrap();
    let names: Vec<String> = d
        .order
        .actions(rank)
        .iter()
        .map(|a| a.to_string())
        .collect();
    names.join(" ")
}

/// Runs the `mpipe` binary: (exit status, stdout, stderr).
pub fn mpipe(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The actions of step `step` in a rank's `actions` of `mpipe trace --json`, in order (an
/// action that is not a string fails the test).
pub fn actions_of_step(actions: &[serde_json::Value], step: usize) -> Vec<&str> {
    actions
        .iter()
        .filter(|a| a["step"] == step)
        .map(|a| a["action"].as_str().unwrap())
        .collect()
}

/// A JSON array of strings (an `executed.json` step) as `&str`s; anything else fails the test.
pub fn strings(value: &serde_json::Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// Runs the per-rank orders against the data edges, independently of `derive`'s own check:
/// every event must complete.
pub fn executes(d: &mpipe::Derivation) -> bool {
    let g = &d.order.graph;
    let mut done = vec![false; g.node_count()];
    let mut at = vec![0usize; d.order.nodes.len()];
    let on_rank: Vec<bool> = g.node_indices().map(|n| g[n].rank().is_some()).collect();
    loop {
        let mut progress = false;
        // Off-rank events (collectives, the barrier) complete once their inputs have.
        for n in g.node_indices() {
            if !done[n.index()]
                && !on_rank[n.index()]
                && g.neighbors_directed(n, petgraph::Direction::Incoming)
                    .all(|p| done[p.index()])
            {
                done[n.index()] = true;
                progress = true;
            }
        }
        for (rank, nodes) in d.order.nodes.iter().enumerate() {
            while let Some(&n) = nodes.get(at[rank]) {
                if !g
                    .neighbors_directed(n, petgraph::Direction::Incoming)
                    .all(|p| done[p.index()])
                {
                    break;
                }
                done[n.index()] = true;
                at[rank] += 1;
                progress = true;
            }
        }
        if !progress {
            return done.iter().all(|&x| x);
        }
    }
}

/// The derived orders of `s`, one line of actions a rank.
pub fn rank_lines(s: &Scenario) -> Vec<String> {
    let d = mpipe::derive(s).unwrap_or_else(|e| panic!("{e}"));
    (0..s.ranks)
        .map(|r| {
            d.order
                .steps(r)
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Compares a fixture of reference orders (`tests/fixtures/<fixture>`) with the derived ones:
/// every `<name> <P> <M> ok <rank 0> | <rank 1> | …` line equal to the orders `at(P, M)`
/// derives, every `<name> <P> <M> fails <why>` refused by a rule whose name starts with
/// `rules`; returns how many of each.
pub fn compare_fixture(
    fixture: &str,
    name: &str,
    rules: &str,
    at: impl Fn(usize, usize) -> Scenario,
) -> (usize, usize) {
    let path = format!("{}/../tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut cases, mut refused) = (0, 0);
    let shape = |head: &str| -> (usize, usize) {
        let mut words = head.split(' ').skip(1).map(|w| w.parse::<usize>());
        match (words.next(), words.next()) {
            (Some(Ok(p)), Some(Ok(m))) => (p, m),
            _ => panic!("{fixture}: no P and M in {head}"),
        }
    };
    for line in text.lines().filter(|l| l.starts_with(&format!("{name} "))) {
        if let Some((head, why)) = line.split_once(" fails ") {
            let (p, m) = shape(head);
            match mpipe::derive(&at(p, m)) {
                Ok(_) => panic!("{line}: derived"),
                Err(e) => assert!(e.rule().starts_with(rules), "{line}: {e} ({why})"),
            }
            refused += 1;
            continue;
        }
        let Some((head, ranks)) = line.split_once(" ok ") else {
            panic!("{fixture}: {line}");
        };
        let (p, m) = shape(head);
        let want: Vec<&str> = ranks.split(" | ").collect();
        assert_eq!(rank_lines(&at(p, m)), want, "{name} P = {p}, M = {m}");
        cases += 1;
    }
    (cases, refused)
}

/// The index of the first event of `sim`'s order whose action runs phase `code` (`F`, `B`, `I`,
/// `W`, …).
pub fn first_of_phase(sim: &mpipe::sim::run::Simulation, code: &str) -> usize {
    sim.derivation
        .order
        .graph
        .node_weights()
        .position(|e| e.action().is_some_and(|a| a.phase.code() == code))
        .unwrap()
}

/// The median of `v` (the mean of the middle two of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The solver's cases in `tests/fixtures/fold_optimum/FILE`: `(P, v, M, optimum)` per line
/// (`generate.py` beside them writes the files).
pub fn fold_optima(file: &str) -> Vec<(usize, usize, usize, f64)> {
    fold_optimum_lines(file)
        .into_iter()
        .map(|n| (n[0], n[1], n[2], n[3] as f64))
        .collect()
}

/// The numbers of each line of one of `tests/fixtures/fold_optimum`'s files.
fn fold_optimum_lines(file: &str) -> Vec<Vec<usize>> {
    let path = format!(
        "{}/../tests/fixtures/fold_optimum/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| line.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// The solver's optima of V folds with transfers (`optimum_transfers.txt` beside
/// `generate.py`): `(P, v, M, h, K, optimum)`, a transfer of `h` between ranks, at most `K`
/// stages' activations held a rank.
pub fn fold_optima_with_transfers() -> Vec<[usize; 6]> {
    fold_optimum_lines("optimum_transfers.txt")
        .into_iter()
        .map(|n| n.try_into().unwrap())
        .collect()
}
