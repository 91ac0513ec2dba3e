//! Server-sent events, as OpenAI and Anthropic stream them.
//!
//! A stream is lines: `event: NAME`, `data: TEXT` (several data lines join
//! with "\n"), `id:` and `retry:` (ignored), comments starting with `:`, and
//! a blank line that ends an event. Lines may end in "\n" or "\r\n". An
//! event still open when the stream ends is delivered.
//!
//! Stricter than the SSE standard, which ignores unknown fields: a line that
//! is none of the above is reported as malformed (with its number), since a
//! model API never sends one and it usually means the server answered
//! something else than a stream.

use std::io::{self, BufRead};

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if any.
    pub event: Option<String>,
    /// The data lines, joined with "\n".
    pub data: String,
    /// The line (1-based) on which the event ended.
    pub line: usize,
}

/// Why the next event could not be read.
#[derive(Debug)]
pub enum SseError {
    /// Reading failed (a timeout, a broken connection).
    Io(io::Error),
    /// A line is not SSE.
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
}

/// Reads [`SseEvent`]s from a byte stream.
#[derive(Debug)]
pub struct SseReader<R> {
    reader: R,
    line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    /// Read events from `reader`.
    pub fn new(reader: R) -> Self {
        SseReader {
            reader,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// The next event, or `None` at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut event: Option<String> = None;
        let mut data: Option<String> = None;
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(SseError::Io)?;
            if n == 0 {
                return Ok(data.map(|data| SseEvent {
                    event,
                    data,
                    line: self.line,
                }));
            }
            self.line += 1;
            let mut bytes: &[u8] = &self.buf;
            if let Some(b) = bytes.strip_suffix(b"\n") {
                bytes = b;
            }
            if let Some(b) = bytes.strip_suffix(b"\r") {
                bytes = b;
            }
            let Ok(text) = std::str::from_utf8(bytes) else {
                return Err(SseError::Malformed {
                    line: self.line,
                    detail: "the line is not valid UTF-8".into(),
                });
            };
            if text.is_empty() {
                if let Some(data) = data {
                    return Ok(Some(SseEvent {
                        event,
                        data,
                        line: self.line,
                    }));
                }
                event = None;
                continue;
            }
            if text.starts_with(':') {
                continue;
            }
            let (field, value) = match text.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (text, ""),
            };
            match field {
                "data" => match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                "event" => event = Some(value.to_owned()),
                "id" | "retry" => {}
                _ => {
                    return Err(SseError::Malformed {
                        line: self.line,
                        detail: format!(
                            "expected `data:`, `event:`, `id:`, `retry:` or a `:` comment, found `{}`",
                            crate::error::quote(text)
                        ),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Result<Vec<SseEvent>, SseError> {
        let mut r = SseReader::new(s.as_bytes());
        let mut out = Vec::new();
        while let Some(e) = r.next_event()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn events_data_lines_comments_and_crlf() {
        let s = ": keep-alive\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\n\ndata:x\nid: 3\n\ndata: tail";
        let ev = all(s).unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].event.as_deref(), Some("a"));
        assert_eq!(ev[0].data, "one\ntwo");
        assert_eq!(ev[1].event, None);
        assert_eq!(ev[1].data, "x");
        assert_eq!(ev[2].data, "tail", "an open event at the end is delivered");
    }

    #[test]
    fn a_stray_line_is_malformed_with_its_number() {
        let Err(SseError::Malformed { line, detail }) = all("data: {}\n\n<html>oops\n") else {
            panic!("expected an error")
        };
        assert_eq!(line, 3);
        assert!(detail.contains("<html>oops"), "{detail}");
    }
}
