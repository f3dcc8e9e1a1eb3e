//! Arguments and defaults shared by several `hookwire` subcommands: the
//! registry options a declaration is resolved against, and the fixed
//! loopback addresses of the demo services.

use crate::error::CliError;

/// Where `serve-demo` and `demo --serve` put the demo's policy service.
pub(crate) const DEMO_POLICY_ADDR: &str = "127.0.0.1:50151";
/// Where `serve-demo` and `demo --serve` put the demo's redactor service.
pub(crate) const DEMO_REDACTOR_ADDR: &str = "127.0.0.1:50152";

/// Where traces and records go, for the commands that run hosts or
/// services.
#[derive(Debug, clap::Args)]
pub(crate) struct TelemetryArgs {
    /// Export spans (and the demo host's interception records, as logs)
    /// over OTLP/gRPC to the collector at this URL, e.g.
    /// `http://127.0.0.1:4317`. Nothing is exported without it.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
}

/// Options that build the registry a declaration is resolved against.
#[derive(Debug, clap::Args)]
pub(crate) struct RegistryArgs {
    /// Registers the approval service at this URL as the approval resolver
    /// named `approval-stream` (documents select it with
    /// `"approval": {"resolver": "approval-stream"}`).
    #[arg(long, value_name = "URL")]
    approval_endpoint: Option<String>,
}

impl RegistryArgs {
    /// hookwire's standard kinds, plus what the options register.
    pub(crate) fn registry(&self) -> Result<hookwire_client::declaration::Registry, CliError> {
        let mut registry = hookwire_client::declaration::Registry::standard();
        if let Some(url) = &self.approval_endpoint {
            registry = registry.approval_stream("approval-stream", url)?;
        }
        Ok(registry)
    }
}
