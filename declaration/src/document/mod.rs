//! The document as written: steps 3 to 7 of the load pipeline, checked on
//! the members the document states (the version, the `spec` wire version,
//! the closed levels, each member's type and range, and the internal
//! consistency rules that need no host to check), one step per module.
//!
//! [`Document`] is a document that passed them (and steps 1 and 2,
//! `parse`). Nothing here consults the host. Resolution against the
//! host's surface and registered names — filling defaults, and re-running
//! the consistency rules on the filled surface — happens in `resolve`.

mod closed;
mod fields;
mod version;

use std::path::Path;

use serde_json::{Map, Value};

pub(crate) use closed::check_closed;
pub(crate) use fields::check_fields;
pub(crate) use version::{check_spec, check_version};

use crate::consistency::{SurfaceView, check_consistency};
use crate::parse::{parse, read};
use crate::refusal::{Refusal, RefusalClass};
use crate::resolve::{Catalog, resolve};
use crate::resolved::ResolvedDeclaration;

/// A declaration document that passed steps 1 to 7 as written: parsed
/// under the bounds, of an accepted version, closed, well-typed and
/// consistent in what it states. Not yet checked against any host: see
/// [`Document::resolve`]. `hookwire-client`'s `Declaration` wraps one and
/// builds a host from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    doc: Map<String, Value>,
}

impl Document {
    /// Step 1, then [`Document::from_json`]: a regular file of at most
    /// 1 MiB, strict UTF-8 without a byte-order mark.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, Refusal> {
        let text = read(path.as_ref())?;
        Self::from_json(&text)
    }

    /// Steps 2 to 7 over JSON text.
    pub fn from_json(text: &str) -> Result<Self, Refusal> {
        let parsed = parse(text)?;
        let Value::Object(doc) = parsed.value else {
            return Err(Refusal::one(
                RefusalClass::Malformed,
                "",
                "the document root must be a JSON object",
            ));
        };
        check_version(&doc)?;
        check_spec(&doc)?;
        check_closed(&doc)?;
        check_fields(&doc, &parsed.unsafe_integers)?;
        check_consistency(&doc, &SurfaceView::stated(&doc))?;
        Ok(Self { doc })
    }

    /// A value built in code: serialized, then [`Document::from_json`], so
    /// it meets exactly the checks a file meets. (Duplicate keys cannot be
    /// seen here: a `Value` already collapsed them.)
    pub fn from_value(value: &Value) -> Result<Self, Refusal> {
        let text = serde_json::to_string(value).map_err(|_| {
            Refusal::one(
                RefusalClass::Malformed,
                "",
                "the value cannot be serialized as JSON",
            )
        })?;
        Self::from_json(&text)
    }

    /// The document's contract version, e.g. `agent-hooks-declaration/1.0`.
    pub fn version(&self) -> &str {
        self.doc
            .get("declaration")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The document's operator label, if any.
    pub fn id(&self) -> Option<&str> {
        self.doc.get("id").and_then(Value::as_str)
    }

    /// The document as validated (`$schema` included).
    pub fn to_value(&self) -> Value {
        Value::Object(self.doc.clone())
    }

    /// The `jcs-sha256` digest of the document as written (`sha256:` and
    /// the hex SHA-256 of its RFC 8785 canonical JSON): what §7.7.8 asks a
    /// host to log at load, so an operator can match a running host to the
    /// document that was pushed. Two documents that differ only in key
    /// order or whitespace have the same digest; one that spells a default
    /// out has another (the resolved form's
    /// [`ResolvedDeclaration::digest`] is equal for both).
    pub fn digest(&self) -> String {
        // Every integer in an accepted document is within ±(2^53 − 1) and it
        // nests at most 32 levels, so canonicalization cannot fail.
        let canonical = hookwire::canonical::to_canonical_string(&self.to_value());
        hookwire::canonical::sha256_identity(canonical.unwrap_or_default().as_bytes())
    }

    /// Steps 7 to 10: fills every default from the catalog's surface and
    /// checks the result against the host's code and registered names.
    /// Runs no kind resolver.
    pub fn resolve(
        &self,
        catalog: &(impl Catalog + ?Sized),
    ) -> Result<ResolvedDeclaration, Refusal> {
        resolve(&self.doc, catalog)
    }
}
