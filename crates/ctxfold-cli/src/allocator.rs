//! The allocator (mimalloc), and how soon it gives freed memory back.
//!
//! mimalloc 3 keeps freed memory for a second before giving it back to
//! the system (its `purge_delay`, 1,000 ms; mimalloc 2 waited 10 ms). A
//! command that reads a long session or log frees much of what it read
//! while it still runs, and that memory stayed resident: `compact FILE`
//! of a 61 MB Codex session peaked at 2.8x–3.1x the file, 2.5x–2.7x with
//! 10 ms, no slower (docs/PERFORMANCE.md, issue 48). A command that ends
//! gives everything back at its end anyway, so it waits 10 ms; a server
//! (the proxy, the pages, the MCP server, an agent's run or query) keeps
//! mimalloc's own delay, its memory reused from request to request.

// mimalloc gives freed memory back: with glibc's allocator a long-running
// proxy's resident memory grew with its traffic and varied twofold from
// run to run (docs/PERFORMANCE.md, "The allocator"); loading large logs
// is faster too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`'s place in mimalloc 3's `mi_option_t` (its
/// `mimalloc.h`); the test below holds it to the option's default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long a command that ends waits before giving freed memory back.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Give freed memory back after 10 ms, for the rest of this process.
#[allow(unsafe_code)] // mimalloc's options are set through its C API only
pub fn purge_sooner() {
    // SAFETY: `mi_option_set` takes any option number and value and may
    // be called at any time from any thread (mimalloc's documentation).
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read an option's value.
    #[allow(unsafe_code)]
    fn get(option: libmimalloc_sys::mi_option_t) -> std::ffi::c_long {
        // SAFETY: as `mi_option_set`: any option number, at any time.
        unsafe { libmimalloc_sys::mi_option_get(option) }
    }

    #[test]
    fn the_purge_delay_is_the_option_set_and_its_default_is_mimallocs() {
        // The option number is mimalloc 3's: its default is 1,000 ms
        // (an upgrade that moved it fails here, not silently).
        assert_eq!(get(PURGE_DELAY), 1000);
        purge_sooner();
        assert_eq!(get(PURGE_DELAY), PURGE_DELAY_MS);
    }
}
