//! `ctxfold query` (`q`): one turn of the agent in the active conversation
//! (or a new one), on the terminal.
//!
//! - The message comes from the arguments, else standard input when it is
//!   piped, else `$EDITOR`.
//! - The model is `-m provider/model`, remembered by the conversation for
//!   the next query.
//! - Output streams on a terminal (reasoning dimmed), is plain text when
//!   piped; tool runs and compactions are one line each on standard error;
//!   `--format json` prints one document at the end instead.
//! - Ctrl-C ends the turn cleanly (what was recorded stays; a tool call left
//!   without its result gets an `interrupted` error result); a second
//!   Ctrl-C exits at once, and the next query repairs the log the same way.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, bail};
use ctxfold_compactor::{BasicCompactor, Conversation, Outcome};
use ctxfold_host::builtin::compact::CompactTool;
use ctxfold_host::builtin::{self, Builtins, Offered};
use ctxfold_host::turn::{Host, ToolOutput, ToolRunner, TurnEnd, Ui};
use ctxfold_providers::ToolSpec;
use serde_json::{Value, json};

use crate::cli::QueryArgs;
use crate::compacting::run_rules;
use crate::context::Context;
use crate::render::Report;
use crate::rules::{plan_context, rules_from_flags, spec_flags};
use crate::settings::Settings;

/// Key of ctxfold's own data in a conversation's `meta.json` extras.
const META_KEY: &str = "ctxfold";

/// The turn for programs (`--format json`): the host's report, with the
/// conversation and the events the turn recorded. Its text is empty: on
/// a terminal the turn streams as it goes.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct Turn(Value);

impl Report for Turn {}

impl std::fmt::Display for Turn {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Ok(())
    }
}

/// Run one turn. Not a report for `main` to print: the turn streams to
/// the terminal as it goes, and how it ended decides the exit after its
/// JSON is printed (an interrupted turn exits 130 at once, holding the
/// turn's lock as it always has; a turn stopped at the step limit is an
/// error), so it prints its [`Turn`] itself, through the printer.
pub fn run(ctx: &Context, args: QueryArgs) -> anyhow::Result<()> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let (args, out) = (&args, &ctx.printer);
    let named = named_builtins(args, settings)?;
    let message = message(args)?;
    let store: &dyn ctxfold_store::Store = &*target.store;
    let new =
        || ctxfold_store::create_new(store, None, None, ctxfold_core::Object::new(), Vec::new());
    let mut meta = if args.new {
        new()?
    } else {
        match store.active()? {
            Some(id) => store.read_meta(&id)?,
            None => new()?,
        }
    };
    let remembered = meta
        .extras
        .get(META_KEY)
        .and_then(|v| v.get("model"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(model_name) = args.model.clone().or(remembered) else {
        bail!(
            "name the model with -m provider/model (for example -m local/smollm2 or -m openai/gpt-4o-mini); the conversation remembers it"
        );
    };
    let (provider, model) = settings
        .providers
        .resolve(&model_name)
        .with_context(|| format!("-m {model_name}"))?;
    let window = match args.window {
        Some(w) => Some(w),
        None => ctxfold_tokens::context_window(&model)
            .or(provider.context_window(&model).ok().flatten()),
    };
    if window.is_none() {
        tracing::warn!(
            "the context window of {model_name} is not known: no automatic compaction (give --window N)"
        );
    }
    // Remember the model and make the conversation the active one.
    // Whatever a hand-edited meta.json holds there, ctxfold's entry is an
    // object again (a value of another shape is replaced, not indexed).
    let mut extras = match meta.extras.remove(META_KEY) {
        Some(Value::Object(o)) => o,
        _ => serde_json::Map::new(),
    };
    extras.insert("model".into(), json!(model_name));
    meta.extras.insert(META_KEY.into(), Value::Object(extras));
    store.write_meta(&meta)?;
    let meta = store.set_active(&meta.id)?;

    // One turn at a time: a second query would interleave its events with
    // this one's (and close its running tool calls as interrupted).
    let Some(_turn) = store.try_turn_lock(&meta.id)? else {
        bail!(
            "conversation {} is running a turn in another ctxfold query; wait for it to finish, or start another with --new",
            meta.id
        );
    };
    let log = target.load(&meta.id)?;
    let journal = target.journal(&meta.id);
    let mut conv = Conversation::new(log, &journal);
    let mut tools = QueryTools::new(settings, args.yes, settings.recall_tools && !args.no_recall);
    if named.contains(&builtin::compact::NAME) {
        let mut tool = CompactTool::new(&meta.id, settings.hints.clone());
        tool.run = settings.compact_run;
        tool.yes = args.yes;
        tools.builtins.compact(tool);
    }
    if !args.compact.is_empty() {
        compact_before_turn(&mut conv, &args.compact, settings)?;
    }
    let host = Host {
        provider,
        model,
        system: settings.system.clone(),
        compactor: BasicCompactor::new(
            settings.auto.clone(),
            settings.hints.clone(),
            Box::new(ctxfold_tokens::Heuristic::default()),
            Box::new(crate::summarizers::CliSummarizers::new(settings.clone())),
        ),
        window,
        auto: settings.auto.enabled && !args.no_auto,
        step_limit: settings.step_limit,
        max_tokens: None,
        force_tool: args.use_tool.clone(),
    };
    let cancel = interrupts();
    let mut ui = Terminal::new(out.is_json());
    ui.hide_reasoning = settings.hide_reasoning;
    let report = host.run_turn(&mut conv, &message, &mut tools, &mut ui, &cancel)?;
    ui.finish();
    // What the next request holds besides the view.
    let fixed = host.extra_tokens(&tools.specs(conv.log()));
    // The fixed part, for `stats` and the pages; only the figures suffer
    // if it cannot be written.
    let noted = store.read_meta(&meta.id).and_then(|mut m| {
        if m.set_fixed_tokens(META_KEY, fixed) {
            store.write_meta(&m)?;
        }
        Ok(())
    });
    if let Err(e) = noted {
        tracing::warn!(
            "conversation {}: the fixed part was not recorded: {e}",
            meta.id
        );
    }
    let log = conv.log();
    if out.is_json() {
        let events: Vec<Value> = log.records()[report.first_record..]
            .iter()
            .map(|r| Value::Object(r.to_object()))
            .collect();
        let fields = [("id", json!(meta.id)), ("events", Value::Array(events))];
        let v = crate::render::with_fields(serde_json::to_value(&report)?, fields);
        out.print(&Turn(v))?;
    }
    match report.end {
        TurnEnd::Answered => Ok(()),
        TurnEnd::Interrupted => {
            crate::render::say!("interrupted; what was recorded stays in {}", meta.id);
            std::process::exit(130);
        }
        TurnEnd::StepLimit { limit } => bail!(
            "the model called tools {limit} times in a row without answering; the turn was stopped (what it did is recorded in {})",
            meta.id
        ),
    }
}

/// The built-in tools `-t` and `-u` name. A built-in tool is off unless
/// named (`-u NAME` implies `-t NAME`), except those offered while a
/// compaction is in force, which are not named; a name in `[tools]` is a
/// local tool, offered without `-t`.
fn named_builtins(args: &QueryArgs, settings: &Settings) -> anyhow::Result<Vec<&'static str>> {
    let on_demand = builtin::names(Offered::WhenNamed).join(", ");
    let mut named: Vec<&'static str> = Vec::new();
    for t in args.tools.iter().chain(&args.use_tool) {
        let flag = if args.tools.contains(t) { "-t" } else { "-u" };
        if settings.tools.contains_key(t) {
            if flag == "-t" {
                bail!(
                    "-t {t}: {t} is a tool declared in config, offered without -t; -t names the built-in tools ({on_demand})"
                );
            }
            continue;
        }
        match builtin::find(t) {
            Some(b) if b.offered == Offered::WhenNamed => {
                if !named.contains(&b.name) {
                    named.push(b.name);
                }
            }
            Some(b) => bail!(
                "{flag} {t}: {} is offered by itself whenever a compaction is in force (--no-recall or [query] recall_tools = false turn it off); {flag} names the built-in tools that are off unless named ({on_demand})",
                b.name
            ),
            None if flag == "-t" => bail!(
                "-t {t}: no such built-in tool; the built-in tools are: {on_demand} (tools declared in config, [tools.NAME] command = …, are offered without -t)"
            ),
            None => {
                let mut known: Vec<&str> = settings.tools.keys().map(String::as_str).collect();
                known.extend(builtin::names(Offered::WhenNamed));
                bail!("-u {t}: no such tool; the tools are: {}", known.join(", "));
            }
        }
    }
    Ok(named)
}

/// `query -k SPEC…`: compact the conversation before the turn, saying what
/// was done on standard error.
pub fn compact_before_turn(
    conv: &mut Conversation<'_>,
    specs: &[String],
    settings: &Settings,
) -> anyhow::Result<()> {
    let rules = rules_from_flags(&spec_flags(specs), settings)?;
    let ctx = plan_context(settings, Some("before a query (-k)"));
    let run = run_rules(conv, &rules, &ctx, settings, false)?;
    for (c, e) in run.compactions.iter().zip(&run.effects) {
        crate::render::say!(
            "compacted turns {}–{}: {}",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            e.describe(c).join(", ")
        );
    }
    Ok(())
}

/// The message: the arguments, else standard input when piped, else the
/// editor.
fn message(args: &QueryArgs) -> anyhow::Result<String> {
    let text = if !args.message.is_empty() {
        args.message.join(" ")
    } else if !std::io::stdin().is_terminal() {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the message from standard input")?;
        s
    } else {
        let editor = std::env::var("VISUAL")
            .or_else(|_| std::env::var("EDITOR"))
            .unwrap_or_else(|_| "vi".into());
        let file = tempfile::Builder::new().suffix(".md").tempfile()?;
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(file.path())
            .status()
            .with_context(|| format!("running the editor `{editor}`"))?;
        if !status.success() {
            bail!("the editor `{editor}` failed ({status}); nothing was sent");
        }
        std::fs::read_to_string(file.path())?
    };
    let text = text.trim().to_owned();
    if text.is_empty() {
        bail!("the message is empty; nothing was sent");
    }
    Ok(text)
}

/// Ctrl-C (and SIGTERM, SIGHUP) sets the flag the turn checks, which stops
/// a running tool and its process group; a second one exits at once.
fn interrupts() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            // The log is valid at every append; the next query repairs an
            // unclosed step.
            std::process::exit(130);
        }
        crate::render::say!("\n(stopping after the current step; Ctrl-C again to quit now)");
    });
    flag
}

/// The turn on the terminal: text to standard output as it streams,
/// reasoning dimmed (on a terminal only), one line per tool run and per
/// compaction on standard error.
struct Terminal {
    quiet: bool,
    tty: bool,
    hide_reasoning: bool,
    in_reasoning: bool,
    wrote: bool,
}

impl Terminal {
    fn new(quiet: bool) -> Self {
        Terminal {
            quiet,
            tty: std::io::stdout().is_terminal(),
            hide_reasoning: false,
            in_reasoning: false,
            wrote: false,
        }
    }

    fn write(&mut self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            self.in_reasoning = false;
            self.write("\x1b[0m\n");
        }
    }

    fn finish(&mut self) {
        self.end_reasoning();
        if self.wrote && !self.quiet {
            self.write("\n");
        }
    }
}

impl Ui for Terminal {
    fn text(&mut self, piece: &str) {
        if self.quiet {
            return;
        }
        self.end_reasoning();
        self.wrote = true;
        self.write(piece);
    }

    fn reasoning(&mut self, piece: &str) {
        if self.quiet || !self.tty || self.hide_reasoning {
            return;
        }
        if !self.in_reasoning {
            self.in_reasoning = true;
            self.write("\x1b[2m");
        }
        self.write(piece);
    }

    fn tool_call(&mut self, _name: &str) {}

    fn tool_result(&mut self, name: &str, output: &ToolOutput) {
        if self.quiet {
            return;
        }
        self.end_reasoning();
        let status = if output.is_error { "failed" } else { "ok" };
        let first = output.content.lines().next().unwrap_or("");
        let first: String = first.chars().take(100).collect();
        crate::render::say!("[{name}: {status}] {first}");
    }

    fn compaction(&mut self, outcome: &Outcome) {
        if self.quiet {
            return;
        }
        self.end_reasoning();
        crate::render::to_stderr(&crate::auto::describe(outcome));
    }

    fn recorded(&mut self, compactions: &[(usize, ctxfold_compactor::Committed)]) {
        if self.quiet {
            return;
        }
        self.end_reasoning();
        for (n, c) in compactions {
            let k = &c.compaction;
            crate::render::say!(
                "compaction #{n} recorded (turns {}–{}: {}), in effect from the next turn; undo: ctxfold conversation compact --reset={n}",
                u64::from(k.from_turn) + 1,
                u64::from(k.to_turn) + 1,
                c.effect.describe(k).join(", ")
            );
        }
    }

    fn step_end(&mut self) {
        self.end_reasoning();
        if self.wrote && !self.quiet {
            self.write("\n");
            self.wrote = false;
        }
    }
}

/// The tools of a query: the local tools declared in config, run with
/// approval (`ask` asks on the terminal, or declines without one unless
/// `--yes`), and the built-in ones ([`Builtins`]: `compact` when named,
/// `recall` and `search` while a compaction is in force unless off).
pub struct QueryTools {
    decls: std::collections::BTreeMap<String, ctxfold_config::ToolDecl>,
    yes: bool,
    /// Environment variables holding provider keys: a tool never sees them.
    secrets: Vec<String>,
    /// The built-in tools of this query.
    builtins: Builtins,
}

impl QueryTools {
    /// The tools of `settings`; `yes` approves every call; `recall` offers
    /// `recall` and `search` while a compaction is in force.
    pub fn new(settings: &Settings, yes: bool, recall: bool) -> Self {
        QueryTools {
            decls: settings.tools.clone(),
            yes,
            secrets: settings.providers.key_variables(),
            builtins: Builtins::new(recall, settings.tools.keys().cloned()),
        }
    }

    fn names(&self, log: &ctxfold_core::Log) -> Vec<String> {
        self.specs(log).into_iter().map(|s| s.name).collect()
    }
}

impl ToolRunner for QueryTools {
    fn specs(&self, log: &ctxfold_core::Log) -> Vec<ToolSpec> {
        let mut specs = ctxfold_host::tools::tool_specs(self.decls.values());
        specs.extend(self.builtins.specs(log));
        specs
    }

    fn run(
        &mut self,
        id: &str,
        name: &str,
        arguments: &Value,
        log: &ctxfold_core::Log,
        cancel: &AtomicBool,
    ) -> ToolOutput {
        use ctxfold_host::approval::{
            Decision, Presenter, decide_on_terminal, decide_on_terminal_with,
        };
        use ctxfold_host::tools::{ToolResult, run_tool};
        let mut decide = |run, args: &Value, yes, presenter: &mut dyn Presenter| {
            decide_on_terminal_with(run, args, yes, presenter, name)
        };
        if let Some(output) = self.builtins.run(id, name, arguments, log, &mut decide) {
            return output;
        }
        let Some(decl) = self.decls.get(name) else {
            let known = self.names(log);
            return ToolOutput::text(
                format!(
                    "there is no tool named `{name}`; the tools are: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
                true,
            );
        };
        let result = match decide_on_terminal(decl, arguments, self.yes) {
            Ok(Decision::Run(args)) => run_tool(decl, &args, cancel, &self.secrets),
            Ok(Decision::Decline { reason }) => ToolResult::declined(reason.as_deref()),
            Err(e) => ToolResult::declined(Some(&format!("the terminal could not be read: {e}"))),
        };
        ToolOutput::text(result.content, result.is_error)
    }
}
