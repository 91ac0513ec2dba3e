//! Recall handles: the short name every fold in a view carries for what it
//! stands for (SPEC §16), so the model can ask for it back.
//!
//! A handle is `TAG:TARGET`. The tag names the conversation: five
//! characters hashed from the log's first record (its `seq`, time, type
//! and text), which never changes once written (the log is append-only),
//! so the tag, and with it every placeholder's text, is the same in every
//! later projection and the provider's cached prefix does not move. It is
//! computed from the records alone: a process that has only the store
//! finds the conversation by computing each one's tag. Two conversations
//! whose first records are the same (a fork, two imports of one file)
//! share a tag; the resolver then takes the one in scope, else the most
//! recently used.
//!
//! The target names records by their position among the conversation's
//! records, ctxfold's own overlay records (compactions, resets, attempts:
//! [`is_overlay`](crate::position::is_overlay)) not counted (see
//! [`crate::position`]). Positions never change as the log grows,
//! and they are the same in a log, in its replay with automatic
//! compaction (which puts compactions between the records) and in the
//! transcript it was imported from, so a handle written into a compacted
//! transcript recalls from its input too.
//!
//! | text | stands for |
//! | --- | --- |
//! | `k3f9q:41` | record 41 (a stripped or clipped result, a clipped user message, a stripped call's arguments) |
//! | `k3f9q:41/content` | the value at a JSON pointer in record 41's tool-call arguments (a stripped argument) |
//! | `k3f9q:12-57` | records 12 to 57 (a summary) |

use std::fmt;
use std::str::FromStr;

use crate::record::{Body, Record};

/// Characters a tag is written with: lower-case letters and digits, with
/// the ones easily misread (`0`/`o`, `1`/`l`/`i`) left out.
const ALPHABET: &[u8; 31] = b"abcdefghjkmnpqrstuvwxyz23456789";

/// Length of a tag. Five of 31 characters: about 28 million tags, so two
/// conversations of one store share one only by rare chance (and then the
/// resolver still tells them apart by scope and by what each holds).
pub const TAG_LEN: usize = 5;

/// The conversation part of a handle (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag([u8; TAG_LEN]);

impl Default for Tag {
    /// A tag of no log (`aaaaa`): what an empty log's view would name, had
    /// it anything to fold.
    fn default() -> Tag {
        Tag([ALPHABET[0]; TAG_LEN])
    }
}

impl Tag {
    /// The tag of a log whose first record is `first`.
    pub(crate) fn of_first(first: &Record) -> Tag {
        // FNV-1a, written out: the tag must not change between builds or
        // crate versions (every placeholder's text, and the prefix a
        // provider caches, depends on it), which a general-purpose hasher
        // does not promise.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            // A separator, so ("ab", "c") and ("a", "bc") differ.
            h ^= 0xff;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        feed(&first.seq.to_le_bytes());
        feed(first.ts.text().as_bytes());
        feed(first.body.type_name().as_bytes());
        feed(record_text(first).as_bytes());
        let mut out = [0u8; TAG_LEN];
        let mut n = h;
        for c in &mut out {
            *c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
            n /= ALPHABET.len() as u64;
        }
        Tag(out)
    }

    /// The tag as text.
    pub fn as_str(&self) -> &str {
        // The bytes all come from ALPHABET (ASCII) or were checked so.
        std::str::from_utf8(&self.0).unwrap_or("?????")
    }
}

/// The text a record's tag is hashed from: what makes it this record.
fn record_text(r: &Record) -> &str {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content }
        | Body::ToolResult { content, .. } => content,
        Body::ToolCall { id, .. } => id,
        _ => "",
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tag {
    type Err = HandleError;

    fn from_str(s: &str) -> Result<Tag, HandleError> {
        let bytes = s.as_bytes();
        if bytes.len() != TAG_LEN || !bytes.iter().all(|b| ALPHABET.contains(b)) {
            return Err(HandleError::BadTag(s.to_owned()));
        }
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(bytes);
        Ok(Tag(out))
    }
}

/// What a handle stands for, by position (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// One record.
    Record(u64),
    /// Records `first..=last`.
    Range(u64, u64),
    /// The value at a JSON pointer (RFC 6901, starting with `/`) in a tool
    /// call's arguments.
    Argument(u64, String),
}

impl Target {
    /// The records it stands for, first and last position.
    pub fn positions(&self) -> (u64, u64) {
        match *self {
            Target::Record(s) | Target::Argument(s, _) => (s, s),
            Target::Range(a, b) => (a, b),
        }
    }
}

/// A recall handle: a conversation's tag and what in it (see the module
/// docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The conversation.
    pub tag: Tag,
    /// What in it.
    pub target: Target,
}

impl Handle {
    /// A handle on the record at position `at` of the conversation
    /// tagged `tag`.
    pub fn record(tag: Tag, at: u64) -> Handle {
        Handle {
            tag,
            target: Target::Record(at),
        }
    }

    /// A handle on records `first..=last` (one record when they are equal).
    pub fn range(tag: Tag, first: u64, last: u64) -> Handle {
        let target = if first == last {
            Target::Record(first)
        } else {
            Target::Range(first.min(last), first.max(last))
        };
        Handle { tag, target }
    }

    /// A handle on the value at `pointer` in the arguments of the call at
    /// position `at`.
    pub fn argument(tag: Tag, at: u64, pointer: String) -> Handle {
        Handle {
            tag,
            target: Target::Argument(at, pointer),
        }
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::Record(s) => write!(f, "{}:{s}", self.tag),
            Target::Range(a, b) => write!(f, "{}:{a}-{b}", self.tag),
            Target::Argument(s, p) => write!(f, "{}:{s}{p}", self.tag),
        }
    }
}

/// A handle that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    /// Not `TAG:TARGET`.
    #[error(
        "`{0}` is not a recall handle: expected TAG:N, TAG:FIRST-LAST or TAG:N/POINTER, as a placeholder shows it (such as `k3f9q:41`)"
    )]
    Malformed(String),
    /// The tag is not five characters of the handle alphabet.
    #[error(
        "`{0}` is not a conversation tag: expected {TAG_LEN} characters of a-z and 2-9, the part of a handle before `:`"
    )]
    BadTag(String),
}

impl FromStr for Handle {
    type Err = HandleError;

    fn from_str(s: &str) -> Result<Handle, HandleError> {
        let bad = || HandleError::Malformed(s.to_owned());
        // Models quote and bracket what they copy: take the handle out of
        // `recall k3f9q:41]` or `"k3f9q:41"`.
        let t = s
            .trim()
            .trim_start_matches("recall")
            .trim()
            .trim_matches(|c: char| {
                matches!(
                    c,
                    '`' | '"' | '\'' | '[' | ']' | '(' | ')' | '.' | ';' | ','
                )
            });
        let (tag, rest) = t.split_once(':').ok_or_else(bad)?;
        let tag: Tag = tag.trim().parse()?;
        let (numbers, pointer) = match rest.find('/') {
            Some(k) => (&rest[..k], Some(&rest[k..])),
            None => (rest, None),
        };
        let num = |x: &str| x.trim().parse::<u64>().map_err(|_| bad());
        let target = match (numbers.split_once('-'), pointer) {
            (None, None) => Target::Record(num(numbers)?),
            (None, Some(p)) => Target::Argument(num(numbers)?, p.to_owned()),
            (Some((a, b)), None) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(bad());
                }
                Target::Range(a, b)
            }
            (Some(_), Some(_)) => return Err(bad()),
        };
        Ok(Handle { tag, target })
    }
}

/// The few words a placeholder ends with: which tool brings the content
/// back, and the handle it takes.
pub fn recall_hint(handle: &Handle) -> String {
    format!("recall {handle}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Log;

    fn log(records: Vec<Record>) -> Log {
        Log::from_records(records)
    }

    fn user(seq: u64, text: &str) -> Record {
        Record::new(
            seq,
            "2026-12-06T00:00:00Z",
            Body::User {
                content: text.into(),
                author: None,
            },
        )
    }

    #[test]
    fn a_handle_reads_back_as_written() {
        let tag = Tag::of(&log(vec![user(0, "hi")])).unwrap();
        for h in [
            Handle::record(tag, 41),
            Handle::range(tag, 12, 57),
            Handle::argument(tag, 9, "/content".into()),
            Handle::argument(tag, 9, "/edits/0/new~1text".into()),
        ] {
            assert_eq!(h.to_string().parse::<Handle>().unwrap(), h);
        }
        assert_eq!(Handle::range(tag, 3, 3).target, Target::Record(3));
    }

    #[test]
    fn a_handle_copied_with_its_hint_or_quotes_still_reads() {
        let tag = Tag::of(&log(vec![user(0, "hi")])).unwrap();
        let h = Handle::record(tag, 41);
        for text in [
            format!("recall {h}"),
            format!("`{h}`"),
            format!("\"{h}\""),
            format!("{h}]"),
            format!(" {h}. "),
        ] {
            assert_eq!(text.parse::<Handle>().unwrap(), h, "{text}");
        }
    }

    #[test]
    fn bad_handles_say_what_was_expected() {
        for bad in ["", "k3f9q", "k3f9q:", "k3f9q:x", "k3f9q:9-3", "k3f9q:1-2/a"] {
            let e = bad.parse::<Handle>().unwrap_err();
            assert!(e.to_string().contains("expected"), "{bad}: {e}");
        }
        let e = "K3F9Q:4".parse::<Handle>().unwrap_err();
        assert_eq!(e, HandleError::BadTag("K3F9Q".into()));
    }

    #[test]
    fn the_tag_is_fixed_by_the_first_record_and_differs_between_conversations() {
        let mut a = log(vec![user(0, "fix the parser")]);
        let t = Tag::of(&a).unwrap();
        a.push(Record::new(
            1,
            "2026-12-06T00:00:01Z",
            Body::Assistant {
                content: "done".into(),
            },
        ));
        a.push(user(2, "and the lexer"));
        assert_eq!(Tag::of(&a), Some(t), "later records do not move it");
        let b = log(vec![user(0, "fix the lexer")]);
        assert_ne!(Tag::of(&b), Some(t));
        assert_eq!(Tag::of(&Log::new()), None);
        assert!(t.as_str().parse::<Tag>().is_ok());
    }
}
