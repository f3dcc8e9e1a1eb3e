//! Load-time check of the regular expressions a module writes literally.
//!
//! Regorus compiles a `regex.*` pattern when a decision calls it, with a
//! bound on the compiled program's size ([`REGEX_SIZE_LIMIT`], regorus'
//! own); a pattern over it fails every decision that reaches the call, so
//! the host denies every emission at that point. A pattern written as a
//! string literal is known at load: it is compiled here under the same
//! bound, and a module whose literal pattern does not compile is refused,
//! naming the file and line. Patterns built at evaluation time (from data,
//! `concat`, input) are not known until then.

use regorus::unstable::{Lexer, Source, TokenKind};

use crate::error::Error;

/// The compiled-size bound regorus 0.14.1 puts on a `regex.*` pattern
/// (its `REGEX_SIZE_LIMIT`), in bytes.
pub(crate) const REGEX_SIZE_LIMIT: usize = 100 * 1024;

/// The `regex.*` built-ins whose first argument is a pattern.
const PATTERN_FIRST: [&str; 4] = ["match", "split", "find_n", "find_all_string_submatch_n"];

/// Refuses `text` (the module `file`) when a literal pattern of a
/// `regex.*` call does not compile within [`REGEX_SIZE_LIMIT`]. A module
/// the lexer refuses is left to the parser, which reports it.
pub(crate) fn check_literal_patterns(file: &str, text: &str) -> Result<(), Error> {
    let Ok(source) = Source::from_contents(file.to_owned(), text.to_owned()) else {
        return Ok(());
    };
    let mut lexer = Lexer::new(&source);
    // The last five tokens: `regex` `.` NAME `(` PATTERN.
    let mut window: Vec<(TokenKind, String, u32)> = Vec::with_capacity(5);
    loop {
        let Ok(token) = lexer.next_token() else {
            return Ok(());
        };
        if matches!(token.0, TokenKind::Eof) {
            return Ok(());
        }
        if window.len() == 5 {
            window.remove(0);
        }
        window.push((token.0, token.1.text().to_owned(), token.1.line));
        let [
            (TokenKind::Ident, regex, _),
            (TokenKind::Symbol, dot, _),
            (TokenKind::Ident, name, _),
            (TokenKind::Symbol, open, _),
            (kind, literal, line),
        ] = window.as_slice()
        else {
            continue;
        };
        if regex != "regex" || dot != "." || open != "(" || !PATTERN_FIRST.contains(&name.as_str())
        {
            continue;
        }
        let pattern = match kind {
            TokenKind::RawString => literal.clone(),
            TokenKind::String => match serde_json::from_str::<String>(&format!("\"{literal}\"")) {
                Ok(pattern) => pattern,
                Err(_) => continue,
            },
            _ => continue,
        };
        if let Err(e) = regex::RegexBuilder::new(&pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
        {
            return Err(Error::Compile(format!(
                "{file}:{line}: the pattern of `regex.{name}` does not compile within the engine's limit ({} KiB compiled): {}; every decision reaching it would fail. See \"Limits and divergences from OPA\" in docs/policies.md",
                REGEX_SIZE_LIMIT / 1024,
                first_line(&e.to_string()),
            )));
        }
    }
}

/// The first line of a multi-line diagnostic.
fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
        .trim()
}

#[cfg(test)]
mod tests {
    use super::check_literal_patterns;

    #[test]
    fn a_literal_pattern_over_the_limit_is_refused_with_its_file_and_line() {
        let module = "package hookwire.big\nimport rego.v1\npoints := {\"input\"}\n\ndeny contains \"x\" if regex.match(`\\w{1000}\\w{1000}`, input.x)\n";
        let e = check_literal_patterns("big.rego", module)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("big.rego:5: the pattern of `regex.match`"),
            "{e}"
        );
        assert!(e.contains("100 KiB"), "{e}");
    }

    #[test]
    fn small_escaped_and_computed_patterns_pass() {
        let module = "package hookwire.ok\nimport rego.v1\n# regex.match(`\\w{1000}\\w{1000}`, x) in a comment\np if regex.match(\"^a\\\\.b$\", input.x)\nq if regex.split(`,`, input.x)\nr if regex.match(concat(\"\", [\"a\"]), input.x)\n";
        check_literal_patterns("ok.rego", module).unwrap();
    }
}
