//! The retention reports of many ranges of one view at once (issue 26):
//! what [`retention`](super::retention) reports for each, at about the
//! cost of one.
//!
//! One call of `retention` reads the whole view (for the tokens shown),
//! looks for every fact of its range in the whole view text, and reads
//! every record of its range; a conversation's compactions, whose ranges
//! nest from its first record, made that the square of the conversation.
//! Here each record's facts are read once, a fact its own record's item
//! shows is kept without a search (`own.rs`), each other distinct fact is
//! looked for once (all together, in one pass over the view's text, made
//! only then), the tokens are prefix sums by record, and a range's
//! distinct facts are counted from where each fact occurs before (the
//! first occurrence in a range is the one whose previous occurrence lies
//! before the range).
//!
//! The facts are the same as `retention`'s, read by
//! [`record_facts`](super::record_facts): among the diagnostics, every
//! distinct primary one, so a log's ERROR/FATAL/CRITICAL lines and the
//! lines naming where a full output was saved count as a compiler error
//! does (warnings, a compiler's or a log's, do not).

use std::borrow::Cow;

// foldhash: hashing the facts' keys with SipHash was 4% of `c show` at a
// million events; these keys come from the user's own log.
use foldhash::{HashMap, HashMapExt};

use super::finder::{Finder, Resolution};
use super::own::{Shown, bit};
use super::workers::with_workers;
use super::{
    Kept, RecordFacts, Tally, appears, diagnostic_appears, path_char, record_facts, word_char,
};
use crate::diagnostics::Diagnostic;
use crate::log::Log;
use crate::projection::View;

/// A view, read once, to make the retention reports of any ranges of its
/// log: the same [`Kept`] as [`retention`](super::retention) for each.
pub struct Retentions<'a> {
    log: &'a Log,
    /// The view read, or `None` for the view the log projects to as it is
    /// (made again if its text is needed).
    view: Option<&'a View<'a>>,
    /// The view's text, made only when a fact is not decided by its own
    /// record's item (`own.rs`).
    text: std::cell::OnceCell<String>,
    /// Tokens the view shows for the records before index `i`: the items
    /// whose origin starts there.
    shown: Vec<usize>,
    /// By record index: which of its facts its own item in the view
    /// shows (`own.rs`).
    own: Vec<Shown>,
}

impl<'a> Retentions<'a> {
    /// Read `view`, a projection of `log` (or of `log` with compactions
    /// appended).
    pub fn new(log: &'a Log, view: &'a View<'a>) -> Self {
        Self::with(log, Some(view), super::own::read(log, view))
    }

    /// Read the view `log` projects to as it is ([`project`]), as the
    /// projection makes its items, without holding it: the same reports
    /// as [`Retentions::new`] of that view, in less memory.
    ///
    /// [`project`]: crate::projection::project
    pub fn projecting(log: &'a Log) -> Self {
        Self::with(log, None, super::own::read_projecting(log))
    }

    fn with(log: &'a Log, view: Option<&'a View<'a>>, items: super::own::Items) -> Self {
        let mut shown = items.tokens;
        for i in 1..shown.len() {
            shown[i] += shown[i - 1];
        }
        Retentions {
            log,
            view,
            text: std::cell::OnceCell::new(),
            shown,
            own: items.shown,
        }
    }

    /// The view's text, whitespace collapsed (made on first use).
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| match self.view {
            Some(view) => super::view_text(view),
            None => super::view_text(&crate::projection::project(self.log)),
        })
    }

    /// The report of each of `ranges` (indices of the log, inclusive), in
    /// order. With `lost` false the lists of what was lost are left empty:
    /// for the one-line report, since with nested ranges those lists alone
    /// grow with the square of the conversation.
    pub fn of(&self, ranges: &[(usize, usize)], lost: bool) -> Vec<Kept> {
        self.of_read(RangeFacts::read(self.log, ranges), ranges, lost)
    }

    /// [`of`](Retentions::of), with the facts of `ranges` read already
    /// ([`RangeFacts::read`] of the same log and ranges; read again if
    /// they were read for other ranges).
    pub fn of_read(
        &self,
        facts: RangeFacts<'a>,
        ranges: &[(usize, usize)],
        lost: bool,
    ) -> Vec<Kept> {
        let n = self.log.len();
        let clamp = |&(lo, hi): &(usize, usize)| (lo, hi.min(n.saturating_sub(1)));
        let facts = if std::ptr::eq(facts.log, self.log) && facts.covered == covered_by(n, ranges) {
            facts
        } else {
            RangeFacts::read(self.log, ranges)
        };
        let occ = facts.occ.resolve(self);
        let files = Distinct::new(&occ.files, |k| occ.file_kept[k as usize]);
        let diags = Distinct::new(&occ.diags, |k| occ.diag_kept[k as usize]);
        let file_bounds: Vec<(usize, usize)> = ranges
            .iter()
            .map(|r| bounds(clamp(r), &occ.files))
            .collect();
        let diag_bounds: Vec<(usize, usize)> = ranges
            .iter()
            .map(|r| bounds(clamp(r), &occ.diags))
            .collect();
        let file_counts = files.counts(&file_bounds);
        let diag_counts = diags.counts(&diag_bounds);
        (0..ranges.len())
            .map(|q| {
                let (lo, hi) = clamp(&ranges[q]);
                let mut k = Kept::default();
                if lo <= hi && lo < n {
                    let file_lost = lost.then(|| {
                        let mut l: Vec<String> = (files.lost(file_bounds[q]).into_iter())
                            .map(|j| occ.file_names[occ.files[j].1 as usize].to_string())
                            .collect();
                        // As a set of paths lists them.
                        l.sort_unstable();
                        l
                    });
                    k.files = tally(file_counts[q], file_lost);
                    let diag_lost = lost.then(|| {
                        (diags.lost(diag_bounds[q]).into_iter())
                            .map(|j| occ.diag_texts[occ.diags[j].2 as usize].to_owned())
                            .collect()
                    });
                    k.diagnostics = tally(diag_counts[q], diag_lost);
                    k.requests = occ.requests_in((lo, hi), lost);
                }
                // As `retention` measures them: the range as given.
                k.tokens = (
                    occ.raw_between(lo, ranges[q].1),
                    self.shown_between(ranges[q].0, ranges[q].1),
                );
                k
            })
            .collect()
    }

    /// What the view keeps of the facts of every record `ranges` cover
    /// together, each record counted once (ranges out of the log or
    /// reversed are left out): the retention of a whole replay, whose
    /// firings fold and fold again overlapping ranges. The tokens are the
    /// covered records' raw and the view's for them; the lists of what was
    /// lost are given.
    pub fn union(&self, ranges: &[(usize, usize)]) -> Kept {
        let n = self.log.len();
        let spans: Vec<(usize, usize)> = ranges
            .iter()
            .filter(|(lo, hi)| lo <= hi && *hi < n)
            .copied()
            .collect();
        let merged = merge(&spans, true);
        let occ = Occurrences::read(self.log, &merged).resolve(self);
        let mut k = Kept::default();
        // Every record once: each file and diagnostic text first where it
        // first occurs.
        let mut seen = vec![false; occ.file_names.len()];
        let mut files: Vec<(String, bool)> = Vec::new();
        for &(_, key) in &occ.files {
            if !std::mem::replace(&mut seen[key as usize], true) {
                files.push((
                    occ.file_names[key as usize].to_string(),
                    occ.file_kept[key as usize],
                ));
            }
        }
        files.sort_unstable();
        for (f, is_kept) in files {
            count(&mut k.files, f, is_kept);
        }
        let mut seen = vec![false; occ.diag_texts.len()];
        for &(_, check, text) in &occ.diags {
            if !std::mem::replace(&mut seen[text as usize], true) {
                let shown = occ.diag_texts[text as usize].to_owned();
                count(&mut k.diagnostics, shown, occ.diag_kept[check as usize]);
            }
        }
        for &(_, key) in &occ.requests {
            let shown = occ.request_texts[key as usize].to_owned();
            count(&mut k.requests, shown, occ.request_kept[key as usize]);
        }
        k.tokens = merged.iter().fold((0, 0), |(raw, shown), &(lo, hi)| {
            (
                raw + occ.raw_between(lo, hi),
                shown + self.shown_between(lo, hi),
            )
        });
        k
    }

    fn shown_between(&self, lo: usize, hi: usize) -> usize {
        sum_between(&self.shown, lo, hi)
    }
}

/// The facts of the records some ranges cover, read and numbered, before
/// any view is: reading them does not depend on the view, so the listing
/// reads them while the view is made ([`Retentions::of_read`] decides what
/// the view keeps of them).
pub struct RangeFacts<'a> {
    log: &'a Log,
    /// The records read: the ranges within the log, merged.
    covered: Vec<(usize, usize)>,
    occ: Occurrences<'a>,
}

impl<'a> RangeFacts<'a> {
    /// Read the facts of the records of `log` that `ranges` (indices,
    /// inclusive) cover, as [`Retentions::of`] would.
    pub fn read(log: &'a Log, ranges: &[(usize, usize)]) -> Self {
        let covered = covered_by(log.len(), ranges);
        let occ = Occurrences::read(log, &covered);
        RangeFacts { log, covered, occ }
    }
}

/// The records `ranges` cover within a log of `n` records (what `facts`
/// reads of each: `lo..=hi` clipped to the log), merged where they
/// overlap, in order.
fn covered_by(n: usize, ranges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let spans: Vec<(usize, usize)> = ranges
        .iter()
        .map(|&(lo, hi)| (lo, hi.min(n.saturating_sub(1))))
        .filter(|(lo, hi)| lo <= hi && *lo < n)
        .collect();
    merge(&spans, false)
}

fn count(t: &mut Tally, shown: String, is_kept: bool) {
    t.total += 1;
    if is_kept {
        t.kept += 1;
    } else {
        t.lost.push(shown);
    }
}

fn tally((total, kept): (usize, usize), lost: Option<Vec<String>>) -> Tally {
    Tally {
        total,
        kept,
        lost: lost.unwrap_or_default(),
    }
}

/// `spans` sorted and merged where they overlap (or, with `adjacent`,
/// touch).
fn merge(spans: &[(usize, usize)], adjacent: bool) -> Vec<(usize, usize)> {
    let mut spans = spans.to_vec();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (lo, hi) in spans {
        match merged.last_mut() {
            Some(last) if lo <= last.1 || adjacent && lo == last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

/// The facts of the records the ranges cover, each record read once, in
/// record order, with whether the view keeps each distinct fact.
///
/// The texts are borrowed from the log (a hundred thousand distinct
/// requests were two copies each, on the listing's one-thread path).
struct Occurrences<'a> {
    /// (record, file key), a record's paths each once.
    files: Vec<(usize, u32)>,
    file_names: Vec<Cow<'a, str>>,
    file_kept: Vec<bool>,
    /// (record, check key, text key): a record's diagnostics, the first of
    /// each text.
    diags: Vec<(usize, u32, u32)>,
    diag_texts: Vec<&'a str>,
    /// By check key: the diagnostic first seen with it.
    diag_list: Vec<&'a Diagnostic>,
    diag_kept: Vec<bool>,
    /// (record, request key): each occurrence its own key (a request is
    /// counted wherever it occurs, and whether the view keeps its text is
    /// the same for every occurrence: hashing a hundred thousand user
    /// messages to number them was a twentieth of a listing; the finder
    /// numbers the texts it looks for).
    requests: Vec<(usize, u32)>,
    request_texts: Vec<&'a str>,
    request_kept: Vec<bool>,
    /// Prefix sums of the kept requests, by occurrence.
    requests_kept_before: Vec<usize>,
    /// The occurrences of the requests the view does not keep.
    requests_lost: Vec<usize>,
    /// Which bit of its record's [`Shown`] each occurrence is (until the
    /// view is read).
    bits: Bits,
    /// Raw tokens of the covered records before index `i`.
    raw: Vec<usize>,
}

/// For each occurrence of [`Occurrences`]' lists, its fact's place among
/// its record's facts (as [`bit`] takes it; 64 and past: none).
#[derive(Default)]
struct Bits {
    files: Vec<u8>,
    diags: Vec<u8>,
    requests: Vec<u8>,
}

/// A fact's place among its record's, as kept in [`Bits`].
fn bit_at(k: usize) -> u8 {
    k.min(64) as u8
}

impl<'a> Occurrences<'a> {
    /// The facts of the `covered` records of `log` (in order), numbered;
    /// what a view keeps of them is left to [`resolve`](Self::resolve).
    fn read(log: &'a Log, covered: &[(usize, usize)]) -> Occurrences<'a> {
        let mut file_keys: HashMap<Cow<'a, str>, u32> = HashMap::new();
        // A diagnostic is told by its text, line and location, each
        // numbered once: no key is made for each occurrence.
        let mut diag_keys: HashMap<(u32, u32, u32), u32> = HashMap::new();
        let (mut line_keys, mut location_keys) = (HashMap::new(), HashMap::new());
        let mut text_keys: HashMap<&str, u32> = HashMap::new();
        let mut o = Occurrences {
            files: vec![],
            file_names: vec![],
            file_kept: vec![],
            diags: vec![],
            diag_texts: vec![],
            diag_list: vec![],
            diag_kept: vec![],
            requests: vec![],
            request_texts: vec![],
            request_kept: vec![],
            requests_kept_before: vec![],
            requests_lost: vec![],
            bits: Bits::default(),
            raw: vec![0; log.len() + 1],
        };
        let covered_records = covered.iter().flat_map(|&(lo, hi)| lo..=hi);
        read_facts(log, covered_records, |i, tokens, f| {
            o.raw[i + 1] = tokens;
            for (k, path) in f.files.iter().enumerate() {
                let key = number(&mut file_keys, path.clone(), |p| o.file_names.push(p));
                o.files.push((i, key));
                o.bits.files.push(bit_at(k));
            }
            let mut texts_here: Vec<u32> = Vec::new();
            for (k, d) in f.diagnostics.iter().enumerate() {
                let text_key = number(&mut text_keys, d.text.as_str(), |t| {
                    o.diag_texts.push(t);
                });
                // A range keeps the first diagnostic of each text.
                if texts_here.contains(&text_key) {
                    continue;
                }
                texts_here.push(text_key);
                let line = number(&mut line_keys, d.line.as_str(), |_| {});
                let location = (d.location.as_deref())
                    .map_or(0, |l| 1 + number(&mut location_keys, l, |_| {}));
                let check = number(&mut diag_keys, (text_key, line, location), |_| {
                    o.diag_list.push(d);
                });
                o.diags.push((i, check, text_key));
                o.bits.diags.push(bit_at(f.files.len() + k));
            }
            if let Some(req) = &f.request {
                let key = o.request_texts.len() as u32;
                o.request_texts.push(req);
                o.requests.push((i, key));
                o.bits
                    .requests
                    .push(bit_at(f.files.len() + f.diagnostics.len()));
            }
        });
        for i in 1..o.raw.len() {
            o.raw[i] += o.raw[i - 1];
        }
        o
    }

    /// Decide which facts `r`'s view keeps.
    fn resolve(mut self, r: &Retentions<'a>) -> Occurrences<'a> {
        // Per key: whether an item shows it in its own record (kept for
        // certain, `own.rs`); the others are looked for in the view's text.
        let shown = |list: &[(usize, u32)], bits: &[u8], keys: usize| {
            let mut out = vec![false; keys];
            for (&(i, key), &b) in list.iter().zip(bits) {
                out[key as usize] |= r.own.get(i).is_some_and(|s| s & bit(b as usize) != 0);
            }
            out
        };
        let file_shown = shown(&self.files, &self.bits.files, self.file_names.len());
        let request_shown = shown(
            &self.requests,
            &self.bits.requests,
            self.request_texts.len(),
        );
        let diag_shown = {
            let checks: Vec<(usize, u32)> = self.diags.iter().map(|&(i, c, _)| (i, c)).collect();
            shown(&checks, &self.bits.diags, self.diag_list.len())
        };
        self.bits = Bits::default();
        // Only the facts no item shows in its own record go into the
        // search: in a view that strips (the view as long as the log) that
        // is next to none, and then the view's text is not made at all.
        let mut finder = Finder::default();
        let check = |shown: bool, look: &mut dyn FnMut() -> Resolution| {
            if shown { Resolution::Kept } else { look() }
        };
        let file_checks: Vec<Resolution> = (file_shown.iter().zip(&self.file_names))
            .map(|(&s, f)| check(s, &mut || finder.whole(f, path_char)))
            .collect();
        let diag_checks: Vec<Resolution> = (diag_shown.iter().zip(&self.diag_list))
            .map(|(&s, d)| check(s, &mut || finder.diagnostic(d)))
            .collect();
        // A request no item shows as its own is looked for once per text
        // (the same words asked again and again, each folded away).
        let mut asked: HashMap<&str, Resolution> = HashMap::new();
        let request_checks: Vec<Resolution> = (request_shown.iter().zip(&self.request_texts))
            .map(|(&s, q)| {
                check(s, &mut || {
                    *(asked.entry(q)).or_insert_with(|| finder.whole(q, word_char))
                })
            })
            .collect();
        // `None`: the automaton could not be built (too many needles for
        // its state ids); every fact is then decided one by one.
        let found = if finder.is_empty() {
            Some(Vec::new())
        } else {
            finder.run(r.text())
        };
        let resolve = |c: &Resolution, fallback: &dyn Fn(&str) -> bool| match (c, &found) {
            (Resolution::Kept, _) => true,
            (Resolution::Found(at), Some(found)) => found[*at],
            _ => fallback(r.text()),
        };
        self.file_kept = (file_checks.iter().zip(&self.file_names))
            .map(|(c, f)| resolve(c, &|text| appears(text, f, path_char)))
            .collect();
        self.diag_kept = (diag_checks.iter().zip(&self.diag_list))
            .map(|(c, d)| resolve(c, &|text| diagnostic_appears(text, d)))
            .collect();
        self.request_kept = (request_checks.iter().zip(&self.request_texts))
            .map(|(c, q)| resolve(c, &|text| appears(text, q, word_char)))
            .collect();
        let o = &mut self;
        o.requests_kept_before = std::iter::once(0)
            .chain(o.requests.iter().scan(0, |n, &(_, key)| {
                *n += usize::from(o.request_kept[key as usize]);
                Some(*n)
            }))
            .collect();
        o.requests_lost = (0..o.requests.len())
            .filter(|&j| !o.request_kept[o.requests[j].1 as usize])
            .collect();
        self
    }

    fn requests_in(&self, range: (usize, usize), lost: bool) -> Tally {
        let (a, b) = bounds(range, &self.requests);
        let kept = self.requests_kept_before[b] - self.requests_kept_before[a];
        // Only the lost ones are read: a range that keeps its requests
        // costs nothing however long it is.
        let lost = if lost {
            let from = self.requests_lost.partition_point(|&j| j < a);
            let to = self.requests_lost.partition_point(|&j| j < b);
            (self.requests_lost[from..to].iter())
                .map(|&j| self.request_texts[self.requests[j].1 as usize].to_owned())
                .collect()
        } else {
            Vec::new()
        };
        Tally {
            total: b - a,
            kept,
            lost,
        }
    }

    fn raw_between(&self, lo: usize, hi: usize) -> usize {
        sum_between(&self.raw, lo, hi)
    }
}

/// An occurrence of a fact, at a record.
trait At {
    fn at(&self) -> usize;
}

impl At for (usize, u32) {
    fn at(&self) -> usize {
        self.0
    }
}

impl At for (usize, u32, u32) {
    fn at(&self) -> usize {
        self.0
    }
}

/// The occurrences (indices into `list`, which is in record order) of the
/// records `lo..=hi`.
fn bounds<T: At>((lo, hi): (usize, usize), list: &[T]) -> (usize, usize) {
    let a = list.partition_point(|x| x.at() < lo);
    let b = list.partition_point(|x| x.at() <= hi);
    (a, b.max(a))
}

/// Occurrences of facts counted once per key in a range: for each
/// occurrence, where its key occurred before, so that the first in a range
/// is the one whose previous occurrence lies before it.
struct Distinct {
    /// Index of the previous occurrence of the same key, plus one (0: none).
    prev: Vec<usize>,
    kept: Vec<bool>,
    /// A minimum tree of `prev` over the lost occurrences (the kept ones
    /// hold `usize::MAX`), to list a range's lost facts without reading
    /// the range.
    tree: Vec<usize>,
    size: usize,
}

trait Keyed {
    fn key(&self) -> u32;
    fn check(&self) -> u32;
}

impl Keyed for (usize, u32) {
    fn key(&self) -> u32 {
        self.1
    }
    fn check(&self) -> u32 {
        self.1
    }
}

impl Keyed for (usize, u32, u32) {
    fn key(&self) -> u32 {
        self.2
    }
    fn check(&self) -> u32 {
        self.1
    }
}

impl Distinct {
    fn new<T: Keyed>(occ: &[T], is_kept: impl Fn(u32) -> bool) -> Distinct {
        let mut last: HashMap<u32, usize> = HashMap::new();
        let prev: Vec<usize> = occ
            .iter()
            .enumerate()
            .map(|(j, o)| last.insert(o.key(), j + 1).unwrap_or(0))
            .collect();
        let kept: Vec<bool> = occ.iter().map(|o| is_kept(o.check())).collect();
        let size = occ.len().next_power_of_two().max(1);
        let mut tree = vec![usize::MAX; 2 * size];
        for j in 0..occ.len() {
            if !kept[j] {
                tree[size + j] = prev[j];
            }
        }
        for v in (1..size).rev() {
            tree[v] = tree[2 * v].min(tree[2 * v + 1]);
        }
        Distinct {
            prev,
            kept,
            tree,
            size,
        }
    }

    /// For each occurrence range `a..b`, how many keys occur in it and how
    /// many of those the view keeps (by their first occurrence in it).
    /// Offline: ranges by their start, an occurrence counted once the
    /// start passes its previous occurrence.
    fn counts(&self, bounds: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let m = self.prev.len();
        let mut order: Vec<usize> = (0..bounds.len()).collect();
        order.sort_unstable_by_key(|&q| bounds[q].0);
        let mut by_prev: Vec<usize> = (0..m).collect();
        by_prev.sort_unstable_by_key(|&j| self.prev[j]);
        let (mut total, mut kept) = (Fenwick::new(m), Fenwick::new(m));
        let mut next = 0;
        let mut out = vec![(0, 0); bounds.len()];
        for q in order {
            let (a, b) = bounds[q];
            // First in `a..`: no occurrence of its key in `a..j`, that is
            // the previous one (plus one) at most `a`.
            while next < m && self.prev[by_prev[next]] <= a {
                let j = by_prev[next];
                total.add(j, 1);
                kept.add(j, usize::from(self.kept[j]));
                next += 1;
            }
            out[q] = (total.sum(a, b), kept.sum(a, b));
        }
        out
    }

    /// The occurrences in `a..b` that are the first of their key there and
    /// that the view does not keep, in order.
    fn lost(&self, (a, b): (usize, usize)) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk(1, 0, self.size, a, b, &mut out);
        out
    }

    fn walk(&self, v: usize, l: usize, r: usize, a: usize, b: usize, out: &mut Vec<usize>) {
        if r <= a || b <= l || self.tree[v] > a {
            return;
        }
        if r - l == 1 {
            out.push(l);
            return;
        }
        let mid = (l + r) / 2;
        self.walk(2 * v, l, mid, a, b, out);
        self.walk(2 * v + 1, mid, r, a, b, out);
    }
}

/// Sums over a prefix, updated in place.
struct Fenwick(Vec<usize>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    fn add(&mut self, i: usize, v: usize) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    fn prefix(&self, mut i: usize) -> usize {
        let mut s = 0;
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }

    fn sum(&self, a: usize, b: usize) -> usize {
        self.prefix(b) - self.prefix(a)
    }
}

/// The sum of records `lo..=hi` from `prefix`, the prefix sums by record
/// (entry `i` the sum of the records before `i`), the range clipped to it.
fn sum_between(prefix: &[usize], lo: usize, hi: usize) -> usize {
    let n = prefix.len().saturating_sub(1);
    let (lo, end) = (lo.min(n), hi.saturating_add(1).min(n));
    if lo >= end {
        0
    } else {
        prefix[end] - prefix[lo]
    }
}

/// Records read at a time: the facts of this many are held at once.
const CHUNK: usize = 1 << 14;

/// Each record's tokens and facts, in order, given to `visit`. Reading
/// them (the diagnostics recognizer over every tool result, the paths in
/// every call's arguments, the token estimate) is most of the cost of a
/// report over a long log, and each record is read alone, so a chunk at a
/// time is read on every core (`workers.rs`); the result is the same as
/// reading them one after another.
fn read_facts<'a>(
    log: &'a Log,
    records: impl Iterator<Item = usize>,
    mut visit: impl FnMut(usize, usize, RecordFacts<'a>),
) {
    let read = |part: &[usize]| -> Vec<(usize, usize, RecordFacts<'a>)> {
        (part.iter())
            .map(|&i| {
                let tokens = super::record_tokens_at(log, i);
                (i, tokens, record_facts(log, i))
            })
            .collect()
    };
    with_workers(read, |run| {
        let mut records = records.peekable();
        while records.peek().is_some() {
            let chunk: Vec<usize> = records.by_ref().take(CHUNK).collect();
            for (i, tokens, facts) in run(chunk) {
                visit(i, tokens, facts);
            }
        }
    });
}

/// The number of `key` in `keys`, numbered in the order keys are first
/// seen; `first` is called with a key seen for the first time (to push
/// what goes with its number).
fn number<K: std::hash::Hash + Eq + Clone>(
    keys: &mut HashMap<K, u32>,
    key: K,
    first: impl FnOnce(K),
) -> u32 {
    let next = keys.len() as u32;
    *keys.entry(key).or_insert_with_key(|k| {
        first(k.clone());
        next
    })
}
