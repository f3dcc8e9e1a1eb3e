//! Server-sent events: the upstream's stream split into events (bounded
//! per event), and the events the gateway writes. Every API the gateway
//! speaks streams this way; Chat Completions sends `data:` lines only,
//! Responses and Messages name each event with an `event:` line too.

use bytes::Bytes;
use serde_json::Value;

/// The most bytes one server-sent event may hold.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// One event: its `event:` name, when it has one, and its `data:` lines
/// joined with newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field.
    pub(crate) name: Option<String>,
    /// The `data:` field.
    pub(crate) data: String,
}

impl SseEvent {
    /// The data as JSON (an error naming the event otherwise).
    pub(crate) fn json(&self) -> Result<Value, String> {
        serde_json::from_str(&self.data).map_err(|_| {
            format!(
                "the upstream's {} event is not JSON",
                self.name.as_deref().unwrap_or("data")
            )
        })
    }
}

/// Splits a server-sent event stream into events, bounded per event.
/// Comments (`:` lines) and events without data are skipped.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
}

impl SseParser {
    /// Feeds bytes; returns every event completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, sep)) = find_blank_line(&self.buf) {
            let event: Vec<u8> = self.buf.drain(..end + sep).take(end).collect();
            let text = String::from_utf8(event).map_err(|_| "an event is not UTF-8")?;
            let mut name = None;
            let mut data = Vec::new();
            for line in text.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => name = Some(value.to_owned()),
                    "data" => data.push(value),
                    _ => {}
                }
            }
            if !data.is_empty() {
                events.push(SseEvent {
                    name,
                    data: data.join("\n"),
                });
            }
        }
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(format!("an event exceeds {MAX_EVENT_BYTES} bytes"));
        }
        Ok(events)
    }
}

fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// One `data:` event (Chat Completions).
pub(crate) fn data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// One named event (Responses, Messages): `event: NAME` then its data.
// Written by the adapters that name their events, not by Chat Completions.
#[allow(dead_code)]
pub(crate) fn named(name: &str, v: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {v}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_keep_their_names() {
        let mut p = SseParser::default();
        let first = p
            .feed(b"event: message_start\ndata: {\"a\":1}\n\n: ping\n\nevent: content_block_delta\ndata: {\"b\"")
            .unwrap();
        assert_eq!(
            first,
            [SseEvent {
                name: Some("message_start".into()),
                data: "{\"a\":1}".into()
            }]
        );
        let rest = p.feed(b":2}\r\n\r\ndata: [DONE]\n\n").unwrap();
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[0].name.as_deref(), Some("content_block_delta"));
        assert_eq!(rest[0].json().unwrap(), serde_json::json!({"b": 2}));
        assert_eq!(rest[1].name, None);
        assert_eq!(rest[1].data, "[DONE]");
    }

    #[test]
    fn an_unbounded_event_is_refused() {
        let mut p = SseParser::default();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(p.feed(&big).is_err());
    }
}
