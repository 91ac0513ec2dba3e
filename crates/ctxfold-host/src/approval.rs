//! Whether a tool call runs: the tool's `run` mode, the host's `--yes`,
//! and for `ask` a prompt on the terminal.
//!
//! | `run`        | `--yes` | terminal | what happens                          |
//! |--------------|---------|----------|---------------------------------------|
//! | `unattended` | any     | any      | runs                                  |
//! | `ask`/`edit` | yes     | any      | runs as the model asked               |
//! | `ask`/`edit` | no      | none     | declined (no one to ask)              |
//! | `ask`        | no      | yes      | prompt: `y`, `n` (+ reason), `e`, `?` |
//! | `edit`       | no      | yes      | the editor opens first, then it runs  |
//!
//! [`decide`] holds the logic over any input and output (tests drive it in
//! memory); [`decide_on_terminal`] is the thin wrapper over standard input
//! (when it is a terminal) and standard error, which `ctxfold query` uses.
//! The editor is a real process in both: `$VISUAL`, else `$EDITOR`, else
//! `vi`, run with a temporary `.json` file holding the arguments.

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::Command;

use ctxfold_config::{RunMode, ToolDecl};
use serde_json::Value;

/// The reason given to the model when no one could be asked.
pub const NO_TERMINAL: &str = "no one could be asked to approve it: ctxfold is not running on a terminal (--yes approves every tool call)";

const HELP: &str = concat!(
    "  y  run the tool with the arguments shown\n",
    "  n  do not run it; you may then give the model a reason\n",
    "  e  edit the arguments (JSON) in your editor, then decide\n",
    "  ?  this help\n",
);

/// Whether a tool call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run it with these arguments (the model's, or the user's edit).
    Run(Value),
    /// Do not run it; the reason, if any, goes to the model (see
    /// [`ToolResult::declined`](crate::tools::ToolResult::declined)).
    Decline {
        /// One line from the user, or why no one was asked.
        reason: Option<String>,
    },
}

/// Where to ask: a line-based input, an output for the prompt, and the
/// editor command (`code --wait`, `vim`: split like a shell would).
pub struct Prompt<'a> {
    /// The answers, one a line.
    pub input: &'a mut dyn BufRead,
    /// The prompt, the arguments and any messages.
    pub output: &'a mut dyn Write,
    /// The editor to run for `e` and `run = "edit"`.
    pub editor: String,
}

/// The editor from the environment: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_from_env() -> String {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// How the prompt shows a call, and whether its arguments can run.
pub trait Presenter {
    /// Write the call with `args` as the person deciding should see it.
    /// `false` when these arguments cannot run as they are (what is wrong
    /// written too): `y` is then refused until an edit fixes them.
    fn present(&mut self, args: &Value, out: &mut dyn Write) -> io::Result<bool>;

    /// Whether the call is always shown and confirmed before it runs, also
    /// after the editor in `edit` mode (which otherwise runs a valid edit
    /// at once).
    fn always_ask(&self) -> bool {
        false
    }
}

/// A call shown as its name and its arguments, pretty JSON in full. (What
/// `y` runs is exactly what is shown: a shortened value could hide its
/// tail.)
pub struct Json<'a>(pub &'a str);

impl Presenter for Json<'_> {
    fn present(&mut self, args: &Value, out: &mut dyn Write) -> io::Result<bool> {
        writeln!(out, "Tool call: {}", self.0)?;
        write!(out, "{}", pretty(args))?;
        Ok(true)
    }
}

/// Decide on a call of `decl` with `arguments`, asking on the terminal when
/// standard input is one (the prompt goes to standard error, so that
/// standard output holds only the turn).
pub fn decide_on_terminal(decl: &ToolDecl, arguments: &Value, yes: bool) -> io::Result<Decision> {
    decide_on_terminal_with(decl.run, arguments, yes, &mut Json(&decl.name), &decl.name)
}

/// [`decide_on_terminal`] for a tool of run mode `run` named `name`, shown
/// by `presenter`.
pub fn decide_on_terminal_with(
    run: RunMode,
    arguments: &Value,
    yes: bool,
    presenter: &mut dyn Presenter,
    name: &str,
) -> io::Result<Decision> {
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        return decide_with(name, run, arguments, yes, None, presenter);
    }
    let mut input = stdin.lock();
    let mut output = io::stderr().lock();
    decide_with(
        name,
        run,
        arguments,
        yes,
        Some(Prompt {
            input: &mut input,
            output: &mut output,
            editor: editor_from_env(),
        }),
        presenter,
    )
}

/// Decide on a call of `decl` with `arguments`; `prompt` is `None` when no
/// one can be asked. Errors are those of the prompt's input and output.
pub fn decide(
    decl: &ToolDecl,
    arguments: &Value,
    yes: bool,
    prompt: Option<Prompt>,
) -> io::Result<Decision> {
    decide_with(
        &decl.name,
        decl.run,
        arguments,
        yes,
        prompt,
        &mut Json(&decl.name),
    )
}

/// [`decide`] for a tool of run mode `run` named `name`, shown by
/// `presenter`.
pub fn decide_with(
    name: &str,
    run: RunMode,
    arguments: &Value,
    yes: bool,
    prompt: Option<Prompt>,
    presenter: &mut dyn Presenter,
) -> io::Result<Decision> {
    if run == RunMode::Unattended || yes {
        return Ok(Decision::Run(arguments.clone()));
    }
    let Some(mut p) = prompt else {
        return Ok(Decision::Decline {
            reason: Some(NO_TERMINAL.to_owned()),
        });
    };
    let mut draft = Draft::new(arguments);
    if run == RunMode::Edit {
        match draft.edit(&mut p)? {
            // Checked quietly: an edit that can run, runs.
            Edited::Valid
                if !presenter.always_ask()
                    && presenter.present(&draft.args, &mut io::sink())? =>
            {
                return Ok(Decision::Run(draft.args));
            }
            Edited::Emptied => {
                writeln!(p.output, "The arguments were emptied: {name} not run.")?;
                return Ok(Decision::Decline { reason: None });
            }
            // Said why (or the prompt will); the prompt takes over, the
            // edit kept for `e`.
            Edited::Valid | Edited::Kept => {}
        }
    }
    ask(name, draft, &mut p, presenter)
}

/// The prompt loop for `ask` (and for `edit` when the edit went wrong).
fn ask(
    name: &str,
    mut draft: Draft,
    p: &mut Prompt,
    presenter: &mut dyn Presenter,
) -> io::Result<Decision> {
    let mut runnable = presenter.present(&draft.args, p.output)?;
    loop {
        write!(p.output, "Run {name}? [y/n/e/?] ")?;
        p.output.flush()?;
        let Some(answer) = read_line(p.input)? else {
            // End of input: nothing more can be asked; not running is safe.
            writeln!(p.output, "\nNo answer: {name} not run.")?;
            return Ok(Decision::Decline { reason: None });
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" if runnable => return Ok(Decision::Run(draft.args)),
            "y" | "yes" => writeln!(
                p.output,
                "These arguments cannot run as they are (see above): e edits them, n declines."
            )?,
            "n" | "no" => {
                write!(
                    p.output,
                    "Reason for the model (optional, Enter for none): "
                )?;
                p.output.flush()?;
                let reason = read_line(p.input)?
                    .map(|r| r.trim().to_owned())
                    .filter(|r| !r.is_empty());
                return Ok(Decision::Decline { reason });
            }
            "e" | "edit" => match draft.edit(p)? {
                Edited::Valid => runnable = presenter.present(&draft.args, p.output)?,
                Edited::Emptied => writeln!(
                    p.output,
                    "The edit left no arguments; they are unchanged. y runs them as shown, n declines."
                )?,
                Edited::Kept => {}
            },
            "?" | "h" | "help" => write!(p.output, "{HELP}")?,
            "" => {}
            other => writeln!(p.output, "{other:?} is not an answer: y, n, e or ? (help)")?,
        }
    }
}

/// The arguments, and the text the editor opens next: the arguments, or an
/// edit that did not parse (kept, so fixing it does not mean starting
/// over).
struct Draft {
    args: Value,
    text: String,
}

enum Edited {
    /// The edit is a JSON object: it is now the arguments.
    Valid,
    /// The file was left empty.
    Emptied,
    /// The editor failed or the edit was not a JSON object; the message
    /// was written, the arguments are unchanged.
    Kept,
}

impl Draft {
    fn new(args: &Value) -> Draft {
        Draft {
            args: args.clone(),
            text: pretty(args),
        }
    }

    fn edit(&mut self, p: &mut Prompt) -> io::Result<Edited> {
        let text = match run_editor(&p.editor, &self.text) {
            Ok(t) => t,
            Err(why) => {
                writeln!(p.output, "{why}; the arguments are unchanged.")?;
                return Ok(Edited::Kept);
            }
        };
        if text.trim().is_empty() {
            return Ok(Edited::Emptied);
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => {
                self.text = pretty(&v);
                self.args = v;
                Ok(Edited::Valid)
            }
            Ok(_) => {
                self.text = text;
                writeln!(
                    p.output,
                    "The edited arguments are not a JSON object ({{…}}); the arguments are unchanged. e edits again, y runs the arguments shown."
                )?;
                Ok(Edited::Kept)
            }
            Err(e) => {
                self.text = text;
                writeln!(
                    p.output,
                    "The edited arguments are not valid JSON ({e}); the arguments are unchanged. e edits again, y runs the arguments shown."
                )?;
                Ok(Edited::Kept)
            }
        }
    }
}

/// Run `editor` on a temporary file holding `text`; the file's text
/// afterwards, or why there is none.
fn run_editor(editor: &str, text: &str) -> Result<String, String> {
    let words = shlex::split(editor)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| format!("The editor command {editor:?} cannot be read"))?;
    let file = tempfile::Builder::new()
        .prefix("ctxfold-arguments-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("Cannot make a file to edit: {e}"))?;
    std::fs::write(file.path(), text)
        .map_err(|e| format!("Cannot write {}: {e}", file.path().display()))?;
    let status = Command::new(&words[0])
        .args(&words[1..])
        .arg(file.path())
        .status()
        .map_err(|e| format!("Cannot run the editor {editor:?}: {e}"))?;
    if !status.success() {
        return Err(format!("The editor {editor:?} failed ({status})"));
    }
    std::fs::read_to_string(file.path())
        .map_err(|e| format!("Cannot read the edited {}: {e}", file.path().display()))
}

fn read_line(input: &mut dyn BufRead) -> io::Result<Option<String>> {
    let mut s = String::new();
    Ok((input.read_line(&mut s)? > 0).then_some(s))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()) + "\n"
}
