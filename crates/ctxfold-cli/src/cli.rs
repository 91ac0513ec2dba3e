//! The command-line surface (SPEC §11), as clap definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ctxfold_formats::Format;

/// Keep long LLM agent conversations lean without losing them.
#[derive(Debug, Parser)]
#[command(name = "ctxfold", version, about, propagate_version = true)]
pub struct Cli {
    /// How to print data: for people (text) or programs (json).
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

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

/// A transcript format, or `auto` to detect it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// Tell from the file.
    Auto,
    /// ctxfold's own JSONL log.
    Ctxfold,
    /// A JP conversation folder.
    Jp,
    /// OpenAI chat `messages`.
    Openai,
    /// Anthropic `messages`.
    Anthropic,
}

impl InputFormat {
    /// The format, or `None` for auto.
    pub fn format(self) -> Option<Format> {
        match self {
            InputFormat::Auto => None,
            InputFormat::Ctxfold => Some(Format::Ctxfold),
            InputFormat::Jp => Some(Format::Jp),
            InputFormat::Openai => Some(Format::Openai),
            InputFormat::Anthropic => Some(Format::Anthropic),
        }
    }
}

/// A transcript format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputTranscript {
    /// ctxfold's own JSONL log.
    Ctxfold,
    /// A JP conversation folder.
    Jp,
    /// OpenAI chat `messages`.
    Openai,
    /// Anthropic `messages`.
    Anthropic,
}

impl From<OutputTranscript> for Format {
    fn from(f: OutputTranscript) -> Format {
        match f {
            OutputTranscript::Ctxfold => Format::Ctxfold,
            OutputTranscript::Jp => Format::Jp,
            OutputTranscript::Openai => Format::Openai,
            OutputTranscript::Anthropic => Format::Anthropic,
        }
    }
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a `.ctxfold/` workspace in the current directory.
    Init,
    /// Work with the conversations of the workspace.
    #[command(visible_alias = "c", subcommand)]
    Conversation(ConversationCommand),
}

/// `ctxfold conversation …`
#[derive(Debug, Subcommand)]
pub enum ConversationCommand {
    /// List the conversations.
    Ls,
    /// Show a conversation: metadata and what it holds.
    Show(IdArg),
    /// Print a conversation's events.
    Print(IdArg),
    /// Import a transcript as a new conversation; prints its id.
    Import {
        /// A transcript file, or a JP or ctxfold conversation folder.
        path: PathBuf,
        /// The transcript's format.
        #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
        input_format: InputFormat,
    },
    /// Export a conversation as a transcript.
    Export {
        /// The conversation (default: the active one).
        id: Option<String>,
        /// The transcript format to write.
        #[arg(long, value_enum, default_value_t = OutputTranscript::Ctxfold)]
        output_format: OutputTranscript,
        /// Where to write (a folder for jp); standard output if omitted.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Append records (ctxfold JSONL, `seq` optional) to a conversation.
    Append {
        /// The conversation (default: the active one).
        id: Option<String>,
        /// A JSONL file, or `-` for standard input.
        #[arg(long, default_value = "-")]
        input: PathBuf,
    },
    /// Make a conversation the active one.
    Use {
        /// The conversation's id (or a unique prefix).
        id: String,
    },
    /// Move a conversation to the workspace's trash.
    Rm {
        /// The conversation's id (or a unique prefix).
        id: String,
    },
}

/// An optional conversation id.
#[derive(Debug, Args)]
pub struct IdArg {
    /// The conversation (default: the active one).
    pub id: Option<String>,
}
