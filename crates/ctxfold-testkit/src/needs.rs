//! What a test does when a server or program it needs is not there
//! (PostgreSQL, Chromium, the real agents): the one policy for all of them.
//!
//! Under `scripts/test` (the README's test command, which starts or
//! installs every one of them and sets [`REQUIRE_ENV`]) and in CI (`CI`
//! set) a missing part fails the test, naming what is missing and how to
//! get it: a test that skipped there would pass without checking anything.
//! Under a plain `cargo test` the test says on standard error that it
//! skipped, and why.

use std::io::Write;

/// Set by `scripts/test`: every outside part a test needs is there.
pub const REQUIRE_ENV: &str = "CTXFOLD_TEST_REQUIRE";

/// Whether a missing part fails the test (`scripts/test`, CI) rather than
/// skipping it.
pub fn required() -> bool {
    std::env::var_os(REQUIRE_ENV).is_some_and(|v| !v.is_empty()) || std::env::var_os("CI").is_some()
}

/// `what` is missing for `test`: panic when [`required`], else say that
/// the test skipped. Callers return right after.
pub fn missing(test: &str, what: &str) {
    if required() {
        panic!(
            "{test}: {what}; scripts/test provides it ({REQUIRE_ENV} or CI is set, so this fails rather than skips)"
        );
    }
    // Straight to stderr: the test harness captures eprintln!.
    let _ = writeln!(std::io::stderr(), "{test} skipped: {what}");
}
