//! PyTorch's pipeline CSV both ways: what we write, PyTorch reads (`read_by_pytorch.txt`, recorded
//! by `tests/fixtures/pytorch_csv/generate.py`); what PyTorch writes (`pytorch/`), we read to the
//! orders the skeletons derive; and our own files read back to the same orders.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;
use common::mpipe;
use mpipe::report;
use mpipe::scenario::orders_csv;
use std::path::PathBuf;

const NAMES: [&str; 5] = ["gpipe", "1f1b", "interleaved", "zbv", "dualpipev"];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/pytorch_csv")
}

fn scenario(name: &str) -> mpipe::Scenario {
    let path = fixtures().join(format!("{name}.json"));
    mpipe::Scenario::from_json_str(&std::fs::read_to_string(&path).unwrap(), name).unwrap()
}

/// Each rank's steps, as a scenario's `orders` holds them.
fn steps(d: &mpipe::Derivation) -> Vec<Vec<String>> {
    (0..d.plan.ranks)
        .map(|r| d.order.steps(r).iter().map(|s| s.to_string()).collect())
        .collect()
}

fn read(file: &str) -> orders_csv::CsvOrders {
    let path = fixtures().join(file);
    let limits = orders_csv::CsvLimits {
        rows: 64,
        cells: 1 << 20,
    };
    orders_csv::read(&std::fs::read_to_string(&path).unwrap(), file, limits).unwrap()
}

#[test]
fn what_we_write_is_the_committed_file_pytorch_read_to_our_orders() {
    let text = std::fs::read_to_string(fixtures().join("read_by_pytorch.txt")).unwrap();
    let by_pytorch: Vec<(&str, Vec<Vec<String>>)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (name, ranks) = l.split_once(' ').unwrap();
            let ranks = ranks
                .split('|')
                .map(|r| r.split(' ').map(str::to_string).collect())
                .collect();
            (name, ranks)
        })
        .collect();
    assert_eq!(by_pytorch.len(), NAMES.len());
    for (name, parsed) in by_pytorch {
        let d = mpipe::derive(&scenario(name)).unwrap();
        let mut ours = Vec::new();
        report::orders_csv::write(&d, &mut ours).unwrap();
        let committed =
            std::fs::read_to_string(fixtures().join(format!("ours/{name}.csv"))).unwrap();
        assert_eq!(String::from_utf8(ours).unwrap(), committed, "{name}");
        assert_eq!(parsed, steps(&d), "{name}: PyTorch's reading of our file");
    }
}

#[test]
fn what_pytorch_writes_reads_to_the_orders_the_skeletons_derive() {
    for (file, name) in [
        ("pytorch/gpipe.csv", "gpipe"),
        ("pytorch/gpipe-roundtrip.csv", "gpipe"),
        ("pytorch/1f1b.csv", "1f1b"),
        ("pytorch/interleaved.csv", "interleaved"),
        ("pytorch/zbv.csv", "zbv"),
        ("pytorch/zbv-comms.csv", "zbv"),
        ("pytorch/dualpipev.csv", "dualpipev"),
        ("pytorch/dualpipev-comms.csv", "dualpipev"),
    ] {
        let read = read(file);
        let derived = mpipe::derive(&scenario(name)).unwrap();
        assert_eq!(read.orders, steps(&derived), "{file}");
        // Followed as hand orders, it derives the same schedule.
        let mut s = scenario(name);
        s.orders_from_csv = Some(read.orders.clone());
        s.orders_csv = Some(file.to_string());
        let followed = mpipe::derive(&s).unwrap();
        for r in 0..s.ranks {
            assert_eq!(
                followed.order.actions(r),
                derived.order.actions(r),
                "{file} rank {r}"
            );
        }
    }
    // The communication format's extra cells are skipped, and counted.
    assert_eq!(read("pytorch/gpipe.csv").skipped, 8);
    assert!(read("pytorch/zbv-comms.csv").skipped > 100);
}

#[test]
fn pytorchs_own_1f1b_visualiser_order_is_refused_at_its_cell_as_pytorch_refuses_it() {
    // `Schedule1F1B.pipeline_order` starts the last stage with `3F1`, then `3B0` before any
    // `3F0`; PyTorch's `_load_csv` refuses it (recorded in `pytorch-refuses.txt`), and `derive`
    // names the cell.
    let refused = std::fs::read_to_string(fixtures().join("pytorch-refuses.txt")).unwrap();
    assert!(
        refused.contains(
            "Running Full Backward for stage 3, microbatch 0 without first running Forward"
        )
    );
    let scen = fixtures().join("1f1b.json");
    let csv = fixtures().join("pytorch/1f1b-visualiser.csv");
    let (code, _, err) = mpipe(&[
        "derive",
        scen.to_str().unwrap(),
        "--orders-csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        format!(
            "error: {}:4:15: rule `orders`: `3F8` is not an event of this schedule",
            csv.display()
        )
    );
}

#[test]
fn our_csv_reads_back_to_the_same_orders_over_a_grid() {
    use mpipe::schedules::{
        CHIMERA, DUALPIPE, DUALPIPEV, GPIPE, HANAYO, ONE_F_ONE_B, VHALF, VMIN, ZB_AUTO, ZB1P, ZB2P,
        ZBV,
    };
    for (skeleton, chunks) in [
        (HANAYO, 2),
        (HANAYO, 4),
        (ZB_AUTO, 1),
        (DUALPIPE, 1),
        (CHIMERA, 1),
        (ZB2P, 1),
        (VHALF, 2),
        (VMIN, 2),
        (GPIPE, 1),
        (ONE_F_ONE_B, 1),
        (ONE_F_ONE_B, 2),
        (ZB1P, 1),
        (ZBV, 2),
        (DUALPIPEV, 2),
    ] {
        for p in [2, 3, 4] {
            for m in [p * 2, p * 2 + 1, p * 3] {
                let cut: Vec<usize> = (1..chunks).map(|c| c * p).collect();
                let s = common::scenario(
                    common::uniform(p * chunks),
                    &cut,
                    &vec![skeleton; chunks],
                    p,
                    m,
                );
                let case = format!("{skeleton}×{chunks} P={p} M={m}");
                let Ok(d) = mpipe::derive(&s) else {
                    continue; // a case the skeleton refuses by name (tested elsewhere)
                };
                let mut bytes = Vec::new();
                report::orders_csv::write(&d, &mut bytes).unwrap();
                let read = orders_csv::read(
                    std::str::from_utf8(&bytes).unwrap(),
                    "x.csv",
                    mpipe::algebra::budget::csv_limits(&s),
                )
                .unwrap();
                assert_eq!(read.orders, steps(&d), "{case}");
                assert_eq!(read.skipped, 0, "{case}");
            }
        }
    }
}

#[test]
fn a_scenario_names_its_csv_and_the_cli_reads_it_beside_the_scenario() {
    let dir = std::env::temp_dir().join(format!("mpipe-orders-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixtures().join("pytorch/zbv.csv"), dir.join("zbv.csv")).unwrap();
    let mut s = scenario("zbv");
    s.orders_csv = Some("zbv.csv".into());
    let file = dir.join("zbv.json");
    std::fs::write(&file, s.to_json_string()).unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = mpipe(&["derive", path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ranks"][0]["actions"][7], "7F0");
    // Written back, the scenario keeps its reference, not a copy of the orders.
    assert!(s.to_json_string().contains("\"orders_csv\": \"zbv.csv\""));
    assert!(!s.to_json_string().contains("\"orders\""));
    // Both at once is refused at the field.
    let mut both = s.clone();
    both.orders = Some(steps(&mpipe::derive(&scenario("zbv")).unwrap()));
    std::fs::write(&file, both.to_json_string()).unwrap();
    let (code, _, err) = mpipe(&["derive", path]);
    assert_eq!(code, 2);
    assert!(
        err.contains("field `orders_csv`: rule `orders`: the scenario gives both `orders` and `orders_csv`; keep one of them"),
        "{err}"
    );
    // The library reads no files: a scenario whose CSV was not read says so.
    assert_eq!(
        mpipe::derive(&s).unwrap_err().to_string(),
        "rule `orders`: `orders_csv` names `zbv.csv`, which was not read (the CLI and the app read the files a scenario names; this caller gave its orders no file)"
    );
    // --csv writes what it derived; it refuses to write over its input.
    let out_csv = dir.join("out.csv");
    let (code, _, err) = mpipe(&[
        "derive",
        path,
        "--orders-csv",
        dir.join("zbv.csv").to_str().unwrap(),
        "--csv",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&out_csv).unwrap(),
        std::fs::read_to_string(fixtures().join("ours/zbv.csv")).unwrap()
    );
    let (code, _, err) = mpipe(&[
        "derive",
        path,
        "--orders-csv",
        out_csv.to_str().unwrap(),
        "--csv",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("refusing to write the output over the input"),
        "{err}"
    );
}
