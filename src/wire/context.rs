//! [`AgentContext`] ⇄ the per-point request messages.

use crate::context::{AgentContext, InvalidContext};
use crate::pb;
use crate::point::InterceptionPoint;

/// One interceptor request of any point: what a host sends and what a
/// service receives.
#[derive(Debug, Clone, PartialEq)]
pub enum PointRequest {
    /// `AgentStartup`.
    AgentStartup(pb::AgentStartupRequest),
    /// `Input`.
    Input(pb::InputRequest),
    /// `PreModelCall`.
    PreModelCall(pb::PreModelCallRequest),
    /// `PostModelCall`.
    PostModelCall(pb::PostModelCallRequest),
    /// `PreToolCall`.
    PreToolCall(pb::PreToolCallRequest),
    /// `PostToolCall`.
    PostToolCall(pb::PostToolCallRequest),
    /// `Output`.
    Output(pb::OutputRequest),
    /// `AgentShutdown`.
    AgentShutdown(pb::AgentShutdownRequest),
}

impl PointRequest {
    /// The point this request is for.
    pub fn point(&self) -> InterceptionPoint {
        match self {
            Self::AgentStartup(_) => InterceptionPoint::AgentStartup,
            Self::Input(_) => InterceptionPoint::Input,
            Self::PreModelCall(_) => InterceptionPoint::PreModelCall,
            Self::PostModelCall(_) => InterceptionPoint::PostModelCall,
            Self::PreToolCall(_) => InterceptionPoint::PreToolCall,
            Self::PostToolCall(_) => InterceptionPoint::PostToolCall,
            Self::Output(_) => InterceptionPoint::Output,
            Self::AgentShutdown(_) => InterceptionPoint::AgentShutdown,
        }
    }
}

/// Encodes a context as its point's request. Fails only when a member has a
/// shape the typed message cannot carry (e.g. `sequence` not an integer).
pub fn context_to_request(ctx: &AgentContext) -> Result<PointRequest, InvalidContext> {
    todo!("wire helper")
}

/// Decodes a request into a validated context (the §4 envelope check runs).
pub fn context_from_request(req: PointRequest) -> Result<AgentContext, InvalidContext> {
    todo!("wire helper")
}
