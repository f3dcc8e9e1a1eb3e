//! The lexical scan over number tokens: which integer literals do not fit
//! 64 bits (refused by `decode`) and which lie beyond the range a double
//! holds exactly (named by `read`).

use crate::canonical::MAX_SAFE_INTEGER;

/// The byte offset of the first integer literal of `text` (well-formed JSON)
/// that fits neither i64 (negative) nor u64 (non-negative).
pub(super) fn out_of_range_integer(text: &[u8]) -> Option<usize> {
    number_tokens(text)
        .find(|(_, token)| {
            let (negative, digits) = sign_and_digits(token);
            is_integer(token) && !fits_64_bits(digits, negative)
        })
        .map(|(offset, _)| offset)
}

/// The number tokens of `text` (well-formed JSON) with their byte offsets,
/// in order: a lexical scan that skips strings, whose digits are no
/// numbers.
pub(super) fn number_tokens(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while let Some(&b) = text.get(i) {
            match b {
                b'"' => i = string_end(text, i + 1),
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    i += 1;
                    while text.get(i).is_some_and(|c| {
                        matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                    }) {
                        i += 1;
                    }
                    return Some((start, &text[start..i]));
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// Whether a number token is an integer literal: no fraction, no exponent.
fn is_integer(token: &[u8]) -> bool {
    !token.iter().any(|c| matches!(c, b'.' | b'e' | b'E'))
}

/// A number token's sign and its digits up to any fraction or exponent
/// (for an integer literal, its magnitude).
fn sign_and_digits(token: &[u8]) -> (bool, &[u8]) {
    let (negative, unsigned) = match token.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, token),
    };
    let digits = unsigned.iter().take_while(|c| c.is_ascii_digit()).count();
    (negative, &unsigned[..digits])
}

/// Whether a number token is an integer literal beyond ±(2^53 − 1).
pub(super) fn is_wide_integer(token: &[u8]) -> bool {
    let (_, digits) = sign_and_digits(token);
    is_integer(token)
        && std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
            .is_none_or(|m| m > MAX_SAFE_INTEGER)
}

/// The index just past the closing quote of the string whose contents start
/// at `i` (or the end of `text`).
fn string_end(text: &[u8], mut i: usize) -> usize {
    while let Some(rest) = text.get(i..) {
        match rest.iter().position(|&c| c == b'"' || c == b'\\') {
            Some(p) if rest[p] == b'\\' => i += p + 2,
            Some(p) => return i + p + 1,
            None => break,
        }
    }
    text.len()
}

/// Whether the decimal magnitude `digits` fits u64 (or i64 when negative).
pub(super) fn fits_64_bits(digits: &[u8], negative: bool) -> bool {
    const U64_MAX: &[u8] = b"18446744073709551615";
    const I64_MIN_MAGNITUDE: &[u8] = b"9223372036854775808";
    let first_significant = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let digits = &digits[first_significant..];
    let max = if negative { I64_MIN_MAGNITUDE } else { U64_MAX };
    // Equal-length ASCII digit strings compare like the numbers they spell.
    digits.len() < max.len() || (digits.len() == max.len() && digits <= max)
}
