//! The §7.3 metadata unions: warnings from every returned verdict, labels
//! from every permit verdict, each first-seen ordered without duplicates.

use hookwire::{Verdict, Warning};

/// Accumulates warnings and result labels across an emission.
#[derive(Debug, Default)]
pub(super) struct Unions {
    warnings: Vec<Warning>,
    labels: Vec<String>,
}

impl Unions {
    /// Adds one returned verdict's metadata.
    pub(super) fn add(&mut self, v: &Verdict) {
        for w in &v.warnings {
            if !self.warnings.contains(w) {
                self.warnings.push(w.clone());
            }
        }
        if v.is_permit() {
            for l in &v.result_labels {
                if !self.labels.contains(l) {
                    self.labels.push(l.clone());
                }
            }
        }
    }

    /// Stamps the unions on the combined verdict. Labels are dropped when the
    /// combined verdict does not permit the action (§5.4).
    pub(super) fn stamp(self, mut combined: Verdict) -> Verdict {
        combined.warnings = self.warnings;
        combined.result_labels = if combined.is_permit() {
            self.labels
        } else {
            Vec::new()
        };
        combined
    }
}
