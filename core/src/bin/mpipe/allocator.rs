//! How the CLI's allocator behaves while it reads a run's files.
//!
//! The binary's allocator (mimalloc, `main.rs`) is tuned for derive + simulate: freed memory is
//! kept 10 ms for reuse (100 ms in its arenas) and its regions may be backed by transparent huge
//! pages, so a large schedule's lists are not paid for in page faults again (the large case runs
//! 1.4× slower without either). Reading a run is the opposite: a file's reading frees what the
//! next one allocates in another place, so memory kept for reuse is memory resident twice, and a
//! huge page makes 2 MiB resident where the reading touched a few kilobytes. While a run's files
//! are read and recovered, [`reading_a_run`] gives freed memory back at once and takes no huge
//! pages; then it puts both back as they were (what follows may be a large simulation).
//! Measured on eight 8.1 MB Kineto files (`mpipe trace --json`, two threads): peak RSS 54.2 →
//! 20.4 MiB (with 24-byte spans), wall ×1.17 (see the README's Benchmarks).

/// Runs `parse` (the command line's reading of its arguments: the first memory the process
/// touches) without transparent huge pages, then puts them back as they were: a huge page
/// there would stay resident under a run's reading (4 MiB of a 22 MiB peak).
pub fn parsing<T>(parse: impl FnOnce() -> T) -> T {
    let huge_pages = HugePages::off();
    let out = parse();
    drop(huge_pages);
    out
}

/// Runs `read` with freed memory given back at once and no transparent huge pages, then
/// restores both.
pub fn reading_a_run<T>(read: impl FnOnce() -> T) -> T {
    let huge_pages = HugePages::off();
    let delay = purge_delay_ms(0);
    let out = read();
    purge_delay_ms(delay);
    drop(huge_pages);
    out
}

/// mimalloc's option `purge_delay` (`mi_option_purge_delay`, 15 in the `mimalloc.h` of both
/// its v2 line, which the workspace builds, and its v3 line: the milliseconds freed memory is
/// kept before it is given back; v2's default 10, v3's 1000). The `-sys` crate names no
/// constant for it; the test below holds this index to v2's default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets the allocator's purge delay to `ms` and returns what it was.
// The workspace denies `unsafe`; this is its one use: two calls into mimalloc's C interface,
// which read and write one of its options (an integer in its table of options, written
// without a lock: the CLI calls this from its main thread while no other thread runs — the
// files' reading threads are scoped inside the reading), with no pointer passed either way.
#[allow(unsafe_code)]
fn purge_delay_ms(ms: std::ffi::c_long) -> std::ffi::c_long {
    // SAFETY: both functions take and return plain integers and touch only the option table;
    // no other thread of the CLI runs when it is called.
    unsafe {
        let was = libmimalloc_sys::mi_option_get(PURGE_DELAY);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, ms);
        was
    }
}

/// The process's transparent huge pages turned off (`prctl(PR_SET_THP_DISABLE)`, Linux only)
/// until this is dropped, when they are as they were.
struct HugePages {
    was_disabled: Option<bool>,
}

impl HugePages {
    fn off() -> Self {
        #[cfg(target_os = "linux")]
        {
            let was_disabled = rustix::thread::transparent_huge_pages_are_disabled().ok();
            if was_disabled == Some(false)
                && rustix::thread::disable_transparent_huge_pages(true).is_ok()
            {
                return HugePages { was_disabled };
            }
        }
        HugePages { was_disabled: None }
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.was_disabled == Some(false) {
            let _ = rustix::thread::disable_transparent_huge_pages(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: both settings are the process's, which tests on other threads would see.
    #[test]
    fn a_run_is_read_with_memory_given_back_at_once_and_no_huge_pages_then_both_put_back() {
        // A value of our own reads back: the index is an option mimalloc keeps.
        let initial = purge_delay_ms(37);
        assert_eq!(purge_delay_ms(initial), 37);
        // v2's default, 10 ms, unless the environment set it: the index is `purge_delay`.
        if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
            .iter()
            .all(|v| std::env::var_os(v).is_none())
        {
            assert_eq!(initial, 10);
        }
        #[cfg(target_os = "linux")]
        let huge_before = rustix::thread::transparent_huge_pages_are_disabled().ok();
        // Whether the process may set the flag at all (a sandbox may refuse `prctl`): setting
        // it to what it is changes nothing.
        #[cfg(target_os = "linux")]
        let may_set =
            huge_before.is_some_and(|b| rustix::thread::disable_transparent_huge_pages(b).is_ok());
        let (delay, huge_during) = reading_a_run(|| {
            #[cfg(target_os = "linux")]
            let huge = rustix::thread::transparent_huge_pages_are_disabled().ok();
            #[cfg(not(target_os = "linux"))]
            let huge = None::<bool>;
            (purge_delay_ms(0), huge)
        });
        assert_eq!(delay, 0);
        assert_eq!(purge_delay_ms(initial), initial);
        #[cfg(target_os = "linux")]
        {
            if may_set && huge_before == Some(false) {
                assert_eq!(huge_during, Some(true));
            }
            assert_eq!(
                rustix::thread::transparent_huge_pages_are_disabled().ok(),
                huge_before
            );
        }
        let _ = huge_during;
    }
}
