//! The §12.3 bounds on a context: its serialized size and its nesting
//! depth, measured in one walk without writing the JSON out.

use serde_json::Value;

use super::{AgentContext, ContextLimits, InvalidContext};
use crate::canonical::{CanonicalError, json_string_len};

impl AgentContext {
    /// Checks the §12.3 bounds: serialized size and nesting depth.
    ///
    /// The size is the length of the compact JSON serialization of the
    /// members plus, once more, of the target (which the spec's JSON
    /// carries twice: as itself and inside its field). It is measured, not
    /// written: one walk counts the bytes serde_json would write and
    /// notes the depth, stopping as soon as the bound is passed.
    pub fn check_limits(&self, limits: &ContextLimits) -> Result<(), InvalidContext> {
        let target = self.target();
        let mut m = Measure {
            limit: limits.max_bytes,
            count: 0,
            budget: limits.max_depth.saturating_sub(1),
            too_deep: false,
            target,
            target_len: None,
        };
        let too_large = InvalidContext::TooLarge {
            limit: limits.max_bytes,
        };
        let within = m.add(2 + self.members.len().saturating_sub(1))
            && self
                .members
                .iter()
                .all(|(k, v)| m.add(json_string_len(k) + 1) && m.value(v, 0));
        if !within {
            return Err(too_large);
        }
        if let Some(t) = target {
            let len = match m.target_len {
                Some(len) => len,
                None => {
                    let start = m.count;
                    if !m.value(t, 0) {
                        return Err(too_large);
                    }
                    m.count - start
                }
            };
            if !m.add(len) {
                return Err(too_large);
            }
        }
        if m.too_deep {
            return Err(CanonicalError::TooDeep(limits.max_depth).into());
        }
        Ok(())
    }
}

/// One walk of [`AgentContext::check_limits`]: the bytes serde_json's
/// compact writer would produce, and whether any container sits at or
/// below the depth budget (a top-level member's value is at level 0).
struct Measure<'a> {
    limit: usize,
    count: usize,
    budget: usize,
    too_deep: bool,
    /// The target, whose length is noted on the way (it counts twice).
    target: Option<&'a Value>,
    target_len: Option<usize>,
}

impl<'a> Measure<'a> {
    /// Counts `n` more bytes; `false` once past the limit.
    fn add(&mut self, n: usize) -> bool {
        self.count = self.count.saturating_add(n);
        self.count <= self.limit
    }

    /// Counts `v` at nesting `level`; `false` once past the limit.
    fn value(&mut self, v: &'a Value, level: usize) -> bool {
        let start = self.count;
        let within = match v {
            Value::Null | Value::Bool(true) => self.add(4),
            Value::Bool(false) => self.add(5),
            Value::Number(n) => self.add(number_len(n)),
            Value::String(s) => self.add(json_string_len(s)),
            Value::Array(items) => {
                self.too_deep |= level >= self.budget;
                self.add(2 + items.len().saturating_sub(1))
                    && items.iter().all(|item| self.value(item, level + 1))
            }
            Value::Object(o) => {
                self.too_deep |= level >= self.budget;
                self.add(2 + o.len().saturating_sub(1))
                    && o.iter()
                        .all(|(k, v)| self.add(json_string_len(k) + 1) && self.value(v, level + 1))
            }
        };
        if within && self.target.is_some_and(|t| std::ptr::eq(t, v)) {
            self.target_len = Some(self.count - start);
        }
        within
    }
}

/// The length serde_json writes for a number: integers in decimal, floats
/// in their shortest round-trip form (measured by serde_json itself).
fn number_len(n: &serde_json::Number) -> usize {
    fn digits(mut u: u64) -> usize {
        let mut d = 1;
        while u >= 10 {
            u /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        let mut counter = ByteCounter(0);
        let _ = serde_json::to_writer(&mut counter, n);
        counter.0
    }
}

/// Counts what is written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
