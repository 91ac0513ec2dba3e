//! A Codex rollout read from its file a line at a time (issue 48): for
//! `ctxfold compact FILE`, which holds every record of a long session, so
//! that the file's bytes are not held beside them.

use std::collections::VecDeque;
use std::io::{BufRead, Read, Seek};
use std::path::Path;

use ctxfold_core::Record;
use serde_json::Value;

use super::{KEY, Reader, looks_like};
use crate::session_lines::{Aside, pack};
use crate::{Format, FormatError, Transcript};

/// The first line is looked at (to tell a rollout) up to this size: a
/// longer one is not a rollout's `session_meta`, and the file is left to
/// [`crate::open_detected`].
const FIRST_LINE_MAX: usize = 4 << 20;

/// A Codex rollout read from its file a line at a time, record by record:
/// the records [`crate::open_detected`] gives of it (a
/// [`crate::SessionRecords`]), without the file's bytes held whole
/// while they are read.
pub struct Rollout {
    reader: Reader,
    ready: VecDeque<Record>,
    buf: Vec<Record>,
    /// At least as many records as the rollout reads into.
    bound: usize,
}

impl Rollout {
    /// The Codex rollout at `path`, read as [`crate::open_detected`] with
    /// `format` would read it: `None` when that is not a rollout read from
    /// a regular file (another format, a named pipe, a file over the input
    /// limit: [`crate::open_detected`] reads those, and says what is
    /// wrong with them).
    pub fn open(path: &Path, format: Option<Format>) -> Result<Option<Rollout>, FormatError> {
        if format.is_some_and(|f| f != Format::Codex) {
            return Ok(None);
        }
        // A pipe looked at would be read up: only regular files here.
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !meta.is_file()
            || format.is_none() && path.file_name().is_some_and(|n| n == "events.json")
        {
            return Ok(None);
        }
        // A limit that is not a number, or a file over it: `open_detected`
        // says so, after what it checks first.
        let Ok(limit) = crate::max_input_bytes() else {
            return Ok(None);
        };
        if meta.len() > limit {
            return Ok(None);
        }
        let Ok(mut file) = std::fs::File::open(path) else {
            return Ok(None);
        };
        let found = (|| -> std::io::Result<Option<usize>> {
            if format.is_none() && !first_line_is_rollout(&mut file)? {
                return Ok(None);
            }
            file.rewind()?;
            let lines = count_lines(&mut file)?;
            file.rewind()?;
            Ok(Some(lines))
        })();
        // A file that cannot be read is left to `open_detected`, which
        // says why.
        let Ok(Some(lines)) = found else {
            return Ok(None);
        };
        let reader = std::io::BufReader::with_capacity(1 << 16, file);
        Ok(Some(Rollout {
            reader: Reader::reading(path, Box::new(reader), limit),
            ready: VecDeque::new(),
            buf: Vec::new(),
            // A record a line, and a synthesized turn start before a user
            // message that follows an answer: at most one every two lines.
            bound: lines + lines / 2 + 1,
        }))
    }

    /// At least as many records as the rollout reads into (the lines
    /// counted when it was opened; more if the file grew since): a
    /// vector of them sized once rather than grown, each growth leaving
    /// the copy it moved from to the allocator.
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// Where [`Rollout::next_aside`] puts the packed hints of the records.
    pub fn aside(&self) -> Aside {
        Aside::new(KEY)
    }

    /// The next record with its hints packed, as
    /// [`crate::SessionRecords::next_packed`] gives it.
    pub fn next_packed(&mut self) -> Option<Record> {
        let mut r = self.next()?;
        pack(&mut r, KEY);
        Some(r)
    }

    /// The next record with its packed hints moved into `aside`, as
    /// [`crate::SessionRecords::next_aside`] gives it.
    pub fn next_aside(&mut self, aside: &mut Aside) -> Option<Record> {
        let mut r = self.next_packed()?;
        aside.take(&mut r);
        Some(r)
    }

    /// The transcript without its records, as
    /// [`crate::SessionRecords::finish`] gives it; or the error that
    /// stopped the reading (a read that failed, a file grown over the
    /// input limit).
    pub fn finish(mut self) -> Result<Transcript, FormatError> {
        while self.next().is_some() {}
        if let Some(e) = self.reader.error() {
            return Err(e);
        }
        Ok(self.reader.finish())
    }
}

impl Iterator for Rollout {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        while self.ready.is_empty() {
            let more = self.reader.step(&mut self.buf);
            self.ready.extend(self.buf.drain(..));
            if !more {
                break;
            }
        }
        self.ready.pop_front()
    }
}

/// Whether the file's first line (after a byte-order mark and any
/// whitespace) is a rollout's, as detection tells it: a JSON object that
/// Codex writes and a ctxfold log's line is not.
fn first_line_is_rollout(file: &mut std::fs::File) -> std::io::Result<bool> {
    let mut r = std::io::BufReader::new(file).take(FIRST_LINE_MAX as u64);
    let mut head = Vec::new();
    // Up to the newline after the first byte that is not whitespace (after
    // the mark), or the file's end.
    let line = loop {
        let buf = r.fill_buf()?;
        let end = buf.is_empty();
        let n = buf.len();
        head.extend_from_slice(buf);
        r.consume(n);
        let body = head.strip_prefix(crate::BOM).unwrap_or(&head);
        let start = body.iter().position(|b| !b.is_ascii_whitespace());
        match start.map(|p| &body[p..]) {
            Some(rest) => match rest.iter().position(|&b| b == b'\n') {
                Some(nl) => break &rest[..nl],
                None if end => break rest,
                None => {}
            },
            None if end => return Ok(false),
            None => {}
        }
        // A first line longer than the limit is left to detection.
        if end || r.limit() == 0 {
            return Ok(false);
        }
    };
    Ok(match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(o)) => {
            !(o.contains_key("seq") && o.contains_key("type")) && looks_like(&o)
        }
        _ => false,
    })
}

/// The lines of the file: its newlines, and one more when its last line
/// has none.
fn count_lines(file: &mut std::fs::File) -> std::io::Result<usize> {
    let mut buf = vec![0u8; 1 << 16];
    let (mut lines, mut last) = (0, b'\n');
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        last = buf[n - 1];
    }
    Ok(lines + usize::from(last != b'\n'))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Rollout;
    use crate::{Format, Opened, Transcript};

    /// The transcript of `path` read whole from its bytes, and read a line
    /// at a time from the file, with `format` given.
    fn both(path: &Path, format: Option<Format>) -> (Transcript, Option<Transcript>) {
        let whole = match crate::open_detected(path, format).unwrap() {
            Opened::Records(_, mut r) => {
                let records: Vec<_> = r.by_ref().collect();
                let mut t = r.finish();
                t.records = records;
                t
            }
            Opened::Whole(_, t) => t,
        };
        let read = Rollout::open(path, format).unwrap().map(|mut r| {
            let bound = r.bound();
            let records: Vec<_> = r.by_ref().collect();
            assert!(
                records.len() <= bound,
                "{} records, bound {bound}",
                records.len()
            );
            let mut t = r.finish().unwrap();
            t.records = records;
            t
        });
        (whole, read)
    }

    #[test]
    fn a_rollout_read_from_its_file_reads_as_its_bytes_do() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/agents/codex.jsonl");
        let text = std::fs::read(&data).unwrap();
        let body = text.strip_suffix(b"\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("as written", text.clone()),
            (
                "a line alone",
                body.split(|&b| b == b'\n').next().unwrap().to_vec(),
            ),
            ("no final newline", body.to_vec()),
            ("a byte-order mark", [crate::BOM, &text].concat()),
            ("blank lines first", [b"\n  \n".as_slice(), &text].concat()),
            (
                "a torn last line",
                [&text[..], b"{\"timestamp\":\"2026"].concat(),
            ),
            ("a line not JSON", [&text[..], b"not json\n\n"].concat()),
            (
                "a line not UTF-8",
                [&text[..], b"{\"a\":\"\xff\"}\n"].concat(),
            ),
            ("two newlines at the end", [&text[..], b"\n"].concat()),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join("rollout.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            for format in [None, Some(Format::Codex)] {
                let (whole, read) = both(&path, format);
                let read = read.unwrap_or_else(|| panic!("{name}: not read as a rollout"));
                assert!(whole == read, "{name}, {format:?}: the transcripts differ");
                assert!(!read.records.is_empty(), "{name}");
            }
        }
    }

    #[test]
    fn other_files_are_left_to_detection() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let ctxfold = write(
            "log.jsonl",
            b"{\"seq\":0,\"type\":\"user\",\"payload\":{},\"timestamp\":\"x\"}\n",
        );
        let chat = write("chat.json", b"[{\"role\":\"user\",\"content\":\"hi\"}]");
        let empty = write("empty.jsonl", b"");
        let blank = write("blank.jsonl", b"\xEF\xBB\xBF \n\n");
        for p in [&ctxfold, &chat, &empty, &blank] {
            assert!(Rollout::open(p, None).unwrap().is_none(), "{}", p.display());
        }
        assert!(
            Rollout::open(&chat, Some(Format::Openai))
                .unwrap()
                .is_none()
        );
        assert!(Rollout::open(dir.path(), None).unwrap().is_none());
        assert!(
            Rollout::open(&dir.path().join("none.jsonl"), Some(Format::Codex))
                .unwrap()
                .is_none()
        );
        // Told as a rollout only when given as one: read as detection reads it.
        let (whole, read) = both(&empty, Some(Format::Codex));
        assert!(Some(whole) == read);
    }
}
