//! hookwire-telemetry: send a hookwire process's traces and interception
//! records to an OpenTelemetry collector over OTLP/gRPC.
//!
//! The host (`hookwire-client`) and the server SDK (`hookwire-server`)
//! only emit `tracing` spans and carry W3C trace context; nothing leaves
//! the process until an exporter is installed. This crate is that
//! exporter, opt-in:
//!
//! - [`OtlpExport`] builds the tracer and logger providers for one
//!   collector endpoint; [`OtlpExport::install`] also installs the process's
//!   `tracing` subscriber (log lines on stderr plus the OpenTelemetry
//!   layer), or compose [`Telemetry::layer`] into a subscriber of your own;
//! - [`OtlpRecordSink`] ([`Telemetry::record_sink`]) is a
//!   [`RecordSink`] that exports each payload-free interception record
//!   (§10.3) as one OTLP log record, carrying the emission's trace and span
//!   ids, and hookwire's facts beyond §10.3 as an attribute.
//!
//! ```no_run
//! # async fn run() -> Result<(), hookwire_telemetry::Error> {
//! let telemetry = hookwire_telemetry::OtlpExport::new("http://127.0.0.1:4317")
//!     .service_name("billing-agent")
//!     .install()?;
//! let host = hookwire_client::Host::builder("billing-agent", "hookwire")
//!     .remote("policy", "http://127.0.0.1:50051")
//!     .record_sink(telemetry.record_sink())
//!     .build();
//! # let _ = host;
//! // ... run sessions ...
//! telemetry.shutdown()?; // flushes what is still buffered
//! # Ok(()) }
//! ```

use std::time::{Duration, SystemTime};

use hookwire::{InterceptionRecord, RecordSink};
use opentelemetry::InstrumentationScope;
use opentelemetry::logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity};
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::Value;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{Filtered, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The instrumentation scope of everything this crate exports.
pub const SCOPE: &str = "hookwire";

/// What can go wrong setting up the export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The exporter could not be built (e.g. an endpoint that is not a URL).
    #[error("OTLP exporter for {endpoint}: {reason}")]
    Exporter {
        /// The collector endpoint.
        endpoint: String,
        /// What the exporter said.
        reason: String,
    },
    /// A global `tracing` subscriber was already installed.
    #[error("a tracing subscriber is already installed: {0}")]
    Subscriber(String),
    /// Flushing or shutting down the providers failed.
    #[error("OTLP shutdown: {0}")]
    Shutdown(String),
}

/// The settings of an OTLP/gRPC export; start from [`OtlpExport::new`].
#[derive(Debug, Clone)]
#[must_use = "an export does nothing until built or installed"]
pub struct OtlpExport {
    endpoint: String,
    service_name: String,
    timeout: Duration,
    filter: String,
}

impl OtlpExport {
    /// An export to the collector at `endpoint` (e.g.
    /// `http://127.0.0.1:4317`), as service `hookwire`, with a 5 s timeout
    /// per export.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            service_name: "hookwire".into(),
            timeout: Duration::from_secs(5),
            filter: "warn".into(),
        }
    }

    /// The `service.name` resource attribute the collector files spans and
    /// records under.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Bound on one export call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The filter of the log lines [`install`](Self::install) prints on
    /// stderr when `RUST_LOG` is not set (default `warn`). Spans are
    /// exported at `info` and above whatever the log filter says.
    pub fn default_filter(mut self, directives: impl Into<String>) -> Self {
        self.filter = directives.into();
        self
    }

    /// Builds the tracer and logger providers, installing nothing global.
    /// Must be called within a tokio runtime (the gRPC exporter's client
    /// lives on it).
    pub fn build(self) -> Result<Telemetry, Error> {
        let failed = |e: &dyn std::fmt::Display| Error::Exporter {
            endpoint: self.endpoint.clone(),
            reason: e.to_string(),
        };
        let resource = Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(self.endpoint.clone())
            .with_timeout(self.timeout)
            .build()
            .map_err(|e| failed(&e))?;
        let logs = opentelemetry_otlp::LogExporter::builder()
            .with_tonic()
            .with_endpoint(self.endpoint.clone())
            .with_timeout(self.timeout)
            .build()
            .map_err(|e| failed(&e))?;
        let tracer_provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_batch_exporter(spans)
            .build();
        let logger_provider = SdkLoggerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(logs)
            .build();
        Ok(Telemetry {
            tracer_provider,
            logger_provider,
            filter: self.filter,
        })
    }

    /// Builds the providers and installs the process's global `tracing`
    /// subscriber: log lines on stderr (filtered by `RUST_LOG`, else the
    /// default filter) and every `info` span exported. Must be called
    /// within a tokio runtime, once per process.
    pub fn install(self) -> Result<Telemetry, Error> {
        let telemetry = self.build()?;
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&telemetry.filter));
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter);
        tracing_subscriber::registry()
            .with(logs)
            .with(telemetry.layer())
            .try_init()
            .map_err(|e| Error::Subscriber(e.to_string()))?;
        Ok(telemetry)
    }
}

/// The providers of one export: spans and records go out in batches until
/// [`Telemetry::shutdown`] flushes them (dropping the last clone shuts them
/// down too).
#[derive(Debug, Clone)]
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    logger_provider: SdkLoggerProvider,
    filter: String,
}

impl Telemetry {
    /// The `tracing` layer that turns spans at `INFO` and above into
    /// OpenTelemetry spans of this export, and lets hookwire read and
    /// propagate their trace context. Compose it into a subscriber of your
    /// own. The level filter is part of the layer: without it every
    /// `DEBUG`/`TRACE` span of the HTTP/2 stack beneath each call would be
    /// exported too, which costs more than the emission itself.
    pub fn layer<S>(&self) -> Filtered<OpenTelemetryLayer<S, SdkTracer>, LevelFilter, S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer_provider.tracer(SCOPE))
            .with_filter(LevelFilter::INFO)
    }

    /// A record sink exporting each interception record as an OTLP log
    /// record.
    pub fn record_sink(&self) -> OtlpRecordSink {
        let scope = InstrumentationScope::builder(SCOPE).build();
        OtlpRecordSink {
            logger: self.logger_provider.logger_with_scope(scope),
        }
    }

    /// An exporter of JSON events (e.g. `hookwire policy serve`'s decision
    /// log) as OTLP log records of this export.
    pub fn event_logger(&self) -> OtlpEventLogger {
        let scope = InstrumentationScope::builder(SCOPE).build();
        OtlpEventLogger {
            logger: self.logger_provider.logger_with_scope(scope),
        }
    }

    /// Exports what is buffered now.
    pub fn flush(&self) -> Result<(), Error> {
        let spans = self.tracer_provider.force_flush();
        let logs = self.logger_provider.force_flush();
        spans.and(logs).map_err(|e| Error::Shutdown(e.to_string()))
    }

    /// Exports what is buffered and stops both providers.
    pub fn shutdown(&self) -> Result<(), Error> {
        let spans = self.tracer_provider.shutdown();
        let logs = self.logger_provider.shutdown();
        spans.and(logs).map_err(|e| Error::Shutdown(e.to_string()))
    }
}

/// Exports interception records as OTLP log records: event name
/// `hookwire.interception_record`, the record's §10.3 JSON (payload-free by
/// construction, and nothing else) as the body, its scalar fields as
/// attributes, hookwire's facts beyond §10.3 as the `hookwire.extensions`
/// attribute (JSON text), and the trace and span ids of the emission span
/// it was delivered in.
#[derive(Debug, Clone)]
pub struct OtlpRecordSink {
    logger: SdkLogger,
}

impl RecordSink for OtlpRecordSink {
    fn record(&self, record: &InterceptionRecord) {
        let mut log = self.logger.create_log_record();
        let now = SystemTime::now();
        log.set_event_name("hookwire.interception_record");
        log.set_timestamp(now);
        log.set_observed_timestamp(now);
        let denied = record.verdict.decision == hookwire::Decision::Deny;
        log.set_severity_number(if denied {
            Severity::Warn
        } else {
            Severity::Info
        });
        log.set_severity_text(if denied { "WARN" } else { "INFO" });
        log.set_body(AnyValue::from(record.to_json().to_string()));
        log.add_attributes(record_attributes(record));
        // Records are delivered inside the emission's span.
        let cx = tracing::Span::current().context();
        let span = cx.span();
        let sc = span.span_context();
        if sc.is_valid() {
            log.set_trace_context(sc.trace_id(), sc.span_id(), Some(sc.trace_flags()));
        }
        self.logger.emit(log);
    }
}

/// The record's scalar fields as log attributes (`hookwire.*`).
fn record_attributes(r: &InterceptionRecord) -> Vec<(&'static str, AnyValue)> {
    let count = |n: usize| AnyValue::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let mut kv = vec![
        (
            "hookwire.point",
            AnyValue::from(r.interception_point.as_str()),
        ),
        ("hookwire.mode", AnyValue::from(r.mode.as_str())),
        (
            "hookwire.decision",
            AnyValue::from(r.verdict.decision.as_str()),
        ),
        ("hookwire.session_id", AnyValue::from(r.session_id.clone())),
        ("hookwire.sequence", AnyValue::Int(r.sequence)),
        (
            "hookwire.interceptors_registered",
            count(r.interceptors_registered),
        ),
    ];
    let optional = [
        ("hookwire.reason", &r.verdict.reason),
        ("hookwire.input_identity", &r.input_identity),
        ("hookwire.enforced_identity", &r.enforced_identity),
        ("hookwire.identity_provider", &r.identity_provider),
        ("hookwire.declaration", &r.declaration),
    ];
    kv.extend(
        optional
            .into_iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k, AnyValue::from(v)))),
    );
    if let Some(i) = r.decided_by {
        kv.push(("hookwire.decided_by", count(i)));
    }
    // Facts beyond §10.3 as one JSON text, whatever facts there are: the
    // body stays the closed §10.3 record.
    if !r.extensions.is_empty() {
        let facts = Value::Object(r.extensions.clone()).to_string();
        kv.push(("hookwire.extensions", AnyValue::from(facts)));
    }
    kv
}

/// Exports JSON events as OTLP log records: the given event name, the
/// event's JSON text as the body, and its top-level scalar members as
/// `hookwire.*` attributes (the caller decides what an event holds; the
/// decision log's are payload-free unless configured otherwise).
#[derive(Debug, Clone)]
pub struct OtlpEventLogger {
    logger: SdkLogger,
}

impl OtlpEventLogger {
    /// Emits one event (batched; sent by the provider's exporter).
    pub fn emit(&self, event_name: &'static str, event: &Value) {
        let mut log = self.logger.create_log_record();
        let now = SystemTime::now();
        log.set_event_name(event_name);
        log.set_timestamp(now);
        log.set_observed_timestamp(now);
        log.set_severity_number(Severity::Info);
        log.set_severity_text("INFO");
        log.set_body(AnyValue::from(event.to_string()));
        if let Value::Object(members) = event {
            for (key, value) in members {
                let value = match value {
                    Value::String(s) => AnyValue::from(s.clone()),
                    Value::Bool(b) => AnyValue::Boolean(*b),
                    Value::Number(n) => match n.as_i64() {
                        Some(i) => AnyValue::Int(i),
                        None => AnyValue::Double(n.as_f64().unwrap_or_default()),
                    },
                    _ => continue,
                };
                log.add_attribute(format!("hookwire.{key}"), value);
            }
        }
        self.logger.emit(log);
    }
}
