//! The app's state without a window (README, issue 30): opens SCENARIO as File ▸ Open does,
//! waits until its simulation is shown, and prints the process's resident memory (`VmRSS`) and
//! its peak (`VmHWM`) — what the app holds beside the CLI, before any drawing; with the app's
//! allocator. Linux only (it reads `/proc/self/status`).
//!
//!     cargo run --release -p mpipe-studio --example state_memory -- SCENARIO

#![allow(clippy::expect_used, clippy::panic)] // a scenario that does not open is the measurement's own error

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `VmRSS … VmHWM …` of this process.
fn resident() -> String {
    std::fs::read_to_string("/proc/self/status")
        .expect("reads /proc/self/status")
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let path = std::env::args_os().nth(1).expect("a scenario file");
    let mut studio = mpipe_studio::Studio::default();
    println!("empty: {}", resident());
    studio.open_path(std::path::Path::new(&path));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    // The embedded sample may be shown first: wait for the file's own simulation.
    let opened = |studio: &mpipe_studio::Studio| {
        studio.io.opening.is_none()
            && studio.derived.running().is_none()
            && studio
                .shown()
                .is_some_and(|s| s.generation == studio.doc.generation())
    };
    loop {
        studio.poll();
        if opened(&studio) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the simulation was not shown"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let shown = studio.shown().expect("shown");
    println!(
        "{} events shown: {}",
        shown.sim.derivation.order.graph.node_count(),
        resident()
    );
}
