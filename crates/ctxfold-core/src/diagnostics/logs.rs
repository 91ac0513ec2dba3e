//! Log lines by their level, whatever the logger (`2026-12-06T10:00:00Z
//! ERROR msg`, `[ERROR] msg`, `ERROR: msg`, `ERROR:root:msg`, log4j's
//! `<time> [main] ERROR com.x.Y - msg`, glog's `E1206 10:00:00.123 1
//! x.cc:12] msg`, logfmt's `level=error`, JSON lines' `"level":"error"`),
//! and lines naming where a full output was saved (Claude Code's `Output
//! too large (29.4KB). Full output saved to: PATH`, `see PATH for the full
//! output`).
//!
//! A level is read where loggers put it, not anywhere in the line: as the
//! line's first word, or among the first words after a timestamp, or as a
//! logfmt or JSON field. A line that only mentions `ERROR` in its message,
//! or a line of source code, has no level.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::text::literal_pattern;

/// A log line's level, as far as diagnostics care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// ERROR, FATAL, CRITICAL, SEVERE, EMERG, ALERT, PANIC.
    Error,
    /// WARN, WARNING.
    Warning,
    /// INFO, DEBUG, TRACE, NOTICE and below: the line only mentions
    /// whatever it says.
    Quiet,
}

/// A level word, in any case, as loggers spell it (full words, and the
/// short forms of zerolog, logrus and syslog).
fn level_of(word: &str, short: bool) -> Option<Level> {
    let w = word.to_ascii_uppercase();
    let full = match w.as_str() {
        "ERROR" | "FATAL" | "CRITICAL" | "SEVERE" | "EMERG" | "EMERGENCY" | "ALERT" | "PANIC" => {
            Some(Level::Error)
        }
        "WARN" | "WARNING" => Some(Level::Warning),
        "INFO" | "DEBUG" | "TRACE" | "NOTICE" | "VERBOSE" | "FINE" | "FINER" | "FINEST" => {
            Some(Level::Quiet)
        }
        _ => None,
    };
    if full.is_some() || !short {
        return full;
    }
    match w.as_str() {
        "ERR" | "ERRO" | "FTL" | "FATA" | "CRIT" | "PNC" | "PANI" | "EROR" => Some(Level::Error),
        "WRN" | "WARNI" => Some(Level::Warning),
        "INF" | "DBG" | "DEBU" | "TRC" | "TRAC" | "NOTE" => Some(Level::Quiet),
        _ => None,
    }
}

/// A timestamp at the start of a line (after an optional `[`): a date
/// with or without a time (`2026-12-06T10:00:00.123Z`, `2026/12/06
/// 10:00:00`), a time (`10:00:00,123`, `10:00AM`), syslog's `Dec  6
/// 10:00:00`, logcat's `12-06 10:00:00.123`, a Unix time, or any bracketed
/// text holding a time (`[Sat Dec 06 10:00:00.123 2026]`).
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(concat!(
        r"^\[?(?:",
        r"\d{4}[-/.]\d\d[-/.]\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d|\s?UTC)?",
        r"|\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?",
        r"|\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?",
        r"|\d{1,2}:\d\d(?:AM|PM)",
        r"|[A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d(?:[.,]\d+)?",
        r"|\d{10}(?:\.\d+)?",
        r"|\[[^\]\n]{0,40}\d\d:\d\d[^\]\n]{0,40}\]",
        r")(?:\]|:|,)?(?:\s+|$)",
    ))
});

/// glog's `E1206 10:00:00.123456  1234 file.cc:12] msg` and Android
/// logcat's `12-06 10:00:00.123  1234  1234 E Tag: msg`: the level is one
/// letter.
static LETTER: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"^(?:([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\s\]]+:\d+\] |\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+\d+\s+\d+ ([VDIWEF]) \S)",
    )
});

/// logfmt's `level=error` (also `lvl=`, `severity=`, quoted or not).
static LOGFMT: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(r#"(?:^|\s)(?:level|lvl|severity|loglevel)=["']?([A-Za-z]+)["']?(?:\s|$)"#)
});

/// A JSON log line's level (`"level":"error"`, `"severity":"ERROR"`,
/// pino's `"level":50`).
static JSON_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r#""(?:level|severity|lvl|levelname|log\.level|loglevel|@l)"\s*:\s*(?:"([A-Za-z]+)"|(\d+)(?:[,}\s]))"#,
    )
});

/// A JSON log line says something: a message field beside its level (a
/// configuration file's `{"level": "error"}` does not).
static JSON_MESSAGE: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r#""(?:msg|message|event|error|err|text|@m|@mt)"\s*:"#));

/// A prefix a log line may carry before its own start: docker compose's
/// `web-1  | `.
static PREFIX: LazyLock<Regex> = LazyLock::new(|| literal_pattern(r"^[\w.-]+\s*\| "));

/// ANSI escape sequences (a colored level).
static ANSI: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07"));

/// `line` without ANSI escape sequences.
pub(super) fn strip_ansi(line: &str) -> Cow<'_, str> {
    if line.contains('\x1b') {
        ANSI.replace_all(line, "")
    } else {
        Cow::Borrowed(line)
    }
}

/// How many words after a timestamp a level may come (log4j's thread,
/// syslog's host and program, Python's `- name -`).
const WORDS_AFTER_TIME: usize = 5;

/// The level of a log line, read where loggers put it; `None` when the
/// line has none (it is not a log line, or its level is not where one
/// would be).
pub(super) fn log_level(line: &str) -> Option<Level> {
    // Logs are not indented; source code is.
    let indented = |l: &str| l.len() - l.trim_start().len() > 2;
    if indented(line) {
        return None;
    }
    let line = PREFIX.find(line).map_or(line, |m| &line[m.end()..]);
    if indented(line) {
        return None;
    }
    let t = line.trim_start();
    if t.starts_with('{') {
        let c = JSON_LEVEL.captures(t)?;
        if !JSON_MESSAGE.is_match(t) {
            return None;
        }
        return match (c.get(1), c.get(2)) {
            (Some(w), _) => level_of(w.as_str(), true),
            // pino and bunyan: 50 error, 60 fatal, 40 warn.
            (None, Some(n)) => match n.as_str().parse::<u32>().ok()? {
                50.. => Some(Level::Error),
                40..50 => Some(Level::Warning),
                _ => Some(Level::Quiet),
            },
            _ => None,
        };
    }
    if let Some(c) = LETTER.captures(t) {
        return match c.get(1).or(c.get(2)).map(|m| m.as_str()) {
            Some("E" | "F") => Some(Level::Error),
            Some("W") => Some(Level::Warning),
            _ => Some(Level::Quiet),
        };
    }
    if let Some(c) = LOGFMT.captures(t) {
        return level_of(&c[1], true);
    }
    match TIMESTAMP.find(t) {
        Some(m) => after_time(&t[m.end()..]),
        None => first_word(t),
    }
}

/// The level among the first words after a timestamp: bracketed in any
/// case (`[error]`, `[core:error]`, `[main/ERROR]`), or bare in capitals
/// (`ERROR`, `ERROR:`, zerolog's `ERR`, logrus' `ERRO[0000]`), or as the
/// very first word in any case (zap's `2026-… error msg`).
fn after_time(rest: &str) -> Option<Level> {
    let mut words = rest
        .split_whitespace()
        .filter(|w| !matches!(*w, "-" | "|" | "--"));
    for k in 0..WORDS_AFTER_TIME {
        let w = words.next()?;
        if let Some(level) = word_level(w, true, k == 0) {
            // Something must follow: a level alone says nothing.
            return words.next().map(|_| level);
        }
    }
    None
}

/// The level of a line that starts with it, followed by a message:
/// `[ERROR] msg`, `ERROR: msg`, `ERROR msg`, Python's `ERROR:root:msg`,
/// `SEVERE: msg`, apt's `E: msg`.
fn first_word(t: &str) -> Option<Level> {
    let mut words = t.split_whitespace();
    let w = words.next()?;
    let level = match w {
        "E:" => Some(Level::Error),
        "W:" => Some(Level::Warning),
        _ => word_level(w, false, false),
    }?;
    // A message follows, not an assignment or a list (`ERROR = 1`,
    // `ERROR,`): the word ends the level, or Python's `ERROR:name:msg`.
    let next = words.next();
    let said = match next {
        Some(n) => !n.starts_with(['=', '(', ',', ')', '{', '}', ';']),
        None => w.matches(':').count() >= 2 && !w.ends_with("::"),
    };
    said.then_some(level)
}

/// The level a word of a log line's head names: `[error]` and
/// `[core:error]` in any case; `ERROR`, `ERROR:`, `ERROR/MainProcess]`,
/// `ERROR:root:msg` in capitals; short forms (`ERR`, `ERRO[0000]`) after a
/// timestamp only; any case when `any_case` (the first word after a
/// timestamp).
fn word_level(word: &str, after_time: bool, any_case: bool) -> Option<Level> {
    let bracketed = (word.starts_with('[') && word.ends_with(']'))
        || (word.starts_with('<') && word.ends_with('>'));
    let inner = word.trim_start_matches(['[', '<']);
    // logrus' `ERRO[0000]`: a short form, wherever it is.
    let (inner, logrus) = match inner.find('[') {
        Some(k) if k > 0 && word.ends_with(']') && !bracketed => (&inner[..k], true),
        _ => (inner.trim_end_matches([']', '>', ':']), false),
    };
    // A bracketed word is read by each of its parts (`[core:error]`,
    // `[main/ERROR]`), a bare one by its first (`ERROR:root:msg`,
    // `ERROR/MainProcess]`).
    let parts = inner.split(['/', ':']).filter(|p| !p.is_empty());
    for part in parts.take(if bracketed { usize::MAX } else { 1 }) {
        let capitals = part.bytes().all(|b| b.is_ascii_uppercase());
        if !(bracketed || capitals || any_case) {
            continue;
        }
        if let Some(level) = level_of(part, after_time || bracketed || logrus) {
            return Some(level);
        }
    }
    None
}

/// What a line naming where an output was saved holds, roughly (a verb
/// then `to`, `in` or `at` and what may start a path, `see` and a path, or
/// `full output`), ASCII case ignored: most lines and texts are passed over
/// by it, without the whole pattern ([`SAVED`]). Small enough to be read
/// with the diagnostics' patterns in one pass over a text.
pub(super) const SAVED_WORDS: &str = concat!(
    r"(?i-u:(?:saved|written|wrote|writing|stored|persisted|redirected|dumped|dumping|streams|streaming|available)(?: [a-z]+){0,3} (?:to|in|at|into|under):? ?[`'\x22]?[~./\\\w]",
    r"|\bsee [`'\x22]?[~./\\\w]",
    r"|(?:full|complete|entire) (?:[a-z]+ )?(?:output|log|result|transcript|stdout|stderr|response|trace|report))",
);

static SAVED_TRIGGER: LazyLock<Regex> = LazyLock::new(|| literal_pattern(SAVED_WORDS));

/// A line naming where a full output was saved: Claude Code's `Output too
/// large (29.4KB). Full output saved to: PATH` (and `Output exceeded the
/// 64KB persist limit; only the first 64KB were saved to: PATH`, `Output
/// truncated (30KB total). Full output saved to: PATH`, a background
/// task's `its output streams to PATH`), and in other tools' words:
/// `output/log/results saved to PATH`, `wrote the build log to PATH`,
/// `see PATH for the full output`, `full log: PATH`, `the full log is at
/// PATH`. A path has a slash: `saved to
/// disk` names none, and neither does a model `saved to ckpt.pt` (not an
/// output).
static SAVED: LazyLock<Regex> = LazyLock::new(|| literal_pattern(&saved_pattern()));

/// The pattern of [`SAVED`].
fn saved_pattern() -> String {
    // A path: absolute, from `~`, `.` or `..`, or relative with a folder.
    let path_core = r#"((?:[A-Za-z]:[\\/]|~[\\/]|/|\.{1,2}[\\/]|[\w.-]+[\\/])[^\s'"`<>()\[\]{}]*)"#;
    let path_abs = r#"((?:[A-Za-z]:[\\/]|~[\\/]|/|\.{1,2}[\\/])[^\s'"`<>()\[\]{}]*)"#;
    let path = format!(r#"[`'"]?{path_core}"#);
    let noun =
        r"(?:output|outputs|log|logs|results?|stdout|stderr|transcript|response|trace|report)";
    format!(
        concat!(
            r"(?i)(?:",
            r"(?-u:\b){noun}(?-u:\b)[^\n]{{0,80}}?(?-u:\b)(?:saved|written|stored|persisted|redirected|dumped|streams|streaming|available)\s+(?:to|in|at|into|under)\s*:?\s*{path}",
            r"|(?-u:\b)(?:saved|wrote|written|writing|dumped|dumping)\s+(?:the\s+)?(?:full\s+|complete\s+|entire\s+)?(?:\w+\s+)?{noun}\s+(?:to|in|into|at)\s*:?\s*{path}",
            r"|(?-u:\b)see\s+(?:[`'\x22]{path_core}|{path_abs})[`'\x22]?\s+for\s+(?:the\s+)?(?:full|complete|entire|whole|rest|remaining|more|details|untruncated)",
            r"|(?-u:\b)(?:full|complete|entire)\s+{noun}\s*(?:(?:is|are)\s+)?(?:at|in|:)\s*:?\s*{path}",
            r")",
        ),
        noun = noun,
        path = path,
        path_core = path_core,
        path_abs = path_abs,
    )
}

/// Where a line may hold a level at error or warning (a level word in
/// capitals, maybe colored, bracketed or after a time in any case, a
/// logfmt or JSON level, glog's, logcat's or apt's letter): what [`log_level`] can find
/// Error or Warning in, and more. Read over whole texts and lines, to pass
/// over those that cannot (source code full of `err`).
pub(super) const LEVEL_SHAPES: &str = concat!(
    r#"(?:(?-u:\b)|\x1b\[[0-9;]*m)(?:ERROR|ERR|ERRO|EROR|FATAL|FATA|CRIT|CRITICAL|SEVERE|EMERG|ALERT|PANIC|WARN|WARNING|FTL|WRN|PNC)(?-u:\b)"#,
    r#"|(?i:[\[<](?:[\w.-]+[:/])?(?:error|err|eror|fatal|crit|critical|severe|emerg|alert|panic|warn|warning)[\]>])"#,
    r#"|(?i:(?:\d\d|\])(?:Z|[+-]\d\d:?\d\d|[ \t]?UTC|AM|PM)?[,:\]]?[ \t]+(?:err|eror|fata|crit|severe|emerg|alert|panic|warn|ftl|wrn|pnc))"#,
    r#"|(?i:(?:level|lvl|severity|loglevel|levelname|@l)["']?[ \t]*[=:][ \t]*["']?(?:err|eror|fata|crit|severe|emerg|alert|panic|warn|ftl|wrn|pnc|[4-6]\d))"#,
    r#"|(?m:^[EWF]\d{4} |^\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+\d+\s+\d+ [EWF] |^[EW]: )"#,
);

/// Whether `line` may name where a full output was saved: it holds a path
/// separator and what such a line has ([`SAVED_WORDS`]). Cheap: most lines
/// are passed over by it.
pub(super) fn may_name_saved(line: &str) -> bool {
    (line.contains('/') || line.contains('\\')) && SAVED_TRIGGER.is_match(line)
}

/// Words one of which a line naming where an output was saved holds (see
/// [`SAVED`]), as literals without their first letter, so that a sentence's
/// capital does not matter: a whole text is looked over for them at about
/// the speed of memory.
static SAVED_LITERALS: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(concat!(
        r"aved |ritten to|ritten at|ritten into|rote |riting |tored in|tored at|tored to",
        r"|ersisted |edirected |umped |umping |treams to|treaming to|vailable at",
        r"|ee /|ee \./|ee \.\./|ee ~/|ee `|ee '|ee \x22",
        r"|ull output|ull log|ull result|ull transcript|ull stdout|ull stderr|ull response",
        r"|ull trace|ull report|omplete output|omplete log|ntire output|ntire log",
    ))
});

/// Where in `text` the lines naming where a full output was saved may be
/// (byte offsets of their words, in order): none when it holds no path
/// separator.
pub(super) fn saved_lines(text: &str) -> Vec<usize> {
    if !(text.contains('/') || text.contains('\\')) {
        return Vec::new();
    }
    SAVED_LITERALS.find_iter(text).map(|m| m.start()).collect()
}

/// The path `line` names as where a full output was saved, if it does.
pub(super) fn saved_path(line: &str) -> Option<&str> {
    if !may_name_saved(line) {
        return None;
    }
    let c = SAVED.captures(line)?;
    let path = c.iter().skip(1).flatten().next()?.as_str();
    // A sentence's full stop or comma is not part of the path.
    let path = path.trim_end_matches(['.', ',', ';', ':']);
    (path.len() > 1).then_some(path)
}

/// The patterns above, for the test that every one compiles.
#[cfg(test)]
pub(super) fn force_all() {
    for re in [
        &TIMESTAMP,
        &LETTER,
        &LOGFMT,
        &JSON_LEVEL,
        &JSON_MESSAGE,
        &PREFIX,
        &ANSI,
        &SAVED_TRIGGER,
        &SAVED_LITERALS,
        &SAVED,
    ] {
        LazyLock::force(re);
    }
}
