//! Bounded reading of newline-delimited messages (MCP's stdio transport,
//! both sides) and of Server-Sent Events (a Streamable HTTP upstream's
//! streamed answers): a message longer than the bound is skipped to its
//! end and reported, never buffered whole.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its newline (blank lines are skipped).
    Text(Vec<u8>),
    /// A line longer than the bound, skipped.
    Oversized,
    /// The end of the stream.
    Eof,
}

/// Reads the next non-blank line of at most `max` bytes.
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            // A last line without its newline still counts.
            return Ok(match (over, line.is_empty()) {
                (true, _) => Line::Oversized,
                (false, true) => Line::Eof,
                (false, false) => Line::Text(line),
            });
        }
        let (taken, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let body = &chunk[..if done { taken - 1 } else { taken }];
        if !over {
            if line.len() + body.len() > max {
                over = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(body);
            }
        }
        r.consume(taken);
        if done {
            if over {
                return Ok(Line::Oversized);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                line.clear();
                continue;
            }
            return Ok(Line::Text(line));
        }
    }
}

/// Splits a Server-Sent Events stream into the `data` of its events,
/// bounded per event; events without data, or with empty data, are
/// skipped.
#[derive(Debug, Default)]
pub struct SseEvents {
    pending: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    over: bool,
}

/// One event's data, or an event over the bound.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// The event's data lines, joined by newlines.
    Data(Vec<u8>),
    /// An event whose data exceeded the bound.
    Oversized,
}

impl SseEvents {
    /// Feeds `bytes`; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8], max: usize) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                if self.pending.len() <= max + 16 {
                    self.pending.push(b);
                } else {
                    self.over = true;
                }
                continue;
            }
            let mut line = std::mem::take(&mut self.pending);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                if self.over {
                    out.push(Event::Oversized);
                } else if self.has_data && !self.data.iter().all(u8::is_ascii_whitespace) {
                    // An event with empty data (a server priming its
                    // stream with an id and a retry) carries no message.
                    out.push(Event::Data(std::mem::take(&mut self.data)));
                }
                self.data.clear();
                self.has_data = false;
                self.over = false;
                continue;
            }
            if let Some(rest) = line.strip_prefix(b"data:") {
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(rest);
                self.has_data = true;
                if self.data.len() > max {
                    self.over = true;
                    self.data.clear();
                }
            }
            // `event:`, `id:`, `retry:` and comments carry nothing the
            // proxy needs.
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, max).await.unwrap();
            let end = l == Line::Eof;
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_blank_ones_skipped() {
        let got = lines(b"ab\r\n\n  \ncdefghijkl\nxy", 5).await;
        assert_eq!(
            got,
            vec![
                Line::Text(b"ab".to_vec()),
                Line::Oversized,
                Line::Text(b"xy".to_vec()),
                Line::Eof
            ]
        );
        assert_eq!(
            lines(b"abcdefgh", 3).await,
            vec![Line::Oversized, Line::Eof]
        );
        assert_eq!(lines(b"", 3).await, vec![Line::Eof]);
    }

    #[test]
    fn sse_events_join_data_lines_and_bound_them() {
        let mut s = SseEvents::default();
        let mut got = s.feed(
            b"event: message\ndata: {\"a\":\ndata: 1}\n\n: comment\n\n",
            100,
        );
        got.extend(s.feed(b"data: x", 100));
        assert_eq!(got, vec![Event::Data(b"{\"a\":\n1}".to_vec())]);
        assert_eq!(s.feed(b"\r\n\r\n", 100), vec![Event::Data(b"x".to_vec())]);
        assert_eq!(
            s.feed(b"id: 0\nretry: 3000\ndata: \n\ndata: {}\n\n", 100),
            vec![Event::Data(b"{}".to_vec())],
            "a priming event is skipped"
        );
        assert_eq!(
            s.feed(b"data: 0123456789\n\ndata: ok\n\n", 5),
            vec![Event::Oversized, Event::Data(b"ok".to_vec())]
        );
    }
}
