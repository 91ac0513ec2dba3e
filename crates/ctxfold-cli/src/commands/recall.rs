//! `recall HANDLE`: what a fold's handle stands for, exactly (SPEC §16),
//! from whichever conversation of the store the handle belongs to.
//!
//! As text, standard output gets the recalled bytes and nothing else (the
//! output redirected to a file is the original), and standard error the
//! line saying what they were and what is left; as JSON, one document
//! with both.

use serde::Serialize;

use crate::cli::RecallArgs;
use crate::context::Context;
use crate::render::Report;

/// A page of what a handle stands for.
#[derive(Serialize)]
pub struct Recalled {
    /// The conversation the handle belongs to.
    conversation: String,
    /// The handle, as read.
    handle: String,
    /// What it stands for, in a few words.
    what: String,
    /// Where the page starts and ends, in characters.
    offset: usize,
    end: usize,
    /// Characters in the whole.
    total: usize,
    /// The page's text, exactly as the log holds it.
    text: String,
    #[serde(skip)]
    json: bool,
}

impl Report for Recalled {
    /// The recalled bytes as they are, in text mode: no newline added.
    fn raw(&self) -> Option<&[u8]> {
        (!self.json).then_some(self.text.as_bytes())
    }
}

impl std::fmt::Display for Recalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, offset, end, total) = (&self.what, self.offset, self.end, self.total);
        // After the recalled bytes on a terminal, which need not end a line.
        let lead = if self.text.ends_with('\n') || self.text.is_empty() {
            ""
        } else {
            "\n"
        };
        if end < total {
            writeln!(
                f,
                "{lead}[{what}: characters {offset}–{end} of {total}; the rest: ctxfold recall {} --offset {end}]",
                self.handle
            )
        } else if offset > 0 {
            writeln!(
                f,
                "{lead}[{what}: characters {offset}–{end} of {total}, the end]"
            )
        } else {
            writeln!(f, "{lead}[{what}: all {total} characters]")
        }
    }
}

pub fn run(ctx: &Context, args: RecallArgs) -> anyhow::Result<Recalled> {
    let target = ctx.target()?;
    let recaller = ctxfold_recall::Recaller::new(target.store, None);
    // All that follows the offset unless a limit is given.
    let limit = args
        .limit
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let got = recaller.recall_page(&args.handle, args.offset, limit)?;
    Ok(Recalled {
        conversation: got.conversation,
        handle: got.handle.to_string(),
        what: got.recalled.what,
        offset: got.page.offset,
        end: got.page.end,
        total: got.page.total,
        text: got.page.text,
        json: ctx.printer.is_json(),
    })
}
