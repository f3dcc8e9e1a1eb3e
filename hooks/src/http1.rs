//! The command hook's one HTTP/1.1 exchange with the daemon, blocking and
//! on the standard library alone: one request on a fresh connection
//! (`Connection: close`), one answer read to its end, bounded in time and
//! size. Written here rather than taken from a client crate because the
//! command hook runs once per agent hook call and its start is its cost
//! (`hookwire-hook`'s budget is a bare process's): no runtime, no pool,
//! no TLS, one fixed request shape to a daemon this crate serves.
//!
//! The answer is read strictly: a status line, headers up to
//! [`MAX_HEAD_BYTES`], then a body framed by `Content-Length`, by
//! `Transfer-Encoding: chunked`, or by the connection's end. An answer
//! the daemon sent before reading the whole payload (a refused token) is
//! read even when the payload's write found the connection closed.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// The largest answer head read, in bytes.
pub(crate) const MAX_HEAD_BYTES: usize = 16 << 10;

/// The daemon's answer: status, the named header's value, body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// The value of the header asked for (`None`: absent).
    pub(crate) marked: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// A connection whose reads and writes can be bounded.
pub(crate) trait Timed: Read + Write {
    fn bound(&self, left: Duration) -> std::io::Result<()>;
}

impl Timed for std::net::TcpStream {
    fn bound(&self, left: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(left))?;
        self.set_write_timeout(Some(left))
    }
}

impl Timed for std::os::unix::net::UnixStream {
    fn bound(&self, left: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(left))?;
        self.set_write_timeout(Some(left))
    }
}

/// What one exchange needs besides the connection.
pub(crate) struct Request<'a> {
    pub(crate) host: &'a str,
    pub(crate) path: &'a str,
    pub(crate) token: Option<&'a str>,
    pub(crate) body: &'a [u8],
    /// The header whose value [`Answer::marked`] reports, lowercase.
    pub(crate) marker: &'a str,
    /// The largest body read.
    pub(crate) max_body: usize,
}

/// POSTs `req` on `conn` and reads the answer, all before `deadline`.
pub(crate) fn exchange<C: Timed>(
    conn: &mut C,
    req: &Request<'_>,
    deadline: Instant,
) -> Result<Answer, String> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| "no answer in time".to_owned())
    };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n",
        req.path,
        req.host,
        req.body.len()
    );
    if let Some(token) = req.token {
        head.push_str("authorization: Bearer ");
        head.push_str(token.trim());
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "no answer in time".to_owned()
        }
        _ => format!("unreachable: {e}"),
    };
    conn.bound(left()?).map_err(io)?;
    // The daemon may answer before it has read the payload (a refused
    // token is answered from the head) and close: a write that finds the
    // connection closed still reads the answer already sent, and fails
    // with the write's error only when there is none.
    let sent = conn
        .write_all(head.as_bytes())
        .and_then(|()| conn.write_all(req.body))
        .and_then(|()| conn.flush());
    let cut_off = match sent {
        Ok(()) => None,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ) =>
        {
            Some(e)
        }
        Err(e) => return Err(io(e)),
    };

    let limit = MAX_HEAD_BYTES + req.max_body + 64 * 1024;
    let mut raw = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    loop {
        conn.bound(left()?).map_err(io)?;
        let n = match (conn.read(&mut chunk), cut_off.as_ref()) {
            (Ok(n), _) => n,
            (Err(_), Some(write)) if raw.is_empty() => {
                return Err(format!("unreachable: {write}"));
            }
            (Err(e), _) => return Err(io(e)),
        };
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        if raw.len() > limit {
            return Err(format!("unreadable answer: over {} bytes", req.max_body));
        }
        if let Some(answer) = complete(&raw, req)? {
            return Ok(answer);
        }
    }
    match complete(&raw, req)? {
        Some(answer) => Ok(answer),
        None if raw.is_empty() => Err("unreachable: the daemon closed the connection".into()),
        None => parse_to_end(&raw, req),
    }
}

/// The answer once `raw` holds all of it (`None`: read on).
fn complete(raw: &[u8], req: &Request<'_>) -> Result<Option<Answer>, String> {
    let Some(end) = find(raw, b"\r\n\r\n") else {
        if raw.len() > MAX_HEAD_BYTES {
            return Err("unreadable answer: its head is too long".into());
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&raw[..end])
        .map_err(|_| "unreadable answer: its head is not text".to_owned())?;
    let (status, headers) = parse_head(head, req.marker)?;
    let body = &raw[end + 4..];
    let answer = |body: Vec<u8>| Answer {
        status,
        marked: headers.marked.clone(),
        body,
    };
    if headers.chunked {
        return Ok(dechunk(body, req.max_body)?.map(answer));
    }
    match headers.length {
        Some(n) if n > req.max_body => {
            Err(format!("unreadable answer: over {} bytes", req.max_body))
        }
        Some(n) if body.len() >= n => Ok(Some(answer(body[..n].to_vec()))),
        _ => Ok(None),
    }
}

/// An answer framed by the connection's end.
fn parse_to_end(raw: &[u8], req: &Request<'_>) -> Result<Answer, String> {
    let end = find(raw, b"\r\n\r\n").ok_or("unreadable answer: no complete head")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "unreadable answer")?;
    let (status, headers) = parse_head(head, req.marker)?;
    if headers.chunked || headers.length.is_some() {
        return Err("unreadable answer: it broke off".into());
    }
    let body = raw[end + 4..].to_vec();
    if body.len() > req.max_body {
        return Err(format!("unreadable answer: over {} bytes", req.max_body));
    }
    Ok(Answer {
        status,
        marked: headers.marked,
        body,
    })
}

#[derive(Default)]
struct Headers {
    length: Option<usize>,
    chunked: bool,
    marked: Option<String>,
}

fn parse_head(head: &str, marker: &str) -> Result<(u16, Headers), String> {
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut words = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (words.next(), words.next()) else {
        return Err("unreadable answer: no status line".into());
    };
    if !version.starts_with("HTTP/1.") {
        return Err("unreadable answer: not HTTP/1".into());
    }
    let status = code
        .parse::<u16>()
        .map_err(|_| "unreadable answer: no status code".to_owned())?;
    let mut h = Headers::default();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err("unreadable answer: a header line without a colon".into());
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            h.length = Some(
                value
                    .parse()
                    .map_err(|_| "unreadable answer: a bad content-length".to_owned())?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            h.chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case(marker) {
            h.marked = Some(value.to_owned());
        }
    }
    Ok((status, h))
}

/// The body of a chunked encoding once its last chunk is in (`None`:
/// read on).
fn dechunk(mut raw: &[u8], max: usize) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(raw, b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&raw[..line_end]).map_err(|_| "a bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| "unreadable answer: a bad chunk size".to_owned())?;
        if size == 0 {
            return Ok(find(&raw[line_end + 2..], b"\r\n").map(|_| body));
        }
        if body.len() + size > max {
            return Err(format!("unreadable answer: over {max} bytes"));
        }
        let start = line_end + 2;
        if raw.len() < start + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&raw[start..start + size]);
        raw = &raw[start + size + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request<'static> {
        Request {
            host: "localhost",
            path: "/v1/hooks/codex",
            token: None,
            body: b"{}",
            marker: "x-failed",
            max_body: 64,
        }
    }

    #[test]
    fn answers_are_read_by_length_by_chunks_and_to_the_end() {
        let by_length = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-failed: why\r\n\r\n{}";
        let a = complete(by_length, &req()).unwrap().unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &b"{}"[..]));
        assert_eq!(a.marked.as_deref(), Some("why"));
        let chunked =
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n";
        assert_eq!(complete(chunked, &req()).unwrap().unwrap().body, b"{}");
        assert!(
            complete(&chunked[..chunked.len() - 2], &req())
                .unwrap()
                .is_none(),
            "read on"
        );
        let to_end = b"HTTP/1.1 502 Bad Gateway\r\n\r\noops";
        assert!(complete(to_end, &req()).unwrap().is_none());
        assert_eq!(parse_to_end(to_end, &req()).unwrap().status, 502);
    }

    #[test]
    fn garbage_and_oversize_are_refused() {
        for bad in [
            &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
            b"HTTP/1.1 abc\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        ] {
            assert!(
                complete(bad, &req()).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let cut = b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}";
        assert!(parse_to_end(cut, &req()).is_err(), "broke off");
    }

    #[test]
    fn an_answer_sent_before_the_payload_was_read_is_still_read() {
        use std::io::{BufRead, BufReader};
        let (mut client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        // The daemon reads the head only, refuses, and closes.
        let refuse = std::thread::spawn(move || {
            let mut reader = BufReader::new(server);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let mut server = reader.into_inner();
            server
                .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
        });
        // More than a socket buffer holds: the write finds it closed.
        let body = vec![b' '; 4 << 20];
        let mut r = req();
        r.body = &body;
        let answer = exchange(&mut client, &r, Instant::now() + Duration::from_secs(10)).unwrap();
        assert_eq!(answer.status, 401);
        refuse.join().unwrap();
    }
}
