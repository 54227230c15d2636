//! Times the app's import of a run's files through its import job (README, issue 30): every
//! `.json` and `.json.gz` file of DIR, read at once on the available cores (under `taskset -c
//! 0`, one core: in order), then polled as a frame polls it; with the app's allocator.
//!
//!     cargo run --release -p mpipe-studio --example import_files -- DIR

#![allow(clippy::expect_used, clippy::panic)] // a folder that does not read is the measurement's own error

use mpipe_studio::state::traces::TraceSource;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let dir = std::env::args_os().nth(1).expect("a folder of trace files");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("reads the folder")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".json") || name.ends_with(".json.gz")
        })
        .collect();
    files.sort();
    let mut studio = mpipe_studio::Studio::default();
    let started = std::time::Instant::now();
    studio
        .traces
        .start_import(files.into_iter().map(TraceSource::Path).collect())
        .expect("starts the import");
    let result = loop {
        if let Some(result) = studio.traces.poll_import() {
            break result;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    match result {
        Ok(message) => println!(
            "{:.3} s: {} files, {message}",
            started.elapsed().as_secs_f64(),
            studio.traces.raw.len()
        ),
        Err(e) => panic!("{e}"),
    }
}
