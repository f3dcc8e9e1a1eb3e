//! Names quoted back: a method or member name as an answer or a log line
//! quotes it, bounded. A leaf: the core and its stateless half use it.

/// A method name as quoted in an answer or a log: at most 64 bytes.
pub fn bounded_name(method: &str) -> &str {
    let mut end = method.len().min(64);
    while !method.is_char_boundary(end) {
        end -= 1;
    }
    &method[..end]
}
