//! What an edge tells an agent of a verdict's `message`. A deny's machine
//! reason says what happened; its message, the interceptor's own words
//! for the agent, says what to do instead, so the model can correct
//! itself. Every edge carries it by one rule: the gateway's notices and
//! `403`s, the MCP proxy's tool errors and the hooks' block reasons.
//!
//! The text is what the interceptor wrote: its own redaction is the only
//! one applied (an interceptor writes no secret there). Control
//! characters become spaces (a notice is one line), blanks around it go,
//! and it is cut to [`NOTICE_MESSAGE_MAX_BYTES`] on a character boundary.

/// How many bytes of a verdict's message an edge's notice carries.
pub const NOTICE_MESSAGE_MAX_BYTES: usize = 1024;

/// The verdict's `message` as an edge's notice carries it (see the
/// module docs); `None` when there is none, or only blanks.
pub fn notice_message(message: Option<&str>) -> Option<String> {
    let cleaned: String = message?
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() {
        return None;
    }
    let mut end = trimmed.len().min(NOTICE_MESSAGE_MAX_BYTES);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    Some(trimmed[..end].trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_bounded_and_blank_free() {
        assert_eq!(notice_message(None), None);
        assert_eq!(notice_message(Some("  \t\n ")), None);
        assert_eq!(
            notice_message(Some(" use\tgit clean -n\nfirst ")).as_deref(),
            Some("use git clean -n first")
        );
        let long = "\u{e9}".repeat(NOTICE_MESSAGE_MAX_BYTES);
        let cut = notice_message(Some(&long)).unwrap();
        assert!(cut.len() <= NOTICE_MESSAGE_MAX_BYTES);
        assert!(cut.len() >= NOTICE_MESSAGE_MAX_BYTES - 1);
        assert!(cut.chars().all(|c| c == '\u{e9}'));
    }
}
