//! The contract of a kind resolver (§7.7.5, step 11): what it learns about
//! the binding it builds ([`BindingContext`]) and its signature
//! ([`KindResolver`]). Shared by the registry that holds resolvers and the
//! built-in kinds that implement them.

use std::collections::BTreeSet;
use std::time::Duration;

use hookwire::InterceptionPoint;
use serde_json::Value;

use hookwire_declaration::HostInfo;

use crate::binding::InterceptorBinding;

/// What a kind resolver learns about the binding it builds.
#[derive(Debug, Clone, Copy)]
pub struct BindingContext<'a> {
    /// The binding id (the interceptor's name on records).
    pub id: &'a str,
    /// The binding kind.
    pub kind: &'a str,
    /// The resolved points.
    pub at: &'a BTreeSet<InterceptionPoint>,
    /// The resolved bound; `None` is unbounded.
    pub timeout: Option<Duration>,
    /// The document's informative `host` block.
    pub host: Option<&'a HostInfo>,
    /// The document's contract version.
    pub declaration_version: &'a str,
}

/// Turns one binding's `config` into an interceptor binding, or refuses it
/// with a message that names members and rules only — never a value from
/// `config`, which may hold secrets. The loader sets the returned binding's
/// name, timeout and points from the document.
pub type KindResolver =
    dyn Fn(&Value, &BindingContext<'_>) -> Result<InterceptorBinding, String> + Send + Sync;
