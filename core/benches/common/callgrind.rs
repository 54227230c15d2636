//! The driver of an instruction-count benchmark (issue 30): run each case in a child process of
//! the benchmark under `valgrind --tool=callgrind`, collecting only inside the case's
//! `<bench>::measured_*` functions (`--toggle-collect`), so building the input is not counted,
//! and print the case's instructions (callgrind's `Ir`). Shared by `mpipe`'s and the app's
//! `instructions` benchmarks; needs `valgrind` on the `PATH`.

#![allow(clippy::expect_used)] // a benchmark that cannot find itself or a temporary folder is broken

use std::process::Command;

/// Runs the case named after `--case` in this process when the arguments hold one (the child's
/// side; `run` runs it) and returns `true`; else runs every case of `cases` (name, label) whose
/// label contains the first argument that is not a flag (or whose name is it) under callgrind,
/// printing each count, and returns `false`.
pub fn main(cases: &[(&str, &str)], run: impl Fn(&str)) -> bool {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--case") {
        run(args.get(at + 1).map(String::as_str).unwrap_or(""));
        return true;
    }
    // `cargo bench` passes its own flags (`--bench`); a further word selects cases by name.
    let filter = args.iter().skip(1).find(|a| !a.starts_with("--"));
    let me = std::env::current_exe().expect("the benchmark's own path");
    let dir = std::env::temp_dir().join(format!("mpipe-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for &(name, label) in cases {
        if filter.is_some_and(|f| !label.contains(f.as_str()) && name != f) {
            continue;
        }
        let out_file = dir.join(format!("{name}.out"));
        let status = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--toggle-collect=instructions::measured_*")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(&me)
            .args(["--case", name])
            .stderr(std::process::Stdio::null())
            .status();
        match (status, instructions(&out_file)) {
            (Ok(s), Some(ir)) if s.success() => {
                println!("{label}: {:.1} M instructions", ir as f64 / 1e6)
            }
            (Err(e), _) => {
                println!("{label}: valgrind did not start ({e}); install valgrind");
                break;
            }
            _ => println!("{label}: callgrind gave no count"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    false
}

/// Callgrind's total `Ir` from its output file's `summary:` (or `totals:`) line.
fn instructions(out_file: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(out_file).ok()?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
}
