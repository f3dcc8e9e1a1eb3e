//! The `mcp` section's processes, each this binary re-run with a flag:
//!
//! - `--serve-mcp-upstream stdio`: the fast upstream, an MCP server on the
//!   official Rust SDK (`rmcp`) with one tool, `echo`, answering with its
//!   `text` argument, on its stdin/stdout;
//! - `--serve-mcp-upstream http`: the same server on Streamable HTTP at
//!   `http://127.0.0.1:PORT/mcp` (rmcp's `StreamableHttpService`, stateful
//!   sessions as the SDKs serve by default); prints `ports PORT`;
//! - `--serve-mcp-proxy stdio <binding> -- <upstream command…>`: the
//!   `hookwire-mcp` library serving one MCP session on its stdin/stdout
//!   in front of the command, its host bound as `embedded::host` reads
//!   the binding argument (the load bench's remote allow interceptor, or
//!   a policy folder decided in process);
//! - `--serve-mcp-proxy http <binding> <upstream URL>`: the library's
//!   Streamable HTTP proxy on 127.0.0.1:0 in front of the URL, one client
//!   token ([`TOKEN`]); prints `ports PORT`.
//!
//! The proxy runs as the library in this binary rather than as the built
//! `hookwire` command: the bench then needs no separately built binary of
//! the right profile, and its host is built exactly as the gateway's in
//! `gateway_peer` (one remote allow binding, the same bound), so the two
//! proxies' figures compare. `hookwire mcp` adds only the declaration
//! loading and the command line around the same `serve_stdio` and
//! `serve_http`. The HTTP children exit when their stdin closes; the
//! stdio ones when their MCP channel does.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt as _;

use hookwire_mcp::{Clients, HttpProxy, McpConfig, UpstreamSpec, serve_http, serve_stdio};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

use crate::REMOTE_TIMEOUT;
use crate::embedded;
use crate::peer::children::{exit_with_parent, print_ports, runtime};

/// The flag that makes this binary the fast upstream.
pub const UPSTREAM_FLAG: &str = "--serve-mcp-upstream";
/// The flag that makes this binary the proxy.
pub const PROXY_FLAG: &str = "--serve-mcp-proxy";
/// The HTTP proxy's one client token.
pub const TOKEN: &str = "hwm_bench_0123456789abcdef0123456789abcdef";

/// The upstream's one tool.
#[derive(Debug, Clone, Copy)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns its text.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The fast upstream's process (`args`: `stdio` or `http`): never returns.
pub fn serve_upstream(args: &[String]) -> ! {
    let code = match args.first().map(String::as_str) {
        Some("stdio") => runtime().block_on(async {
            match Echo.serve(rmcp::transport::stdio()).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                    0
                }
                Err(e) => {
                    eprintln!("mcp upstream: {e}");
                    1
                }
            }
        }),
        Some("http") => {
            exit_with_parent();
            runtime().block_on(async {
                let service = StreamableHttpService::new(
                    || Ok(Echo),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                let app = axum::Router::new().nest_service("/mcp", service);
                let listener = bind().await;
                print_ports(&[listener.local_addr().expect("address").port()]);
                // An SSE answer is written in pieces: without TCP_NODELAY,
                // Nagle's algorithm and the client's delayed ACK hold each
                // answer ~40 ms.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let _ = axum::serve(listener, app).await;
                1
            })
        }
        _ => {
            eprintln!("{UPSTREAM_FLAG} takes stdio or http");
            2
        }
    };
    std::process::exit(code)
}

/// The proxy's process (`args`: `stdio <allow> -- <command…>` or `http
/// <allow> <url>`): never returns.
pub fn serve_proxy(args: &[String]) -> ! {
    let usage = || -> ! {
        eprintln!(
            "{PROXY_FLAG} takes stdio <allow URL> -- <command…> or http <allow URL> <upstream URL>"
        );
        std::process::exit(2)
    };
    let (mode, allow, rest) = match args {
        [mode, allow, rest @ ..] => (mode.as_str(), allow.as_str(), rest),
        _ => usage(),
    };
    let config = Arc::new(McpConfig {
        call_timeout: REMOTE_TIMEOUT,
        ..McpConfig::default()
    });
    let result = match (mode, rest) {
        ("stdio", [dash, program, args @ ..]) if dash == "--" => runtime().block_on(async {
            let host = embedded::host(allow);
            let spec = UpstreamSpec::Command {
                program: program.clone(),
                args: args.to_vec(),
            };
            serve_stdio(host, spec, config, std::future::pending()).await
        }),
        ("http", [url]) => {
            exit_with_parent();
            runtime().block_on(async {
                let host = embedded::host(allow);
                let spec = UpstreamSpec::Http {
                    url: url.clone(),
                    headers: Vec::new(),
                };
                let clients =
                    Clients::parse(&format!("bench {}\n", hookwire_mcp::token_sha256(TOKEN)))
                        .expect("the bench's clients file parses");
                let proxy = HttpProxy::new(host, spec, config, clients);
                let listener = bind().await;
                print_ports(&[listener.local_addr().expect("address").port()]);
                serve_http(proxy, listener, std::future::pending()).await
            })
        }
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("mcp proxy: {e}");
        std::process::exit(1);
    }
    std::process::exit(0)
}

async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind a loopback port")
}
