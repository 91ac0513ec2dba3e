//! The offline digest (SPEC §6): a summarizer that needs no model.
//!
//! It reads the raw events of a range and keeps what a model needs to carry
//! on once the range is folded away:
//!
//! 1. a header naming the turns and how many model-visible events it covers;
//! 2. **what the user asked**, per user message (verbatim when short);
//! 3. **decisions and conclusions**: sentences of assistant text that state
//!    one (picked by key phrases), plus each turn's last paragraph;
//! 4. **files and identifiers touched**, taken from tool-call arguments;
//! 5. **tools used**, with a count per tool and the distinct errors;
//! 6. **where it left off**: the last request, the tail of the last
//!    assistant text, and whether tool calls were still waiting.
//!
//! Every section is omitted when empty. The text is deterministic (only
//! ordered collections feed the output: same input, same bytes) and the work
//! is linear in the size of the range. Reasoning is never quoted, and tool
//! results are read only to name errors.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::compaction::Provenance;
use crate::log::Log;
use crate::record::Body;
use crate::summarizer::{SummarizeError, Summarizer, SummaryInput, SummaryOutput};

/// The digest's version, recorded in provenance. Bump it whenever the output
/// for the same input changes, so a stored summary says which recipe made it.
pub const DIGEST_VERSION: &str = "1";

/// The digest's name, as recorded in provenance.
const NAME: &str = "digest";

/// A user message up to this many characters is quoted verbatim.
const REQUEST_VERBATIM_MAX: usize = 300;
/// A longer user message is cut to about this many characters.
const REQUEST_EXCERPT: usize = 240;
/// A decision or answer item is cut to about this many characters.
const ITEM_MAX: usize = 300;
/// At most this many key-phrase sentences in the decisions section.
const DECISIONS_MAX: usize = 12;
/// At most this many turn answers (the latest turns) in that section.
const ANSWERS_MAX: usize = 12;
/// Sentences shorter than this carry too little to keep ("Done.").
const SENTENCE_MIN: usize = 25;
/// At most this many entries per file list.
const FILES_MAX: usize = 40;
/// At most this many identifiers.
const IDENTS_MAX: usize = 25;
/// An identifier (search pattern, query, command…) is cut to this length.
const IDENT_CHARS: usize = 80;
/// Longer strings are never taken for a path.
const PATH_MAX: usize = 200;
/// At most this many distinct tool errors (the latest ones).
const ERRORS_MAX: usize = 10;
/// An error line is cut to about this many characters.
const ERROR_LINE_MAX: usize = 200;
/// Lines of an error message are joined until the line is this long.
const ERROR_LINE_ENOUGH: usize = 100;
/// The tail of the last assistant text shown in "where it left off".
const LEFT_OFF_TAIL: usize = 400;

/// Phrases that mark a sentence as a decision or a conclusion.
const STRONG_PHRASES: &[&str] = &[
    "decided",
    "decide to",
    "decision",
    "we will",
    "we'll",
    "going with",
    "go with",
    "the fix",
    "fixed",
    "the problem is",
    "the problem was",
    "the issue is",
    "the issue was",
    "the cause",
    "root cause",
    "caused by",
    "conclusion",
    "in summary",
    "to summarize",
    "recommend",
    "recommendation",
    "the solution",
    "resolved",
    "turns out",
    "the reason",
];

/// Phrases that suggest one, unless the sentence is a question or narrates
/// the next action ("Let me…", "I'll check…").
const WEAK_PHRASES: &[&str] = &[
    "i'll",
    "i will",
    "should",
    "instead",
    "so the",
    "done",
    "works",
    "because",
    "must",
    "chose",
    "prefer",
    "tests pass",
    "all pass",
    "now passes",
    "compiles",
    "the approach",
    "the plan",
];

/// Sentence openings that narrate the next action rather than decide.
const NARRATION: &[&str] = &[
    "let me",
    "now let me",
    "let's",
    "now let's",
    "i'll ",
    "i will ",
    "now i'll",
    "next, i'll",
    "first, i'll",
    "first, let me",
    "okay, let me",
    "ok, let me",
    "great, let me",
    "perfect, let me",
];

/// Openings of a closing paragraph that offers more rather than answers.
const OFFERS: &[&str] = &[
    "let me know",
    "would you like",
    "do you want",
    "want me to",
    "shall i",
    "should i",
    "if you'd like",
    "if you want",
    "if you need",
    "feel free",
    "happy to",
    "i'd be happy",
    "i can also",
];

/// Parts of an argument key (split at `_`, `-` and case changes) whose
/// values are paths.
const PATH_PARTS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filenames",
    "filepath",
    "filepaths",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "prefix",
    "prefixes",
    "cwd",
    "workdir",
    "root",
];

/// Parts of keys whose values are commands (named as identifiers, and
/// scanned for paths).
const COMMAND_PARTS: &[&str] = &["command", "commands", "cmd", "script"];

/// Parts of keys whose values name things: search patterns, queries,
/// packages, revisions, repositories.
const IDENT_PARTS: &[&str] = &[
    "pattern",
    "patterns",
    "regex",
    "glob",
    "query",
    "package",
    "packages",
    "crate",
    "crates",
    "test",
    "testname",
    "tests",
    "revision",
    "rev",
    "ref",
    "branch",
    "commit",
    "sha",
    "repository",
    "repo",
    "symbol",
    "identifier",
    "module",
    "url",
    "uri",
];

/// Parts of keys whose values are content, never scanned for paths.
const CONTENT_PARTS: &[&str] = &[
    "content",
    "contents",
    "text",
    "body",
    "old",
    "new",
    "patch",
    "diff",
    "code",
    "data",
    "message",
    "description",
    "prompt",
    "input",
    "replacement",
];

/// Parts of a tool name that say it changes files.
const WRITE_PARTS: &[&str] = &[
    "create", "write", "modify", "edit", "patch", "delete", "remove", "rm", "move", "mv", "rename",
    "replace", "insert", "apply", "update", "append", "save", "mkdir", "touch",
];

/// A `command`/`action`/`mode` argument that makes such a tool read only
/// (the `view` of an editor tool).
const READ_MODES: &[&str] = &[
    "view", "read", "list", "show", "get", "cat", "search", "grep", "find",
];

/// File extensions that make a slash-less word a path.
const EXTENSIONS: &[&str] = &[
    "rs",
    "md",
    "toml",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "lock",
    "txt",
    "py",
    "ts",
    "tsx",
    "js",
    "jsx",
    "mjs",
    "go",
    "java",
    "kt",
    "swift",
    "rb",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "sh",
    "bash",
    "zsh",
    "fish",
    "html",
    "css",
    "scss",
    "sql",
    "xml",
    "proto",
    "nix",
    "zig",
    "lua",
    "vue",
    "svelte",
    "cfg",
    "ini",
    "conf",
    "env",
    "csv",
    "tsv",
    "log",
    "dockerfile",
    "mk",
    "gradle",
];

/// Characters that never occur in a path we would name.
const NOT_IN_PATH: &[char] = &[
    '|', '(', ')', '<', '>', '"', '\'', '`', '{', '}', '[', ']', '\\', ';', ',', '=', '^', '$', '!',
];

/// The offline digest summarizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest;

impl Digest {
    /// How a digest is recorded: derived, by `digest`, at [`DIGEST_VERSION`].
    pub fn provenance() -> Provenance {
        Provenance::Derived {
            summarizer: NAME.to_owned(),
            version: Some(DIGEST_VERSION.to_owned()),
            instructions: None,
            method: None,
        }
    }
}

impl Summarizer for Digest {
    fn name(&self) -> String {
        NAME.to_owned()
    }

    fn offline(&self) -> bool {
        true
    }

    /// Digest the range. Instructions are ignored: the digest has one
    /// recipe, named by its version.
    ///
    /// A short range can be about as large as its full digest; when the
    /// full form is more than half the range's size, the digest falls back
    /// to a terse form (each request and the last answer, a line each) and
    /// records `method: "terse"`.
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        let (lo, hi) = input.range;
        let full = render(input.log, lo, hi)?;
        let raw_chars: usize = input.log.records()[lo..=hi]
            .iter()
            .map(|r| crate::estimate::record_tokens(r) * 4)
            .sum();
        if full.chars().count() * 2 <= raw_chars {
            return Ok(SummaryOutput {
                text: full,
                provenance: Digest::provenance(),
            });
        }
        let mut provenance = Digest::provenance();
        if let Provenance::Derived { method, .. } = &mut provenance {
            *method = Some("terse".into());
        }
        Ok(SummaryOutput {
            text: render_terse(input.log, lo, hi),
            provenance,
        })
    }
}

fn failure(message: impl Into<String>) -> SummarizeError {
    SummarizeError {
        summarizer: NAME.to_owned(),
        message: message.into(),
    }
}

/// A user message.
struct Request<'a> {
    turn: u32,
    content: &'a str,
    author: Option<&'a str>,
    /// Not the first user message of its turn (an interrupt reply).
    follow_up: bool,
}

/// Assistant text (or a structured answer, rendered as JSON).
struct Text<'a> {
    idx: usize,
    turn: u32,
    content: Cow<'a, str>,
    structured: bool,
}

/// A tool call and what became of it within the range.
struct Call<'a> {
    name: &'a str,
    arguments: &'a Value,
    failed: bool,
}

/// A distinct tool error.
struct Failure {
    name: String,
    line: String,
    count: usize,
    last: usize,
}

/// One pass over the range.
struct Scan<'a> {
    visible: usize,
    first_visible: usize,
    last_visible: usize,
    requests: Vec<Request<'a>>,
    texts: Vec<Text<'a>>,
    calls: Vec<Call<'a>>,
    /// Index of the last tool call of each turn.
    last_call_in_turn: BTreeMap<u32, usize>,
    tool_counts: BTreeMap<&'a str, usize>,
    failures: Vec<Failure>,
}

impl<'a> Scan<'a> {
    fn new(log: &'a Log, lo: usize, hi: usize) -> Self {
        let records = log.records();
        let mut scan = Scan {
            visible: 0,
            first_visible: lo,
            last_visible: hi,
            requests: Vec::new(),
            texts: Vec::new(),
            calls: Vec::new(),
            last_call_in_turn: BTreeMap::new(),
            tool_counts: BTreeMap::new(),
            failures: Vec::new(),
        };
        // Call id → index in `calls` (the latest call with that id).
        let mut call_by_id: BTreeMap<&str, usize> = BTreeMap::new();
        let mut failure_by_key: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut last_request_turn: Option<u32> = None;
        for (idx, record) in records.iter().enumerate().take(hi + 1).skip(lo) {
            let turn = log.turn_of(idx);
            if record.body.is_model_visible() {
                if scan.visible == 0 {
                    scan.first_visible = idx;
                }
                scan.visible += 1;
                scan.last_visible = idx;
            }
            match &record.body {
                Body::User { content, author } => {
                    scan.requests.push(Request {
                        turn,
                        content,
                        author: author.as_deref(),
                        follow_up: last_request_turn == Some(turn),
                    });
                    last_request_turn = Some(turn);
                }
                Body::Assistant { content } => scan.texts.push(Text {
                    idx,
                    turn,
                    content: Cow::Borrowed(content),
                    structured: false,
                }),
                Body::Structured { data } => scan.texts.push(Text {
                    idx,
                    turn,
                    content: Cow::Owned(serde_json::to_string(data).unwrap_or_default()),
                    structured: true,
                }),
                Body::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    call_by_id.insert(id, scan.calls.len());
                    scan.calls.push(Call {
                        name,
                        arguments,
                        failed: false,
                    });
                    *scan.tool_counts.entry(name).or_default() += 1;
                    scan.last_call_in_turn.insert(turn, idx);
                }
                Body::ToolResult {
                    id,
                    content,
                    is_error: true,
                } => {
                    let name = match call_by_id.get(id.as_str()) {
                        Some(&c) => {
                            scan.calls[c].failed = true;
                            scan.calls[c].name
                        }
                        None => "unknown tool",
                    };
                    let line = error_line(content);
                    let key = (name.to_owned(), line);
                    match failure_by_key.get(&key) {
                        Some(&f) => {
                            scan.failures[f].count += 1;
                            scan.failures[f].last = idx;
                        }
                        None => {
                            failure_by_key.insert(key.clone(), scan.failures.len());
                            scan.failures.push(Failure {
                                name: key.0,
                                line: key.1,
                                count: 1,
                                last: idx,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        scan
    }
}

/// The terse digest of `records[lo..=hi]` (a range already checked by
/// [`render`]): the header, each request and the last answer.
fn render_terse(log: &Log, lo: usize, hi: usize) -> String {
    let scan = Scan::new(log, lo, hi);
    let (first, last) = (
        log.turn_of(scan.first_visible) + 1,
        log.turn_of(scan.last_visible) + 1,
    );
    let mut out = if first == last {
        format!("Digest of turn {first}\n")
    } else {
        format!("Digest of turns {first}–{last}\n")
    };
    for r in &scan.requests {
        let _ = writeln!(
            out,
            "- Turn {} asked: {}",
            r.turn + 1,
            truncate_words(&collapse_ws(r.content), 100)
        );
    }
    if let Some(t) = scan.texts.last() {
        let _ = writeln!(
            out,
            "- Last answer: {}",
            tail_words(&collapse_ws(&t.content), 160)
        );
    }
    out
}

/// The digest of `records[lo..=hi]`.
fn render(log: &Log, lo: usize, hi: usize) -> Result<String, SummarizeError> {
    let records = log.records();
    if lo > hi || hi >= records.len() {
        return Err(failure(format!(
            "empty range: records {lo}..={hi} of a log of {}",
            records.len()
        )));
    }
    let scan = Scan::new(log, lo, hi);
    if scan.visible == 0 {
        return Err(failure(format!(
            "records {lo}..={hi} hold no event the model sees: nothing to summarize"
        )));
    }
    let first_turn = log.turn_of(scan.first_visible) + 1;
    let last_turn = log.turn_of(scan.last_visible) + 1;
    let mut out = String::new();
    if first_turn == last_turn {
        let _ = write!(out, "Digest of turn {first_turn}");
    } else {
        let _ = write!(out, "Digest of turns {first_turn}–{last_turn}");
    }
    let events = if scan.visible == 1 { "event" } else { "events" };
    let _ = writeln!(out, " ({} {events})", scan.visible);

    let answers = turn_answers(&scan);
    for section in [
        section_requests(&scan),
        section_decisions(&scan, &answers),
        section_files(&scan),
        section_tools(&scan),
        section_left_off(log, &scan, &answers, lo, hi),
    ] {
        if !section.is_empty() {
            out.push('\n');
            out.push_str(&section);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- sections

fn section_requests(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    if scan.requests.is_empty() {
        return out;
    }
    out.push_str("## What the user asked\n");
    for r in &scan.requests {
        let _ = write!(out, "- Turn {}", r.turn + 1);
        match (r.author, r.follow_up) {
            (Some(a), true) => {
                let _ = write!(out, " (follow-up by {a})");
            }
            (Some(a), false) => {
                let _ = write!(out, " ({a})");
            }
            (None, true) => out.push_str(" (follow-up)"),
            (None, false) => {}
        }
        out.push_str(": ");
        out.push_str(&quote_request(r.content));
        out.push('\n');
    }
    out
}

/// A user message: verbatim when short (continuation lines indented so the
/// list stays a list), else its opening and its length.
fn quote_request(content: &str) -> String {
    let trimmed = content.trim();
    if trimmed.is_empty() {
        return "(empty message)".to_owned();
    }
    if trimmed.char_indices().nth(REQUEST_VERBATIM_MAX).is_none() {
        return trimmed.lines().collect::<Vec<_>>().join("\n  ");
    }
    format!(
        "{} ({} chars)",
        truncate_words(&collapse_ws(trimmed), REQUEST_EXCERPT),
        content.chars().count()
    )
}

/// One item of the decisions section.
struct Item {
    idx: usize,
    order: usize,
    turn: u32,
    text: String,
    /// `Some(final)` for a turn's last text: `true` when no tool call
    /// followed it in the turn.
    answer: Option<bool>,
}

/// A turn's answer: the last paragraph of its last text.
struct Answer {
    idx: usize,
    turn: u32,
    text: String,
    /// [`normalize`]d `text`.
    norm: String,
    /// No tool call followed it in the turn.
    is_final: bool,
}

/// The answers of the latest [`ANSWERS_MAX`] turns, in turn order.
fn turn_answers(scan: &Scan<'_>) -> BTreeMap<u32, Answer> {
    let mut last_text: BTreeMap<u32, &Text<'_>> = BTreeMap::new();
    for t in &scan.texts {
        last_text.insert(t.turn, t);
    }
    let skip = last_text.len().saturating_sub(ANSWERS_MAX);
    let mut answers = BTreeMap::new();
    for (&turn, t) in last_text.iter().skip(skip) {
        let paragraph = if t.structured {
            collapse_ws(&t.content)
        } else {
            answer_paragraph(&t.content)
        };
        if paragraph.is_empty() {
            continue;
        }
        let text = truncate_words(&paragraph, ITEM_MAX);
        let is_final = scan.last_call_in_turn.get(&turn).is_none_or(|&c| c < t.idx);
        answers.insert(
            turn,
            Answer {
                idx: t.idx,
                turn,
                norm: normalize(&text),
                text,
                is_final,
            },
        );
    }
    answers
}

fn section_decisions(scan: &Scan<'_>, answers: &BTreeMap<u32, Answer>) -> String {
    let mut items: Vec<Item> = answers
        .values()
        .map(|a| Item {
            idx: a.idx,
            order: usize::MAX,
            turn: a.turn,
            text: a.text.clone(),
            answer: Some(a.is_final),
        })
        .collect();

    // Key-phrase sentences: (score, item), the latest duplicate kept.
    let mut candidates: Vec<(u8, Item)> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for t in scan.texts.iter().filter(|t| !t.structured) {
        let mut order = 0;
        for_each_sentence(&t.content, |sentence| {
            order += 1;
            let score = sentence_score(sentence);
            if score == 0 {
                return;
            }
            let text = truncate_words(&collapse_ws(sentence), ITEM_MAX);
            let norm = normalize(&text);
            if norm.is_empty()
                || answers
                    .get(&t.turn)
                    .is_some_and(|a| a.norm.contains(norm.as_str()))
            {
                return;
            }
            seen.insert(norm, candidates.len());
            candidates.push((
                score,
                Item {
                    idx: t.idx,
                    order,
                    turn: t.turn,
                    text,
                    answer: None,
                },
            ));
        });
    }
    let keep: BTreeSet<usize> = seen.into_values().collect();
    let mut picked: Vec<(u8, Item)> = candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, c)| c)
        .collect();
    // Strongest first, then latest first; keep the cap; back to log order.
    picked.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.idx.cmp(&a.1.idx))
            .then(b.1.order.cmp(&a.1.order))
    });
    picked.truncate(DECISIONS_MAX);
    items.extend(picked.into_iter().map(|(_, item)| item));
    items.sort_by(|a, b| a.idx.cmp(&b.idx).then(a.order.cmp(&b.order)));

    let mut out = String::new();
    if items.is_empty() {
        return out;
    }
    out.push_str("## Decisions and conclusions\n");
    for item in &items {
        let label = match item.answer {
            Some(true) => " (answer)",
            Some(false) => " (latest text)",
            None => "",
        };
        let _ = writeln!(out, "- Turn {}{label}: {}", item.turn + 1, item.text);
    }
    out
}

fn section_files(scan: &Scan<'_>) -> String {
    let mut changed: BTreeSet<String> = BTreeSet::new();
    let mut other: BTreeSet<String> = BTreeSet::new();
    let mut idents: BTreeSet<String> = BTreeSet::new();
    for call in &scan.calls {
        let writes = !call.failed && is_write_tool(call.name, call.arguments);
        walk_strings(
            call.arguments,
            KeyClass::Other,
            &mut |class, s| match class {
                KeyClass::Path => {
                    for line in s.lines() {
                        let p = line.trim();
                        if p.len() > PATH_MAX || !p.contains(char::is_alphanumeric) {
                            continue;
                        }
                        if writes {
                            changed.insert(p.to_owned());
                        } else {
                            other.insert(p.to_owned());
                        }
                    }
                }
                KeyClass::Ident | KeyClass::Command => {
                    let v = s.trim();
                    if !v.is_empty() && !v.contains('\n') {
                        idents.insert(truncate_words(v, IDENT_CHARS));
                    }
                    if class == KeyClass::Command {
                        for token in
                            v.split(|c: char| c.is_whitespace() || "'\";|&()<>=".contains(c))
                        {
                            let token = token.trim_end_matches([':', ',', '.']);
                            if looks_like_path(token) && !token.starts_with("/dev/") {
                                other.insert(token.to_owned());
                            }
                        }
                    }
                }
                KeyClass::Content => {}
                KeyClass::Other => {
                    if looks_like_path(s) {
                        other.insert(s.to_owned());
                    } else if is_url(s) {
                        idents.insert(truncate_words(s, IDENT_CHARS));
                    }
                }
            },
        );
    }
    for p in &changed {
        other.remove(p);
    }
    let mut out = String::new();
    if changed.is_empty() && other.is_empty() && idents.is_empty() {
        return out;
    }
    out.push_str("## Files and identifiers touched\n");
    for (label, set, cap) in [
        ("Changed", &changed, FILES_MAX),
        ("Read or referenced", &other, FILES_MAX),
        ("Identifiers", &idents, IDENTS_MAX),
    ] {
        if !set.is_empty() {
            let _ = writeln!(out, "- {label}: {}", capped_list(set, cap));
        }
    }
    out
}

fn section_tools(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    if scan.tool_counts.is_empty() && scan.failures.is_empty() {
        return out;
    }
    out.push_str("## Tools used\n");
    if !scan.tool_counts.is_empty() {
        let list: Vec<String> = scan
            .tool_counts
            .iter()
            .map(|(name, n)| format!("{name} ×{n}"))
            .collect();
        let failed = scan.calls.iter().filter(|c| c.failed).count();
        let _ = write!(out, "- Calls: {}", list.join(", "));
        let calls = scan.calls.len();
        let s = if calls == 1 { "" } else { "s" };
        let _ = writeln!(out, " ({calls} call{s}, {failed} failed)");
    }
    let mut failures: Vec<&Failure> = scan.failures.iter().collect();
    failures.sort_by_key(|f| f.last);
    let hidden = failures.len().saturating_sub(ERRORS_MAX);
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        let _ = writeln!(out, "- ({hidden} earlier distinct error{s} not shown)");
    }
    for f in failures.iter().skip(hidden) {
        let _ = write!(out, "- Failed: {}: {}", f.name, f.line);
        if f.count > 1 {
            let _ = write!(out, " (×{})", f.count);
        }
        out.push('\n');
    }
    out
}

fn section_left_off(
    log: &Log,
    scan: &Scan<'_>,
    answers: &BTreeMap<u32, Answer>,
    lo: usize,
    hi: usize,
) -> String {
    let records = log.records();
    let mut out = String::from("## Where it left off\n");
    if let Some(r) = scan.requests.last() {
        // Quoted in full (or its opening) under "What the user asked".
        let _ = writeln!(out, "- Last user message: turn {}.", r.turn + 1);
    }
    if let Some(t) = scan.texts.last() {
        let prose = if t.structured {
            collapse_ws(&t.content)
        } else {
            without_code(&t.content)
        };
        let tail = tail_words(&prose, LEFT_OFF_TAIL);
        // Said once: a short last text is often its turn's whole answer.
        let shown = answers
            .get(&t.turn)
            .is_some_and(|a| a.idx == t.idx && a.norm.contains(normalize(&tail).as_str()));
        if shown {
            let _ = writeln!(
                out,
                "- Last assistant text (turn {}): shown above.",
                t.turn + 1
            );
        } else {
            let _ = writeln!(out, "- Last assistant text (turn {}): {tail}", t.turn + 1);
        }
    }
    let last = scan.last_visible;
    let turn = log.turn_of(last);
    match &records[last].body {
        Body::User { .. } => {
            let _ = writeln!(
                out,
                "- Pending: the range ends with the user's message (turn {}), not yet answered.",
                turn + 1
            );
        }
        body => {
            let step = log
                .steps(turn)
                .into_iter()
                .rev()
                .find(|s| s.start <= hi && s.end > lo);
            let (mut calls, mut answered) = (Vec::new(), BTreeSet::new());
            if let Some(step) = step {
                let from = step.start.max(lo);
                for r in &records[from..step.end.min(hi + 1)] {
                    if let Body::ToolCall { id, name, .. } = &r.body {
                        calls.push((id.as_str(), name.as_str()));
                    }
                }
                for r in &records[from..=hi] {
                    if let Body::ToolResult { id, .. } = &r.body {
                        answered.insert(id.as_str());
                    }
                }
            }
            let waiting: Vec<&str> = calls
                .iter()
                .filter(|(id, _)| !answered.contains(id))
                .map(|&(_, name)| name)
                .collect();
            if !waiting.is_empty() {
                let n = waiting.len();
                let s = if n == 1 { "" } else { "s" };
                let _ = writeln!(
                    out,
                    "- Pending: the last step ended with {n} tool call{s} without a result: {}.",
                    waiting.join(", ")
                );
            } else if matches!(body, Body::ToolResult { .. }) {
                let _ = writeln!(
                    out,
                    "- Pending: the range ends with tool results the assistant has not acted on yet."
                );
            } else {
                let _ = writeln!(
                    out,
                    "- The last step is complete: no tool call is waiting for a result."
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------- text helpers

/// Words of `s` separated by single spaces.
fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4096));
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// `s` cut to about `max` characters at a word boundary, with "…".
fn truncate_words(s: &str, max: usize) -> String {
    let Some((cut, _)) = s.char_indices().nth(max) else {
        return s.to_owned();
    };
    let head = &s[..cut];
    let end = match head.rfind(char::is_whitespace) {
        Some(i) if i >= cut / 2 => i,
        _ => cut,
    };
    format!("{}…", head[..end].trim_end())
}

/// The last `max` or so characters of `s`, starting at a word boundary,
/// with a leading "…".
fn tail_words(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let start = s.char_indices().nth(n - max).map_or(0, |(i, _)| i);
    let tail = &s[start..];
    let begin = match tail.find(char::is_whitespace) {
        Some(i) if i < tail.len() / 2 => i,
        _ => 0,
    };
    format!("…{}", tail[begin..].trim_start())
}

/// Lowercase words (letters and digits) separated by single spaces: the
/// key that finds duplicates.
fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

/// Lowercase, with typographic apostrophes made plain, for phrase search.
fn lower(s: &str) -> String {
    s.to_lowercase().replace('’', "'")
}

/// Whether `hay` (lowercase) holds `phrase` as whole words.
fn has_phrase(hay: &str, phrase: &str) -> bool {
    let mut from = 0;
    while let Some(pos) = hay[from..].find(phrase) {
        let a = from + pos;
        let b = a + phrase.len();
        let before = hay[..a].chars().next_back();
        let after = hay[b..].chars().next();
        if before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
        {
            return true;
        }
        // Phrases start with an ASCII byte, so `a + 1` is a char boundary.
        from = a + 1;
    }
    false
}

/// 2 for a decision or conclusion, 1 for a likely one, 0 for neither.
fn sentence_score(sentence: &str) -> u8 {
    let end = trim_emphasis(sentence);
    if sentence.chars().count() < SENTENCE_MIN || end.ends_with(':') {
        return 0;
    }
    let l = lower(sentence);
    let question = end.ends_with('?');
    if STRONG_PHRASES.iter().any(|p| has_phrase(&l, p)) {
        return if question { 1 } else { 2 };
    }
    if question || NARRATION.iter().any(|p| l.starts_with(p)) {
        return 0;
    }
    u8::from(WEAK_PHRASES.iter().any(|p| has_phrase(&l, p)))
}

/// `s` without trailing emphasis or quotes (`**`, `_`, `` ` ``, `"`), to see
/// how the sentence itself ends.
fn trim_emphasis(s: &str) -> &str {
    s.trim_end_matches(['*', '_', '`', '"', ')', ' '])
}

/// Strip a list, quote or numbering marker from the start of a line.
fn strip_marker(line: &str) -> &str {
    let mut t = line.trim_start();
    while let Some(rest) = t.strip_prefix('>') {
        t = rest.trim_start();
    }
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest.trim_start();
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "))
    {
        return rest.trim_start();
    }
    t
}

/// Whether a line opens or closes a fenced code block.
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Call `f` with every prose sentence of `text`: code blocks, headings and
/// table rows are skipped, list markers stripped.
fn for_each_sentence<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let mut in_code = false;
    for line in text.lines() {
        if is_fence(line) {
            in_code = !in_code;
            continue;
        }
        let t = line.trim();
        if in_code || t.is_empty() || t.starts_with('#') || t.starts_with('|') {
            continue;
        }
        let t = strip_marker(t);
        let mut start = 0;
        for (i, c) in t.char_indices() {
            if matches!(c, '.' | '!' | '?')
                && t[i + 1..].chars().next().is_none_or(char::is_whitespace)
            {
                let s = t[start..=i].trim();
                if !s.is_empty() {
                    f(s);
                }
                start = i + 1;
            }
        }
        let s = t[start..].trim();
        if !s.is_empty() {
            f(s);
        }
    }
}

/// `text` on one line, each fenced code block replaced by a marker
/// naming its length.
fn without_code(text: &str) -> String {
    let mut out = String::new();
    let mut code_lines: Option<usize> = None;
    let push = |out: &mut String, piece: &str| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(piece);
    };
    for line in text.lines() {
        if is_fence(line) {
            code_lines = match code_lines {
                None => Some(0),
                Some(n) => {
                    let s = if n == 1 { "" } else { "s" };
                    push(&mut out, &format!("[code block, {n} line{s}]"));
                    None
                }
            };
            continue;
        }
        match &mut code_lines {
            Some(n) => *n += 1,
            None => {
                let t = collapse_ws(line);
                if !t.is_empty() {
                    push(&mut out, &t);
                }
            }
        }
    }
    if let Some(n) = code_lines {
        // An unclosed block: the text was cut inside it.
        let s = if n == 1 { "" } else { "s" };
        push(&mut out, &format!("[code block, {n} line{s}, unclosed]"));
    }
    out
}

/// The prose paragraphs of `text`, each on one line.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    let mut flush = |current: &mut String| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    for line in text.lines() {
        if is_fence(line) {
            in_code = !in_code;
            flush(&mut current);
            continue;
        }
        let t = line.trim();
        if in_code || t.is_empty() || t.starts_with('#') || t.starts_with('|') {
            flush(&mut current);
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&collapse_ws(t));
    }
    flush(&mut current);
    out
}

/// A turn's answer: the last paragraph of its last text that is not an
/// offer of more help, a question or an intro ending with a colon.
fn answer_paragraph(text: &str) -> String {
    let paras = paragraphs(text);
    // Skip closing offers and questions, and intros to a code block or list.
    let is_offer = |p: &String| {
        let l = lower(strip_marker(p));
        let end = trim_emphasis(p);
        end.ends_with('?') || end.ends_with(':') || OFFERS.iter().any(|o| l.starts_with(o))
    };
    match paras.iter().rev().find(|p| !is_offer(p)).or(paras.last()) {
        Some(p) => p.clone(),
        None => collapse_ws(text),
    }
}

/// The first line or lines of an error, about one line long. A JSON error
/// (as tools often return) is read for its strings, in order.
fn error_line(content: &str) -> String {
    let mut texts: Vec<String> = Vec::new();
    let t = content.trim_start();
    if (t.starts_with('{') || t.starts_with('['))
        && let Ok(v) = serde_json::from_str::<Value>(t)
    {
        walk_strings(&v, KeyClass::Other, &mut |_, s| {
            if texts.len() < 8 {
                texts.push(s.to_owned());
            }
        });
    }
    if texts.is_empty() {
        // Only the head of a long message can matter.
        let end = t
            .char_indices()
            .nth(4 * ERROR_LINE_MAX)
            .map_or(t.len(), |(i, _)| i);
        texts.push(t[..end].to_owned());
    }
    let mut out = String::new();
    'texts: for text in &texts {
        for line in text.lines() {
            let line = line.trim();
            if is_fence(line) || !line.chars().any(char::is_alphanumeric) {
                continue;
            }
            if !out.is_empty() {
                out.push_str(" / ");
            }
            out.push_str(&collapse_ws(line));
            if out.len() >= ERROR_LINE_ENOUGH {
                break 'texts;
            }
        }
    }
    if out.is_empty() {
        return "(no message)".to_owned();
    }
    truncate_words(&out, ERROR_LINE_MAX)
}

/// `set` as a comma-separated list of code spans, at most `cap` of them.
fn capped_list(set: &BTreeSet<String>, cap: usize) -> String {
    let mut list: Vec<String> = set.iter().take(cap).map(|s| format!("`{s}`")).collect();
    if set.len() > cap {
        list.push(format!("and {} more", set.len() - cap));
    }
    list.join(", ")
}

// ---------------------------------------------------------------- arguments

/// What an argument key says about its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    Path,
    Command,
    Ident,
    Content,
    Other,
}

/// The lowercase parts of a key or tool name: split at non-alphanumerics
/// and where a lowercase letter meets an uppercase one (`filePath`).
fn name_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

fn classify(key: &str) -> KeyClass {
    let parts = name_parts(key);
    let any = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
    if any(PATH_PARTS) {
        KeyClass::Path
    } else if any(COMMAND_PARTS) {
        KeyClass::Command
    } else if any(IDENT_PARTS) {
        KeyClass::Ident
    } else if any(CONTENT_PARTS) {
        KeyClass::Content
    } else {
        KeyClass::Other
    }
}

/// Call `f` with every string in `v` and the class of the key it sits under
/// (array items inherit their array's key).
fn walk_strings<'v>(v: &'v Value, class: KeyClass, f: &mut dyn FnMut(KeyClass, &'v str)) {
    match v {
        Value::String(s) => f(class, s),
        Value::Array(items) => {
            for item in items {
                walk_strings(item, class, f);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                walk_strings(item, classify(k), f);
            }
        }
        _ => {}
    }
}

/// Whether a tool call changes the files it names.
fn is_write_tool(name: &str, arguments: &Value) -> bool {
    if !name_parts(name)
        .iter()
        .any(|p| WRITE_PARTS.contains(&p.as_str()))
    {
        return false;
    }
    let mode = ["command", "action", "mode"]
        .iter()
        .find_map(|k| arguments.get(k).and_then(Value::as_str));
    !mode.is_some_and(|m| READ_MODES.contains(&m.trim().to_ascii_lowercase().as_str()))
}

fn is_url(s: &str) -> bool {
    s.len() <= PATH_MAX && s.contains("://") && !s.contains(char::is_whitespace)
}

/// Whether a word looks like a path: a slash or a known extension, no
/// spaces or shell punctuation, at least one letter.
fn looks_like_path(s: &str) -> bool {
    if !(2..=PATH_MAX).contains(&s.len())
        || s.contains("://")
        || s.contains(|c: char| c.is_whitespace() || NOT_IN_PATH.contains(&c))
        || !s.contains(char::is_alphabetic)
    {
        return false;
    }
    if s.contains('/') {
        return true;
    }
    match s.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !stem.ends_with('.') => {
            EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use serde_json::json;

    fn build(bodies: Vec<Body>) -> Log {
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| Record::new(i as u64, "2026-01-01T00:00:00Z", b))
                .collect(),
        )
    }
    fn user(s: &str) -> Body {
        Body::User {
            content: s.into(),
            author: None,
        }
    }
    fn said(s: &str) -> Body {
        Body::Assistant { content: s.into() }
    }
    fn call(id: &str, name: &str, arguments: Value) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
    fn result(id: &str, content: &str, is_error: bool) -> Body {
        Body::ToolResult {
            id: id.into(),
            content: content.into(),
            is_error,
        }
    }
    /// The full digest (these logs are small enough that `summarize`
    /// would choose the terse form).
    fn digest_all(log: &Log) -> String {
        render(log, 0, log.len() - 1).unwrap()
    }

    #[test]
    fn small_ranges_get_the_terse_form() {
        let log = Log::from_records(vec![
            Record::new(0, "", user("Why is the build red?")),
            Record::new(
                1,
                "",
                Body::Assistant {
                    content: "A missing semicolon in main.rs; fixed.".into(),
                },
            ),
        ]);
        let out = Digest
            .summarize(SummaryInput {
                log: &log,
                range: (0, 1),
                instructions: None,
            })
            .unwrap();
        assert_eq!(
            out.text,
            "Digest of turn 1\n- Turn 1 asked: Why is the build red?\n- Last answer: A missing semicolon in main.rs; fixed.\n"
        );
        assert!(
            matches!(out.provenance, Provenance::Derived { method: Some(ref m), .. } if m == "terse")
        );
    }
    /// The lines of one section (without its heading).
    fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
        let mut lines = text.lines().skip_while(|l| *l != format!("## {heading}"));
        lines.next();
        lines.take_while(|l| !l.is_empty()).collect()
    }

    fn sample() -> Log {
        build(vec![
            Body::TurnStart,
            user("Fix the login bug in auth.rs"),
            Body::Reasoning {
                content: "the decided root cause is secret reasoning".into(),
            },
            said("Let me look at the code first."),
            call("c1", "fs_read_file", json!({"path": "src/auth.rs"})),
            result("c1", "fn login() {}", false),
            call("c2", "cargo_check", json!({"package": "auth"})),
            result(
                "c2",
                r#"{"message":"Cargo command failed: error[E0433]: failed to resolve: use of undeclared type `Session`\n --> src/auth.rs:3:5\n  |\n3 | Session::new()","trace":[]}"#,
                true,
            ),
            said(
                "The root cause is a missing import of `Session` in the login path. I'll add it.\n\nI fixed the import and the check passes now.\n\nWould you like me to add a test?",
            ),
            Body::TurnStart,
            user("Now add a regression test"),
            call(
                "c3",
                "fs_modify_file",
                json!({"json": {"edits": [{"path": "tests/auth_test.rs", "old": "a", "new": "src/not_a_path.rs"}]}, "pattern": "fn login"}),
            ),
            result("c3", "ok", false),
            call(
                "c4",
                "cargo_test",
                json!({"package": "auth", "testname": "login"}),
            ),
        ])
    }

    #[test]
    fn name_and_provenance() {
        assert_eq!(Digest.name(), "digest");
        assert_eq!(
            Digest::provenance(),
            Provenance::Derived {
                summarizer: "digest".into(),
                version: Some("1".into()),
                instructions: None,
                method: None,
            }
        );
    }

    #[test]
    fn header_names_turns_and_events() {
        let log = sample();
        let text = digest_all(&log);
        assert!(
            text.starts_with("Digest of turns 1–2 (12 events)\n"),
            "{text}"
        );
        let one = render(&log, 0, 8).unwrap();
        assert!(one.starts_with("Digest of turn 1 (8 events)\n"));
    }

    #[test]
    fn sections_come_in_order() {
        let text = digest_all(&sample());
        let pos = |h: &str| text.find(&format!("## {h}\n")).expect(h);
        let order = [
            pos("What the user asked"),
            pos("Decisions and conclusions"),
            pos("Files and identifiers touched"),
            pos("Tools used"),
            pos("Where it left off"),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn short_request_is_verbatim() {
        let text = digest_all(&sample());
        assert_eq!(
            section(&text, "What the user asked"),
            [
                "- Turn 1: Fix the login bug in auth.rs",
                "- Turn 2: Now add a regression test"
            ]
        );
    }

    #[test]
    fn long_request_is_cut_at_a_word_with_its_length() {
        let long: String = (0..200).map(|i| format!("word{i} ")).collect();
        let log = build(vec![user(&long), said("ok")]);
        let text = digest_all(&log);
        let line = section(&text, "What the user asked")[0];
        assert!(line.starts_with("- Turn 1: word0 word1 word2"), "{line}");
        let n = long.chars().count();
        assert!(line.ends_with(&format!("… ({n} chars)")), "{line}");
        assert!(line.chars().count() < 280, "{line}");
        // Cut at a word boundary: the word before "…" is whole.
        let body = line.trim_end_matches(&format!("… ({n} chars)"));
        let last = body.rsplit(' ').next().unwrap();
        assert!(long.split_whitespace().any(|w| w == last), "{last}");
        assert!(!text.contains("word199"));
    }

    #[test]
    fn interrupt_reply_is_kept_as_a_follow_up() {
        let log = build(vec![
            Body::TurnStart,
            user("Rename the module"),
            said("Renaming it now"),
            user("wait, keep the old name as an alias"),
            said("Sure, the alias stays."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "What the user asked"),
            [
                "- Turn 1: Rename the module",
                "- Turn 1 (follow-up): wait, keep the old name as an alias"
            ]
        );
    }

    #[test]
    fn decisions_pick_key_sentences_and_each_turn_answer() {
        let text = digest_all(&sample());
        let lines = section(&text, "Decisions and conclusions");
        assert!(
            lines.contains(
                &"- Turn 1: The root cause is a missing import of `Session` in the login path."
            ),
            "{lines:#?}"
        );
        // The turn's answer skips the closing offer.
        assert!(
            lines.contains(&"- Turn 1 (answer): I fixed the import and the check passes now."),
            "{lines:#?}"
        );
        // Narration and reasoning are not picked.
        assert!(!text.contains("Let me look"));
        assert!(!lines.iter().any(|l| l.contains("I'll add it")));
        assert!(!text.contains("secret reasoning"));
    }

    #[test]
    fn decisions_are_deduplicated_and_capped_keeping_strong_then_latest() {
        let mut bodies = vec![Body::TurnStart, user("go")];
        for i in 0..30 {
            bodies.push(said(&format!(
                "We should keep option {i} around for now.\n\nThe root cause is bug {} in the parser.\n\nThe root cause is bug {} in the parser.",
                i % 5,
                i % 5
            )));
        }
        bodies.push(said("All finished, thanks."));
        let text = digest_all(&build(bodies));
        let lines = section(&text, "Decisions and conclusions");
        assert!(lines.len() <= DECISIONS_MAX + 1, "{lines:#?}");
        for b in 0..5 {
            let needle = format!("The root cause is bug {b} in the parser.");
            let n = lines.iter().filter(|l| l.ends_with(&needle)).count();
            assert_eq!(n, 1, "{needle}: {lines:#?}");
        }
        // Weak sentences fill the rest, latest first.
        assert!(lines.iter().any(|l| l.contains("option 29")));
        assert!(!lines.iter().any(|l| l.contains("option 0 ")));
        assert_eq!(
            lines.last().unwrap(),
            &"- Turn 1 (answer): All finished, thanks."
        );
    }

    #[test]
    fn keyword_matching_respects_word_boundaries() {
        assert_eq!(
            sentence_score("The frameworks were abandoned in the prefixed dir."),
            0
        );
        assert_eq!(sentence_score("Everything works on both platforms now."), 1);
        assert_eq!(sentence_score("The fix is to clear the cache on load."), 2);
        assert_eq!(
            sentence_score("Should I also update the changelog entry?"),
            0
        );
        assert_eq!(sentence_score("Let me check whether this works now."), 0);
        assert_eq!(sentence_score("Done."), 0);
    }

    #[test]
    fn files_come_from_nested_arguments() {
        let text = digest_all(&sample());
        let lines = section(&text, "Files and identifiers touched");
        assert_eq!(
            lines,
            [
                "- Changed: `tests/auth_test.rs`",
                "- Read or referenced: `src/auth.rs`",
                "- Identifiers: `auth`, `fn login`, `login`",
            ],
            "{text}"
        );
    }

    #[test]
    fn paths_in_commands_and_unknown_keys_are_found() {
        let log = build(vec![
            user("build it"),
            call(
                "1",
                "bash",
                json!({"command": "cat crates/a/src/lib.rs | grep foo > /dev/null"}),
            ),
            call(
                "2",
                "fetch",
                json!({"target": "Cargo.toml", "where": "https://example.com/x", "note": "a b/c"}),
            ),
            call(
                "3",
                "str_replace_based_edit_tool",
                json!({"command": "view", "path": "README.md"}),
            ),
        ]);
        let text = digest_all(&log);
        let lines = section(&text, "Files and identifiers touched");
        assert_eq!(
            lines,
            [
                "- Read or referenced: `Cargo.toml`, `README.md`, `crates/a/src/lib.rs`",
                "- Identifiers: `cat crates/a/src/lib.rs | grep foo > /dev/null`, `https://example.com/x`, `view`",
            ],
            "{text}"
        );
    }

    #[test]
    fn file_lists_are_capped() {
        let mut bodies = vec![user("read them all")];
        for i in 0..100 {
            bodies.push(call(
                &i.to_string(),
                "read",
                json!({"path": format!("src/f{i:03}.rs")}),
            ));
            bodies.push(result(&i.to_string(), "x", false));
        }
        let text = digest_all(&build(bodies));
        let line = section(&text, "Files and identifiers touched")[0];
        assert!(line.starts_with("- Read or referenced: `src/f000.rs`, `src/f001.rs`"));
        assert!(line.ends_with("`src/f039.rs`, and 60 more"), "{line}");
    }

    #[test]
    fn tools_are_counted_and_errors_named() {
        let text = digest_all(&sample());
        let lines = section(&text, "Tools used");
        assert_eq!(
            lines[0],
            "- Calls: cargo_check ×1, cargo_test ×1, fs_modify_file ×1, fs_read_file ×1 (4 calls, 1 failed)"
        );
        assert_eq!(
            lines[1],
            "- Failed: cargo_check: Cargo command failed: error[E0433]: failed to resolve: use of undeclared type `Session` / --> src/auth.rs:3:5"
        );
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn repeated_errors_are_counted_once_and_capped() {
        let mut bodies = vec![user("try")];
        for i in 0..30 {
            let id = i.to_string();
            bodies.push(call(&id, "run", json!({})));
            bodies.push(result(&id, &format!("boom {}\nmore", i % 15), true));
        }
        let text = digest_all(&build(bodies));
        let lines = section(&text, "Tools used");
        assert_eq!(lines[0], "- Calls: run ×30 (30 calls, 30 failed)");
        assert_eq!(lines[1], "- (5 earlier distinct errors not shown)");
        assert_eq!(lines.len(), 2 + ERRORS_MAX);
        assert_eq!(lines[2], "- Failed: run: boom 5 / more (×2)");
        assert_eq!(lines.last().unwrap(), &"- Failed: run: boom 14 / more (×2)");
    }

    #[test]
    fn left_off_names_the_last_request_text_and_waiting_calls() {
        let text = digest_all(&sample());
        let lines = section(&text, "Where it left off");
        assert_eq!(
            lines,
            [
                "- Last user message: turn 2.",
                "- Last assistant text (turn 1): The root cause is a missing import of `Session` in the login path. I'll add it. I fixed the import and the check passes now. Would you like me to add a test?",
                "- Pending: the last step ended with 1 tool call without a result: cargo_test.",
            ]
        );
    }

    #[test]
    fn left_off_when_the_range_ends_on_a_user_message_or_results() {
        let log = build(vec![
            user("one"),
            said("answer one"),
            user("two"),
            call("a", "read", json!({})),
            result("a", "x", false),
        ]);
        let upto = |hi| render(&log, 0, hi).unwrap();
        assert!(upto(2).contains(
            "- Pending: the range ends with the user's message (turn 1), not yet answered."
        ));
        assert!(upto(4).contains("- Pending: the range ends with tool results"));
        assert!(upto(1).contains("- The last step is complete"));
        let long: String = "lorem ipsum ".repeat(100);
        let log = build(vec![user("q"), said(&long)]);
        let text = digest_all(&log);
        let line = section(&text, "Where it left off")[1];
        assert!(line.starts_with("- Last assistant text (turn 1): …lorem"));
        assert!(line.chars().count() < 450);
    }

    #[test]
    fn answers_skip_intros_and_left_off_hides_code() {
        let log = build(vec![
            user("patch it"),
            said(
                "The parser drops the last line.\n\nHere is the fix:\n\n```rust\nfn a() {}\nfn b() {}\n```",
            ),
        ]);
        let text = digest_all(&log);
        assert!(
            text.contains("- Turn 1 (answer): The parser drops the last line.\n"),
            "{text}"
        );
        assert!(text.contains(
            "- Last assistant text (turn 1): The parser drops the last line. Here is the fix: [code block, 2 lines]\n"
        ));
        assert_eq!(
            sentence_score("Can we keep native types instead of JSON?**"),
            0
        );
    }

    #[test]
    fn same_input_same_bytes() {
        let log = sample();
        let a = digest_all(&log);
        let b = digest_all(&log.clone());
        assert_eq!(a.as_bytes(), b.as_bytes());
    }

    #[test]
    fn empty_or_invisible_ranges_are_refused() {
        let log = build(vec![
            Body::TurnStart,
            Body::Other {
                kind: "config_delta".into(),
                fields: Default::default(),
            },
            user("hi"),
        ]);
        for range in [(2, 1), (0, 1), (0, 3), (5, 9)] {
            let err = Digest
                .summarize(SummaryInput {
                    log: &log,
                    range,
                    instructions: None,
                })
                .unwrap_err();
            assert_eq!(err.summarizer, "digest", "{range:?}");
        }
        let empty = Log::new();
        assert!(
            Digest
                .summarize(SummaryInput {
                    log: &empty,
                    range: (0, 0),
                    instructions: None,
                })
                .is_err()
        );
    }

    #[test]
    fn structured_answers_count_as_answers() {
        let log = build(vec![
            user("give me json"),
            Body::Structured {
                data: json!({"answer": 42}),
            },
        ]);
        let text = digest_all(&log);
        assert!(
            text.contains("- Turn 1 (answer): {\"answer\":42}"),
            "{text}"
        );
    }

    #[test]
    fn a_big_tool_heavy_range_digests_small() {
        let mut bodies = vec![Body::TurnStart, user("refactor everything")];
        let blob = "fn x() { let a = 1; }\n".repeat(400);
        for i in 0..120 {
            let id = format!("c{i}");
            bodies.push(said(&format!("Reading file {i}; the fix should be small.")));
            bodies.push(call(
                &id,
                "fs_read_file",
                json!({"path": format!("src/m{}.rs", i % 30)}),
            ));
            bodies.push(result(&id, &blob, false));
        }
        let log = build(bodies);
        let raw: usize = log
            .records()
            .iter()
            .map(|r| match &r.body {
                Body::ToolResult { content, .. } | Body::Assistant { content } => content.len(),
                _ => 0,
            })
            .sum();
        assert!(raw > 1_000_000);
        let text = digest_all(&log);
        assert!(text.len() * 20 < raw, "{} of {raw}", text.len());
        assert!(text.contains("- Calls: fs_read_file ×120 (120 calls, 0 failed)"));
    }

    #[test]
    fn helpers_cut_on_char_boundaries() {
        let s = "é".repeat(500);
        assert_eq!(truncate_words(&s, 10).chars().count(), 11);
        assert!(tail_words(&s, 10).starts_with('…'));
        assert_eq!(name_parts("filePath_x-Y"), ["file", "path", "x", "y"]);
        assert_eq!(strip_marker("  12. item"), "item");
        assert!(looks_like_path("Cargo.toml"));
        assert!(looks_like_path("crates/ctxfold-core"));
        assert!(!looks_like_path("e.g"));
        assert!(!looks_like_path("1/2"));
        assert!(!looks_like_path("a|b/c"));
    }
}
