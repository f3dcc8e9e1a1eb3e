//! Lowercase hex, the encoding of every hash, key and signature in the
//! log, its checkpoint and the key files.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the lowercase hex of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0f)]);
    }
}

/// The lowercase hex of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    encode_into(bytes, &mut out);
    // Only ASCII digits were pushed.
    String::from_utf8(out).unwrap_or_default()
}

/// Exactly `2 * N` lowercase hex digits as `N` bytes; anything else
/// (uppercase included, so each value has one spelling) is `None`.
pub(crate) fn decode_array<const N: usize>(text: impl AsRef<[u8]>) -> Option<[u8; N]> {
    let text = text.as_ref();
    if text.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_rejects_other_spellings() {
        let bytes = [0x00, 0x9f, 0xa0, 0xff];
        assert_eq!(super::encode(&bytes), "009fa0ff");
        assert_eq!(super::decode_array::<4>("009fa0ff"), Some(bytes));
        assert_eq!(super::decode_array::<4>("009FA0FF"), None);
        assert_eq!(super::decode_array::<4>("009fa0f"), None);
        assert_eq!(super::decode_array::<4>("009fa0fg"), None);
    }
}
