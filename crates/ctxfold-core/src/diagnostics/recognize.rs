//! The recognizer: the shapes diagnostics take, read line by line (see
//! the [module docs](super)).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::logs::{self, Level};
use super::{DiagnosticKind, VALUE_CHARS};
use crate::text::{collapse, cut_chars, literal_pattern};

/// The patterns, in the order of [`RULES`]; the first that matches a line
/// decides.
const PATTERNS: &[&str] = &[
    // `file.ext:12:5: error: msg` (gcc, clang, go vet, eslint…), or
    // `file.ts(12,5): error TS2322: msg`.
    r"^\s*([\w./\\-]+\.\w+)(?::(\d+)(?::(\d+))?|\((\d+),(\d+)\)):?\s+(?:-\s+)?(?:fatal )?(error|warning)(?-u:\b):?\s*(\S.*)$",
    // `error[E0308]: msg` / `error: msg` at the start of a line or after a
    // prefix ending in ": " (`Cargo command failed: error: …`).
    r"(?:^|: )(error(?:\[[A-Za-z]*\d+\])?): (\S.*)$|^(make(?:\[\d+\])?: \*\*\*) (\S.*)$|^(npm (?:ERR!|error)) (\S.*)$",
    // `warning: msg` at the start of a line.
    r"^(warning(?:\[[\w-]+\])?): (\S.*)$",
    // `thread 'main' panicked at src/x.rs:3:5:` (the message follows).
    r"panicked at ([\w./\\-]+:\d+:\d+):?\s*(.*)$|panicked at '(.*)', ([\w./\\-]+:\d+:\d+)",
    // `panic: msg` (Go), `fatal error: msg`, `Segmentation fault`.
    r"^(?:panic|fatal error|fatal): (\S.*)$|^(Segmentation fault|Aborted)(?-u:\b).*$",
    // `Traceback (most recent call last):`
    r"^Traceback \(most recent call last\):",
    // `ValueError: msg`, `java.lang.IllegalStateException: msg`,
    // `Uncaught TypeError: msg`, `Error: msg` at the start of a line.
    // Also Java's `Caused by: java.io.IOException: msg`, pytest's
    // `E       assert 1 == 2` and `tests/x.py:12: AssertionError`, and a Go
    // test's `    x_test.go:12: got 1, want 2`: what a failure says.
    r"^(?:Uncaught )?((?:[a-z][\w]*\.)*[A-Z]\w*(?:Error|Exception)|Error): (\S.*)$|^(?:E\s+|Exception in thread .*? |Caused by: )(?:[a-z][\w]*\.)*[A-Z]\w*(?:Error|Exception)(?::\s*\S.*)?$|^E {3,}\S|^[\w./\\-]+\.py:\d+: (?:[a-z]\w*\.)*[A-Z]\w*(?:Error|Exception)(?-u:\b)|^\s+\w+_test\.go:\d+: \S",
    // Failing tests: `test a::b ... FAILED`, `--- FAIL: TestX`,
    // `FAILED tests/x.py::test_y - …`, `ERROR tests/x.py - …`,
    // `FAIL src/x.test.ts`, Go's `FAIL`, jest's `● suite › test` and
    // `✕ test`, `not ok 3 - x`, `test result: FAILED.`, `… of which 2
    // failed`, `3 failed, 10 passed`, `Tests:  1 failed, 2 passed`.
    r"^test (\S+) \.\.\. FAILED$|^--- FAIL: (\S+)|^FAILED (\S+)|^\s*FAIL\s+\S*[./]\S*|^\s*FAIL \[|^FAIL$|^ERROR (?:[\w./\\-]+\.py(?:::\S*)?(?:\s|$)|at (?:setup|teardown) of )|^_+ ERROR at (?:setup|teardown) of |^\s*● \S|^\s*[✕✖×] \S|(?-u:\b)[1-9]\d* errors? in \d|^not ok \d+(?-u:\b)|^test result: FAILED(?-u:\b)|(?-u:\b)of which [1-9]\d* failed(?-u:\b)|^=*\s*[1-9]\d* (?:failed|failing)(?-u:\b)|^(?:Tests|Test Suites|Test Files):\s+[1-9]\d* failed(?-u:\b)",
    // A build that failed (Gradle's `FAILURE: Build failed …`, Ant's
    // `BUILD FAILED`).
    r"^FAILURE: \S|^BUILD FAILED(?-u:\b)",
    // Non-zero exit statuses.
    r"(?i)(?-u:\b)(?:exit(?:ed)?(?: with)? (?:code|status)|exit code|non-zero exit status|returned exit code)[ :=]*([1-9]\d*)(?-u:\b)",
    // Missing files and commands.
    r"No such file or directory|(?-u:\b)ENOENT(?-u:\b)|command not found|FileNotFoundError|(?i:(?-u:\b)(?:file|directory|folder|path) not found(?::| at(?-u:\b)))|cannot find (?:the )?(?:file|path)(?-u:\b)",
    // Refused permissions.
    r"Permission denied|(?-u:\b)EACCES(?-u:\b)|(?-u:\b)EPERM(?-u:\b)|Operation not permitted|PermissionError|Access is denied",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    Error,
    LocatedError,
    Warning,
    Panicked,
    Panic,
    Traceback,
    Exception,
    TestFailure,
    ExitStatus,
    NotFound,
    PermissionDenied,
    Failure,
}

const RULES: [Rule; 12] = [
    Rule::LocatedError,
    Rule::Error,
    Rule::Warning,
    Rule::Panicked,
    Rule::Panic,
    Rule::Traceback,
    Rule::Exception,
    Rule::TestFailure,
    Rule::Failure,
    Rule::ExitStatus,
    Rule::NotFound,
    Rule::PermissionDenied,
];

// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(PATTERNS).expect("the diagnostic patterns compile"));
/// All patterns over a whole text (`^`/`$` at line ends): most results hold
/// no diagnostic at all, and are passed over in one scan.
// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(
        PATTERNS
            .iter()
            .map(|p| format!("(?m:{p})"))
            .chain([format!("(?m:{})", logs::LEVEL_SHAPES)]),
    )
    .expect("the diagnostic patterns compile")
});
// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static ONE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .map(|p| Regex::new(p).expect("the diagnostic patterns compile"))
        .collect()
});
/// `--> src/x.rs:3:5` (rustc), `at f (src/x.js:3:5)`, `File "x.py", line 3`.
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r#"^\s*--> ([^\s]+:\d+(?::\d+)?)|^\s*File "([^"]+)", line (\d+)|^\s*at .*?\(?([\w./\\-]+\.\w+:\d+:\d+)\)?\s*$"#,
    )
});
/// The thread that panicked: in a test run, the failing test's name.
static THREAD: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"thread '([^']+)'(?: \(\d+\))? panicked at"));
/// An assertion's compared values (Rust's `left:`/`right:`, also before
/// 1.73 as `left: `…``).
static COMPARED: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"^\s*(left|right): (\S.*?),?$"));
/// A test run's count of failures (`of which 2 failed`, `2 failed, 3
/// passed`, `test result: FAILED. 2 passed; 1 failed`).
pub(super) static FAILED_TALLY: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"(?-u:\b)(?:of which )?(\d+) (?:failed|failing)(?-u:\b)"));
/// A failed tool's generic first line (`An error occurred while running
/// the 'x' tool.`): it names no cause, the lines after it do.
pub(super) static WRAPPER: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"(?i)^(?:an? )?(?:unexpected |unknown |internal )?error (?:occurred|happened|while)(?-u:\b)|^(?:the )?(?:tool|command|call|request|operation)(?: call)? (?:failed|errored)(?:\.|!|$)|^(?:error|failed|failure)[.!:]?$|^something went wrong(?-u:\b)",
    )
});
/// Words one of which every line that starts a diagnostic holds (what the
/// patterns need, ASCII case ignored): a line without one is passed over
/// without running the patterns.
static TRIGGER: LazyLock<Regex> = LazyLock::new(|| literal_pattern(TRIGGER_WORDS));
/// The pattern of [`TRIGGER`].
const TRIGGER_WORDS: &str = r"(?i-u:error|npm err|warning|panic|fatal|segmentation fault|aborted|traceback|exception|fail|not ok|exit|no such file|enoent|not found|cannot find|permission|eacces|eperm|not permitted|access is denied|^e {3}|_test\.go:\d)|●|✕|✖|×";
/// What any line a diagnostic can start on holds (a [`TRIGGER`] word, a
/// level's shape, a saved-output line's words), over a whole text: the
/// lines it is not found on are passed over without a look.
// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static CANDIDATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("(?m:{TRIGGER_WORDS}|{})", logs::LEVEL_SHAPES))
        .expect("the diagnostic patterns compile")
});
/// Lines of code that name errors (`except FileNotFoundError:`, `errno ==
/// EACCES`, `let msg = "exit code 2";`, `error!("…")`): not diagnostics.
static CODE: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r#"\s[=!]==?\s|(?-u:\b)(?:except|catch|raise|throw|throws|return|let|const|var|case|elif)(?-u:\b)|(?-u:\b)(?:error|warn|panic)!\(|=\s*["']"#,
    )
});
/// Lines that only mention errors: a log line at info level or below
/// whose level is not where a logger puts it (see [`logs::log_level`]).
static QUIET_LOG: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"(?-u:\b)(?:INFO|DEBUG|TRACE)(?-u:\b)|(?-u:\b)level=(?:info|debug|trace)(?-u:\b)|(?-u:\b)(?:info|debug|trace):",
    )
});
/// A string literal in a call or an assignment (`print("…")`, `msg =
/// "…"`): a line of code.
static LITERAL: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r#"\(\s*[fr]?["'`]|=\s*["'`]|["'`]\s*[,)]"#));
/// Comments: they mention errors, and name paths.
static COMMENT: LazyLock<Regex> = LazyLock::new(|| literal_pattern(r"^\s*(?://|#|--\s|\*|/\*)"));
/// Where a log line at an error or warning level may be (see
/// [`logs::LEVEL_SHAPES`]): the others are passed over without reading
/// their level (a quiet line is told apart only when it looks like one:
/// `INFO retrying, last ERROR …`).
static LEVEL_TRIGGER: LazyLock<Regex> = LazyLock::new(|| literal_pattern(logs::LEVEL_SHAPES));
/// The index of the failing tests' pattern in [`PATTERNS`].
const TEST_FAILURE: usize = 7;
/// A warning line that only counts warnings (`warning: 3 warnings emitted`,
/// cargo's ``warning: `x` (lib) generated 1 warning``).
static WARNING_TALLY: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"^warning: .*(?:(?-u:\b)\d+ warnings? (?:emitted|generated)|(?-u:\b)generated \d+ warnings?$)|^warning: build failed",
    )
});

/// One diagnostic as the recognizer reads it, before it is cut and
/// deduplicated.
pub(super) struct Hit {
    pub kind: DiagnosticKind,
    /// What it says, as read (not yet collapsed or cut).
    pub text: String,
    pub location: Option<String>,
    /// The lines it was read from (0-based), its own first.
    pub lines: Vec<usize>,
}

/// A line is read by its first this many bytes (a C++ template error, a
/// minified file).
const LINE_BYTES: usize = 2_000;

/// Run the recognizer over `text`, handing each diagnostic to `each` in
/// output order, until `each` says `false`.
pub(super) fn scan(text: &str, each: &mut dyn FnMut(Hit) -> bool) {
    // Most texts hold no diagnostic and name no saved output: a look or
    // two passes them over.
    let saved = logs::saved_lines(text);
    let any = ANY.is_match(text);
    if !any && saved.is_empty() {
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    // Where each line starts in `text`, and the lines a diagnostic can
    // start on, in order: the others are passed over.
    let base = text.as_ptr() as usize;
    let starts: Vec<usize> = lines.iter().map(|l| l.as_ptr() as usize - base).collect();
    let line_of = |at: usize| starts.partition_point(|&s| s <= at).saturating_sub(1);
    let mut candidates: Vec<usize> = saved.iter().map(|&at| line_of(at)).collect();
    // (Without any pattern's match, only those lines can name one.)
    let mut from = 0;
    while any && let Some(m) = CANDIDATE.find_at(text, from) {
        let k = line_of(m.start());
        candidates.push(k);
        // On to the next line.
        from = match starts.get(k + 1) {
            Some(&next) => next,
            None => break,
        };
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut next = candidates.into_iter().peekable();
    let mut i = 0;
    while i < lines.len() {
        // The next candidate line at or after `i` (a traceback read ahead
        // past some).
        while next.next_if(|&k| k < i).is_some() {}
        let Some(at) = next.next() else {
            break;
        };
        i = at + 1;
        let plain = logs::strip_ansi(lines[at]);
        let mut line = plain.trim_end();
        if line.len() > LINE_BYTES {
            let mut cut_at = LINE_BYTES;
            while !line.is_char_boundary(cut_at) {
                cut_at -= 1;
            }
            line = &line[..cut_at];
        }
        // Most lines name no diagnostic: three cheap looks pass them over.
        let may_save = logs::may_name_saved(line);
        let may_level = LEVEL_TRIGGER.is_match(line);
        let may_diagnose = TRIGGER.is_match(line);
        if !(may_save || may_level || may_diagnose) {
            continue;
        }
        let comment = COMMENT.is_match(line);
        // Where the full output was saved: whatever the line's level. (A
        // path holds words code has, `/var/…`: only a string literal in a
        // call or an assignment says it is code.)
        if may_save && !comment && !LITERAL.is_match(line) && logs::saved_path(line).is_some() {
            let hit = Hit {
                kind: DiagnosticKind::SavedOutput,
                text: line.trim().to_owned(),
                location: None,
                lines: vec![at],
            };
            if !each(hit) {
                break;
            }
            continue;
        }
        // A log line says what it is by its level; one at info level or
        // below only mentions whatever it says. A test runner's line in a
        // logger's shape (pytest's `ERROR tests/x.py - …`) is a failing
        // test.
        // (A quiet line matters only when it holds a word that would make
        // it a diagnostic.)
        let level = if may_level || may_diagnose {
            logs::log_level(line)
        } else {
            None
        };
        let kind = match level {
            Some(Level::Quiet) => continue,
            Some(Level::Error) => Some(DiagnosticKind::LogError),
            Some(Level::Warning) => Some(DiagnosticKind::LogWarning),
            None => None,
        };
        if let Some(kind) = kind
            && !ONE[TEST_FAILURE].is_match(line)
        {
            let hit = Hit {
                kind,
                text: line.trim().to_owned(),
                location: None,
                lines: vec![at],
            };
            if !each(hit) {
                break;
            }
            continue;
        }
        // pytest's `E   assert a == b` and `FAILED tests/x.py::t - assert
        // a == b` lines quote code, and are diagnostics.
        let code = CODE.is_match(line) && !line.starts_with("E ") && !line.starts_with("FAILED ");
        if !may_diagnose || QUIET_LOG.is_match(line) || comment || code {
            continue;
        }
        let matched = SET.matches(line);
        let Some(k) = matched.iter().next() else {
            continue;
        };
        let caps = ONE[k].captures(line);
        // The other lines the diagnostic is read from.
        let mut more: Vec<usize> = Vec::new();
        let found = match (RULES[k], caps) {
            (Rule::Error, Some(c)) => match (c.get(3).or(c.get(5)), c.get(4).or(c.get(6))) {
                // `make: *** [x] Error 1`, `npm ERR! …`.
                (Some(head), Some(msg)) => Some((
                    DiagnosticKind::Error,
                    format!("{} {}", head.as_str(), msg.as_str()),
                    None,
                )),
                _ => {
                    let head = c.get(1).map_or("error", |m| m.as_str());
                    let msg = c.get(2).map_or("", |m| m.as_str());
                    // A field (`error: String,`) or a flag (`error: true`) is
                    // not a diagnostic: a message has words.
                    (msg.split_whitespace().count() >= 2 || msg.contains('`')).then(|| {
                        let loc = location_after(&lines, i, &mut more);
                        (DiagnosticKind::Error, format!("{head}: {msg}"), loc)
                    })
                }
            },
            (Rule::LocatedError, Some(c)) => {
                let file = &c[1];
                let (l, col) = match (c.get(2), c.get(4)) {
                    (Some(l), _) => (l.as_str(), c.get(3).map(|m| m.as_str())),
                    (None, Some(l)) => (l.as_str(), c.get(5).map(|m| m.as_str())),
                    _ => ("", None),
                };
                let loc = match col {
                    Some(col) => format!("{file}:{l}:{col}"),
                    None => format!("{file}:{l}"),
                };
                let kind = if &c[6] == "warning" {
                    DiagnosticKind::Warning
                } else {
                    DiagnosticKind::Error
                };
                // `src/x.rs:55:    error: String,` in grep output is a field:
                // a message has words.
                let msg = c.get(7).map_or("", |m| m.as_str());
                (msg.split_whitespace().count() >= 2 || msg.contains('`'))
                    .then(|| (kind, line.trim().to_owned(), Some(loc)))
            }
            (Rule::Warning, Some(c)) => {
                let msg = c.get(2).map_or("", |m| m.as_str());
                (msg.split_whitespace().count() >= 2 && !WARNING_TALLY.is_match(line)).then(|| {
                    let loc = location_after(&lines, i, &mut more);
                    (DiagnosticKind::Warning, format!("{}: {msg}", &c[1]), loc)
                })
            }
            (Rule::Panicked, Some(c)) => {
                // `panicked at src/x.rs:3:5: msg`, or before Rust 1.73
                // `panicked at 'msg', src/x.rs:3:5`.
                let loc = c.get(1).or(c.get(4)).map_or("", |m| m.as_str()).to_owned();
                let mut msg = c
                    .get(2)
                    .or(c.get(3))
                    .map_or("", |m| m.as_str())
                    .trim()
                    .to_owned();
                if msg.is_empty() {
                    // The message is on the next line.
                    if let Some(next) = lines.get(i).map(|l| l.trim())
                        && !next.is_empty()
                        && !next.starts_with("note:")
                    {
                        msg = next.to_owned();
                        more.push(i);
                    }
                }
                // The failing test is the thread's name (`thread
                // 'a::tests::b' (1234) panicked at`); the id in brackets
                // changes every run, so it is left out.
                let who = THREAD
                    .captures(line)
                    .map(|t| format!("thread '{}' ", &t[1]))
                    .unwrap_or_default();
                let mut text = if msg.is_empty() {
                    format!("{who}panicked at {loc}")
                } else {
                    format!("{who}panicked at {loc}: {msg}")
                };
                text.push_str(&compared_values(&lines, i, &mut more));
                Some((DiagnosticKind::Panic, text, Some(loc)))
            }
            (Rule::Panic, _) => Some((DiagnosticKind::Panic, line.trim().to_owned(), None)),
            (Rule::Traceback, _) => {
                // The exception is the first line back at the margin; the
                // location, the last `File "…", line N` before it.
                let mut loc = None;
                let mut found = None;
                while i < lines.len() {
                    let l = lines[i].trim_end();
                    i += 1;
                    if let Some(c) = LOCATION.captures(l)
                        && let (Some(f), Some(n)) = (c.get(2), c.get(3))
                    {
                        loc = Some((format!("{}:{}", f.as_str(), n.as_str()), i - 1));
                        continue;
                    }
                    if !l.is_empty() && !l.starts_with(char::is_whitespace) {
                        found = Some(l.trim().to_owned());
                        break;
                    }
                }
                found.map(|text| {
                    more.extend(loc.as_ref().map(|(_, at)| *at));
                    more.push(i - 1);
                    (DiagnosticKind::Exception, text, loc.map(|(l, _)| l))
                })
            }
            (Rule::Exception, Some(_)) => {
                let loc = location_after(&lines, i, &mut more);
                Some((DiagnosticKind::Exception, line.trim().to_owned(), loc))
            }
            // jest's `● Console` heads what the tests logged.
            (Rule::TestFailure, _) if line.trim() == "● Console" => None,
            (Rule::TestFailure, _) => {
                Some((DiagnosticKind::TestFailure, line.trim().to_owned(), None))
            }
            (Rule::Failure, _) => Some((DiagnosticKind::Error, line.trim().to_owned(), None)),
            (Rule::ExitStatus, _) => {
                Some((DiagnosticKind::ExitStatus, line.trim().to_owned(), None))
            }
            (Rule::NotFound, _) => Some((DiagnosticKind::NotFound, line.trim().to_owned(), None)),
            (Rule::PermissionDenied, _) => Some((
                DiagnosticKind::PermissionDenied,
                line.trim().to_owned(),
                None,
            )),
            _ => None,
        };
        let Some((kind, text, location)) = found else {
            continue;
        };
        let mut read = vec![at];
        read.append(&mut more);
        if !each(Hit {
            kind,
            text,
            location,
            lines: read,
        }) {
            break;
        }
    }
}

/// An assertion's compared values on the lines after a panic (`  left: 0`
/// then ` right: 1`), as ` (left: 0, right: 1)`, each cut at
/// [`VALUE_CHARS`]; empty when there are none. The lines they are on are
/// added to `read`.
fn compared_values(lines: &[&str], at: usize, read: &mut Vec<usize>) -> String {
    let mut found: Vec<String> = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(at).take(6) {
        if let Some(c) = COMPARED.captures(l) {
            read.push(k);
            found.push(format!(
                "{}: {}",
                &c[1],
                cut_chars(&collapse(&c[2]), VALUE_CHARS)
            ));
        }
    }
    if found.is_empty() {
        String::new()
    } else {
        format!(" ({})", found.join(", "))
    }
}

/// A location on one of the two lines after `at` (rustc's `-->`, a stack
/// frame); the line it is on is added to `read`.
fn location_after(lines: &[&str], at: usize, read: &mut Vec<usize>) -> Option<String> {
    let (k, loc) = lines
        .iter()
        .enumerate()
        .skip(at)
        .take(2)
        .find_map(|(k, l)| {
            let c = LOCATION.captures(l)?;
            c.get(1)
                .or(c.get(4))
                .map(|m| m.as_str().to_owned())
                .or_else(|| Some(format!("{}:{}", c.get(2)?.as_str(), c.get(3)?.as_str())))
                .map(|loc| (k, loc))
        })?;
    read.push(k);
    Some(loc)
}

/// The patterns above, for the test that every one compiles.
#[cfg(test)]
pub(super) fn force_all() {
    LazyLock::force(&SET);
    LazyLock::force(&ANY);
    LazyLock::force(&ONE);
    for re in [
        &LOCATION,
        &THREAD,
        &COMPARED,
        &FAILED_TALLY,
        &WRAPPER,
        &TRIGGER,
        &CANDIDATE,
        &CODE,
        &QUIET_LOG,
        &COMMENT,
        &LITERAL,
        &LEVEL_TRIGGER,
        &WARNING_TALLY,
    ] {
        LazyLock::force(re);
    }
    assert!(RULES[TEST_FAILURE] == Rule::TestFailure);
}
