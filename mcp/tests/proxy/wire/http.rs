//! Streamable HTTP: the downstream's client authentication and session
//! binding, and an HTTP upstream.

use super::*;

/// One HTTP/1.1 exchange: the status, the headers (lowercase names) and
/// the body.
fn http(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, headers, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// `hookwire mcp --listen` for alice and bob, with `extra` options: the
/// governance, the process, its stderr, its address and its metrics
/// address (when `--metrics-addr` is among `extra`).
fn listening(
    extra: &[&str],
) -> (
    Governance,
    Running,
    mpsc::Receiver<String>,
    String,
    Option<String>,
) {
    let g = governance();
    let clients = g.dir.path().join("clients");
    let lines = format!(
        "# test clients\nalice {}\nbob {}\n",
        hookwire_mcp_sha(ALICE),
        hookwire_mcp_sha(BOB)
    );
    std::fs::write(&clients, lines).unwrap();
    let mut child = Command::new(hookwire_bin())
        .args([
            "mcp",
            "--print-records",
            "--listen",
            "127.0.0.1:0",
            "--clients-file",
        ])
        .arg(&clients)
        .args(extra)
        .arg("--declaration")
        .arg(&g.declaration)
        .arg("--")
        .args(StdioProxy::stdio_upstream())
        .env("MCP_COUNT_FILE", g.dir.path().join("calls"))
        .env("MCP_START_FILE", g.dir.path().join("starts"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire mcp --listen");
    let err = err_lines(&mut child);
    let proxy = Running(child);
    let metrics = extra.contains(&"--metrics-addr").then(|| {
        let line = line_starting(&err, "hookwire mcp metrics: http://");
        line.trim_start_matches("hookwire mcp metrics: http://")
            .trim_end_matches("/metrics")
            .to_owned()
    });
    let banner = line_starting(&err, "hookwire mcp: listening on http://");
    let addr = banner
        .trim_start_matches("hookwire mcp: listening on http://")
        .trim_end_matches("/mcp")
        .to_owned();
    (g, proxy, err, addr, metrics)
}

/// The records printed on `err` until the session's `agent_shutdown`.
fn records_until_shutdown(err: &mpsc::Receiver<String>) -> Vec<Value> {
    let mut records = Vec::new();
    while records
        .last()
        .is_none_or(|r: &Value| r["interception_point"] != "agent_shutdown")
    {
        let line = err.recv_timeout(WAIT).expect("the records of the session");
        if let Ok(r) = serde_json::from_str::<Value>(&line)
            && r.get("interception_point").is_some()
        {
            records.push(r);
        }
    }
    records
}

/// `GET /metrics`: the whole answer.
fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    raw
}

#[test]
fn an_idle_http_session_is_ended() {
    let (_g, _proxy, err, addr, _) = listening(&["--idle-timeout-s", "1"]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let alice = format!("Bearer {ALICE}");
    let (status, headers, _) = http(&addr, "POST", &[("authorization", &alice)], &init);
    assert_eq!(status, 200);
    let session = header(&headers, "mcp-session-id").unwrap().to_owned();
    let records = records_until_shutdown(&err);
    assert_eq!(points(&records), ["agent_startup", "agent_shutdown"]);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 404, "an idled-out session is gone");
}

#[test]
fn http_clients_are_authenticated_and_bound_to_their_sessions() {
    let (_g, _proxy, err, addr, metrics) = listening(&[
        "--max-message-bytes",
        "4096",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let metrics = metrics.unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");

    let (status, headers, _) = http(&addr, "POST", &[], &init);
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", "Bearer not-a-client")],
        &init,
    );
    assert_eq!(status, 401);
    // Anything but `Bearer` and a token68 is refused, in JSON-RPC terms.
    for malformed in [
        ALICE.to_owned(),
        format!("Basic {ALICE}"),
        format!("Bearer {ALICE},x"),
        "Bearer".to_owned(),
    ] {
        let (status, headers, body) = http(&addr, "POST", &[("authorization", &malformed)], &init);
        assert_eq!(status, 401, "{malformed:?}");
        assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("invalid authorization header"),
            "{body}"
        );
    }

    let (status, headers, body) = http(&addr, "POST", &[("authorization", &alice)], &init);
    assert_eq!(status, 200, "{body}");
    let session = header(&headers, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &bob), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 403, "another client's session");
    let (status, _, _) = http(&addr, "POST", &[("authorization", &alice)], &list);
    assert_eq!(status, 400, "no session id");
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", "feedface")],
        &list,
    );
    assert_eq!(status, 404, "an unknown session");
    // The scheme is case-insensitive (RFC 9110).
    let lower = format!("bearer  {ALICE}");
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &lower), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 200, "{body}");
    assert!(serde_json::from_str::<Value>(&body).unwrap()["result"]["tools"].is_array());

    let delete = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "delete_all", "arguments": {}}}).to_string();
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &delete,
    );
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let echo = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "a@example.com"}, "_meta": {"progressToken": "p1"}}}).to_string();
    let (status, headers, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &echo,
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/event-stream"),
        "progress asked for: an event stream"
    );
    let last = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap();
    let answer: Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], r#"{"text": "[email]"}"#,
        "{answer}"
    );

    let big = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5000)
    );
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &big,
    );
    assert_eq!(status, 413);
    let (status, _, body) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        "{not json",
    );
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32700
    );
    let (status, _, _) = http(&addr, "GET", &[("authorization", &alice)], "");
    assert_eq!(status, 405);

    let (status, _, _) = http(
        &addr,
        "DELETE",
        &[("authorization", &bob), ("mcp-session-id", &session)],
        "",
    );
    assert_eq!(status, 403, "another client cannot end it either");
    let (status, _, _) = http(
        &addr,
        "DELETE",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        "",
    );
    assert_eq!(status, 204);
    let (status, _, _) = http(
        &addr,
        "POST",
        &[("authorization", &alice), ("mcp-session-id", &session)],
        &list,
    );
    assert_eq!(status, 404, "an ended session");

    let records = records_until_shutdown(&err);
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "pre_tool_call",
            "post_tool_call",
            "agent_shutdown"
        ]
    );
    let scraped = scrape(&metrics);
    assert!(
        scraped
            .contains(r#"hookwire_mcp_tool_calls_total{tool="delete_all",outcome="denied_pre"} 1"#),
        "{scraped}"
    );
    assert!(scraped.contains(r#"hookwire_mcp_tool_calls_total{tool="echo",outcome="allowed"} 1"#));
    assert!(
        scraped.contains("hookwire_host_"),
        "the host's series beside the proxy's"
    );
}

fn hookwire_mcp_sha(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

#[test]
fn a_streamable_http_upstream_is_governed_alike() {
    let (_server, port) = http_fixture();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let g = governance();
    let mut child = Command::new(hookwire_bin())
        .args([
            "mcp",
            "--print-records",
            "--upstream",
            &url,
            "--declaration",
        ])
        .arg(&g.declaration)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire mcp --upstream");
    let out = lines_of(&mut child);
    let err = err_lines(&mut child);
    let stdin = child.stdin.take();
    let mut p = StdioProxy {
        child: Some(child),
        stdin,
        out,
        err,
        count_file: g.dir.path().join("none"),
        _g: g,
    };
    let init = p.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture", "{init}");
    let echo = p.tool(1, "echo", json!({"text": "bo@example.com"}));
    assert_eq!(text_of(&echo), r#"{"text": "[email]"}"#);
    let delete = p.tool(2, "delete_all", json!({}));
    assert_eq!(delete["result"]["isError"], true);
    let records = p.finish();
    assert_eq!(
        points(&records),
        [
            "agent_startup",
            "pre_tool_call",
            "post_tool_call",
            "pre_tool_call",
            "agent_shutdown"
        ]
    );
}

/// How many lines the fixture appended to `name` in the governance's
/// folder (`starts`: upstream processes started; `calls`: calls acted on).
fn lines_in(g: &Governance, name: &str) -> usize {
    std::fs::read_to_string(g.dir.path().join(name)).map_or(0, |s| s.lines().count())
}

fn init_body(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string()
}

#[test]
fn browser_origins_other_than_loopback_and_the_allowed_are_refused() {
    let (g, _proxy, _err, addr, _) = listening(&["--allow-origin", "https://app.example.com"]);
    let alice = format!("Bearer {ALICE}");
    // A page elsewhere cannot open a session, even with a valid token.
    let (status, _, body) = http(
        &addr,
        "POST",
        &[
            ("authorization", &alice),
            ("origin", "https://evil.example"),
        ],
        &init_body(1),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Origin"), "{body}");
    assert_eq!(lines_in(&g, "starts"), 0, "no upstream was started for it");
    // Loopback, the allowed origin, and no Origin at all (not a browser).
    for origin in [
        Some("http://localhost:5173"),
        Some("https://app.example.com"),
        None,
    ] {
        let mut headers = vec![("authorization", alice.as_str())];
        if let Some(o) = origin {
            headers.push(("origin", o));
        }
        let (status, h, body) = http(&addr, "POST", &headers, &init_body(2));
        assert_eq!(status, 200, "{origin:?}: {body}");
        let session = header(&h, "mcp-session-id").unwrap().to_owned();
        // Inside the session, another origin is refused too.
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "delete_all", "arguments": {}}})
        .to_string();
        let (status, _, _) = http(
            &addr,
            "POST",
            &[
                ("authorization", &alice),
                ("mcp-session-id", &session),
                ("origin", "http://127.0.0.1.evil.example"),
            ],
            &call,
        );
        assert_eq!(status, 403);
    }
    assert_eq!(lines_in(&g, "calls"), 0);
}

#[test]
fn concurrent_initializes_cannot_overrun_the_session_bound() {
    let (g, _proxy, _err, addr, _) = listening(&["--max-sessions", "2"]);
    let alice = format!("Bearer {ALICE}");
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|n| {
                let (addr, alice) = (&addr, &alice);
                s.spawn(move || http(addr, "POST", &[("authorization", alice)], &init_body(n)).0)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let opened = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 503).count();
    assert_eq!((opened, refused), (2, 6), "{statuses:?}");
    assert_eq!(
        lines_in(&g, "starts"),
        2,
        "one upstream per session, none for a refused one"
    );
}

#[test]
fn one_client_cannot_hold_every_session() {
    let (g, _proxy, _err, addr, _) =
        listening(&["--max-sessions", "3", "--max-sessions-per-client", "1"]);
    let (alice, bob) = (format!("Bearer {ALICE}"), format!("Bearer {BOB}"));
    let (status, h, body) = http(&addr, "POST", &[("authorization", &alice)], &init_body(1));
    assert_eq!(status, 200, "{body}");
    let first = header(&h, "mcp-session-id").unwrap().to_owned();
    // Alice's second session is past her quota, with room left in the table.
    let (status, _, body) = http(&addr, "POST", &[("authorization", &alice)], &init_body(2));
    assert_eq!(status, 503, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32003, "{body}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-sessions-per-client"),
        "{body}"
    );
    // Bob is not locked out by her.
    let (status, _, body) = http(&addr, "POST", &[("authorization", &bob)], &init_body(3));
    assert_eq!(status, 200, "{body}");
    // Once she ends hers, she may open another.
    let (status, _, _) = http(
        &addr,
        "DELETE",
        &[("authorization", &alice), ("mcp-session-id", &first)],
        "",
    );
    assert_eq!(status, 204);
    let (status, _, body) = http(&addr, "POST", &[("authorization", &alice)], &init_body(4));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        lines_in(&g, "starts"),
        3,
        "no upstream for a refused session"
    );
}

#[test]
fn a_notification_that_would_act_is_refused_and_counted() {
    let (g, _proxy, _err, addr, metrics) = listening(&["--metrics-addr", "127.0.0.1:0"]);
    let alice = format!("Bearer {ALICE}");
    let (status, h, _) = http(&addr, "POST", &[("authorization", &alice)], &init_body(1));
    assert_eq!(status, 200);
    let session = header(&h, "mcp-session-id").unwrap().to_owned();
    let auth = [
        ("authorization", alice.as_str()),
        ("mcp-session-id", session.as_str()),
    ];
    let note = json!({"jsonrpc": "2.0", "method": "tools/call",
                      "params": {"name": "delete_all", "arguments": {}}})
    .to_string();
    let (status, _, body) = http(&addr, "POST", &auth, &note);
    // Streamable HTTP answers input it does not accept with a 4xx and an
    // error without id.
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["id"], Value::Null, "{body}");
    assert_eq!(error["error"]["code"], -32601, "{body}");
    // A later request is answered: the server would have acted by now.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let (status, _, _) = http(&addr, "POST", &auth, &ping);
    assert_eq!(status, 200);
    assert_eq!(
        lines_in(&g, "calls"),
        0,
        "the notification reached the server"
    );
    let scraped = scrape(&metrics.unwrap());
    assert!(
        scraped.contains(
            r#"hookwire_mcp_messages_total{direction="client",kind="notification",outcome="refused"} 1"#
        ),
        "{scraped}"
    );
}
