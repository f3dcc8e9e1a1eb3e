//! The `mcp` section's client: one MCP session, initialized (or, in the
//! stateless revision 2026-07-28, each request carrying its envelope and
//! routing headers), then `tools/call`s one at a time, over a child's
//! stdin/stdout or over Streamable HTTP. The same code talks to the upstream directly and to
//! the proxy, so both paths pay the client alike; it is a minimal
//! JSON-RPC client rather than an SDK's so that what it costs is small
//! and plain. Every answer is checked: a call that fails or answers
//! something other than its text fails the run.

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::measure::Op;

/// The protocol version the client asks for.
const PROTOCOL: &str = "2025-11-25";
/// The stateless revision's version.
const STATELESS: &str = "2026-07-28";
/// One exchange's bound.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// One MCP session's transport.
enum Wire {
    Stdio {
        _child: Child,
        stdin: ChildStdin,
        stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    },
    Http {
        client: Client<HttpConnector, Full<Bytes>>,
        url: String,
        token: Option<String>,
        session: Option<String>,
    },
}

/// An initialized MCP session calling `echo` with a fixed text.
pub struct McpClient {
    wire: Wire,
    next_id: u64,
    text: String,
    /// Speaks the stateless revision (no `initialize`).
    stateless: bool,
}

impl McpClient {
    /// Spawns this binary with `args` and speaks MCP on its stdin/stdout.
    pub async fn stdio(args: &[String], text: &str) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("spawn {args:?}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        Self::initialized(
            Wire::Stdio {
                _child: child,
                stdin,
                stdout,
            },
            text,
            false,
        )
        .await
    }

    /// Speaks MCP to the Streamable HTTP endpoint `url`, with `token` as
    /// its bearer credential when given.
    pub async fn http(url: String, token: Option<&str>, text: &str) -> Result<Self, String> {
        Self::http_in(url, token, text, false).await
    }

    /// As [`Self::http`], in the stateless revision 2026-07-28.
    pub async fn http_stateless(
        url: String,
        token: Option<&str>,
        text: &str,
    ) -> Result<Self, String> {
        Self::http_in(url, token, text, true).await
    }

    async fn http_in(
        url: String,
        token: Option<&str>,
        text: &str,
        stateless: bool,
    ) -> Result<Self, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Self::initialized(
            Wire::Http {
                client,
                url,
                token: token.map(str::to_owned),
                session: None,
            },
            text,
            stateless,
        )
        .await
    }

    async fn initialized(wire: Wire, text: &str, stateless: bool) -> Result<Self, String> {
        let mut c = Self {
            wire,
            next_id: 0,
            text: text.to_owned(),
            stateless,
        };
        if stateless {
            let found = c.request("server/discover", json!({})).await?;
            if !found.to_string().contains(STATELESS) {
                return Err(format!("server/discover answered {found}"));
            }
            return c.listed().await;
        }
        let init = c
            .request(
                "initialize",
                json!({"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "hookwire-bench", "version": "1"}}),
            )
            .await?;
        if init.get("serverInfo").is_none() {
            return Err(format!("initialize answered {init}"));
        }
        c.notify("notifications/initialized").await?;
        c.listed().await
    }

    async fn listed(mut self) -> Result<Self, String> {
        let tools = self.request("tools/list", json!({})).await?;
        if !tools.to_string().contains("\"echo\"") {
            return Err(format!("tools/list answered {tools}"));
        }
        Ok(self)
    }

    /// One `tools/call` of `echo`, checked.
    pub async fn call(&mut self) -> Result<(), String> {
        let text = self.text.clone();
        let r = self
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": text}}),
            )
            .await?;
        match r["content"][0]["text"].as_str() {
            Some(t) if t == self.text && r["isError"] != true => Ok(()),
            _ => Err(format!("tools/call answered {}", cut(&r.to_string()))),
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), String> {
        let message = json!({"jsonrpc": "2.0", "method": method});
        match &mut self.wire {
            Wire::Stdio { stdin, .. } => write_line(stdin, &message).await,
            Wire::Http { .. } => {
                let (status, _, _) = self.post(&message).await?;
                if status == 202 || status == 200 {
                    Ok(())
                } else {
                    Err(format!("{method}: HTTP {status}"))
                }
            }
        }
    }

    /// One request and its result (a JSON-RPC error is an `Err`).
    async fn request(&mut self, method: &str, mut params: Value) -> Result<Value, String> {
        if self.stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = match &mut self.wire {
            Wire::Stdio { stdin, stdout, .. } => {
                write_line(stdin, &message).await?;
                loop {
                    let line = tokio::time::timeout(TIMEOUT, stdout.next_line())
                        .await
                        .map_err(|_| format!("{method}: no answer within {TIMEOUT:?}"))?
                        .map_err(|e| format!("{method}: {e}"))?
                        .ok_or_else(|| format!("{method}: the server closed its stdout"))?;
                    let v: Value = serde_json::from_str(&line)
                        .map_err(|e| format!("{method}: not JSON ({e}): {}", cut(&line)))?;
                    if v["id"] == id {
                        break v;
                    }
                }
            }
            Wire::Http { .. } => {
                let (status, content_type, body) = self.post(&message).await?;
                if status != 200 {
                    return Err(format!(
                        "{method}: HTTP {status}: {}",
                        cut(&String::from_utf8_lossy(&body))
                    ));
                }
                answer_in(&body, content_type.contains("text/event-stream"), id).ok_or_else(
                    || {
                        format!(
                            "{method}: no answer in {}",
                            cut(&String::from_utf8_lossy(&body))
                        )
                    },
                )?
            }
        };
        match answer.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("{method}: {}", answer["error"])),
        }
    }

    /// POSTs one message; returns the status, content type and body, and
    /// keeps the session id the server assigns.
    async fn post(&mut self, message: &Value) -> Result<(u16, String, Bytes), String> {
        let stateless = self.stateless;
        let Wire::Http {
            client,
            url,
            token,
            session,
        } = &mut self.wire
        else {
            unreachable!("post on an HTTP wire only")
        };
        let mut req = hyper::Request::post(url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if stateless {
            req = req
                .header("mcp-protocol-version", STATELESS)
                .header("mcp-method", message["method"].as_str().unwrap_or_default());
            if let Some(name) = message["params"]["name"].as_str() {
                req = req.header("mcp-name", name);
            }
        } else {
            req = req.header("mcp-protocol-version", PROTOCOL);
        }
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = session {
            req = req.header("mcp-session-id", s.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|e| format!("request: {e}"))?;
        let exchange = async {
            let resp = client.request(req).await.map_err(|e| format!("{e}"))?;
            let status = resp.status().as_u16();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let assigned = header("mcp-session-id");
            let content_type = header("content-type").unwrap_or_default();
            // An SSE answer ends when the server closes the response.
            let body = Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| format!("reading the answer: {e}"))?
                .to_bytes();
            Ok::<_, String>((status, assigned, content_type, body))
        };
        let (status, assigned, content_type, body) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| format!("no answer within {TIMEOUT:?}"))??;
        if let Some(s) = assigned {
            *session = Some(s);
        }
        Ok((status, content_type, body))
    }
}

impl Op for McpClient {
    async fn once(&mut self) {
        if let Err(e) = self.call().await {
            panic!("mcp: a measured call failed: {e}");
        }
    }
}

/// The JSON-RPC answer with `id` in a JSON body or among an SSE body's
/// `data:` lines.
fn answer_in(body: &[u8], sse: bool, id: u64) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    if !sse {
        return serde_json::from_str(text).ok();
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == id)
}

async fn write_line(stdin: &mut ChildStdin, message: &Value) -> Result<(), String> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    stdin
        .write_all(&line)
        .await
        .and(stdin.flush().await)
        .map_err(|e| format!("writing to the server: {e}"))
}

/// At most 300 characters of `s`, for error messages.
fn cut(s: &str) -> String {
    s.chars().take(300).collect()
}
