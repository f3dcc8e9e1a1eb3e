//! What a remote service says of itself when asked: its manifest, and
//! the transport a host's calls to it take (what `hookwire check` shows
//! per binding).

use hookwire::Manifest;

/// Which RPCs a host's emissions to a service travel on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One unary `Intercept…` call per emission.
    Unary,
    /// The `Multiplex` stream (a hookwire extension the manifest
    /// declares): every session's emissions on a few streams.
    Multiplex,
}

impl Transport {
    /// `unary` or `Multiplex`, as the docs name them.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unary => "unary",
            Self::Multiplex => "Multiplex",
        }
    }
}

/// A service's answer to `Describe`, with the transport it implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The service's manifest.
    pub manifest: Manifest,
    /// The transport the host's calls take: `Multiplex` when the manifest
    /// declares the stream in a version this build speaks (a service that
    /// declares it and then refuses it is called unary instead, and
    /// checked again later).
    pub transport: Transport,
}
