//! Server-sent events, read one way by every edge: the gateway's
//! streamed model answers and the MCP proxy's Streamable HTTP upstream.
//! [`Parser`] follows the WHATWG event-stream rules (lines end in CR, LF
//! or CRLF; `data` lines joined with LF; `:` comments; `event`, `id` and
//! `retry`; a leading byte-order mark dropped; an event dispatched at a
//! blank line, and only when it has data) and is incremental: every byte
//! is looked at once, however the stream is cut into reads.
//!
//! The oversize rule is the same for both edges and fails closed: an
//! event whose data exceeds the bound (or whose line being read would
//! take it past the bound and a field name) is an error ([`Error::SseEventTooLarge`]), never truncated or skipped, since
//! an event the interceptors cannot see must not pass, and silently
//! dropping one would change what the client is told. The caller ends
//! the stream with an error in its client's terms.

use crate::Error;

/// Bytes a line may hold beyond the data bound: its field name and
/// separator (`data: `, `event: `).
const LINE_SLACK: usize = 64;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event` field, when the event had one (WHATWG's type
    /// `message` otherwise).
    pub event: Option<String>,
    /// The `data` lines, joined with LF.
    pub data: String,
    /// The last event id of the stream at this event (the `id` field
    /// persists across events), if any was set.
    pub id: Option<String>,
    /// The reconnection time (ms) the stream's last valid `retry` field
    /// set, as of this event, if any did.
    pub retry: Option<u64>,
}

/// An incremental event-stream parser, bounded per event.
#[derive(Debug)]
pub struct Parser {
    max_event_bytes: usize,
    /// The line being read (without its end).
    line: Vec<u8>,
    /// The last byte seen was a CR: an LF right after it ends nothing.
    after_cr: bool,
    /// Nothing read yet: a byte-order mark may come first.
    at_start: bool,
    /// The event being built.
    data: Vec<u8>,
    has_data: bool,
    event: Option<Vec<u8>>,
    retry: Option<u64>,
    last_id: Option<String>,
}

impl Parser {
    /// A parser refusing events whose data exceeds `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            has_data: false,
            event: None,
            retry: None,
            last_id: None,
        }
    }

    /// Feeds the next bytes of the stream; returns the events they
    /// complete, or the error that ends the stream (an event over the
    /// bound, an event that is not UTF-8).
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<Vec<Event>, Error> {
        if self.at_start && !bytes.is_empty() {
            let bom = "\u{feff}".as_bytes();
            let have = self.line.len() + bytes.len();
            // The mark may itself be cut: hold its first bytes back.
            let mut probe = self.line.clone();
            probe.extend_from_slice(&bytes[..bytes.len().min(bom.len())]);
            if have < bom.len() && bom.starts_with(&probe) {
                self.line = probe;
                return Ok(Vec::new());
            }
            self.at_start = false;
            if probe.starts_with(bom) {
                let from_bytes = bom.len() - self.line.len();
                self.line.clear();
                bytes = &bytes[from_bytes..];
            }
        }
        let mut events = Vec::new();
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.extend_line(bytes)?;
                    bytes = &[];
                }
                Some(i) => {
                    self.extend_line(&bytes[..i])?;
                    self.after_cr = bytes[i] == b'\r';
                    bytes = &bytes[i + 1..];
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_ended(&line)? {
                        events.push(event);
                    }
                    // Reuse the allocation for the next line.
                    self.line = line;
                    self.line.clear();
                }
            }
        }
        Ok(events)
    }

    fn extend_line(&mut self, part: &[u8]) -> Result<(), Error> {
        // The line being read counts with the data already joined; a
        // field name's worth of slack lets a `data:` line carry exactly
        // the bound.
        let held = self.data.len() + self.line.len() + part.len();
        if held > self.max_event_bytes.saturating_add(LINE_SLACK) {
            return Err(Error::SseEventTooLarge(self.max_event_bytes));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    /// Processes one complete line; a blank one dispatches.
    fn line_ended(&mut self, line: &[u8]) -> Result<Option<Event>, Error> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
                if self.data.len() > self.max_event_bytes {
                    return Err(Error::SseEventTooLarge(self.max_event_bytes));
                }
            }
            b"event" => self.event = Some(value.to_vec()),
            b"id" if !value.contains(&0) => {
                self.last_id = Some(utf8(value.to_vec())?);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only; an absurd value saturates.
                self.retry = Some(
                    std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(u64::MAX),
                );
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Result<Option<Event>, Error> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return Ok(None);
        }
        let data = utf8(std::mem::take(&mut self.data))?;
        Ok(Some(Event {
            event: event.map(utf8).transpose()?,
            data,
            id: self.last_id.clone(),
            retry: self.retry,
        }))
    }
}

fn utf8(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|_| Error::SseNotUtf8)
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
