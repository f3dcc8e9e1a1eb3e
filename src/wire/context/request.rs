//! [`PointRequest`]: the request of any one of the eight points, as one
//! type, so that encoding and decoding (and every caller) name a request
//! without matching on the point first.

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
