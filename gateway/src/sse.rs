//! Server-sent events: the upstream's stream split into events by the
//! edges' shared parser (`hookwire_edge::sse`: WHATWG rules, incremental,
//! an event over [`MAX_EVENT_BYTES`] fails the stream), and the events
//! the gateway writes. Every API the gateway speaks streams this way;
//! Chat Completions sends `data:` lines only, Responses and Messages name
//! each event with an `event:` line too.

use bytes::Bytes;
use serde_json::Value;

/// The most bytes one server-sent event's data may hold; a larger one
/// fails the stream (the answer is refused, never passed or skipped).
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

/// Splits the upstream's event stream into the events the adapters read
/// (name and data), bounded per event. Comments (`:` lines) and events
/// without data dispatch nothing.
#[derive(Debug)]
pub(crate) struct SseParser(hookwire_edge::sse::Parser);

impl Default for SseParser {
    fn default() -> Self {
        Self(hookwire_edge::sse::Parser::new(MAX_EVENT_BYTES))
    }
}

impl SseParser {
    /// Feeds bytes; returns every event completed by them, or why the
    /// stream cannot go on (an event over the bound, not UTF-8).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        let events = self.0.feed(bytes).map_err(|e| e.to_string())?;
        Ok(events
            .into_iter()
            .map(|e| SseEvent {
                name: e.event,
                data: e.data,
            })
            .collect())
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
        // Data one byte over the bound, in a whole event.
        let mut p = SseParser::default();
        let mut big = b"data: ".to_vec();
        big.extend(vec![b'x'; MAX_EVENT_BYTES + 1]);
        big.extend_from_slice(b"\n\n");
        assert!(p.feed(&big).is_err());
        // A line that never ends is refused once past the bound (and a
        // field name's slack), without waiting for its end.
        let mut p = SseParser::default();
        assert!(p.feed(&vec![b'x'; MAX_EVENT_BYTES + 65]).is_err());
        // Exactly the bound passes.
        let mut p = SseParser::default();
        let mut full = b"data: ".to_vec();
        full.extend(vec![b'x'; MAX_EVENT_BYTES]);
        full.extend_from_slice(b"\n\n");
        assert_eq!(p.feed(&full).unwrap().len(), 1);
    }
}
