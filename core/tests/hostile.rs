//! The hostile-input corpus (`tests/hostile/`): every case of `cases.json` runs the CLI on a
//! malformed, extreme or adversarial input and must end — within a minute, never by a panic —
//! with its exact exit status and message. Inputs too large to commit are generated here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/hostile")
}

/// Waits for `child` at most `limit`; a run that goes on is killed and fails the test.
fn wait_bounded(
    mut child: std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `mpipe args` in `dir` for at most `limit`: its exit status and its stderr, trimmed.
fn mpipe<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    dir: &std::path::Path,
    limit: Duration,
) -> (Option<i32>, String) {
    let what = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let child = Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, limit, &what);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
    )
}

fn redirect(path: Option<&serde_json::Value>) -> Stdio {
    match path.and_then(|p| p.as_str()) {
        Some(p) => Stdio::from(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
        None => Stdio::piped(),
    }
}

#[test]
fn every_case_of_the_corpus_ends_with_its_exit_status_and_message() {
    let text = std::fs::read_to_string(corpus().join("cases.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    let out_dir = std::env::temp_dir().join(format!("mpipe-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let cases = manifest["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let args: Vec<String> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let a = a.as_str().unwrap();
                // Outputs go to a scratch folder, inputs are read from the corpus.
                if a.starts_with("out.") {
                    out_dir.join(a).display().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let child = Command::new(env!("CARGO_BIN_EXE_mpipe"))
            .args(&args)
            .current_dir(corpus())
            .stdin(Stdio::null())
            .stdout(redirect(case.get("stdout_to")))
            .stderr(redirect(case.get("stderr_to")))
            .spawn()
            .unwrap();
        let out = wait_bounded(child, Duration::from_secs(60), name);
        assert_eq!(
            out.status.code(),
            case["exit"].as_i64().map(|c| c as i32),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Lines stdout must hold, whole (for runs that succeed and say what they did).
        if let Some(lines) = case.get("stdout_lines").and_then(|s| s.as_array()) {
            let stdout = String::from_utf8_lossy(&out.stdout);
            for line in lines {
                let line = line.as_str().unwrap();
                assert!(
                    stdout.lines().any(|l| l == line),
                    "{name}: no line {line:?} in\n{stdout}"
                );
            }
        }
        if let Some(want) = case.get("stderr").and_then(|s| s.as_str()) {
            assert_eq!(
                String::from_utf8_lossy(&out.stderr).trim_end(),
                want,
                "{name}"
            );
        }
    }
    std::fs::remove_dir_all(&out_dir).ok();
}

/// A reader that goes away (`mpipe simulate … --json | head -c 10`) is an internal failure,
/// exit status 1, as the README says — not a quiet 0, not a panic.
#[test]
fn a_closed_stdout_exits_1() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(["simulate", "big-output.json", "--json"])
        .current_dir(corpus())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close the pipe while the output (megabytes) is still coming.
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 10];
    std::io::Read::read_exact(&mut stdout, &mut head).unwrap();
    assert_eq!(&head[..2], b"{\"");
    drop(stdout);
    let out = wait_bounded(child, Duration::from_secs(60), "closed stdout");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "error: writing to stdout: Broken pipe (os error 32)"
    );
}

/// Inputs generated here: a FIFO (reading it would block until a writer comes), and a scenario
/// file larger than any scenario (64 MiB of description).
#[cfg(unix)]
#[test]
fn a_fifo_and_an_oversized_file_are_refused_at_once() {
    let dir = std::env::temp_dir().join(format!("mpipe-hostile-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for command in ["validate", "trace"] {
        assert_eq!(
            mpipe(
                &[command.as_ref(), fifo.as_os_str()],
                &dir,
                Duration::from_secs(20)
            ),
            (
                Some(2),
                format!(
                    "error: {}: cannot read: not a regular file (a folder, a FIFO or a device); give a file",
                    fifo.display()
                )
            )
        );
    }
    let big = dir.join("big.json");
    let mut text = String::from(r#"{"format": "mpipe-scenario/1", "description": ""#);
    text.push_str(&"x".repeat(65 << 20));
    text.push_str(r#"", "model": {"layers": [{"name": "l", "count": 8, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 4, "microbatches": 8}"#);
    std::fs::write(&big, text).unwrap();
    assert_eq!(
        mpipe(
            &["validate".as_ref(), big.as_os_str()],
            &dir,
            Duration::from_secs(60)
        ),
        (
            Some(2),
            format!(
                "error: {}: cannot read: larger than a scenario file may be (64 MiB); a scenario of the largest model this version accepts is a few megabytes",
                big.display()
            )
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// gzip bombs: what one file and one event may expand to is bounded, with an error that names
/// the limit and the flag that raises it — not minutes of work and gigabytes of memory.
#[test]
fn gzip_bombs_end_at_once_or_at_their_limit() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("mpipe-bombs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bomb = |name: &str, head: &[u8], fill: u8, mib: usize, tail: &[u8]| {
        let path = dir.join(name);
        let mut gz = GzEncoder::new(std::fs::File::create(&path).unwrap(), Compression::fast());
        gz.write_all(head).unwrap();
        let chunk = vec![fill; 1 << 20];
        for _ in 0..mib {
            gz.write_all(&chunk).unwrap();
        }
        gz.write_all(tail).unwrap();
        gz.finish().unwrap();
        path
    };
    let run = |args: &[&str]| mpipe(args, &dir, Duration::from_secs(60));
    // 256 MiB of NULs: not JSON from the first byte, said at once.
    bomb("zeros.json.gz", b"", 0, 256, b"");
    assert_eq!(
        run(&["trace", "zeros.json.gz"]),
        (
            Some(2),
            "error: zeros.json.gz:1:1: not valid JSON: expected value".to_string()
        )
    );
    // One name of 32 MiB, above a 16 MiB limit for one event.
    bomb(
        "long-name.json.gz",
        br#"[{"ph":"X","name":""#,
        b'a',
        32,
        br#"","ts":1,"dur":1,"pid":1,"tid":1}]"#,
    );
    assert_eq!(
        run(&["trace", "long-name.json.gz", "--max-event-bytes", "16777216"]),
        (
            Some(2),
            "error: long-name.json.gz:1:2: one value here is larger than 16 MiB (the limit for one event; `--max-event-bytes` raises it)"
                .to_string()
        )
    );
    // 64 MiB of spaces, above a 16 MiB limit for one file.
    bomb("spaces.json.gz", b"[", b' ', 64, b"]");
    let (code, err) = run(&["trace", "spaces.json.gz", "--max-trace-bytes", "16777216"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("error: spaces.json.gz:1:")
            && err.ends_with(": the file decompresses to more than 16 MiB (the limit for one trace file; `--max-trace-bytes` raises it)"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Pipeline CSVs too large to commit (issue 24, item 1 and 10): reading was quadratic in the
/// rows (a 4 MB file of 10⁶ rows ran past 120 s) and echoed a cell whole. Now a row beyond the
/// scenario's ranks ends the reading where it starts, a row of more actions than the scenario's
/// sizes allow ends it at the first cell too many, and an echoed cell is cut.
#[test]
fn long_pipeline_csvs_end_at_their_first_row_or_cell_too_many() {
    let dir = std::env::temp_dir().join(format!("mpipe-long-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = r#"{"format": "mpipe-scenario/1", "model": {"layers": [{"name": "l", "count": 2, "fwd_s": 1}]}, "schedule": ["1f1b"], "ranks": 2, "microbatches": 2, "orders_csv": "o.csv"}"#;
    std::fs::write(dir.join("s.json"), scenario).unwrap();
    let run = |csv: String| {
        std::fs::write(dir.join("o.csv"), csv).unwrap();
        mpipe(&["validate", "s.json"], &dir, Duration::from_secs(60))
    };
    // 10⁶ rows (4 MB) for 2 ranks.
    assert_eq!(
        run("0F0\n".repeat(1_000_000)),
        (
            Some(2),
            "error: o.csv:3:1: row 3: the scenario has 2 rank(s), one row each".to_string()
        )
    );
    // 16 million cells in a row (64 MB) for a scenario of 2 ranks and 2 microbatches.
    assert_eq!(
        run("0F0,".repeat(16_000_000)),
        (
            Some(2),
            "error: o.csv:1:18: more than 17 actions: the scenario's sizes run at most that many events"
                .to_string()
        )
    );
    // A cell of 50 MB: the error line echoes 60 characters of it.
    let (status, stderr) = run(format!("0F0,{}\n", "x".repeat(50 << 20)));
    assert_eq!(status, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: o.csv:1:2: cell 2: `{}…` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`",
            "x".repeat(60)
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Outputs that are not regular files (issue 24, item 8) were replaced by regular files — as
/// root, `--svg /dev/null` would have replaced the system's. Generated here: a link is
/// followed (the file it names is written, the link stays), a device is written through, a
/// FIFO without a reader is refused at once (exit 2), a link to nothing is refused.
#[cfg(unix)]
#[test]
fn outputs_that_are_links_devices_or_fifos_are_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = std::env::temp_dir().join(format!("mpipe-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = corpus().join("../../samples/1f1b.json");
    let scenario = scenario.to_str().unwrap();
    let render = |out: &str| {
        mpipe(
            &["render", scenario, "--svg", out],
            &dir,
            Duration::from_secs(60),
        )
    };
    std::fs::write(dir.join("real.svg"), "old").unwrap();
    std::os::unix::fs::symlink("real.svg", dir.join("link.svg")).unwrap();
    assert_eq!(render("link.svg"), (Some(0), String::new()));
    assert!(
        std::fs::symlink_metadata(dir.join("link.svg"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(dir.join("real.svg"))
            .unwrap()
            .starts_with("<svg ")
    );
    assert_eq!(render("/dev/null"), (Some(0), String::new()));
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    assert!(
        Command::new("mkfifo")
            .arg(dir.join("fifo.svg"))
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(
        render("fifo.svg"),
        (
            Some(2),
            "error: fifo.svg: cannot write: a FIFO with no reader; start its reader first".into()
        )
    );
    assert!(
        std::fs::metadata(dir.join("fifo.svg"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    std::os::unix::fs::symlink("nowhere.svg", dir.join("dangling.svg")).unwrap();
    let (status, stderr) = render("dangling.svg");
    assert_eq!(status, Some(2));
    assert!(
        stderr
            .starts_with("error: dangling.svg: cannot write: a link to a file that does not exist"),
        "{stderr}"
    );
    assert!(!dir.join("nowhere.svg").exists());
    std::fs::remove_dir_all(&dir).ok();
}
