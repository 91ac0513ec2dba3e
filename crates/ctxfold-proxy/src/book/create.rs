//! New conversations: recorded with the proxy's entry in their metadata
//! (key, shape, model, fork) and a title from the user's own words;
//! in a shared store, a key's first one gets an id made from the key.

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::{ConversationMeta, StoreError, create_new};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Book, META_KEY, PrepareError, stamp};
use crate::protocol::Shape;

impl Book {
    pub(super) fn create(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
        forked_from: Option<&str>,
    ) -> Result<String, PrepareError> {
        let (title, extras) = new_meta(shape, key, model, client, forked_from);
        Ok(create_new(&*self.store, title, None, extras, stamp(client))?.id)
    }

    /// Record `client` as the first conversation of `key`. In a shared
    /// store it gets an id made from the key, so two replicas that see the
    /// same first request at once cannot each start one: `None` when
    /// another made it first (look it up then).
    pub(super) fn create_first(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
    ) -> Result<Option<String>, PrepareError> {
        if !self.store.is_shared() {
            return Ok(Some(self.create(shape, key, model, client, None)?));
        }
        let (title, extras) = new_meta(shape, key, model, client, None);
        let digest = Sha256::digest(key.as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let now = ctxfold_store::now();
        let meta = ConversationMeta {
            id: format!("proxy-{hex}"),
            title,
            created_at: now.clone(),
            last_used_at: now,
            imported_from: None,
            extras,
        };
        match self.store.create(&meta, stamp(client)) {
            Ok(_) => Ok(Some(meta.id)),
            Err(StoreError::ConversationExists { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A new conversation's title: the user's newest own words in the request
/// that started it, skipping the wrappers agents put around what they add
/// (Claude Code's `<system-reminder>` blocks and `<command-…>` tags,
/// Codex's `<environment_context>`, `<user_instructions>` and AGENTS.md
/// message); the first user message whatever it holds when nothing else
/// is there.
///
/// The newest, not the first: what comes before it in a conversation's
/// first request is the agent's own context (aider's example exchange,
/// "I am not sharing any files that you can edit yet."), the same in
/// every conversation it starts, while its newest message is what the
/// user asked.
pub(super) fn title_from(client: &[Record]) -> Option<String> {
    let users: Vec<&str> = client
        .iter()
        .filter_map(|r| match &r.body {
            Body::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    (users.iter().rev().find_map(|u| own_words(u)))
        .or(users.first().copied())
        .map(title_of)
}

/// `text` after the wrappers it starts with (elements `<tag …>…</tag>`, as
/// agents add them), or `None` when nothing else is there.
fn own_words(text: &str) -> Option<&str> {
    // Codex's AGENTS.md instructions (codex-rs `USER_INSTRUCTIONS_PREFIX`).
    if text.starts_with("# AGENTS.md instructions for ") {
        return None;
    }
    let mut rest = text.trim_start();
    while let Some(after) = rest.strip_prefix('<') {
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let opens = after[name_len..].starts_with(|c: char| c == '>' || c.is_whitespace());
        if name.is_empty() || !opens {
            break;
        }
        let close = format!("</{name}>");
        match rest.find(&close) {
            Some(at) => rest = rest[at + close.len()..].trim_start(),
            // Not an element: the user's own `<`.
            None => break,
        }
    }
    (!rest.trim().is_empty()).then_some(rest)
}

/// Longest title kept whole, in characters.
const TITLE_CHARS: usize = 72;

/// A title from `text`: its first line, whole up to [`TITLE_CHARS`];
/// longer, its start and its end around ` … `, each cut at a word, so
/// that requests alike but at their end (runs of one script) keep titles
/// apart.
fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= TITLE_CHARS {
        return line.to_owned();
    }
    let (head_max, tail_max) = (TITLE_CHARS * 2 / 3, TITLE_CHARS / 3 - 3);
    // At the last space that leaves most of the part, else mid-word.
    let head_end = (head_max / 2..=head_max)
        .rev()
        .find(|&i| chars[i].is_whitespace())
        .unwrap_or(head_max);
    let tail_start = (chars.len() - tail_max..chars.len() - tail_max / 2)
        .find(|&i| chars[i - 1].is_whitespace())
        .unwrap_or(chars.len() - tail_max);
    let head: String = chars[..head_end].iter().collect();
    let tail: String = chars[tail_start..].iter().collect();
    format!("{} … {}", head.trim_end(), tail.trim_start())
}

/// A new conversation's title (its first user message) and the proxy's
/// entry in its metadata.
fn new_meta(
    shape: Shape,
    key: &str,
    model: &str,
    client: &[Record],
    forked_from: Option<&str>,
) -> (Option<String>, Object) {
    let title = title_from(client);
    let mut meta = json!({"key": key, "shape": shape.name(), "model": model});
    // The session the agent named, when that is what keyed it.
    if let Some(rest) = key.strip_prefix("session:")
        && let Some((agent, id)) = rest.split_once(':')
    {
        meta["session"] = json!({"agent": agent, "id": id});
    }
    if let Some(f) = forked_from {
        meta["forked_from"] = json!(f);
    }
    let mut extras = Object::new();
    extras.insert(META_KEY.into(), meta);
    (title, extras)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(t: &str) -> Record {
        Record::new(
            0,
            "",
            Body::User {
                content: t.into(),
                author: None,
            },
        )
    }

    #[test]
    fn titles_are_the_users_own_words_not_the_agents_wrappers() {
        let claude = [
            user("<system-reminder>\nContext: today is Tuesday.\n</system-reminder>"),
            user("<command-name>/review</command-name>\n<command-args></command-args>"),
            user("Fix the failing test\nin src/lib.rs"),
        ];
        assert_eq!(title_from(&claude).as_deref(), Some("Fix the failing test"));
        let codex = [
            user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>be kind</INSTRUCTIONS>"),
            user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
            user("<user_instructions>x</user_instructions>\n\nRename the crate"),
        ];
        assert_eq!(title_from(&codex).as_deref(), Some("Rename the crate"));
        // The user's own `<`, and a message that is only wrappers.
        assert_eq!(
            title_from(&[user("<div> is not centred")]).as_deref(),
            Some("<div> is not centred")
        );
        assert_eq!(
            title_from(&[user("<task>only this</task>")]).as_deref(),
            Some("<task>only this</task>"),
            "nothing else: the first message as before"
        );
        assert_eq!(title_from(&[]), None);
    }

    #[test]
    fn a_title_is_the_newest_request_not_the_agents_context_and_keeps_its_end() {
        // aider's first request: its example exchange and chat-files
        // message, then what was typed with its reminder.
        let aider = [
            user("Change the greeting to be more casual"),
            user("I am not sharing any files that you can edit yet."),
            user("Make the retry loop back off\n\nTo suggest changes you MUST ..."),
        ];
        assert_eq!(
            title_from(&aider).as_deref(),
            Some("Make the retry loop back off")
        );
        // Two runs of a script, alike but at their end.
        let run = |n: u32| {
            title_from(&[user(&format!(
                "Benchmark the parser on the large corpus and report the p99 latency for run {n}"
            ))])
            .unwrap()
        };
        assert_ne!(run(1), run(2));
        assert!(run(1).ends_with("for run 1"), "{}", run(1));
        assert!(run(1).starts_with("Benchmark the parser"), "{}", run(1));
        assert!(run(1).chars().count() <= TITLE_CHARS, "{}", run(1));
        // Short enough: whole.
        assert_eq!(title_of("Fix the bug"), "Fix the bug");
    }
}
