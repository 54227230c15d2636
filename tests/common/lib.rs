//! Helpers shared by the end-to-end tests in `tests/`.

use std::path::PathBuf;

/// The repository root (where `samples/` lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `samples/*.json` file, sorted by name.
pub fn sample_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join("samples"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A trace fixture under `tests/fixtures/traces/`.
pub fn trace_fixture(relative: &str) -> PathBuf {
    repo_root().join("tests/fixtures/traces").join(relative)
}
