//! [`InterceptionPoint`] ⇄ `pb::InterceptionPoint`.

use crate::pb;
use crate::point::InterceptionPoint;

impl From<InterceptionPoint> for pb::InterceptionPoint {
    fn from(p: InterceptionPoint) -> Self {
        match p {
            InterceptionPoint::AgentStartup => Self::AgentStartup,
            InterceptionPoint::Input => Self::Input,
            InterceptionPoint::PreModelCall => Self::PreModelCall,
            InterceptionPoint::PostModelCall => Self::PostModelCall,
            InterceptionPoint::PreToolCall => Self::PreToolCall,
            InterceptionPoint::PostToolCall => Self::PostToolCall,
            InterceptionPoint::Output => Self::Output,
            InterceptionPoint::AgentShutdown => Self::AgentShutdown,
        }
    }
}

/// `INTERCEPTION_POINT_UNSPECIFIED`, which names none of the eight points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interception point is unspecified: expected one of the eight points (§3)")]
pub struct UnspecifiedPoint;

impl TryFrom<pb::InterceptionPoint> for InterceptionPoint {
    type Error = UnspecifiedPoint;
    fn try_from(p: pb::InterceptionPoint) -> Result<Self, Self::Error> {
        Ok(match p {
            pb::InterceptionPoint::Unspecified => return Err(UnspecifiedPoint),
            pb::InterceptionPoint::AgentStartup => Self::AgentStartup,
            pb::InterceptionPoint::Input => Self::Input,
            pb::InterceptionPoint::PreModelCall => Self::PreModelCall,
            pb::InterceptionPoint::PostModelCall => Self::PostModelCall,
            pb::InterceptionPoint::PreToolCall => Self::PreToolCall,
            pb::InterceptionPoint::PostToolCall => Self::PostToolCall,
            pb::InterceptionPoint::Output => Self::Output,
            pb::InterceptionPoint::AgentShutdown => Self::AgentShutdown,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points() {
        for p in InterceptionPoint::ALL {
            let wire = pb::InterceptionPoint::from(p);
            assert_eq!(wire.as_str_name(), p.as_str().to_ascii_uppercase());
            assert_eq!(InterceptionPoint::try_from(wire), Ok(p));
        }
        assert_eq!(
            InterceptionPoint::try_from(pb::InterceptionPoint::Unspecified),
            Err(UnspecifiedPoint)
        );
    }
}
