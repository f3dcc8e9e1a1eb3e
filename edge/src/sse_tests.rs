//! The event-stream rules, one by one, and the property that matters to
//! a proxy: however the stream is cut into reads, the same events come
//! out.

use proptest::prelude::*;

use super::*;

fn whole(stream: &[u8], max: usize) -> Result<Vec<Event>, Error> {
    Parser::new(max).feed(stream)
}

fn in_pieces(stream: &[u8], cuts: &[usize], max: usize) -> Result<Vec<Event>, Error> {
    let mut p = Parser::new(max);
    let mut out = Vec::new();
    let mut from = 0;
    for &c in cuts.iter().chain([&stream.len()]) {
        let c = c.clamp(from, stream.len());
        out.extend(p.feed(&stream[from..c])?);
        from = c;
    }
    Ok(out)
}

fn data(d: &str) -> Event {
    Event {
        data: d.into(),
        ..Event::default()
    }
}

#[test]
fn lines_end_in_lf_cr_or_crlf() {
    let got = whole(b"data: a\n\ndata: b\r\rdata: c\r\n\r\ndata: d\r\n\n", 64).unwrap();
    assert_eq!(got, [data("a"), data("b"), data("c"), data("d")]);
}

#[test]
fn data_lines_join_with_lf_and_one_space_is_dropped() {
    let got = whole(b"data:a\ndata:  b\ndata\ndata: \n\n", 64).unwrap();
    assert_eq!(got, [data("a\n b\n\n")]);
}

#[test]
fn comments_unknown_fields_and_events_without_data_dispatch_nothing() {
    let got = whole(b": ping\n\nfoo: bar\n\nevent: x\n\ndata: y\n\n", 64).unwrap();
    assert_eq!(got, [data("y")], "the event type is reset at a blank line");
}

#[test]
fn event_id_and_retry_are_read() {
    let got = whole(
        b"event: delta\nid: 7\nretry: 3000\ndata: {}\n\ndata: 2\n\nid\nretry: x1\ndata: 3\n\n",
        64,
    )
    .unwrap();
    assert_eq!(
        got[0],
        Event {
            event: Some("delta".into()),
            data: "{}".into(),
            id: Some("7".into()),
            retry: Some(3000),
        }
    );
    assert_eq!(
        (got[1].event.as_deref(), got[1].id.as_deref(), got[1].retry),
        (None, Some("7"), Some(3000)),
        "the id and the reconnection time persist; the type does not"
    );
    assert_eq!(
        (got[2].id.as_deref(), got[2].retry),
        (Some(""), Some(3000)),
        "an empty id resets it; a retry that is not digits is ignored"
    );
}

#[test]
fn a_leading_byte_order_mark_is_dropped_once() {
    let got = whole("\u{feff}data: a\n\n\u{feff}data: b\n\n".as_bytes(), 64).unwrap();
    assert_eq!(got.len(), 1, "the second mark starts an unknown field");
    assert_eq!(got[0], data("a"));
    let stream = "\u{feff}data: a\n\n".as_bytes();
    for cut in 0..stream.len() {
        assert_eq!(in_pieces(stream, &[cut], 64).unwrap(), [data("a")], "{cut}");
    }
}

#[test]
fn an_unfinished_event_is_not_dispatched() {
    assert_eq!(whole(b"data: a\n", 64).unwrap(), []);
}

#[test]
fn an_event_over_the_bound_fails_the_stream_and_the_bound_is_inclusive() {
    let at = format!("data: {}\n\n", "x".repeat(10));
    assert_eq!(whole(at.as_bytes(), 10).unwrap(), [data(&"x".repeat(10))]);
    let over = format!("data: {}\n\n", "x".repeat(11));
    assert!(matches!(
        whole(over.as_bytes(), 10),
        Err(Error::SseEventTooLarge(10))
    ));
    // Joined lines count together; an endless line fails before it ends.
    assert!(whole(b"data: 123456\ndata: 123456\n\n", 10).is_err());
    let mut p = Parser::new(10);
    assert!(p.feed(b"data").is_ok());
    assert!(p.feed(&[b'x'; 100]).is_err());
}

#[test]
fn an_event_that_is_not_utf8_fails_the_stream() {
    assert!(matches!(
        whole(b"data: \xff\n\n", 64),
        Err(Error::SseNotUtf8)
    ));
}

/// A stream exercising every rule.
const CORPUS: &[u8] = b"\xef\xbb\xbf: hi\r\nevent: a\r\nid: 1\r\ndata: x\r\ndata:y\r\n\r\n\
retry: 10\rdata\r\r\nid\nfoo\n:c\ndata:  z\n\nevent: b\n\ndata: w";

#[test]
fn every_cut_of_the_corpus_gives_the_events_of_the_whole() {
    let expected = whole(CORPUS, 64).unwrap();
    assert_eq!(expected.len(), 3, "{expected:?}");
    for a in 0..=CORPUS.len() {
        assert_eq!(in_pieces(CORPUS, &[a], 64).unwrap(), expected, "cut at {a}");
        for b in a..=CORPUS.len() {
            assert_eq!(
                in_pieces(CORPUS, &[a, b], 64).unwrap(),
                expected,
                "cuts {a} {b}"
            );
        }
    }
    let bytes: Vec<usize> = (1..CORPUS.len()).collect();
    assert_eq!(
        in_pieces(CORPUS, &bytes, 64).unwrap(),
        expected,
        "byte by byte"
    );
}

/// A large event fed in small reads costs time in proportion to its
/// size: the scan resumes where it stopped.
#[test]
fn a_large_event_in_small_reads_is_parsed_in_linear_time() {
    let mut stream = b"data: ".to_vec();
    stream.extend(std::iter::repeat_n(b'x', (1 << 20) - 16));
    stream.extend_from_slice(b"\n\n");
    for size in [1, 16] {
        let started = std::time::Instant::now();
        let mut p = Parser::new(1 << 20);
        let mut n = 0;
        for chunk in stream.chunks(size) {
            n += p.feed(chunk).unwrap().len();
        }
        assert_eq!(n, 1);
        let took = started.elapsed();
        eprintln!("a 1 MiB event in {size}-byte reads: {took:?}");
        // The former rescan of the whole buffer per read took minutes
        // for this (226 s in 16-byte reads, optimised); linear is well
        // under a second, and the bound is generous for a loaded debug
        // build.
        assert!(took < std::time::Duration::from_secs(20));
    }
}

fn piece() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(vec![
        &b"data: a"[..],
        b"data:",
        b"event: e",
        b"id: 9",
        b"retry: 5",
        b": c",
        b"\n",
        b"\r",
        b"\r\n",
        b"x",
        b" ",
        b":",
        "\u{e9}".as_bytes(),
    ])
}

proptest! {
    #[test]
    fn any_stream_cut_anywhere_gives_the_events_of_the_whole(
        pieces in prop::collection::vec(piece(), 0..40),
        cuts in prop::collection::vec(0usize..200, 0..8),
    ) {
        let stream: Vec<u8> = pieces.concat();
        let mut cuts = cuts;
        cuts.sort_unstable();
        let expected = whole(&stream, 64).map_err(|e| e.to_string());
        let got = in_pieces(&stream, &cuts, 64).map_err(|e| e.to_string());
        prop_assert_eq!(got, expected);
    }
}
