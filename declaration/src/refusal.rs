//! Refusals of a host declaration (§7.7.6): the eleven
//! `declaration_error:*` classes, the findings a load step reports, and
//! the bounded, value-free wording they use.
//!
//! A refusal is a construction outcome, not a verdict: it happens before a
//! host exists, so it never reaches a record. Findings name JSON pointers,
//! members, binding ids and kinds; they never quote a `config` value, since
//! load errors are logged and a binding's configuration may hold secrets.
//!
//! [`Refusal`] is this crate's one error type: every step of reading and
//! resolving a document fails with one. `hookwire-client` carries it in its
//! own `Error` (the host's kind resolvers refuse with
//! [`RefusalClass::BindingRejected`], step 11) and re-exports these types
//! at `hookwire_client::declaration`.

use std::fmt;

/// Longest refusal detail (and a document's `exposure_bound`), in
/// characters: a longer detail is cut, the ellipsis included.
pub const MAX_DETAIL_CHARS: usize = 512;

/// The refusal classes, in the order of the load pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefusalClass {
    /// Step 1: not a regular file, too large, not strict UTF-8, a byte-order
    /// mark, an I/O error.
    Unreadable,
    /// Step 2: not one JSON object, a duplicate key, too deep, too long.
    Malformed,
    /// Step 3: `declaration` missing, not a string, or not accepted.
    VersionUnsupported,
    /// Step 4: `spec` of another major or a higher minor.
    SpecUnsupported,
    /// Step 5: an unknown member at a closed level.
    UnknownField,
    /// Step 6: a type, enum, pattern, range or required-iff rule.
    InvalidField,
    /// Step 7: the document contradicts itself.
    Inconsistent,
    /// Step 8: the document asks for more than the host's code does.
    SurfaceUnsupported,
    /// Step 9: a provider, resolver or redactor name nobody registered.
    ReferenceUnresolved,
    /// Step 10: a binding kind with no registered resolver.
    KindUnknown,
    /// Step 11: a kind resolver refused its binding.
    BindingRejected,
}

impl RefusalClass {
    /// Every class, in pipeline order.
    pub const ALL: [Self; 11] = [
        Self::Unreadable,
        Self::Malformed,
        Self::VersionUnsupported,
        Self::SpecUnsupported,
        Self::UnknownField,
        Self::InvalidField,
        Self::Inconsistent,
        Self::SurfaceUnsupported,
        Self::ReferenceUnresolved,
        Self::KindUnknown,
        Self::BindingRejected,
    ];

    /// The bare class name, e.g. `unknown_field`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Unreadable => "unreadable",
            Self::Malformed => "malformed",
            Self::VersionUnsupported => "version_unsupported",
            Self::SpecUnsupported => "spec_unsupported",
            Self::UnknownField => "unknown_field",
            Self::InvalidField => "invalid_field",
            Self::Inconsistent => "inconsistent",
            Self::SurfaceUnsupported => "surface_unsupported",
            Self::ReferenceUnresolved => "reference_unresolved",
            Self::KindUnknown => "kind_unknown",
            Self::BindingRejected => "binding_rejected",
        }
    }

    /// The namespaced code, e.g. `declaration_error:unknown_field`.
    pub fn code(self) -> String {
        format!("declaration_error:{}", self.name())
    }
}

impl fmt::Display for RefusalClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "declaration_error:{}", self.name())
    }
}

/// One problem found at one place of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// An RFC 6901 pointer into the document (`""` is the root).
    pub pointer: String,
    /// The rule broken, at most 512 characters, never a `config` value.
    pub detail: String,
}

impl Finding {
    /// A finding at `pointer`, its detail bounded at [`MAX_DETAIL_CHARS`]
    /// (the caller writes no `config` value into it).
    pub fn new(pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            detail: bounded(detail.into()),
        }
    }
}

/// A refused declaration: one class, every finding of the step that
/// refused it, and for `version_unsupported` the versions this loader
/// accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The class of the step that refused.
    pub class: RefusalClass,
    /// What that step found, in document order.
    pub findings: Vec<Finding>,
    /// The accepted `declaration` values (`version_unsupported` only).
    pub accepted: Vec<String>,
}

impl Refusal {
    /// A refusal with one finding: what a step past the pure ones (the
    /// host's kind resolvers, step 11) refuses with.
    pub fn one(class: RefusalClass, pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::many(class, vec![Finding::new(pointer, detail)])
    }

    /// A refusal with the findings of one step.
    pub(crate) fn many(class: RefusalClass, findings: Vec<Finding>) -> Self {
        Self {
            class,
            findings,
            accepted: Vec::new(),
        }
    }

    /// The same refusal, listing the `declaration` values the loader
    /// accepts (`version_unsupported`).
    pub(crate) fn accepting(mut self, versions: &[&str]) -> Self {
        self.accepted = versions.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// `Ok` when a step found nothing, else its refusal.
    pub(crate) fn check(class: RefusalClass, findings: Vec<Finding>) -> Result<(), Self> {
        if findings.is_empty() {
            Ok(())
        } else {
            Err(Self::many(class, findings))
        }
    }
}

impl std::error::Error for Refusal {}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.class)?;
        for (i, finding) in self.findings.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            let at = if finding.pointer.is_empty() {
                "(document)"
            } else {
                &finding.pointer
            };
            write!(f, "{sep}{at}: {}", finding.detail)?;
        }
        if !self.accepted.is_empty() {
            write!(f, " (accepted: {})", self.accepted.join(", "))?;
        }
        Ok(())
    }
}

/// Bounds a detail at [`MAX_DETAIL_CHARS`], the ellipsis included.
fn bounded(s: String) -> String {
    if s.chars().count() <= MAX_DETAIL_CHARS {
        return s;
    }
    let mut out: String = s.chars().take(MAX_DETAIL_CHARS - 1).collect();
    out.push('…');
    out
}

/// Appends an RFC 6901 segment to a pointer.
pub(crate) fn pointer(parent: &str, segment: &str) -> String {
    format!("{parent}/{}", segment.replace('~', "~0").replace('/', "~1"))
}
