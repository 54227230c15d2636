//! The README's CLI figures are the CLI's own output: every block the README marks with
//! `<!-- mpipe-output -->` is a fenced block whose first line is `$ mpipe ARGS` and whose rest is
//! what `mpipe ARGS` prints (lines without their trailing spaces). This test runs each command and
//! fails on any difference, so a figure cannot go stale; `UPDATE_README=1 cargo test -p mpipe
//! --test readme_figures` (what `tests/update-readme-figures.sh` runs) rewrites the blocks from
//! the CLI instead.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- mpipe-output -->";

/// One marked block: where its command line and its output sit in the README's lines.
struct Block {
    /// The command's arguments after `mpipe`.
    args: Vec<String>,
    /// The index of the `$ mpipe …` line.
    command_line: usize,
    /// The index of the closing fence.
    end: usize,
}

fn blocks(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != MARKER {
            continue;
        }
        assert!(
            lines.get(i + 1).is_some_and(|l| l.starts_with("```")),
            "README line {}: {MARKER} is not followed by a fence",
            i + 2
        );
        let command = lines.get(i + 2).copied().unwrap_or_default();
        let args = command
            .strip_prefix("$ mpipe ")
            .unwrap_or_else(|| panic!("README line {}: `{command}` is not `$ mpipe …`", i + 3));
        let end = (i + 3..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| panic!("README line {}: the block does not end", i + 2));
        out.push(Block {
            args: args.split_whitespace().map(str::to_string).collect(),
            command_line: i + 2,
            end,
        });
    }
    out
}

/// What `mpipe args` prints, run from a scratch folder (so `--out` files land there) with the
/// repository's input paths made absolute; each line without its trailing spaces.
fn output(root: &Path, scratch: &Path, args: &[String]) -> Vec<String> {
    // Inputs read from the repository (never what a command writes: `--out` lands in scratch).
    let args: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let path = root.join(a);
            let written = i > 0 && args.get(i - 1).is_some_and(|flag| flag == "--out");
            if path.exists() && !written {
                path.display().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mpipe"))
        .args(&args)
        .current_dir(scratch)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mpipe {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[test]
fn the_readmes_cli_figures_are_the_clis_output() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme_path = root.join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let found = blocks(&lines);
    assert!(found.len() >= 4, "{} marked blocks", found.len());
    let scratch = std::env::temp_dir().join(format!("mpipe-readme-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let update = std::env::var_os("UPDATE_README").is_some();
    let mut rewritten: Vec<String> = Vec::new();
    let mut next = 0;
    let mut stale = Vec::new();
    for block in &found {
        let printed = output(&root, &scratch, &block.args);
        let shown: Vec<String> = lines[block.command_line + 1..block.end]
            .iter()
            .map(|l| l.to_string())
            .collect();
        if shown != printed {
            stale.push(format!(
                "README line {}: `mpipe {}` now prints\n{}",
                block.command_line + 1,
                block.args.join(" "),
                printed.join("\n")
            ));
        }
        rewritten.extend(
            lines[next..=block.command_line]
                .iter()
                .map(|l| l.to_string()),
        );
        rewritten.extend(printed);
        next = block.end;
    }
    rewritten.extend(lines[next..].iter().map(|l| l.to_string()));
    std::fs::remove_dir_all(&scratch).ok();
    if update {
        let mut text = rewritten.join("\n");
        if readme.ends_with('\n') {
            text.push('\n');
        }
        let tmp = readme_path.with_extension("md.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &readme_path).unwrap();
    } else {
        assert!(
            stale.is_empty(),
            "stale README figures (UPDATE_README=1 cargo test -p mpipe --test readme_figures rewrites them):\n\n{}",
            stale.join("\n\n")
        );
    }
}
