//! [`AgentContext`] ⇄ the per-point request messages.
//!
//! Every member of the context travels exactly once:
//!
//! - the required core (§4.1) in [`pb::ContextCore`], without
//!   `interception_point` (implied by the request kind) and without `target`
//!   (rebuilt by the receiver from the point's target field);
//! - the point's conditional members (§4.2) in the request's own fields:
//!   typed where the proto names their members (`model`, `tool_call`,
//!   `tool_result`), whole as JSON text where the member is the target
//!   object (`agent_init`, `input`, `response`, `output`, `summary`);
//! - the model-call members (`request_id`, `tools`, `usage`) at the two model
//!   points in [`pb::ModelCallOptional`];
//! - every other member in [`pb::ContextOptional`]: the well-known optionals
//!   (§4.5), `extensions` (§4.6), and any top-level member this contract
//!   version does not name at this point in its `additional` map.
//!
//! Members of open objects that the proto does not name travel in that
//! object's `additional` map. A member that the proto types (a string, an
//! integer, a boolean, an object) but that has another JSON type in the
//! context is refused with [`InvalidContext::Member`] rather than coerced or
//! dropped, and a receiver refuses an `additional` entry that shadows a
//! typed field. `tool_call` is closed on the wire: it has no `additional`
//! map, so a member other than `id`, `name`, `args` and `content_hash` is
//! refused too.
//!
//! The one member with no presence of its own on the wire is an empty
//! `extensions` object (an empty map is indistinguishable from no map): it
//! travels as `ContextOptional.additional["extensions"] = {}`, the only
//! shape in which a receiver accepts that key there.
//!
//! Decoding rebuilds the spec JSON object and runs the §4 envelope check
//! ([`AgentContext::validate`]), so for every context that encodes,
//! `context_from_request(context_to_request(c)?)? == c`.
//!
//! - `members`: which member travels where, and the error helpers both
//!   directions share;
//! - `encode`: [`context_to_request`];
//! - `decode`: [`context_from_request`];
//! - `request`: [`PointRequest`], the request of any point.

#[cfg(doc)]
use crate::context::AgentContext;
#[cfg(doc)]
use crate::pb;

mod decode;
mod encode;
mod members;
mod request;

pub use decode::context_from_request;
pub use encode::context_to_request;
pub use request::PointRequest;

#[cfg(test)]
mod tests;
