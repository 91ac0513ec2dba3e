//! A provider's streamed answer as it is read, whichever API sent it: the
//! events, where text and reasoning go as they come, what names its
//! errors, and whether the stream is known to have broken off. The
//! readers of each API (`openai`, `anthropic`) fold it into the answer a
//! non-streamed call gives; [`crate::wire`] picks the reader by the
//! provider's kind, so this module sits below both APIs.

use std::io::BufRead;

use crate::error::{ErrorContext, ProviderError};
use crate::response::StreamEvent;
use crate::sse::{SseError, SseEvent, SseReader};

/// A stream being read.
pub(crate) struct Stream<'a, R> {
    events: SseReader<R>,
    /// Where text and reasoning go as they come.
    pub(crate) on: &'a mut dyn FnMut(StreamEvent),
    /// What an error body in the stream is reported with.
    pub(crate) ctx: &'a ErrorContext<'a>,
    io_error: &'a dyn Fn(std::io::Error) -> ProviderError,
    /// The stream is known to have broken off: what arrived is read as far
    /// as it goes instead of failing.
    pub(crate) cut_short: bool,
}

impl<'a, R: BufRead> Stream<'a, R> {
    /// `reader`'s events; `io_error` says what a read that fails is.
    pub(crate) fn new(
        reader: R,
        on: &'a mut dyn FnMut(StreamEvent),
        ctx: &'a ErrorContext<'a>,
        io_error: &'a dyn Fn(std::io::Error) -> ProviderError,
        cut_short: bool,
    ) -> Self {
        Stream {
            events: SseReader::new(reader),
            on,
            ctx,
            io_error,
            cut_short,
        }
    }

    /// The next event, `None` at the end of the stream (and, when it is
    /// cut short, at the first that cannot be read); `api` names the
    /// stream in the error ("OpenAI-style").
    pub(crate) fn next(&mut self, api: &str) -> Result<Option<SseEvent>, ProviderError> {
        match self.events.next_event() {
            Ok(ev) => Ok(ev),
            Err(_) if self.cut_short => Ok(None),
            Err(SseError::Io(e)) => Err((self.io_error)(e)),
            Err(SseError::Malformed { line, detail }) => Err(ProviderError::Malformed {
                detail: format!("{api} stream, line {line}: {detail}"),
            }),
        }
    }
}
