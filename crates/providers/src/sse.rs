//! A Server-Sent Events decoder: bytes in, `(event, data)` pairs out.
//!
//! It follows the SSE framing rules: lines end with LF, CRLF or CR; a line starting with `:` is
//! a comment (keep-alive); `field: value` lines set `event` or append to `data` (one leading
//! space of the value is dropped); an empty line dispatches the event. Bytes may arrive split
//! anywhere, inside a line terminator or a multi-byte UTF-8 character: a line is decoded only
//! once it is complete. Invariant: the decoder never copies a byte more than once into its
//! buffer, and consumed bytes are dropped once per `push`, so decoding is linear.

use crate::error::Error;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field, when the stream named the event.
    pub(crate) event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub(crate) data: String,
}

/// Incremental decoder state.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    /// The event being built; its strings are reused from one event to the next, so decoding
    /// allocates nothing per event once warm.
    current: SseEvent,
    has_event: bool,
    has_data: bool,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to it.
    skip_lf: bool,
}

impl SseDecoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `on_event` for each event they complete.
    pub(crate) fn push(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.skip_lf {
            self.skip_lf = false;
            if bytes.first() == Some(&b'\n') {
                bytes = &bytes[1..];
            }
        }
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', &self.buf[start..]) {
            let end = start + pos;
            let terminator = self.buf[end];
            let mut next = end + 1;
            if terminator == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let line = std::mem::take(&mut self.buf);
            let result = self.line(&line[start..end], on_event);
            self.buf = line;
            result?;
            start = next;
        }
        self.buf.drain(..start);
        Ok(())
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(&SseEvent) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if line.is_empty() {
            if self.has_data || self.has_event {
                if !self.has_event {
                    self.current.event = None;
                }
                let result = on_event(&self.current);
                self.current.data.clear();
                self.has_data = false;
                self.has_event = false;
                return result;
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|err| Error::Protocol {
            message: format!("malformed SSE: a line is not UTF-8 ({err})"),
        })?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => {
                let name = self.current.event.get_or_insert_with(String::new);
                name.clear();
                name.push_str(value);
                self.has_event = true;
            }
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter to browsers reconnecting, not to one-shot model streams.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
