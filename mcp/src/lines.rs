//! Bounded reading of newline-delimited messages (MCP's stdio transport,
//! both sides): a message longer than the bound is skipped to its end and
//! reported (the caller fails closed on it), never buffered whole. Server-
//! Sent Events (a Streamable HTTP upstream's streamed answers) are read
//! by the edges' shared parser, `hookwire_edge::sse`.

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
}
