//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the
//! `traceparent` header a host sends with each call and a service parents
//! its spans on, as plain values over header strings.
//!
//! Both SDKs speak OpenTelemetry, but this crate does not depend on it: the
//! host formats the header from its span's ids, the service parses it back
//! into ids and adapts them to its own tracing; `tracestate` is opaque here
//! and travels as is. The same rules read the §4.5 `trace` member of a
//! context ([`parse_trace_id`], [`parse_parent_id`]).
//!
//! Parsing follows the specification's rules for receivers: version `ff`
//! is invalid; version `00` is exactly `00-<32 hex>-<16 hex>-<2 hex>`; a
//! later version has at least those fields, and whatever follows them
//! starts with `-`. Every digit is lowercase hex, and neither id may be all
//! zeros. A header that breaks a rule is not a trace context at all: the
//! receiver starts a new trace.

use std::fmt;

/// The header (and gRPC metadata key) of the trace parent.
pub const TRACEPARENT: &str = "traceparent";

/// The header (and gRPC metadata key) of the vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// The trace-flags bit saying that the caller may have recorded its span.
pub const SAMPLED: u8 = 0x01;

/// Length of a version `00` header: `vv-` + 32 + `-` + 16 + `-` + 2.
const HEADER_LEN: usize = 55;

/// The caller's span, as a `traceparent` header names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The trace every span of the call tree belongs to; never all zeros.
    pub trace_id: [u8; 16],
    /// The caller's span, the parent of the receiver's; never all zeros.
    pub parent_id: [u8; 8],
    /// The trace flags ([`SAMPLED`] and bits a later version may define).
    pub flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` header value (surrounding spaces or tabs, as
    /// HTTP allows, are ignored); `None` when it breaks a rule of the
    /// specification.
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim_matches([' ', '\t']);
        let bytes = header.as_bytes();
        // ASCII only, so that every field below is sliced on a boundary.
        if bytes.len() < HEADER_LEN || !header.is_ascii() {
            return None;
        }
        let version = lowercase_hex::<1>(&header[..2])?[0];
        let beyond = &bytes[HEADER_LEN..];
        let layout_ok = match version {
            0xff => false,
            0x00 => beyond.is_empty(),
            _ => beyond.is_empty() || beyond[0] == b'-',
        };
        if !layout_ok || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        Some(Self {
            trace_id: parse_trace_id(&header[3..35])?,
            parent_id: parse_parent_id(&header[36..52])?,
            flags: lowercase_hex::<1>(&header[53..55])?[0],
        })
    }

    /// Whether the caller may have recorded its span.
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
}

/// The version `00` header value: `00-<trace id>-<parent id>-<flags>`.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut header = *b"00-00000000000000000000000000000000-0000000000000000-00";
        // Each slot is exactly twice its input, so encoding cannot fail.
        hex::encode_to_slice(self.trace_id, &mut header[3..35]).map_err(|_| fmt::Error)?;
        hex::encode_to_slice(self.parent_id, &mut header[36..52]).map_err(|_| fmt::Error)?;
        hex::encode_to_slice([self.flags], &mut header[53..55]).map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&header).map_err(|_| fmt::Error)?)
    }
}

/// A trace id as the specification writes it: 32 lowercase hex digits,
/// not all zeros.
pub fn parse_trace_id(digits: &str) -> Option<[u8; 16]> {
    lowercase_hex(digits).filter(|id| *id != [0; 16])
}

/// A parent (span) id as the specification writes it: 16 lowercase hex
/// digits, not all zeros.
pub fn parse_parent_id(digits: &str) -> Option<[u8; 8]> {
    lowercase_hex(digits).filter(|id| *id != [0; 8])
}

/// Exactly `2 * N` lowercase hex digits as `N` bytes. (The `hex` crate
/// also reads uppercase, which the specification does not allow.)
fn lowercase_hex<const N: usize>(digits: &str) -> Option<[u8; N]> {
    if digits.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's example header.
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    const TRACE_ID: [u8; 16] = [
        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47,
        0x36,
    ];
    const PARENT_ID: [u8; 8] = [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7];

    #[test]
    fn the_specification_example_reads_and_writes_back() {
        let parent = TraceParent::parse(EXAMPLE).expect("valid");
        assert_eq!(parent.trace_id, TRACE_ID);
        assert_eq!(parent.parent_id, PARENT_ID);
        assert_eq!(parent.flags, 0x01);
        assert!(parent.sampled());
        assert_eq!(parent.to_string(), EXAMPLE);
        let unsampled = TraceParent::parse(&EXAMPLE.replace("-01", "-00")).unwrap();
        assert!(!unsampled.sampled());
        assert_eq!(
            unsampled.to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        );
        // Header whitespace is not part of the value.
        assert_eq!(TraceParent::parse(&format!(" {EXAMPLE}\t")), Some(parent));
    }

    #[test]
    fn later_versions_are_read_by_their_version_00_fields() {
        for header in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds",
        ] {
            let parent = TraceParent::parse(header).unwrap_or_else(|| panic!("{header}"));
            assert_eq!((parent.trace_id, parent.parent_id), (TRACE_ID, PARENT_ID));
            assert!(parent.sampled());
        }
        // Flags a later version defines are kept; the sampled bit is read.
        let flagged =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09").unwrap();
        assert_eq!(flagged.flags, 0x09);
        assert!(flagged.sampled());
    }

    #[test]
    fn headers_that_break_a_rule_are_refused() {
        for (header, broken) in [
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version ff",
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "all-zero trace id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "all-zero parent id",
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "uppercase trace id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
                "uppercase parent id",
            ),
            (
                "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "uppercase version",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
                "uppercase flags",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
                "trace id too short",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01",
                "trace id too long",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
                "parent id too short",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b77-01",
                "parent id too long",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                "flags too short",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
                "flags too long",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
                "version 00 with more fields",
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
                "a later version's extra not after a dash",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                "flags missing",
            ),
            (
                "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version of one digit",
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
                "not dash-separated",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902g7-01",
                "not hex",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é1",
                "not ASCII",
            ),
            ("", "empty"),
        ] {
            assert_eq!(TraceParent::parse(header), None, "{broken}: {header}");
        }
    }

    #[test]
    fn ids_alone_follow_the_same_rules() {
        assert_eq!(
            parse_trace_id("4bf92f3577b34da6a3ce929d0e0e4736"),
            Some(TRACE_ID)
        );
        assert_eq!(parse_parent_id("00f067aa0ba902b7"), Some(PARENT_ID));
        for bad in [
            "4BF92F3577B34DA6A3CE929D0E0E4736",
            "00000000000000000000000000000000",
            "4bf92f3577b34da6a3ce929d0e0e473",
            "ab",
        ] {
            assert_eq!(parse_trace_id(bad), None, "{bad}");
        }
        assert_eq!(parse_parent_id("0000000000000000"), None);
        assert_eq!(parse_parent_id("00f067aa0ba902b"), None);
    }
}
