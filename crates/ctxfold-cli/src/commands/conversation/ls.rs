//! `conversation ls`: the conversations, the active one marked.

use ctxfold_store::ConversationMeta;
use serde::Serialize;

use crate::context::Context;
use crate::render::Report;

/// The conversations, and the folders that could not be read (named on
/// standard error, and listed in JSON, marked, so scripts see them).
pub struct Listing {
    conversations: Vec<ConversationMeta>,
    active: Option<String>,
    broken: Vec<Broken>,
}

#[derive(Serialize)]
struct Listed<'a> {
    id: &'a str,
    title: &'a Option<String>,
    created_at: &'a str,
    last_used_at: &'a str,
    active: bool,
}

#[derive(Serialize)]
struct Broken {
    id: String,
    broken: bool,
    error: String,
}

impl Report for Listing {}

impl Serialize for Listing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.conversations.len() + self.broken.len()))?;
        for c in &self.conversations {
            seq.serialize_element(&Listed {
                id: &c.id,
                title: &c.title,
                created_at: &c.created_at,
                last_used_at: &c.last_used_at,
                active: self.is_active(c),
            })?;
        }
        for b in &self.broken {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
}

impl Listing {
    fn is_active(&self, c: &ConversationMeta) -> bool {
        self.active.as_deref() == Some(c.id.as_str())
    }
}

impl std::fmt::Display for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.conversations.is_empty() {
            return f.write_str("no conversations; `ctxfold conversation import FILE` adds one");
        }
        for c in &self.conversations {
            let mark = if self.is_active(c) { "*" } else { " " };
            let title = c.title.as_deref().unwrap_or("(untitled)");
            writeln!(f, "{mark} {}  {title}", c.id)?;
        }
        Ok(())
    }
}

pub fn run(ctx: &Context) -> anyhow::Result<Listing> {
    let target = ctx.target()?;
    let listing = target.store.list()?;
    // One broken folder must not hide the others: list them, name it.
    let mut broken = Vec::new();
    for b in listing.broken {
        let error = format!("{:#}", anyhow::Error::from(b.error));
        crate::render::say!(
            "warning: conversation {} left out: {error}; `ctxfold conversation rm {}` moves it to the trash",
            b.id,
            b.id
        );
        broken.push(Broken {
            id: b.id,
            broken: true,
            error,
        });
    }
    let active = target.store.active()?;
    Ok(Listing {
        conversations: listing.conversations,
        active,
        broken,
    })
}
