//! `search QUERY`: where a word or phrase occurs in a conversation's raw
//! log, folded parts included, each hit with its handle for `recall`
//! (SPEC §16).

use serde::Serialize;

use crate::cli::SearchArgs;
use crate::context::Context;
use crate::render::Report;

/// What a search found.
#[derive(Serialize)]
pub struct Found {
    /// The conversation searched.
    conversation: String,
    /// The text looked for.
    query: String,
    /// The hits, newest first.
    hits: Vec<Hit>,
    /// Records that also hold it, past the limit.
    more: usize,
    #[serde(skip)]
    text: String,
}

/// One record holding the text.
#[derive(Serialize)]
struct Hit {
    handle: String,
    what: String,
    excerpt: String,
    count: usize,
}

impl Report for Found {}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

pub fn run(ctx: &Context, args: SearchArgs) -> anyhow::Result<Found> {
    let target = ctx.target()?;
    // The conversation: the one named, else the one `--within`'s handle
    // belongs to, else the active one.
    let scope = match (&args.conversation.id, &args.within) {
        (None, Some(_)) => None,
        (id, _) => Some(target.resolve(id.as_deref())?.id),
    };
    let recaller = ctxfold_recall::Recaller::new(target.store, scope);
    let limit = args
        .limit
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let searched = recaller.find(&args.query, args.within.as_deref(), limit)?;
    let text = searched.rendered();
    Ok(Found {
        hits: searched
            .found
            .hits
            .into_iter()
            .map(|h| Hit {
                handle: h.handle.to_string(),
                what: h.what,
                excerpt: h.excerpt,
                count: h.count,
            })
            .collect(),
        more: searched.found.more,
        conversation: searched.conversation,
        query: searched.query,
        text,
    })
}
