//! The command-line surface (SPEC §11), as clap definitions.

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use ctxfold_formats::Format;

/// Keep long LLM agent conversations lean without losing them.
#[derive(Debug, Parser)]
#[command(name = "ctxfold", version, about, propagate_version = true)]
pub struct Cli {
    /// How to print data: for people (text) or programs (json).
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// A config file layered over the user and workspace config (repeatable).
    #[arg(short = 'c', long = "config", global = true, value_name = "PATH")]
    pub config: Vec<PathBuf>,

    /// Say more on standard error: -v what automatic compaction does, -vv
    /// why it did not (`RUST_LOG` overrides).
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Where conversations are kept: postgres://user[:password]@host[:port]/database,
    /// or a workspace folder (default: CTXFOLD_STORE, else `[store] url`,
    /// else the workspace here).
    #[arg(long, global = true, value_name = "STORE")]
    pub store: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

/// How a command prints data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// For people.
    Text,
    /// One JSON document.
    Json,
}

/// A transcript format to write: the formats' own list, named and
/// described by `ctxfold-formats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputTranscript(pub Format);

impl From<OutputTranscript> for Format {
    fn from(f: OutputTranscript) -> Format {
        f.0
    }
}

impl ValueEnum for OutputTranscript {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<[OutputTranscript; Format::ALL.len()]> =
            LazyLock::new(|| Format::ALL.map(OutputTranscript));
        &*ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

/// A transcript format, or `auto` to detect it: `--input-format` takes
/// the names `--output-format` takes, and `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Tell from the file.
    Auto,
    /// This one.
    Is(OutputTranscript),
}

impl InputFormat {
    /// The format, or `None` for auto.
    pub fn format(self) -> Option<Format> {
        match self {
            InputFormat::Auto => None,
            InputFormat::Is(f) => Some(f.into()),
        }
    }
}

impl ValueEnum for InputFormat {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<InputFormat>> = LazyLock::new(|| {
            let known = OutputTranscript::value_variants().iter().copied();
            std::iter::once(InputFormat::Auto)
                .chain(known.map(InputFormat::Is))
                .collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            InputFormat::Auto => Some(PossibleValue::new("auto").help("Tell from the file")),
            InputFormat::Is(f) => f.to_possible_value(),
        }
    }
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a `.ctxfold/` workspace in the current directory.
    Init,
    /// Compact a transcript file in one go, offline: read it, fold it,
    /// write it back in the same format, and report what was folded.
    Compact(Box<CompactFileArgs>),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check the store, the config, the upstreams, a running proxy, the
    /// agents on PATH and their MCP registration: a line each, with its
    /// fix; fails when a check does.
    Doctor,
    /// Tokens by kind, raw and in the view the model gets, the share of
    /// the model's window used, and the cost with ctxfold and without
    /// (`--all`: of every conversation).
    Stats(StatsArgs),
    /// Work with the conversations of the workspace.
    #[command(visible_alias = "c", subcommand)]
    Conversation(ConversationCommand),
    /// Print a shell completion script, e.g. `ctxfold completions bash >
    /// ~/.local/share/bash-completion/completions/ctxfold`.
    Completions(CompletionsArgs),
    /// One turn of the agent: send a message to the model, run the tools it
    /// calls, repeat until it answers; compacts automatically when
    /// `[compaction.auto] enabled`.
    #[command(visible_alias = "q")]
    Query(Box<QueryArgs>),
    /// Move conversations between stores, and set up a PostgreSQL one.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Serve the OpenAI and Anthropic APIs on this machine and forward to
    /// the real ones: every conversation that passes is recorded here, and
    /// the upstream gets its compacted view. Point an agent's base URL at
    /// it (see the README).
    Proxy(ProxyArgs),
    /// Serve browser pages over the store: the conversations, each one's
    /// timeline (turns, compactions, failed attempts), its token curve,
    /// what the model sees, and undo/restore of each compaction. The proxy
    /// serves the same pages under /ui.
    Ui(UiArgs),
    /// Print exactly what a fold's handle stands for (the TAG:N a
    /// compaction placeholder or summary lead shows, such as k3f9q:41),
    /// from whichever conversation of the store it belongs to.
    Recall(RecallArgs),
    /// Find a word or phrase in a conversation's raw log, folded parts
    /// included: each hit with its handle for `recall`.
    Search(SearchArgs),
    /// Serve `recall` and `search` to an agent over the Model Context
    /// Protocol on standard input and output (register it with the agent:
    /// see the README).
    Mcp(McpArgs),
    /// Run an agent (claude, codex, opencode, aider; or any command after
    /// `--`) in front of a proxy of its own: pointed at it without editing
    /// its files, with `ctxfold mcp` for recall; at its exit, what was
    /// recorded and saved.
    Run(RunArgs),
}

/// `ctxfold run …`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The agent: claude, codex, opencode or aider (a name on PATH, or a
    /// path to one). Omitted: the command after `--` is run with the
    /// OpenAI and Anthropic base-URL variables set.
    #[arg(value_name = "AGENT")]
    pub agent: Option<String>,
    /// The agent's own arguments (after `--`), or the command to run.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
    /// Record and report, but send every request upstream unchanged.
    #[arg(long)]
    pub observe: bool,
    /// Do not give the agent `ctxfold mcp` (the recall tools).
    #[arg(long)]
    pub no_mcp: bool,
}

/// `ctxfold store …`
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy conversations (ids, metadata, records byte for byte) from one
    /// store to another; the active conversation and the trash stay behind.
    /// One already there and identical is left alone.
    Copy(CopyArgs),
    /// Create or update the ctxfold tables of a PostgreSQL store (done on
    /// first use anyway) and print the schema version.
    Migrate(MigrateArgs),
}

/// `ctxfold proxy …`
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Where to listen (default `[proxy] listen`, else 127.0.0.1:7440); port
    /// 0 picks a free one. Beyond loopback, `[proxy] token` is required.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Record and report, but send every request upstream unchanged.
    #[arg(long)]
    pub observe: bool,
}

/// `ctxfold ui …`
#[derive(Debug, Args)]
pub struct UiArgs {
    /// Where to listen (default 127.0.0.1:7441); port 0 picks a free one.
    /// Beyond loopback, `[proxy] token` is required (the pages ask for it).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

// The arguments of `recall` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// The handle: TAG:N, TAG:FIRST-LAST or TAG:N/POINTER, as a
    /// placeholder or summary lead shows it.
    pub handle: String,
    /// The character to start at (a page's end, to print what follows it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// Characters to print at most (default: all that follows the offset).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

// The arguments of `search` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The word or phrase to look for (ASCII case ignored).
    pub query: String,
    /// Search the conversation this handle belongs to (a range handle,
    /// such as k3f9q:12-57: only its records) instead of the active one.
    #[arg(long, value_name = "HANDLE")]
    pub within: Option<String>,
    #[command(flatten)]
    pub conversation: IdArg,
    /// Hits to print at most, newest first (default 20).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

/// `ctxfold mcp …`
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve one conversation only (its id or a unique prefix): search
    /// defaults to it, and handles of any other are refused.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
}

/// `ctxfold conversation …`
#[derive(Debug, Subcommand)]
pub enum ConversationCommand {
    /// List the conversations.
    Ls,
    /// Show a conversation: metadata, what it holds, its compactions.
    Show(IdArg),
    /// Print a conversation's events.
    Print(PrintArgs),
    /// Compact a conversation: append compaction records (nothing is
    /// deleted; `--reset` undoes).
    Compact(CompactConversationArgs),
    /// Copy a conversation, optionally compacted.
    Fork(ForkArgs),
    /// Import a transcript as a new conversation; prints its id.
    Import(ImportArgs),
    /// Export a conversation as a transcript.
    Export(ExportArgs),
    /// Append records (ctxfold JSONL, `seq` optional) to a conversation;
    /// with `[compaction.auto] enabled`, a completed turn runs the
    /// between-turn trigger.
    Append(AppendArgs),
    /// Make a conversation the active one.
    Use(UseArgs),
    /// Move a conversation to the workspace's trash.
    Rm(RmArgs),
}

/// An optional conversation id, the active one when left out: every
/// command that takes one flattens this, so its help is said once.
#[derive(Debug, Args)]
pub struct IdArg {
    /// The conversation (default: the active one).
    pub id: Option<String>,
}

/// `ctxfold config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the merged configuration and where each value came from.
    Show,
}

/// `ctxfold compact FILE …`
#[derive(Debug, Args)]
pub struct CompactFileArgs {
    /// A transcript file, or a JP or ctxfold conversation folder.
    pub file: PathBuf,
    #[command(flatten)]
    pub rule: RuleFlags,
    /// The transcript's format.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,
    /// The format to write (default: the input's).
    #[arg(long, value_enum)]
    pub output_format: Option<OutputTranscript>,
    /// Where to write: a file, a folder for jp, `-` for standard output
    /// (default: beside the input, named `<name>.compacted…`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Instead of rules, replay the transcript as a live agent with this
    /// window would have grown it, compacting automatically between turns
    /// and before every model call (`[compaction.auto]`'s rule).
    #[arg(long, requires = "window", conflicts_with_all = ["keep_first", "keep_last", "keep_steps", "from", "to", "reasoning", "tools", "summarize", "summary_text", "compact"])]
    pub auto: bool,
    /// The model's context window in tokens, for --auto.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub window: Option<u32>,
}

/// When `--auto` runs the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AutoWhen {
    /// As after the last turn.
    Turn,
    /// As before the next model call.
    Step,
}

impl From<AutoWhen> for ctxfold_compactor::Moment {
    fn from(w: AutoWhen) -> Self {
        match w {
            AutoWhen::Turn => ctxfold_compactor::Moment::BetweenTurns,
            AutoWhen::Step => ctxfold_compactor::Moment::BeforeStep,
        }
    }
}

/// Flags that make one compaction rule, and `-k` specs that add more.
#[derive(Debug, Args, Default)]
pub struct RuleFlags {
    /// Turns kept at the start: a count, or a duration (2h).
    #[arg(long, value_name = "N")]
    pub keep_first: Option<String>,
    /// Turns kept at the end: a count, or a duration (30m).
    #[arg(long, value_name = "N")]
    pub keep_last: Option<String>,
    /// Of the turns kept, only the last N steps stay verbatim, counted
    /// together from the end (not N per turn): their older closed steps
    /// are compacted too, the user's messages stay.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep_steps: Option<u32>,
    /// First turn to compact: N, -N, a duration, or last-compaction.
    #[arg(long, value_name = "BOUND", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// Last turn to compact: N, -N (all but the last N) or a duration.
    #[arg(long, value_name = "BOUND", allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Strip reasoning.
    #[arg(short = 'r', long)]
    pub reasoning: bool,
    /// Compact tool calls: strip (default), strip-requests, strip-responses, omit.
    #[arg(short = 't', long, value_name = "MODE", num_args = 0..=1, default_missing_value = "strip", value_parser = tool_mode)]
    pub tools: Option<String>,
    /// Replace the range with a summary.
    #[arg(short = 's', long)]
    pub summarize: bool,
    /// Replace the range with this summary, written by you (it cannot be
    /// widened later, so it may not partly overlap another summary).
    #[arg(long, value_name = "TEXT", conflicts_with = "summarize")]
    pub summary_text: Option<String>,
    /// The summarizer for -s: `digest` (offline, the default) or provider/model.
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// A compaction rule in the DSL, POLICIES[:RANGE] (repeatable); a bare
    /// -k applies the configured rules.
    #[arg(short = 'k', long = "compact", value_name = "SPEC", num_args = 0..=1, default_missing_value = "")]
    pub compact: Vec<String>,
    /// One sentence on why, kept with the compaction.
    #[arg(long)]
    pub note: Option<String>,
}

/// `--reset N` / `--restore N`: a compaction number as `show` lists them.
/// The value may follow after a space, so a word that is not a number is
/// refused rather than taken for something else (such as a conversation id,
/// which then would be left out and every compaction revoked).
fn compaction_number(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(
            "expected a compaction number as `ctxfold conversation show` lists them (1, 2, …); \
             to name the conversation, put its id before the option: `conversation compact ID --reset`"
                .into(),
        ),
    }
}

/// `-t MODE` / `--tools MODE`: one of the tool modes. The mode may follow
/// after a space, so anything else is refused, never taken silently.
fn tool_mode(s: &str) -> Result<String, String> {
    match ctxfold_core::dsl::parse_tool_mode(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(
            "expected strip, strip-requests (sreq), strip-responses (sres) or omit; \
             to name a conversation or a file, put it before -t"
                .into(),
        ),
    }
}

/// `ctxfold query …`
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The message (default: standard input when piped, else `$EDITOR`).
    pub message: Vec<String>,
    /// The model, as provider/model (remembered by the conversation).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Compact before the turn with this rule, as -k=SPEC (repeatable; a
    /// bare -k applies the configured rules). The `=` is required: the
    /// message follows.
    #[arg(short = 'k', long = "compact", value_name = "SPEC", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub compact: Vec<String>,
    /// Enable a built-in tool for this query (repeatable): `compact`, the
    /// assistant proposing compactions you approve.
    #[arg(short = 't', long = "tool", value_name = "TOOL")]
    pub tools: Vec<String>,
    /// Make the model's first call use this tool (a built-in one is
    /// enabled too).
    #[arg(short = 'u', long = "use-tool", value_name = "TOOL")]
    pub use_tool: Option<String>,
    /// Start a new conversation (default: the active one).
    #[arg(long)]
    pub new: bool,
    /// Approve every tool call without asking.
    #[arg(long)]
    pub yes: bool,
    /// No automatic compaction for this turn.
    #[arg(long)]
    pub no_auto: bool,
    /// Do not offer the built-in `recall` and `search` tools (offered
    /// whenever a compaction is in force, unless `[query] recall_tools =
    /// false`).
    #[arg(long)]
    pub no_recall: bool,
    /// The model's context window in tokens (else from the model).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub window: Option<u32>,
}

// The arguments of `stats` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    /// The model, as provider/model: picks the exact tokenizer (OpenAI
    /// models) and the window.
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The cost with ctxfold and without of every conversation, and the
    /// total.
    #[arg(long, conflicts_with_all = ["id", "model"])]
    pub all: bool,
}

// The arguments of `completions` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

// The arguments of `store copy` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The store to copy from: a workspace folder or a postgres:// URL.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The store to copy to: a workspace folder (given a .ctxfold/ if it
    /// has none) or a postgres:// URL.
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// The conversations to copy (ids or unique prefixes; default: all).
    pub ids: Vec<String>,
}

// The arguments of `store migrate` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store's URL (default: --store, CTXFOLD_STORE or [store] url).
    pub url: Option<String>,
}

// The arguments of `conversation print` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct PrintArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    /// Print the view the model gets, with compactions applied.
    #[arg(long)]
    pub compacted: bool,
}

// The arguments of `conversation compact` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct CompactConversationArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    #[command(flatten)]
    pub rule: Box<RuleFlags>,
    /// Show what would be compacted, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Revoke compaction N as numbered by `show` (all when N is left out).
    #[arg(long, value_name = "N", num_args = 0..=1, value_parser = compaction_number, conflicts_with = "restore")]
    pub reset: Option<Option<usize>>,
    /// Restore revoked compaction N (all revoked ones when N is left out).
    #[arg(long, value_name = "N", num_args = 0..=1, value_parser = compaction_number)]
    pub restore: Option<Option<usize>>,
    /// Run automatic compaction's trigger once, as after the last turn
    /// (`turn`, the default) or before the next model call (`step`),
    /// with `[compaction.auto]`'s rule.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "turn", conflicts_with_all = ["reset", "restore"])]
    pub auto: Option<AutoWhen>,
    /// The model's context window in tokens, for --auto (else from -m).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub window: Option<u32>,
}

// The arguments of `conversation fork` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    /// Compact the copy with this rule (repeatable; see `compact -k`).
    #[arg(short = 'k', long = "compact", value_name = "SPEC", num_args = 0..=1, default_missing_value = "")]
    pub compact: Vec<String>,
}

// The arguments of `conversation import` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A transcript file, or a JP or ctxfold conversation folder; with
    /// `--from`, the project (working folder) whose sessions to import
    /// (default: the current folder).
    #[arg(required_unless_present = "from")]
    pub path: Option<PathBuf>,
    /// The transcript's format.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,
    /// Import the agent's sessions of a project: those not imported yet,
    /// and what the others gained since (found by session id).
    #[arg(long, value_enum, conflicts_with = "input_format")]
    pub from: Option<SessionsOf>,
}

/// An agent whose own session files `import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SessionsOf {
    /// Claude Code: `~/.claude/projects/<folder>/` (or under
    /// `$CLAUDE_CONFIG_DIR`).
    ClaudeCode,
    /// Codex: the rollouts under `~/.codex/sessions` (or
    /// `$CODEX_HOME/sessions`) started in the project.
    Codex,
}

// The arguments of `conversation export` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    /// The transcript format to write.
    #[arg(long, value_enum, default_value_t = OutputTranscript(Format::Ctxfold))]
    pub output_format: OutputTranscript,
    /// Where to write (a folder for jp); standard output if omitted or `-`.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Export the view the model gets, with compactions applied.
    #[arg(long)]
    pub compacted: bool,
}

// The arguments of `conversation append` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub conversation: IdArg,
    /// A JSONL file, or `-` for standard input.
    #[arg(long, default_value = "-")]
    pub input: PathBuf,
    /// The model's context window in tokens, for automatic compaction
    /// (without it, automatic compaction is skipped).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub window: Option<u32>,
}

// The arguments of `conversation use` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct UseArgs {
    /// The conversation's id (or a unique prefix).
    pub id: String,
}

// The arguments of `conversation rm` (no doc comment: the variant's is its help).
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The conversation's id (or a unique prefix).
    pub id: String,
}
