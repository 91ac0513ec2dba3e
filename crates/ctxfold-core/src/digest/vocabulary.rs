//! The words the digest looks for in prose: the phrases that mark a
//! decision, a plan or a doubt, a correction or a constraint, and the
//! one-pass matcher that finds them as whole words. Kept apart so the lists
//! can be tuned without reading the section code.

use std::sync::LazyLock;

/// Phrases that mark a sentence as a decision or a conclusion.
pub(super) const STRONG_PHRASES: &[&str] = &[
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
pub(super) const WEAK_PHRASES: &[&str] = &[
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
pub(super) const PLANS_AND_DOUBTS: &[&str] = &[
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
pub(super) const NARRATION: &[&str] = &[
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
pub(super) const OFFERS: &[&str] = &[
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
pub(super) const CORRECTIONS: &[&str] = &[
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
pub(super) const CORRECTION_OPENINGS: &[&str] = &["actually", "no,", "no."];

/// Openings of a user sentence that constrain what comes next: an
/// imperative ("Don't…", "Only…", "Make sure…"). In the middle of one
/// these words describe ("files that don't have", "read-only", "the only
/// piece") and do not constrain.
pub(super) const CONSTRAINT_OPENINGS: &[&str] = &[
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
pub(super) const FILLERS: &[&str] = &[
    "please ", "and ", "but ", "so ", "also ", "also, ", "just ", "then ", "ok, ", "wait, ",
];

/// Phrases anywhere in a user sentence that state an obligation or a
/// prohibition ("you must", "I don't want", ", dont implement it yet"); not
/// "must be" or "I don't think", which infer or doubt.
pub(super) const CONSTRAINTS: &[&str] = &[
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
pub(super) const COMMA_IMPERATIVES: &[&str] =
    &[", don't ", ", dont ", ", do not ", ", never ", ", only "];

/// Lowercase, with typographic apostrophes made plain, for phrase search.
pub(super) fn lower(s: &str) -> String {
    s.to_lowercase().replace('’', "'")
}

/// Phrases (lowercase ASCII, starting with a letter) by their first byte.
pub(super) struct PhraseIndex([Vec<&'static [u8]>; 128]);

impl PhraseIndex {
    pub(super) fn new(phrases: &[&'static str]) -> Self {
        let mut index: [Vec<&'static [u8]>; 128] = std::array::from_fn(|_| Vec::new());
        for p in phrases {
            debug_assert!(p.is_ascii() && p.starts_with(|c: char| c.is_ascii_lowercase()));
            index[usize::from(p.as_bytes()[0])].push(p.as_bytes());
        }
        PhraseIndex(index)
    }
}

pub(super) static STRONG_INDEX: LazyLock<PhraseIndex> =
    LazyLock::new(|| PhraseIndex::new(STRONG_PHRASES));
pub(super) static WEAK_INDEX: LazyLock<PhraseIndex> =
    LazyLock::new(|| PhraseIndex::new(WEAK_PHRASES));
pub(super) static CORRECTION_INDEX: LazyLock<PhraseIndex> =
    LazyLock::new(|| PhraseIndex::new(CORRECTIONS));
pub(super) static CONSTRAINT_INDEX: LazyLock<PhraseIndex> =
    LazyLock::new(|| PhraseIndex::new(CONSTRAINTS));
pub(super) static PLAN_INDEX: LazyLock<PhraseIndex> =
    LazyLock::new(|| PhraseIndex::new(PLANS_AND_DOUBTS));

/// Whether `hay` (lowercase) holds one of the phrases as whole words: at
/// the start of a word, not followed by a letter or a digit. One pass over
/// `hay` for all the phrases.
pub(super) fn has_any(hay: &str, phrases: &PhraseIndex) -> bool {
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
