//! The offline digest (SPEC §6): a summarizer that needs no model.
//!
//! It reads the raw events of a range and keeps what a model needs to carry
//! on once the range is folded away:
//!
//! 1. a header naming the turns and how many model-visible events it covers;
//! 2. **what the user asked**, in the user's own words: every message byte
//!    for byte up to [`REQUEST_WORDS_MAX`] characters (in a fenced block
//!    when it spans lines), a longer one by its start and its end around a
//!    marker saying how much was left out; a message that corrects or
//!    constrains is marked so, when one of its sentences does;
//! 3. **corrections and constraints**: the user's own sentences that correct
//!    or constrain, quoted: an imperative ("Don't…", "Only…", "Make
//!    sure…"), an obligation or a prohibition ("you must", "I don't
//!    want"), a correction ("Actually, …", "instead", "wrong"); not "I don't
//!    think" or "it must be" (what the user quotes back with `>`, code and
//!    questions left aside);
//! 4. **decisions and conclusions**: sentences of assistant text that decide
//!    or conclude (picked by key phrases; none that plans or doubts: "let
//!    me", "I'll", "maybe", "reconsider"), plus each turn's answer (the last
//!    paragraph of its last text, when no tool call followed it);
//! 5. **files**, from tool-call arguments: written or edited (created,
//!    deleted, or the edit failed), read, searched, and named otherwise (in
//!    a command, under a key that does not say);
//! 6. **tools and commands**: a count of calls and failures per tool and in
//!    all, and each distinct command run with its outcomes (failed when the
//!    tool said so or when its output holds an error, a panic, a failing
//!    test or a non-zero exit, whatever the tool said), all counted once
//!    (`Tally`) so that the numbers agree;
//! 7. **diagnostics** from every tool result, not only failed ones (found
//!    by [`crate::diagnostics`]): one entry per distinct failure, its
//!    headline with the other distinct errors, failing tests and panics of
//!    the same result (up to [`KEEP_DIAGNOSTICS`] in all, as a stripped
//!    result keeps them; each listed once over the range), with the fix
//!    that followed where the range shows one (a later run of the same
//!    command, or of a broader one, in which no diagnostic is recognized,
//!    and the edits before it; else a later edit of the file the
//!    diagnostic names). A run is not called clean: the recognizer may
//!    miss what it printed;
//! 8. **identifiers**: names the range defined or edited (definitions in the
//!    source code the tools wrote) and names that failed (in errors, failing
//!    tests); never search patterns, queries or hashes;
//! 9. **where it left off**: the last request, the tail of the last
//!    assistant text, command errors no later run or edit answered, and
//!    whether tool calls were still waiting.
//!
//! Every section is omitted when empty; long lists are capped (commands and
//! constraints keep the latest, diagnostics the latest) and say how many
//! they leave out. The
//! text is deterministic (only ordered collections feed the output: same
//! input, same bytes) and the work is linear in the size of the range:
//! every tool result is read once, and only the lines that could start a
//! diagnostic (with the lines after them) go through the recognizer.
//! Reasoning is never quoted; tool results are read only for their
//! diagnostics.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::compaction::Provenance;
use crate::diagnostics::{Diagnostic, DiagnosticKind, collapse, first_of};
use crate::kept::REQUEST_WORDS_MAX;
use crate::log::Log;
use crate::projection::KEEP_DIAGNOSTICS;
use crate::record::Body;
use crate::summarizer::{SummarizeError, Summarizer, SummaryInput, SummaryOutput};

/// The digest's version, recorded in provenance. Bump it whenever the output
/// for the same input changes, so a stored summary says which recipe made it.
pub const DIGEST_VERSION: &str = "3";

/// The digest's name, as recorded in provenance.
const NAME: &str = "digest";

/// A user message longer than [`REQUEST_WORDS_MAX`] keeps about this many
/// characters of its start…
const REQUEST_HEAD: usize = 1_200;
/// …and about this many of its end.
const REQUEST_TAIL: usize = 600;
/// In the smallest form, a request is cut to about this many characters.
const REQUEST_MINIMAL: usize = 100;
/// A quoted correction or constraint is cut to about this many characters.
const CONSTRAINT_MAX: usize = 300;
/// At most this many corrections and constraints (the latest).
const CONSTRAINTS_MAX: usize = 20;
/// User sentences shorter than this are not quoted as constraints ("No.").
const CONSTRAINT_MIN: usize = 12;
/// A decision or answer item is cut to about this many characters.
const ITEM_MAX: usize = 300;
/// At most this many key-phrase sentences in the decisions section.
const DECISIONS_MAX: usize = 12;
/// At most this many turn answers (the latest turns) in that section.
const ANSWERS_MAX: usize = 12;
/// Sentences shorter than this carry too little to keep ("Done.").
const SENTENCE_MIN: usize = 25;
/// At most this many entries per file list.
const FILES_MAX: usize = 150;
/// Longer strings are never taken for a path.
const PATH_MAX: usize = 300;
/// At most this many distinct failures (each a headline with the other
/// errors of its result), the latest.
const DIAGNOSTICS_MAX: usize = 40;
/// Edits named before a clean run.
const FIX_EDITS_MAX: usize = 3;
/// At most this many distinct commands (the latest).
const COMMANDS_MAX: usize = 30;
/// A command is cut to this many characters.
const COMMAND_CHARS: usize = 100;
/// An argument value in a command's label is cut to this many characters.
const ARG_CHARS: usize = 40;
/// At most this many identifiers per list.
const IDENTS_MAX: usize = 30;
/// Longer names are not identifiers.
const IDENT_CHARS: usize = 80;
/// The tail of the last assistant text shown in "where it left off".
const LEFT_OFF_TAIL: usize = 400;

/// Phrases that mark a sentence as a decision or a conclusion.
const STRONG_PHRASES: &[&str] = &[
    "decided",
    "decide to",
    "decision",
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
];

/// Words of a sentence that plans or doubts rather than decides ("I also
/// need to reconsider…", "maybe", "let me check"): such a sentence is no
/// decision whatever else it says.
const PLANS_AND_DOUBTS: &[&str] = &[
    "reconsider",
    "not sure",
    "unsure",
    "unclear",
    "i wonder",
    "wondering",
    "maybe",
    "perhaps",
    "might",
    "i need to",
    "we need to",
    "need to check",
    "let me",
    "let's",
    "i'll",
    "i will",
    "we'll",
    "we will",
    "i'm going to",
    "going to check",
    "i should",
    "to verify",
    "double-check",
    "not yet",
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

/// Words of a user sentence that correct what came before, anywhere in it.
const CORRECTIONS: &[&str] = &[
    "instead",
    "i'd rather",
    "would rather",
    "rather than",
    "not what",
    "wrong",
    "incorrect",
    "i meant",
    "i said",
    "revert",
    "undo",
    "scratch that",
    "that's not",
];

/// Openings of a user sentence that correct ("Actually, …", "No, …"): in
/// the middle of one ("would not actually be") they do not.
const CORRECTION_OPENINGS: &[&str] = &["actually", "no,", "no."];

/// Openings of a user sentence that constrain what comes next: an
/// imperative ("Don't…", "Only…", "Make sure…"). In the middle of one
/// these words describe ("files that don't have", "read-only", "the only
/// piece") and do not constrain.
const CONSTRAINT_OPENINGS: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "never",
    "always",
    "only",
    "avoid",
    "keep",
    "make sure",
    "no need to",
    "stop",
];

/// Words before an imperative that still leave it one ("Please don't…",
/// "And make sure…").
const FILLERS: &[&str] = &[
    "please ", "and ", "but ", "so ", "also ", "also, ", "just ", "then ", "ok, ", "wait, ",
];

/// Phrases anywhere in a user sentence that state an obligation or a
/// prohibition ("you must", "I don't want", ", dont implement it yet"); not
/// "must be" or "I don't think", which infer or doubt.
const CONSTRAINTS: &[&str] = &[
    "make sure",
    "you must",
    "we must",
    "must not",
    "mustn't",
    "should not",
    "shouldn't",
    "don't want",
    "dont want",
    "do not want",
    "don't need to",
    "dont need to",
    "don't have to",
    "no need to",
    "want to avoid",
    "not allowed",
    "are allowed",
    "is allowed",
    "please don't",
    "please do not",
    "but don't",
    "and don't",
];

/// The same for an imperative after a comma (", dont implement it yet").
const COMMA_IMPERATIVES: &[&str] = &[", don't ", ", dont ", ", do not ", ", never ", ", only "];

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

/// Parts of keys whose values are commands (labels of commands run, and
/// scanned for paths).
const COMMAND_PARTS: &[&str] = &["command", "commands", "cmd", "script"];

/// Parts of keys whose values search for or name things (patterns,
/// queries, packages, revisions, repositories): never taken for paths, nor
/// listed as identifiers.
const QUERY_PARTS: &[&str] = &[
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

/// Parts of keys whose values are content, never scanned for paths (but
/// read for the names written code defines).
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

/// Parts of a tool name that say it makes new files.
const CREATE_PARTS: &[&str] = &["create", "write", "touch", "mkdir"];

/// Parts of a tool name that say it removes files.
const DELETE_PARTS: &[&str] = &["delete", "remove", "rm"];

/// Parts of a tool name (or modes) that say it searches.
const SEARCH_PARTS: &[&str] = &[
    "grep", "search", "find", "glob", "list", "ls", "rg", "locate", "tree",
];

/// Parts of a tool name that say it runs something (a build, the tests, a
/// shell).
const RUN_PARTS: &[&str] = &[
    "run", "exec", "execute", "bash", "shell", "sh", "terminal", "cargo", "npm", "npx", "yarn",
    "pnpm", "make", "pytest", "test", "tests", "check", "build", "format", "fmt", "lint", "clippy",
    "compile",
];

/// A `command`/`action`/`mode` argument that makes an editor tool read
/// only (the `view` of an editor tool), or search.
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

/// Extensions of source files, whose written content is read for the
/// names it defines (prose is not).
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "swift", "rb", "c",
    "h", "cc", "cpp", "hpp", "cs", "sh", "bash", "zsh", "lua", "zig", "vue", "svelte", "scala",
    "php", "ex", "exs", "hs", "ml", "dart", "proto",
];

/// Characters that never occur in a path we would name.
const NOT_IN_PATH: &[char] = &[
    '|', '(', ')', '<', '>', '"', '\'', '`', '{', '}', '[', ']', '\\', ';', ',', '=', '^', '$', '!',
];

/// Names that are never worth listing as identifiers.
const NOT_IDENTS: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool", "char", "str", "Self", "self", "crate", "super", "None", "Some", "Ok", "Err",
    "true", "false", "__init__",
];

/// A definition in source code: `fn name(`, `struct Name {`, `class
/// Name:`, `def name(`, `const NAME:`…
static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:fn|struct|enum|trait|union|type|mod|class|def|function|interface|func)\s+([A-Za-z_][A-Za-z0-9_]*)\s*[<({:;=]|\b(?:const|static)\s+([A-Z][A-Z0-9_]*)\s*[:=]",
    )
    .expect("the definition pattern compiles")
});

/// A name in backticks (`crate::Error`, `x`).
static TICKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)`")
        .expect("the name pattern compiles")
});

/// A failing test's name (`test a::b ... FAILED`, `--- FAIL: TestX`,
/// `FAILED tests/x.py::test_y`).
static FAILED_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^test (\S+) \.\.\. FAILED|^--- FAIL: (\S+)|^FAILED \S*?::([\w:\[\]-]+)")
        .expect("the failing test pattern compiles")
});

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
    /// to a terse form (the header, each request as the full form quotes
    /// it, the files acted on, the diagnostics and the last answer) and
    /// records `method: "terse"`. When that is not smaller than the range
    /// either, it falls back to the smallest form (each request's opening
    /// and the last answer, a line each), `method: "minimal"`, unless that
    /// would cut a request and the terse form without the last answer is
    /// smaller than the range (a range of little but the user's words).
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        let (lo, hi) = input.range;
        let scan = scan(input.log, lo, hi)?;
        let full = render_full(input.log, &scan, lo, hi);
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
        // The terse form; else the minimal one when it cuts no request,
        // else the terse form without the last answer; the first smaller
        // than the range, else the minimal one.
        let terse = render_short(input.log, &scan, Short::Terse);
        let cuts = scan
            .requests
            .iter()
            .any(|r| r.content.trim().chars().count() > REQUEST_MINIMAL);
        let (text, how) = if terse.chars().count() < raw_chars {
            (terse, "terse")
        } else if !cuts {
            (render_short(input.log, &scan, Short::Minimal), "minimal")
        } else {
            let facts = render_short(input.log, &scan, Short::Facts);
            if facts.chars().count() < raw_chars {
                (facts, "terse")
            } else {
                (render_short(input.log, &scan, Short::Minimal), "minimal")
            }
        };
        let mut provenance = Digest::provenance();
        if let Provenance::Derived { method, .. } = &mut provenance {
            *method = Some(how.into());
        }
        Ok(SummaryOutput { text, provenance })
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

/// What a tool call does, by its name and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    /// Changes the files it names.
    Write,
    /// Searches (grep, list, find).
    Search,
    /// Runs something: a command, a build, the tests.
    Command,
    /// Anything else (reads, fetches).
    Read,
}

/// How a tool call came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// No diagnostic.
    Ok,
    /// Only warnings.
    Warnings,
    /// The tool said it failed, or its output holds an error, a panic, a
    /// failing test, a non-zero exit…
    Failed,
}

/// A tool call and what became of it within the range.
struct Call<'a> {
    idx: usize,
    turn: u32,
    name: &'a str,
    /// Parsed once here: the digest looks inside them many times.
    arguments: Value,
    kind: CallKind,
    /// `None` when its result is not in the range.
    outcome: Option<Outcome>,
    /// The tool flagged its result as an error.
    is_error: bool,
}

/// A distinct failure (by its headline's text) and where it was seen.
struct Seen<'a> {
    diag: Diagnostic,
    /// Other primary diagnostics of the results that printed this
    /// headline, each once, with it at most [`KEEP_DIAGNOSTICS`].
    also: Vec<Diagnostic>,
    /// The tool whose result printed it (the latest time).
    tool: &'a str,
    /// Index in `calls` of that call, when it is in the range.
    call: Option<usize>,
    /// Record index and turn of the latest result that printed it.
    last: usize,
    last_turn: u32,
    count: usize,
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
    /// The calls counted, once the results are in.
    tally: Tally,
    /// In order of first appearance.
    seen: Vec<Seen<'a>>,
}

/// Read `records[lo..=hi]` once (a range checked here).
fn scan(log: &Log, lo: usize, hi: usize) -> Result<Scan<'_>, SummarizeError> {
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
    Ok(scan)
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
            tally: Tally::default(),
            seen: Vec::new(),
        };
        // Call id → index in `calls` (the latest call with that id).
        let mut call_by_id: BTreeMap<&str, usize> = BTreeMap::new();
        let mut seen_by_text: BTreeMap<String, usize> = BTreeMap::new();
        // Every diagnostic text an entry lists (headlines and the others).
        let mut listed: BTreeSet<String> = BTreeSet::new();
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
                    let arguments = arguments.value();
                    scan.calls.push(Call {
                        idx,
                        turn,
                        name,
                        kind: call_kind(name, &arguments),
                        arguments,
                        outcome: None,
                        is_error: false,
                    });
                    scan.last_call_in_turn.insert(turn, idx);
                }
                Body::ToolResult { id, is_error, .. } => {
                    // What the log found in the result (once per loaded log:
                    // the digest may render a range in several forms, and
                    // the view and the retention report read it too).
                    let found: &[Diagnostic] = log.result_scan(idx).map_or(&[], |s| &s.diagnostics);
                    let failed =
                        *is_error || found.iter().any(|d| d.kind != DiagnosticKind::Warning);
                    let outcome = match (failed, found.is_empty()) {
                        (true, _) => Outcome::Failed,
                        (false, false) => Outcome::Warnings,
                        (false, true) => Outcome::Ok,
                    };
                    let call = call_by_id.get(id.as_str()).copied();
                    let tool = match call {
                        Some(c) => {
                            scan.calls[c].outcome = Some(outcome);
                            scan.calls[c].is_error = *is_error;
                            scan.calls[c].name
                        }
                        None => "unknown tool",
                    };
                    if found.is_empty() {
                        continue;
                    }
                    // The headline (what the retention report counts), with
                    // a few more errors of the same result in the same
                    // entry: one failed run is one entry, not one per line.
                    let Some(head) = first_of(found, 1).next() else {
                        continue;
                    };
                    // Every other distinct primary diagnostic of the result
                    // (each compiler error, failing test, panic: what the
                    // retention report counts), most severe first, up to
                    // the per-result budget; one listed in an earlier
                    // entry is not listed again.
                    let extras: Vec<Diagnostic> = first_of(found, KEEP_DIAGNOSTICS)
                        .filter(|d| {
                            d.kind.is_primary() && d.text != head.text && !listed.contains(&d.text)
                        })
                        .cloned()
                        .collect();
                    let s = match seen_by_text.get(&head.text) {
                        Some(&s) => {
                            let s = &mut scan.seen[s];
                            s.tool = tool;
                            s.call = call;
                            s.last = idx;
                            s.last_turn = turn;
                            s.count += 1;
                            s
                        }
                        None => {
                            seen_by_text.insert(head.text.clone(), scan.seen.len());
                            scan.seen.push(Seen {
                                diag: head.clone(),
                                also: Vec::new(),
                                tool,
                                call,
                                last: idx,
                                last_turn: turn,
                                count: 1,
                            });
                            scan.seen.last_mut().expect("just pushed")
                        }
                    };
                    listed.insert(head.text.clone());
                    for d in extras {
                        if s.also.len() + 1 >= KEEP_DIAGNOSTICS {
                            break;
                        }
                        listed.insert(d.text.clone());
                        s.also.push(d);
                    }
                }
                _ => {}
            }
        }
        scan.tally = Tally::new(&scan.calls);
        scan
    }
}

/// The calls of a range counted once: every number of calls, failures and
/// runs the digest prints is read from here, so the totals, the per-tool
/// counts and the per-command counts agree.
#[derive(Default)]
struct Tally {
    calls: usize,
    /// Calls whose outcome is [`Outcome::Failed`]: the tool said so, or its
    /// output holds an error (the same word as a command's "failed").
    failed: usize,
    /// Calls and failed calls per tool name.
    by_tool: BTreeMap<String, (usize, usize)>,
    /// Each distinct command (by its label) and its runs, in order of first
    /// run.
    commands: Vec<(String, Runs)>,
}

impl Tally {
    fn new(calls: &[Call<'_>]) -> Self {
        let mut out = Tally::default();
        let mut by_label: BTreeMap<String, usize> = BTreeMap::new();
        for c in calls {
            let failed = c.outcome == Some(Outcome::Failed);
            out.calls += 1;
            out.failed += usize::from(failed);
            let t = out.by_tool.entry(c.name.to_owned()).or_default();
            t.0 += 1;
            t.1 += usize::from(failed);
            if c.kind != CallKind::Command {
                continue;
            }
            let label = command_label(c);
            let i = *by_label.entry(label.clone()).or_insert_with(|| {
                out.commands.push((
                    label,
                    Runs {
                        first_turn: c.turn,
                        ..Runs::default()
                    },
                ));
                out.commands.len() - 1
            });
            let r = &mut out.commands[i].1;
            r.last_turn = c.turn;
            r.last = Some(c.outcome);
            match c.outcome {
                Some(Outcome::Failed) => r.failed += 1,
                Some(Outcome::Ok) => r.ok += 1,
                Some(Outcome::Warnings) => r.warnings += 1,
                None => r.no_result += 1,
            }
        }
        out
    }
}

// ---------------------------------------------------------------- files

/// What the range did with a file.
#[derive(Debug, Default)]
struct FileUse {
    read: bool,
    searched: bool,
    /// Named in a command or under a key that does not say.
    named: bool,
    written: usize,
    failed_writes: usize,
    created: bool,
    deleted: bool,
}

/// A successful write: record index, turn, path.
struct Write<'a> {
    idx: usize,
    turn: u32,
    path: Cow<'a, str>,
}

/// The files of the range's tool calls, by repository ("" for the local
/// files) and path, and the successful writes in order.
struct Files<'a> {
    uses: BTreeMap<(&'a str, Cow<'a, str>), FileUse>,
    writes: Vec<Write<'a>>,
}

/// The paths of a path argument: the whole value, or its lines.
fn path_values(s: &str, mut f: impl FnMut(&str)) {
    let t = s.trim();
    if !t.contains(char::is_whitespace) {
        if !t.is_empty() && t.len() <= PATH_MAX && t.contains(char::is_alphanumeric) {
            f(t);
        }
        return;
    }
    for line in t.lines() {
        let p = line.trim();
        if !p.is_empty()
            && p.len() <= PATH_MAX
            && !p.contains(char::is_whitespace)
            && p.contains(char::is_alphanumeric)
        {
            f(p);
        }
    }
}

/// The repository a call reads from, when it names one (`owner/name`).
fn repository(arguments: &Value) -> &str {
    ["repository", "repo"]
        .iter()
        .find_map(|k| arguments.get(k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|r| r.contains('/') && !r.contains(char::is_whitespace) && r.len() <= PATH_MAX)
        .unwrap_or("")
}

fn files<'a>(scan: &'a Scan<'a>) -> Files<'a> {
    let mut out = Files {
        uses: BTreeMap::new(),
        writes: Vec::new(),
    };
    for call in &scan.calls {
        let repo = repository(&call.arguments);
        let parts = name_parts(call.name);
        let has = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
        let (creates, deletes) = (has(CREATE_PARTS), has(DELETE_PARTS));
        walk_strings(
            &call.arguments,
            KeyClass::Other,
            &mut |class, s| match class {
                KeyClass::Path => path_values(s, |p| {
                    let u = out
                        .uses
                        .entry((repo, Cow::Owned(p.to_owned())))
                        .or_default();
                    match call.kind {
                        CallKind::Write if call.is_error => u.failed_writes += 1,
                        CallKind::Write => {
                            u.written += 1;
                            u.created |= creates;
                            u.deleted |= deletes;
                            out.writes.push(Write {
                                idx: call.idx,
                                turn: call.turn,
                                path: Cow::Owned(p.to_owned()),
                            });
                        }
                        CallKind::Search => u.searched = true,
                        CallKind::Command => u.named = true,
                        CallKind::Read => u.read = true,
                    }
                }),
                KeyClass::Command => {
                    for token in s.split(|c: char| c.is_whitespace() || "'\";|&()<>=".contains(c)) {
                        let token = token.trim_end_matches([':', ',', '.']);
                        if looks_like_path(token) && !token.starts_with("/dev/") {
                            out.uses
                                .entry((repo, Cow::Owned(token.to_owned())))
                                .or_default()
                                .named = true;
                        }
                    }
                }
                KeyClass::Other if looks_like_path(s) => {
                    out.uses
                        .entry((repo, Cow::Owned(s.to_owned())))
                        .or_default()
                        .named = true;
                }
                _ => {}
            },
        );
    }
    out
}

// ---------------------------------------------------------------- fixes

/// What followed a diagnostic in the range.
struct Fix<'s> {
    /// A later clean run of the same command: its record index and turn.
    clean: Option<(usize, u32)>,
    /// The files written after the diagnostic (before the clean run, when
    /// there is one), each once, in order.
    edits: Vec<&'s str>,
    /// More edits than listed.
    more_edits: usize,
    /// Turn of the first edit.
    edit_turn: Option<u32>,
}

/// The file a location names (`src/x.rs:3:5` → `src/x.rs`).
fn location_file(loc: &str) -> &str {
    let mut f = loc;
    for _ in 0..2 {
        if let Some((head, tail)) = f.rsplit_once(':')
            && !tail.is_empty()
            && tail.bytes().all(|b| b.is_ascii_digit())
        {
            f = head;
        }
    }
    f
}

fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    a == b
        || (a.len() > b.len() && a.ends_with(b) && a.as_bytes()[a.len() - b.len() - 1] == b'/')
        || (b.len() > a.len() && b.ends_with(a) && b.as_bytes()[b.len() - a.len() - 1] == b'/')
}

/// Whether a later call's arguments are within an earlier one's: the same
/// value, or an object whose every field the earlier one has alike (a
/// broader run: `{"package": "a"}` within `{"package": "a", "test": "t"}`).
fn within(later: &Value, earlier: &Value) -> bool {
    match (later, earlier) {
        (Value::Object(l), Value::Object(e)) => l.iter().all(|(k, v)| e.get(k) == Some(v)),
        _ => later == earlier,
    }
}

/// The fix that followed each diagnostic, where the range shows one: a
/// later clean run of the same command (and the edits before it), else a
/// later edit of the file the diagnostic names.
fn fixes<'s>(scan: &Scan<'_>, files: &'s Files<'_>) -> Vec<Option<Fix<'s>>> {
    // Clean runs of commands by tool, in order.
    let mut clean: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in scan.calls.iter().enumerate() {
        if c.kind == CallKind::Command && matches!(c.outcome, Some(Outcome::Ok | Outcome::Warnings))
        {
            clean.entry(c.name).or_default().push(i);
        }
    }
    let writes = &files.writes;
    scan.seen
        .iter()
        .map(|s| {
            let after = writes.partition_point(|w| w.idx <= s.last);
            let run = s.call.and_then(|c| {
                let failed = &scan.calls[c];
                if failed.kind != CallKind::Command {
                    return None;
                }
                let runs = clean.get(failed.name)?;
                let from = runs.partition_point(|&k| scan.calls[k].idx <= s.last);
                runs[from..]
                    .iter()
                    .map(|&k| &scan.calls[k])
                    .find(|later| within(&later.arguments, &failed.arguments))
            });
            if let Some(run) = run {
                let until = writes.partition_point(|w| w.idx < run.idx);
                let mut edits: Vec<&str> = Vec::new();
                for w in &writes[after..until.max(after)] {
                    if !edits.contains(&w.path.as_ref()) {
                        edits.push(&w.path);
                    }
                }
                let more_edits = edits.len().saturating_sub(FIX_EDITS_MAX);
                edits.truncate(FIX_EDITS_MAX);
                return Some(Fix {
                    clean: Some((run.idx, run.turn)),
                    edits,
                    more_edits,
                    edit_turn: None,
                });
            }
            let file = location_file(s.diag.location.as_deref()?);
            let w = writes[after..].iter().find(|w| same_file(&w.path, file))?;
            Some(Fix {
                clean: None,
                edits: vec![&w.path],
                more_edits: 0,
                edit_turn: Some(w.turn),
            })
        })
        .collect()
}

// ---------------------------------------------------------------- forms

/// The header: `Digest of turns 2–5 (40 events)`.
fn header(log: &Log, scan: &Scan<'_>, events: bool) -> String {
    let first = log.turn_of(scan.first_visible) + 1;
    let last = log.turn_of(scan.last_visible) + 1;
    let mut out = if first == last {
        format!("Digest of turn {first}")
    } else {
        format!("Digest of turns {first}–{last}")
    };
    if events {
        let s = if scan.visible == 1 { "" } else { "s" };
        let _ = write!(out, " ({} event{s})", scan.visible);
    }
    out.push('\n');
    out
}

/// The full digest of `records[lo..=hi]`.
fn render_full(log: &Log, scan: &Scan<'_>, lo: usize, hi: usize) -> String {
    let mut out = header(log, scan, true);
    let answers = turn_answers(scan);
    let files = files(scan);
    let fixes = fixes(scan, &files);
    for section in [
        section_requests(scan),
        section_constraints(scan),
        section_decisions(scan, &answers),
        section_files(&files),
        section_tools(scan),
        section_diagnostics(scan, &fixes),
        section_identifiers(scan),
        section_left_off(log, scan, &answers, &fixes, lo, hi),
    ] {
        if !section.is_empty() {
            out.push('\n');
            out.push_str(&section);
        }
    }
    out
}

/// The digest of `records[lo..=hi]` (a range checked here).
#[cfg(test)]
fn render(log: &Log, lo: usize, hi: usize) -> Result<String, SummarizeError> {
    let scan = scan(log, lo, hi)?;
    Ok(render_full(log, &scan, lo, hi))
}

/// The shorter forms of the digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Short {
    /// The header, each request as the full form quotes it, the files acted
    /// on, the diagnostics and the last answer.
    Terse,
    /// The same without the last answer.
    Facts,
    /// The header, each request's opening and the last answer.
    Minimal,
}

fn render_short(log: &Log, scan: &Scan<'_>, form: Short) -> String {
    let minimal = form == Short::Minimal;
    let mut out = header(log, scan, false);
    for r in &scan.requests {
        // The minimal form cuts only what is over its limit: a short
        // request stays byte for byte there too.
        let quoted = if minimal && r.content.trim().chars().count() > REQUEST_MINIMAL {
            format!(" {}", truncate_words(&collapse(r.content), REQUEST_MINIMAL))
        } else {
            spaced(quote_request(r.content))
        };
        let _ = writeln!(out, "- Turn {} asked:{quoted}", r.turn + 1);
    }
    if !minimal {
        let files = files(scan);
        let paths: BTreeSet<&str> = files.uses.keys().map(|(_, p)| p.as_ref()).collect();
        if !paths.is_empty() {
            let list = paths.iter().map(|p| format!("`{p}`"));
            let _ = writeln!(
                out,
                "- Files: {}",
                capped_list(list, paths.len(), FILES_MAX)
            );
        }
        for s in scan.seen.iter().take(DIAGNOSTICS_MAX) {
            let _ = writeln!(out, "- {}: {}", s.tool, s.diag.text);
        }
    }
    if let Some(t) = scan.texts.last()
        && form != Short::Facts
    {
        let _ = writeln!(
            out,
            "- Last answer: {}",
            tail_words(&collapse(&t.content), 160)
        );
    }
    out
}

// ---------------------------------------------------------------- sections

/// Whether a user message corrects (`Some(true)`) or constrains
/// (`Some(false)`), by its own sentences.
fn steer(content: &str) -> Option<bool> {
    let mut found = None;
    for_each_user_sentence(content, |s| {
        if found != Some(true) && s.chars().count() >= CONSTRAINT_MIN {
            found = steer_sentence(s).or(found);
        }
    });
    found
}

/// Whether one sentence corrects (`Some(true)`) or constrains
/// (`Some(false)`): it says so in so many words, not merely holds one of
/// them ("only", "don't" and "must" describe and infer as often).
fn steer_sentence(sentence: &str) -> Option<bool> {
    if trim_emphasis(sentence).ends_with('?') {
        // A question asks; it does not (yet) steer.
        return None;
    }
    let l = lower(sentence.trim_start_matches(['*', '_', '"', '(', ' ']));
    let mut opening = l.as_str();
    while let Some(rest) = FILLERS.iter().find_map(|f| opening.strip_prefix(f)) {
        opening = rest;
    }
    let opens = |set: &[&str]| {
        set.iter().any(|p| {
            opening.starts_with(p)
                && opening[p.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        })
    };
    if opens(CORRECTION_OPENINGS) || has_any(&l, &CORRECTION_INDEX) {
        Some(true)
    } else if opens(CONSTRAINT_OPENINGS)
        || has_any(&l, &CONSTRAINT_INDEX)
        || COMMA_IMPERATIVES.iter().any(|p| l.contains(p))
    {
        Some(false)
    } else {
        None
    }
}

fn section_requests(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    if scan.requests.is_empty() {
        return out;
    }
    out.push_str("## What the user asked\n");
    for r in &scan.requests {
        let _ = write!(out, "- Turn {}", r.turn + 1);
        let mut notes: Vec<Cow<'_, str>> = Vec::new();
        match (r.author, r.follow_up) {
            (Some(a), true) => notes.push(format!("follow-up by {a}").into()),
            (Some(a), false) => notes.push(a.into()),
            (None, true) => notes.push("follow-up".into()),
            (None, false) => {}
        }
        match steer(r.content) {
            Some(true) => notes.push("correction".into()),
            Some(false) => notes.push("constraint".into()),
            None => {}
        }
        if !notes.is_empty() {
            let _ = write!(out, " ({})", notes.join(", "));
        }
        out.push(':');
        out.push_str(&spaced(quote_request(r.content)));
        out.push('\n');
    }
    out
}

/// A user message in the user's words, byte for byte up to
/// [`REQUEST_WORDS_MAX`] characters (whitespace included), else its start
/// and its end around a marker naming what was left out. One line with no
/// surrounding whitespace stays on the item's line; anything else goes in a
/// fenced block on the lines after it, which holds it verbatim (indenting
/// continuation lines to keep a list would change the user's bytes).
fn quote_request(content: &str) -> String {
    let trimmed = content.trim();
    if trimmed.is_empty() {
        return "(empty message)".to_owned();
    }
    let n = trimmed.chars().count();
    if n <= REQUEST_WORDS_MAX {
        if trimmed.len() == content.len() && !content.contains(['\n', '\r']) {
            return content.to_owned();
        }
        return fenced(content);
    }
    let head = head_at_word(trimmed, REQUEST_HEAD);
    let tail = tail_at_word(trimmed, REQUEST_TAIL);
    let left_out = n - head.chars().count() - tail.chars().count();
    fenced(&format!(
        "{head}\n[… {left_out} of {n} characters left out …]\n{tail}"
    ))
}

/// A quote as it follows a colon: after a space on the same line, or a
/// block from the next line.
fn spaced(quote: String) -> String {
    if quote.starts_with('\n') {
        quote
    } else {
        format!(" {quote}")
    }
}

/// `body` in a fenced block that starts on the next line: the fence is
/// longer than any run of backticks in `body`, so nothing in it closes the
/// block early, and `body` is inside it unchanged.
fn fenced(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if body.ends_with('\n') { "" } else { "\n" };
    format!("\n{fence}\n{body}{end}{fence}")
}

/// The user's own sentences that correct or constrain, the latest
/// [`CONSTRAINTS_MAX`], in order.
fn section_constraints(scan: &Scan<'_>) -> String {
    let mut items: Vec<(u32, String)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for r in &scan.requests {
        for_each_user_sentence(r.content, |s| {
            if s.chars().count() < CONSTRAINT_MIN || steer_sentence(s).is_none() {
                return;
            }
            let text = truncate_words(&collapse(s), CONSTRAINT_MAX);
            if seen.insert(normalize(&text)) {
                items.push((r.turn, text));
            }
        });
    }
    let mut out = String::new();
    if items.is_empty() {
        return out;
    }
    out.push_str("## Corrections and constraints (the user's words)\n");
    let hidden = items.len().saturating_sub(CONSTRAINTS_MAX);
    if hidden > 0 {
        let _ = writeln!(out, "- ({hidden} earlier not shown)");
    }
    for (turn, text) in items.iter().skip(hidden) {
        let _ = writeln!(out, "- Turn {}: {text}", turn + 1);
    }
    out
}

/// One item of the decisions section.
struct Item {
    idx: usize,
    order: usize,
    turn: u32,
    text: String,
    /// A turn's answer (else a key-phrase sentence).
    answer: bool,
}

/// A turn's answer: the last paragraph of its last text, when no tool
/// call followed that text in the turn.
struct Answer {
    idx: usize,
    turn: u32,
    text: String,
    /// [`normalize`]d `text`.
    norm: String,
}

/// The answers of the latest [`ANSWERS_MAX`] turns, in turn order. A text
/// that tool calls followed is not one: it narrates the work in progress
/// ("I also need to reconsider…"), and "where it left off" quotes the last.
fn turn_answers(scan: &Scan<'_>) -> BTreeMap<u32, Answer> {
    let mut last_text: BTreeMap<u32, &Text<'_>> = BTreeMap::new();
    for t in &scan.texts {
        last_text.insert(t.turn, t);
    }
    let skip = last_text.len().saturating_sub(ANSWERS_MAX);
    let mut answers = BTreeMap::new();
    for (&turn, t) in last_text.iter().skip(skip) {
        let paragraph = if t.structured {
            collapse(&t.content)
        } else {
            answer_paragraph(&t.content)
        };
        if paragraph.is_empty() {
            continue;
        }
        let is_final = scan.last_call_in_turn.get(&turn).is_none_or(|&c| c < t.idx);
        if !is_final {
            continue;
        }
        let text = truncate_words(&paragraph, ITEM_MAX);
        answers.insert(
            turn,
            Answer {
                idx: t.idx,
                turn,
                norm: normalize(&text),
                text,
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
            answer: true,
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
            let text = truncate_words(&collapse(sentence), ITEM_MAX);
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
                    answer: false,
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
        let label = if item.answer { " (answer)" } else { "" };
        let _ = writeln!(out, "- Turn {}{label}: {}", item.turn + 1, item.text);
    }
    out
}

fn section_files<'f>(files: &Files<'f>) -> String {
    // Per list, per repository ("" first): the paths with their notes.
    type Lists<'f> = BTreeMap<&'f str, Vec<String>>;
    let (mut written, mut read, mut searched, mut named): (
        Lists<'f>,
        Lists<'f>,
        Lists<'f>,
        Lists<'f>,
    ) = Default::default();
    for ((repo, path), u) in &files.uses {
        let entry = |list: &mut Lists<'f>, note: &str| {
            list.entry(*repo)
                .or_default()
                .push(format!("`{path}`{note}"));
        };
        if u.written + u.failed_writes > 0 {
            let note = if u.written == 0 {
                " (edit failed)"
            } else if u.deleted {
                " (deleted)"
            } else if u.created {
                " (created)"
            } else {
                ""
            };
            entry(&mut written, note);
        } else if u.read {
            entry(&mut read, "");
        } else if u.searched {
            entry(&mut searched, "");
        } else if u.named {
            entry(&mut named, "");
        }
    }
    let mut out = String::new();
    for (label, lists) in [
        ("Written or edited", &written),
        ("Read", &read),
        ("Searched", &searched),
        ("Named in commands or other arguments", &named),
    ] {
        for (repo, list) in lists {
            if repo.is_empty() {
                let _ = write!(out, "- {label}: ");
            } else {
                let _ = write!(out, "- {label} in `{repo}`: ");
            }
            let _ = writeln!(out, "{}", capped_list(list.iter(), list.len(), FILES_MAX));
        }
    }
    if !out.is_empty() {
        out.insert_str(0, "## Files\n");
    }
    out
}

/// A command's label: its command string, else its scalar arguments.
fn command_label(call: &Call<'_>) -> String {
    let mut command: Option<&str> = None;
    walk_strings(&call.arguments, KeyClass::Other, &mut |class, s| {
        if class == KeyClass::Command && command.is_none() && !s.trim().is_empty() {
            command = Some(s);
        }
    });
    if let Some(c) = command {
        let line = c.trim().lines().next().unwrap_or_default();
        let more = if c.trim().contains('\n') { " …" } else { "" };
        return format!(
            "{} `{}{more}`",
            call.name,
            truncate_words(line, COMMAND_CHARS)
        );
    }
    let mut args: Vec<String> = Vec::new();
    if let Value::Object(map) = &call.arguments {
        for (k, v) in map {
            if matches!(classify(k), KeyClass::Content) {
                continue;
            }
            let v = match v {
                Value::String(s) if !s.contains('\n') => truncate_words(s.trim(), ARG_CHARS),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            args.push(format!("{k}={v}"));
        }
    }
    if args.is_empty() {
        call.name.to_owned()
    } else {
        format!("{} `{}`", call.name, args.join(" "))
    }
}

/// One distinct command and its runs.
#[derive(Default)]
struct Runs {
    first_turn: u32,
    last_turn: u32,
    failed: usize,
    ok: usize,
    warnings: usize,
    no_result: usize,
    last: Option<Option<Outcome>>,
}

fn section_tools(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    let tally = &scan.tally;
    if tally.calls == 0 {
        return out;
    }
    out.push_str("## Tools and commands\n");
    let list: Vec<String> = tally
        .by_tool
        .iter()
        .map(|(name, &(n, failed))| match failed {
            0 => format!("{name} ×{n}"),
            f => format!("{name} ×{n} ({f} failed)"),
        })
        .collect();
    let (calls, failed) = (tally.calls, tally.failed);
    let s = if calls == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "- Calls: {} ({calls} call{s}, {failed} failed)",
        list.join(", ")
    );

    let hidden = tally.commands.len().saturating_sub(COMMANDS_MAX);
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        let _ = writeln!(out, "- ({hidden} earlier command{s} not shown)");
    }
    let word = |o: Option<Outcome>| match o {
        Some(Outcome::Failed) => "failed",
        Some(Outcome::Ok) => "ok",
        Some(Outcome::Warnings) => "ok with warnings",
        None => "no result yet",
    };
    for (label, r) in tally.commands.iter().skip(hidden) {
        let n = r.failed + r.ok + r.warnings + r.no_result;
        let turns = if r.first_turn == r.last_turn {
            format!("turn {}", r.first_turn + 1)
        } else {
            format!("turns {}–{}", r.first_turn + 1, r.last_turn + 1)
        };
        let last = r.last.flatten();
        if n == 1 {
            let _ = writeln!(out, "- Ran {label} ({turns}): {}", word(last));
            continue;
        }
        let mut counts: Vec<String> = Vec::new();
        for (k, what) in [
            (r.failed, "failed"),
            (r.ok, "ok"),
            (r.warnings, "ok with warnings"),
            (r.no_result, "no result yet"),
        ] {
            if k > 0 {
                counts.push(format!("{k} {what}"));
            }
        }
        let _ = writeln!(
            out,
            "- Ran {label} ×{n} ({turns}): {}; last {}",
            counts.join(", "),
            word(last)
        );
    }
    out
}

/// A fix, as a diagnostic's line ends: ` → then …`.
fn fix_note(s: &Seen<'_>, fix: &Fix<'_>) -> String {
    let edits = |fix: &Fix<'_>| {
        let mut list: Vec<String> = fix.edits.iter().map(|p| format!("`{p}`")).collect();
        if fix.more_edits > 0 {
            list.push(format!("{} more", fix.more_edits));
        }
        list.join(", ")
    };
    match fix.clean {
        Some((_, turn)) => {
            let tool = s.tool;
            if fix.edits.is_empty() {
                format!(
                    " → later {tool} ran again with no diagnostic recognized (turn {})",
                    turn + 1
                )
            } else {
                format!(
                    " → then edited {}; {tool} ran again with no diagnostic recognized (turn {})",
                    edits(fix),
                    turn + 1
                )
            }
        }
        None => format!(
            " → then edited {} (turn {})",
            edits(fix),
            fix.edit_turn.map_or(0, |t| t + 1)
        ),
    }
}

fn section_diagnostics(scan: &Scan<'_>, fixes: &[Option<Fix<'_>>]) -> String {
    let mut out = String::new();
    if scan.seen.is_empty() {
        return out;
    }
    // One entry per failure (a headline with its result's other errors);
    // over the cap, the latest.
    let mut shown: Vec<usize> = (0..scan.seen.len()).collect();
    if shown.len() > DIAGNOSTICS_MAX {
        let mut by_priority = shown.clone();
        by_priority.sort_by_key(|&i| std::cmp::Reverse(scan.seen[i].last));
        by_priority.truncate(DIAGNOSTICS_MAX);
        by_priority.sort_unstable();
        shown = by_priority;
    }
    out.push_str("## Diagnostics (from tool output)\n");
    let hidden = scan.seen.len() - shown.len();
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        let _ = writeln!(out, "- ({hidden} earlier diagnostic{s} not shown)");
    }
    for i in shown {
        let s = &scan.seen[i];
        let times = if s.count > 1 {
            format!(", ×{}", s.count)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "- {} (turn {}{times}): {}",
            s.tool,
            s.last_turn + 1,
            s.diag.text
        );
        // Not "; ": a headline often ends with its own full stop.
        for d in &s.also {
            let _ = write!(out, " | {}", d.text);
        }
        if let Some(fix) = &fixes[i] {
            out.push_str(&fix_note(s, fix));
        }
        out.push('\n');
    }
    out
}

/// Whether a name is worth listing: not a keyword or a primitive, not a
/// hash.
fn is_ident(name: &str) -> bool {
    let hex = name.len() >= 7
        && name.bytes().all(|b| b.is_ascii_hexdigit())
        && name.bytes().any(|b| b.is_ascii_digit());
    name.len() <= IDENT_CHARS && !hex && !NOT_IDENTS.contains(&name)
}

/// The names a text of code defines, each with the line defining it.
fn definitions<'c>(code: &'c str, out: &mut BTreeMap<&'c str, &'c str>) {
    for c in DEFINITION.captures_iter(code) {
        if let Some(m) = c.get(1).or(c.get(2))
            && is_ident(m.as_str())
        {
            let from = code[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            let to = code[m.end()..]
                .find('\n')
                .map_or(code.len(), |i| m.end() + i);
            out.entry(m.as_str()).or_insert(code[from..to].trim());
        }
    }
}

fn section_identifiers(scan: &Scan<'_>) -> String {
    let (mut defined, mut edited, mut failed): (
        BTreeSet<String>,
        BTreeSet<String>,
        BTreeSet<String>,
    ) = Default::default();
    for c in scan
        .calls
        .iter()
        .filter(|c| c.kind == CallKind::Write && !c.is_error)
    {
        // Only code: prose says "type of" and "class of" too.
        let mut code = false;
        walk_strings(&c.arguments, KeyClass::Other, &mut |class, s| {
            if class == KeyClass::Path
                && let Some((_, ext)) = s.trim().rsplit_once('.')
                && CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
            {
                code = true;
            }
        });
        if !code {
            continue;
        }
        let (mut old, mut new) = (BTreeMap::new(), BTreeMap::new());
        walk_keyed(&c.arguments, "", &mut |key, s| {
            if classify(key) != KeyClass::Content {
                return;
            }
            if name_parts(key).iter().any(|p| p == "old") {
                definitions(s, &mut old);
            } else {
                definitions(s, &mut new);
            }
        });
        // New: defined. Gone or changed: edited. Unchanged: edited when it
        // opens a block the edit is in, not when it is a line of context
        // (`mod db;`).
        for (&name, &line) in &new {
            match old.get(name) {
                None => {
                    defined.insert(name.to_owned());
                }
                Some(&before) if before != line || !line.ends_with(';') => {
                    edited.insert(name.to_owned());
                }
                Some(_) => {}
            }
        }
        for &name in old.keys() {
            if !new.contains_key(name) {
                edited.insert(name.to_owned());
            }
        }
    }
    for s in &scan.seen {
        if s.diag.kind == DiagnosticKind::Warning {
            continue;
        }
        for c in TICKED.captures_iter(&s.diag.line) {
            if is_ident(&c[1]) {
                failed.insert(c[1].to_owned());
            }
        }
        if let Some(c) = FAILED_TEST.captures(&s.diag.line)
            && let Some(m) = c.get(1).or(c.get(2)).or(c.get(3))
            && is_ident(m.as_str())
        {
            failed.insert(m.as_str().to_owned());
        }
    }
    for name in &edited {
        defined.remove(name);
    }
    let mut out = String::new();
    for (label, set) in [
        ("Defined", &defined),
        ("Edited", &edited),
        ("Failed", &failed),
    ] {
        if !set.is_empty() {
            let list: Vec<String> = set.iter().map(|s| format!("`{s}`")).collect();
            let _ = writeln!(
                out,
                "- {label}: {}",
                capped_list(list.iter(), list.len(), IDENTS_MAX)
            );
        }
    }
    if !out.is_empty() {
        out.insert_str(0, "## Identifiers\n");
    }
    out
}

fn section_left_off(
    log: &Log,
    scan: &Scan<'_>,
    answers: &BTreeMap<u32, Answer>,
    fixes: &[Option<Fix<'_>>],
    lo: usize,
    hi: usize,
) -> String {
    let records = log.records();
    let mut out = String::from("## Where it left off\n");
    if let Some(r) = scan.requests.last() {
        // Quoted under "What the user asked".
        let _ = writeln!(out, "- Last user message: turn {}.", r.turn + 1);
    }
    if let Some(t) = scan.texts.last() {
        let prose = if t.structured {
            collapse(&t.content)
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
    // Errors of commands that no later run or edit answered.
    let open: Vec<&Seen<'_>> = scan
        .seen
        .iter()
        .zip(fixes)
        .filter(|(s, fix)| {
            fix.is_none()
                && s.diag.kind != DiagnosticKind::Warning
                && s.call
                    .is_some_and(|c| scan.calls[c].kind == CallKind::Command)
        })
        .map(|(s, _)| s)
        .collect();
    if let Some(latest) = open.iter().max_by_key(|s| s.last) {
        let n = open.len();
        let (s, no) = if n == 1 { ("", "its") } else { ("s", "their") };
        let _ = writeln!(
            out,
            "- Open: {n} command error{s} with no fix seen after {no} last run (latest, turn {}: {}).",
            latest.last_turn + 1,
            truncate_words(&latest.diag.text, 160)
        );
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

/// Phrases (lowercase ASCII, starting with a letter) by their first byte.
struct PhraseIndex([Vec<&'static [u8]>; 128]);

impl PhraseIndex {
    fn new(phrases: &[&'static str]) -> Self {
        let mut index: [Vec<&'static [u8]>; 128] = std::array::from_fn(|_| Vec::new());
        for p in phrases {
            debug_assert!(p.is_ascii() && p.starts_with(|c: char| c.is_ascii_lowercase()));
            index[usize::from(p.as_bytes()[0])].push(p.as_bytes());
        }
        PhraseIndex(index)
    }
}

static STRONG_INDEX: LazyLock<PhraseIndex> = LazyLock::new(|| PhraseIndex::new(STRONG_PHRASES));
static WEAK_INDEX: LazyLock<PhraseIndex> = LazyLock::new(|| PhraseIndex::new(WEAK_PHRASES));
static CORRECTION_INDEX: LazyLock<PhraseIndex> = LazyLock::new(|| PhraseIndex::new(CORRECTIONS));
static CONSTRAINT_INDEX: LazyLock<PhraseIndex> = LazyLock::new(|| PhraseIndex::new(CONSTRAINTS));
static PLAN_INDEX: LazyLock<PhraseIndex> = LazyLock::new(|| PhraseIndex::new(PLANS_AND_DOUBTS));

/// Whether `hay` (lowercase) holds one of the phrases as whole words: at
/// the start of a word, not followed by a letter or a digit. One pass over
/// `hay` for all the phrases.
fn has_any(hay: &str, phrases: &PhraseIndex) -> bool {
    let bytes = hay.as_bytes();
    let mut after_alnum = false;
    for (i, c) in hay.char_indices() {
        if !after_alnum && c.is_ascii() {
            for p in &phrases.0[c as usize] {
                if bytes[i..].starts_with(p)
                    && hay[i + p.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
                {
                    return true;
                }
            }
        }
        after_alnum = c.is_alphanumeric();
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
    // A condition ("If trigram doesn't error…, the flow still works")
    // supposes; it does not settle anything.
    if has_any(&l, &PLAN_INDEX) || l.starts_with("if ") || l.starts_with("unless ") {
        return 0;
    }
    let question = end.ends_with('?');
    if has_any(&l, &STRONG_INDEX) {
        return if question { 1 } else { 2 };
    }
    if question || NARRATION.iter().any(|p| l.starts_with(p)) {
        return 0;
    }
    u8::from(has_any(&l, &WEAK_INDEX))
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
/// table rows are skipped, list and quote markers stripped.
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
        split_sentences(strip_marker(t), &mut f);
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
                let t = collapse(line);
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
        current.push_str(&collapse(t));
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
        None => collapse(text),
    }
}

/// Items (already formatted) as a comma-separated list, at most `cap` of
/// them.
fn capped_list<S: AsRef<str>>(items: impl Iterator<Item = S>, len: usize, cap: usize) -> String {
    let mut out = String::new();
    for item in items.take(cap) {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(item.as_ref());
    }
    if len > cap {
        let _ = write!(out, ", and {} more", len - cap);
    }
    out
}

/// About the first `max` characters of `s`, cut at a whitespace.
fn head_at_word(s: &str, max: usize) -> &str {
    let Some((cut, _)) = s.char_indices().nth(max) else {
        return s;
    };
    let head = &s[..cut];
    match head.rfind(char::is_whitespace) {
        Some(i) if i >= cut / 2 => head[..i].trim_end(),
        _ => head,
    }
}

/// About the last `max` characters of `s`, from a whitespace.
fn tail_at_word(s: &str, max: usize) -> &str {
    let n = s.chars().count();
    if n <= max {
        return s;
    }
    let start = s.char_indices().nth(n - max).map_or(0, |(i, _)| i);
    let tail = &s[start..];
    match tail.find(char::is_whitespace) {
        Some(i) if i < tail.len() / 2 => tail[i..].trim_start(),
        _ => tail,
    }
}

/// Call `f` with every sentence the user wrote in `text`, each on one
/// line (hard-wrapped lines joined): code blocks, quoted lines (`> …`, what
/// the user quotes back), headings and table rows are skipped; a list item
/// starts a new paragraph.
fn for_each_user_sentence(text: &str, mut f: impl FnMut(&str)) {
    let mut paragraph = String::new();
    let mut in_code = false;
    let mut flush = |paragraph: &mut String| {
        if !paragraph.is_empty() {
            split_sentences(paragraph, &mut f);
            paragraph.clear();
        }
    };
    for line in text.lines() {
        if is_fence(line) {
            in_code = !in_code;
            flush(&mut paragraph);
            continue;
        }
        let t = line.trim();
        if in_code || t.is_empty() || t.starts_with('#') || t.starts_with('|') || t.starts_with('>')
        {
            flush(&mut paragraph);
            continue;
        }
        let item = strip_marker(t);
        if item.len() != t.len() {
            flush(&mut paragraph);
        }
        if !paragraph.is_empty() {
            paragraph.push(' ');
        }
        paragraph.push_str(item);
    }
    flush(&mut paragraph);
}

/// Call `f` with each sentence of one line of prose.
fn split_sentences<'t>(t: &'t str, f: &mut impl FnMut(&'t str)) {
    let mut start = 0;
    for (i, c) in t.char_indices() {
        if matches!(c, '.' | '!' | '?') && t[i + 1..].chars().next().is_none_or(char::is_whitespace)
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

// ---------------------------------------------------------------- arguments

/// What an argument key says about its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    Path,
    Command,
    Query,
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
    } else if any(QUERY_PARTS) {
        KeyClass::Query
    } else if any(CONTENT_PARTS) {
        KeyClass::Content
    } else {
        KeyClass::Other
    }
}

/// Call `f` with every string in `v` and the class of the key it sits under
/// (array items inherit their array's key; everything under a path key is
/// a path).
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
                let inner = if class == KeyClass::Path {
                    class
                } else {
                    classify(k)
                };
                walk_strings(item, inner, f);
            }
        }
        _ => {}
    }
}

/// Call `f` with every string in `v` and the key it sits under.
fn walk_keyed<'v>(v: &'v Value, key: &'v str, f: &mut dyn FnMut(&'v str, &'v str)) {
    match v {
        Value::String(s) => f(key, s),
        Value::Array(items) => {
            for item in items {
                walk_keyed(item, key, f);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                walk_keyed(item, k, f);
            }
        }
        _ => {}
    }
}

/// The `command`/`action`/`mode` argument of an editor tool, lowercase.
fn mode(arguments: &Value) -> Option<String> {
    ["command", "action", "mode"]
        .iter()
        .find_map(|k| arguments.get(k).and_then(Value::as_str))
        .map(|m| m.trim().to_ascii_lowercase())
}

/// What a tool call does: writes when its name says it changes files (and
/// no read-only mode says otherwise), searches when its name or mode says
/// so, runs a command when its name says it runs, builds or tests or it
/// is given a command; else it reads.
fn call_kind(name: &str, arguments: &Value) -> CallKind {
    let parts = name_parts(name);
    let has = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
    let mode = mode(arguments);
    let read_mode = mode.as_deref().is_some_and(|m| READ_MODES.contains(&m));
    if has(WRITE_PARTS) && !read_mode {
        return CallKind::Write;
    }
    if has(SEARCH_PARTS) || mode.as_deref().is_some_and(|m| SEARCH_PARTS.contains(&m)) {
        return CallKind::Search;
    }
    if read_mode {
        return CallKind::Read;
    }
    let mut command = false;
    walk_strings(arguments, KeyClass::Other, &mut |class, s| {
        command |= class == KeyClass::Command && !s.trim().is_empty();
    });
    if command || has(RUN_PARTS) {
        CallKind::Command
    } else {
        CallKind::Read
    }
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

// ---------------------------------------------------------------- diagnostics

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
            arguments: arguments.into(),
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
    fn small_ranges_get_a_shorter_form() {
        let log = build(vec![
            user("Why is the build red?"),
            said("A missing semicolon in main.rs; fixed."),
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
            matches!(out.provenance, Provenance::Derived { method: Some(ref m), .. } if m == "minimal")
        );
        // A range a little larger keeps the request whole, the files and
        // the diagnostics.
        let ask = "Please fix the failing parser test; the fixture is in tests/data.";
        let log = build(vec![
            user(ask),
            call("a", "cargo_test", json!({"package": "parser"})),
            result(
                "a",
                &format!(
                    "{}\ntest p::t ... FAILED\n",
                    "test other ... ok\n".repeat(20)
                ),
                false,
            ),
            call("b", "fs_read_file", json!({"path": "src/parse.rs"})),
            result("b", &"fn parse() {}\n".repeat(20), false),
            said("The parser drops the last line; fixed."),
        ]);
        let out = Digest
            .summarize(SummaryInput {
                log: &log,
                range: (0, 5),
                instructions: None,
            })
            .unwrap();
        assert!(
            matches!(out.provenance, Provenance::Derived { method: Some(ref m), .. } if m == "terse"),
            "{}",
            out.text
        );
        assert_eq!(
            out.text,
            format!(
                "Digest of turn 1\n- Turn 1 asked: {ask}\n- Files: `src/parse.rs`\n- cargo_test: test p::t ... FAILED\n- Last answer: The parser drops the last line; fixed.\n"
            )
        );
    }

    #[test]
    fn name_and_provenance() {
        assert_eq!(Digest.name(), "digest");
        assert_eq!(
            Digest::provenance(),
            Provenance::Derived {
                summarizer: "digest".into(),
                version: Some(DIGEST_VERSION.into()),
                instructions: None,
                method: None,
            }
        );
        assert_eq!(DIGEST_VERSION, "3");
    }

    #[test]
    fn sections_come_in_order() {
        let mut bodies = sample().into_records();
        bodies.push(Record::new(
            99,
            "2026-01-01T00:00:00Z",
            user("Don't change the public API."),
        ));
        let text = digest_all(&Log::from_records(bodies));
        let pos = |h: &str| text.find(&format!("## {h}\n")).expect(h);
        let order = [
            pos("What the user asked"),
            pos("Corrections and constraints (the user's words)"),
            pos("Decisions and conclusions"),
            pos("Files"),
            pos("Tools and commands"),
            pos("Diagnostics (from tool output)"),
            pos("Identifiers"),
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
    fn requests_are_whole_up_to_the_limit_then_start_and_end() {
        // Exactly at the limit, over several lines: whole, byte for byte
        // (in a fenced block: whitespace and line breaks as typed).
        let line = "word ".repeat(19) + "word\n";
        let at_limit: String = line.repeat(20);
        assert_eq!(at_limit.trim().chars().count(), REQUEST_WORDS_MAX - 1);
        let over: String = (0..600).map(|i| format!("w{i:03} ")).collect();
        let log = build(vec![user(&at_limit), said("ok"), user(&over), said("ok")]);
        let text = digest_all(&log);
        assert!(
            text.contains(&format!("- Turn 1:\n```\n{at_limit}```\n")),
            "{text}"
        );
        let lines = section(&text, "What the user asked");
        let long = lines.iter().position(|l| l.contains("w000")).unwrap();
        assert_eq!(lines[long - 2], "- Turn 1 (follow-up):", "{lines:#?}");
        assert_eq!(lines[long - 1], "```", "{lines:#?}");
        assert!(lines[long].starts_with("w000 w001"), "{lines:#?}");
        let n = over.trim().chars().count();
        let marker = lines[long + 1];
        assert!(
            marker.starts_with("[… ")
                && marker.ends_with(&format!(" of {n} characters left out …]")),
            "{marker}"
        );
        assert!(lines[long + 2].ends_with("w599"), "{lines:#?}");
        assert_eq!(lines[long + 3], "```", "{lines:#?}");
        // About the start and the end, cut at words.
        assert!(
            text.contains(" w239\n")
                && !text.contains("w240")
                && !text.contains("w479")
                && text.contains("\nw480 w481")
        );
        assert!(lines[long].chars().count() <= REQUEST_HEAD + 30);
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
                "- Turn 1 (follow-up, constraint): wait, keep the old name as an alias"
            ]
        );
    }

    #[test]
    fn corrections_and_constraints_are_kept_as_such() {
        let log = build(vec![
            Body::TurnStart,
            user("Write the parser by hand.\nIt should read the whole file."),
            said("Done."),
            Body::TurnStart,
            user(
                "Actually, use serde instead of a hand-written\nparser. Don't touch the public API.\n\n> You must never do this\n\nIs this the only way?\n\n```\n// never\n```",
            ),
            said("Ok."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Corrections and constraints (the user's words)"),
            [
                "- Turn 2: Actually, use serde instead of a hand-written parser.",
                "- Turn 2: Don't touch the public API.",
            ],
            "{text}"
        );
        let asked = section(&text, "What the user asked");
        assert_eq!(
            asked[..3],
            ["- Turn 1:", "```", "Write the parser by hand."]
        );
        // A fence longer than the one the message holds.
        assert_eq!(asked[5..7], ["- Turn 2 (correction):", "````"], "{text}");
        assert_eq!(asked[7], "Actually, use serde instead of a hand-written");
    }

    #[test]
    fn files_are_split_into_written_read_searched_and_named() {
        let mut bodies = sample().into_records();
        let mut push = |b: Body| {
            let seq = bodies.len() as u64;
            bodies.push(Record::new(seq, "t", b));
        };
        push(call(
            "g",
            "fs_grep_files",
            json!({"pattern": "fn login", "paths": ["src", "tests"]}),
        ));
        push(result("g", "src/auth.rs:1: fn login() {}", false));
        push(call(
            "h",
            "github_read_file",
            json!({"repository": "o/r", "path": "README.md"}),
        ));
        push(call(
            "i",
            "fs_create_file",
            json!({"path": "src/new.rs", "content": "x"}),
        ));
        push(call(
            "j",
            "fs_modify_file",
            json!({"path": "src/bad.rs", "patterns": []}),
        ));
        push(result("j", "Pattern(s) #1 not found", true));
        let text = digest_all(&Log::from_records(bodies));
        assert_eq!(
            section(&text, "Files"),
            [
                "- Written or edited: `src/bad.rs` (edit failed), `src/new.rs` (created), `tests/auth_test.rs`",
                "- Read: `src/auth.rs`",
                "- Read in `o/r`: `README.md`",
                "- Searched: `src`, `tests`",
            ],
            "{text}"
        );
    }

    #[test]
    fn paths_in_commands_and_unknown_keys_are_named() {
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
        assert_eq!(
            section(&text, "Files"),
            [
                "- Read: `README.md`",
                "- Named in commands or other arguments: `Cargo.toml`, `crates/a/src/lib.rs`",
            ],
            "{text}"
        );
        assert!(text.contains(
            "- Ran bash `cat crates/a/src/lib.rs | grep foo > /dev/null` (turn 1): no result yet\n"
        ));
        assert!(!text.contains("## Identifiers"), "{text}");
    }

    #[test]
    fn file_lists_are_capped() {
        let mut bodies = vec![user("read them all")];
        for i in 0..200 {
            bodies.push(call(
                &i.to_string(),
                "read",
                json!({"path": format!("src/f{i:03}.rs")}),
            ));
            bodies.push(result(&i.to_string(), "x", false));
        }
        let text = digest_all(&build(bodies));
        let line = section(&text, "Files")[0];
        assert!(line.starts_with("- Read: `src/f000.rs`, `src/f001.rs`"));
        assert!(line.ends_with("`src/f149.rs`, and 50 more"), "{line}");
    }

    #[test]
    fn tools_are_counted_and_commands_named_with_their_outcome() {
        let text = digest_all(&sample());
        assert_eq!(
            section(&text, "Tools and commands"),
            [
                "- Calls: cargo_check ×1 (1 failed), cargo_test ×1, fs_modify_file ×1, fs_read_file ×1 (4 calls, 1 failed)",
                "- Ran cargo_check `package=auth` (turn 1): failed",
                "- Ran cargo_test `package=auth testname=login` (turn 2): no result yet",
            ]
        );
        let mut bodies = vec![user("test it")];
        for (i, out) in [
            "ok",
            "test a ... FAILED",
            "warning: unused import: `x`",
            "ok",
        ]
        .iter()
        .enumerate()
        {
            let id = i.to_string();
            bodies.push(call(&id, "cargo_test", json!({"package": "p"})));
            bodies.push(result(&id, out, false));
        }
        let text = digest_all(&build(bodies));
        assert!(
            text.contains(
                "- Ran cargo_test `package=p` ×4 (turn 1): 1 failed, 2 ok, 1 ok with warnings; last ok\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn diagnostics_come_from_every_result_with_the_fix_that_followed() {
        let panic = "running 2 tests\ntest p::t ... FAILED\n\nthread 'p::t' panicked at src/p.rs:9:5:\nassertion failed: ok\ntest result: FAILED. 1 passed; 1 failed\n";
        let log = build(vec![
            user("make the tests pass"),
            // Not flagged as an error, but a test failed.
            call("1", "cargo_test", json!({"package": "p", "testname": "t"})),
            result("1", panic, false),
            call("2", "cargo_check", json!({})),
            result(
                "2",
                "error[E0425]: cannot find value `y` in this scope\n --> src/q.rs:3:5\n",
                false,
            ),
            call(
                "3",
                "fs_modify_file",
                json!({"path": "src/p.rs", "patterns": [{"old": "a", "new": "b"}]}),
            ),
            result("3", "ok", false),
            call(
                "4",
                "fs_modify_file",
                json!({"path": "./src/q.rs", "patterns": []}),
            ),
            result("4", "ok", false),
            // A broader run of the same command comes out clean.
            call("5", "cargo_test", json!({"package": "p"})),
            result("5", "test result: ok. 2 passed", false),
            call("6", "cargo_test", json!({"package": "other"})),
            result("6", "error: no tests to run\n", false),
            call("7", "cargo_test", json!({"package": "other"})),
            result("7", "error: no tests to run\n", false),
            said("Done."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Diagnostics (from tool output)"),
            [
                // One failed run, one entry: the failing test, its panic
                // (with the test's thread) and the run's tally.
                "- cargo_test (turn 1): test p::t ... FAILED | thread 'p::t' panicked at src/p.rs:9:5: assertion failed: ok | test result: FAILED. 1 passed; 1 failed → then edited `src/p.rs`, `./src/q.rs`; cargo_test ran again with no diagnostic recognized (turn 1)",
                "- cargo_check (turn 1): error[E0425]: cannot find value `y` in this scope (src/q.rs:3:5) → then edited `./src/q.rs` (turn 1)",
                "- cargo_test (turn 1, ×2): error: no tests to run",
            ],
            "{text}"
        );
        assert!(text.contains("- Ran cargo_test `package=p testname=t` (turn 1): failed\n"));
        assert!(text.contains(
            "- Open: 1 command error with no fix seen after its last run (latest, turn 1: error: no tests to run).\n"
        ));
        // What the retention report counts is all there.
        let facts = crate::kept::facts(&log, 0, log.len() - 1);
        let k = crate::kept::kept(&facts, &collapse(&text));
        assert_eq!(
            k.diagnostics.kept, k.diagnostics.total,
            "{:?}",
            k.diagnostics.lost
        );
        // Every distinct one: the failing test, its panic, the run's
        // tally, the compiler error and the empty run.
        assert_eq!(k.diagnostics.total, 5);
    }

    #[test]
    fn diagnostics_are_capped_keeping_the_latest() {
        let mut bodies = vec![user("try")];
        for i in 0..DIAGNOSTICS_MAX + 20 {
            let id = i.to_string();
            bodies.push(call(&id, "run", json!({})));
            bodies.push(result(&id, &format!("boom {i}\nmore"), true));
        }
        let text = digest_all(&build(bodies));
        let lines = section(&text, "Diagnostics (from tool output)");
        assert_eq!(lines[0], "- (20 earlier diagnostics not shown)");
        assert_eq!(lines.len(), 1 + DIAGNOSTICS_MAX);
        assert_eq!(lines[1], "- run (turn 1): boom 20");
        assert_eq!(
            lines.last().unwrap(),
            &format!("- run (turn 1): boom {}", DIAGNOSTICS_MAX + 19)
        );
    }

    #[test]
    fn identifiers_are_names_defined_edited_or_failed() {
        let log = build(vec![
            user("add a tokenizer"),
            call(
                "s",
                "fs_grep_files",
                json!({"pattern": "fn login", "paths": ["src"]}),
            ),
            call("g", "git_show", json!({"revision": "2c1f006abc"})),
            call(
                "a",
                "fs_create_file",
                json!({"path": "src/tok.rs", "content": "pub fn tokenize(s: &str) {}\nstruct Token;\nconst MAX: usize = 3;\n// the type of thing: x\n"}),
            ),
            call(
                "b",
                "fs_modify_file",
                json!({"path": "src/lib.rs", "patterns": [
                    {"old": "mod db;\nfn run(x: u8) {", "new": "mod db;\nmod tok;\nfn run(x: u16) {"},
                    {"old": "fn gone() {}\nimpl A {\n    fn keep(&self) {\n        1", "new": "impl A {\n    fn keep(&self) {\n        2"}
                ]}),
            ),
            call(
                "c",
                "fs_create_file",
                json!({"path": "docs/x.md", "content": "The struct Foo { is prose here\n"}),
            ),
            call("d", "cargo_check", json!({})),
            result(
                "d",
                "error[E0425]: cannot find value `missing_thing` in this scope\n --> src/lib.rs:3:5\nerror[E0308]: mismatched types: expected `u32`, found `deadbeef1`\n --> src/lib.rs:4:5\n",
                false,
            ),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Identifiers"),
            [
                "- Defined: `MAX`, `Token`, `tok`, `tokenize`",
                "- Edited: `gone`, `keep`, `run`",
                "- Failed: `missing_thing`",
            ],
            "{text}"
        );
    }

    #[test]
    fn left_off_names_the_last_request_text_open_errors_and_waiting_calls() {
        let text = digest_all(&sample());
        let lines = section(&text, "Where it left off");
        assert_eq!(
            lines,
            [
                "- Last user message: turn 2.",
                "- Last assistant text (turn 1): The root cause is a missing import of `Session` in the login path. I'll add it. I fixed the import and the check passes now. Would you like me to add a test?",
                "- Open: 1 command error with no fix seen after its last run (latest, turn 1: error[E0433]: failed to resolve: use of undeclared type `Session` (src/auth.rs:3:5)).",
                "- Pending: the last step ended with 1 tool call without a result: cargo_test.",
            ]
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
    fn helpers_cut_on_char_boundaries() {
        let s = "é".repeat(500);
        assert_eq!(truncate_words(&s, 10).chars().count(), 11);
        assert!(tail_words(&s, 10).starts_with('…'));
        assert_eq!(head_at_word(&s, 10).chars().count(), 10);
        assert_eq!(tail_at_word(&s, 10).chars().count(), 10);
        assert_eq!(head_at_word("ab cd ef", 6), "ab cd");
        assert_eq!(tail_at_word("ab cd ef", 4), "ef");
        assert_eq!(name_parts("filePath_x-Y"), ["file", "path", "x", "y"]);
        assert_eq!(strip_marker("  12. item"), "item");
        assert!(looks_like_path("Cargo.toml"));
        assert!(looks_like_path("crates/ctxfold-core"));
        assert!(!looks_like_path("e.g"));
        assert!(!looks_like_path("1/2"));
        assert!(!looks_like_path("a|b/c"));
        assert_eq!(location_file("src/x.rs:3:5"), "src/x.rs");
        assert_eq!(location_file("app.py:2"), "app.py");
        assert!(same_file("/home/u/p/src/x.rs", "src/x.rs"));
        assert!(!same_file("src/ax.rs", "x.rs"));
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
                "We prefer option {i} for now.\n\nThe root cause is bug {} in the parser.\n\nThe root cause is bug {} in the parser.",
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
    fn plans_doubts_and_conditions_are_not_decisions() {
        for s in [
            "I also need to reconsider the Auto-mode fallback test.",
            "If trigram doesn't error on short queries, the flow still works.",
            "We'll implement the update command for every provider.",
            "Maybe the root cause is the cache after all.",
        ] {
            assert_eq!(sentence_score(s), 0, "{s}");
        }
        assert_eq!(
            sentence_score("We decided to keep the cache per process."),
            2
        );
    }

    #[test]
    fn steering_is_said_in_so_many_words() {
        for (s, want) in [
            ("Don't touch the public API.", Some(false)),
            ("Please make sure the tests still pass.", Some(false)),
            (
                "Go ahead and write the plan, dont implement it yet.",
                Some(false),
            ),
            (
                "One thing I want to avoid is for jp to be git aware.",
                Some(false),
            ),
            ("Actually, use serde for the parser.", Some(true)),
            ("That is an incorrect answer.", Some(true)),
            // Described, inferred or doubted: not steering.
            ("I still don't think the two-pass scan was the issue.", None),
            (
                "It MUST be the streaming parser, nothing else changed.",
                None,
            ),
            ("Some legacy files don't have a timestamp field yet.", None),
            ("It runs in read-only mode by default.", None),
            ("These conversations would not actually be visible.", None),
        ] {
            assert_eq!(steer_sentence(s), want, "{s}");
        }
    }

    #[test]
    fn a_quoted_request_holds_the_message_byte_for_byte() {
        let message = "  Look at this:\n\n```rust\nfn a() {}\n```\n\tand ``` this\n";
        let log = build(vec![user(message), said("ok")]);
        let text = digest_all(&log);
        // The fence is longer than any run of backticks in the message.
        assert!(
            text.contains(&format!("- Turn 1:\n````\n{message}````\n")),
            "{text}"
        );
        let one = build(vec![user("one line, as typed"), said("ok")]);
        assert!(digest_all(&one).contains("- Turn 1: one line, as typed\n"));
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
                data: json!({"answer": 42}).into(),
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
}
