//! The floor the trace importer is measured against (issue 30): serde_json parsing each file
//! given into `IgnoredAny`, from the file's bytes held in memory — reading every byte, keeping
//! nothing. `valgrind --tool=callgrind` of this and of `mpipe trace --json` on the same files
//! gives the importer's instructions per byte against the raw parse's:
//!
//!     cargo build --release -p mpipe --example parse_only
//!     valgrind --tool=callgrind target/release/examples/parse_only FILES…

#![allow(clippy::expect_used)] // a file that does not read or parse is the measurement's own error

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    for path in std::env::args_os().skip(1) {
        let bytes = std::fs::read(&path).expect("reads");
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).expect("parses");
    }
}
