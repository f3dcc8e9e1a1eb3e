//! A Streamable HTTP upstream behind TLS (a private CA, a client
//! certificate) and an upstream whose event is over the message bound.

use super::*;

/// `hookwire mcp` over stdio to the Streamable HTTP upstream at `url`,
/// with `extra` flags.
fn proxy_to(url: &str, extra: &[&str]) -> StdioProxy {
    let g = governance();
    let mut child = Command::new(hookwire_bin())
        .args(["mcp", "--print-records", "--upstream", url])
        .args(extra)
        .arg("--declaration")
        .arg(&g.declaration)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire mcp --upstream");
    let out = lines_of(&mut child);
    let err = err_lines(&mut child);
    let stdin = child.stdin.take();
    StdioProxy {
        child: Some(child),
        stdin,
        out,
        err,
        count_file: g.dir.path().join("none"),
        _g: g,
    }
}

#[test]
fn an_https_upstream_of_a_private_ca_needs_upstream_ca_and_gets_the_client_certificate() {
    use hookwire_testkit::tls::Authority;
    use hookwire_testkit::tls_front::TlsFront;

    let (_server, port) = http_fixture();
    let backend = format!("127.0.0.1:{port}").parse().unwrap();
    let (server_ca, client_ca) = (Authority::new("upstream CA"), Authority::new("client CA"));
    let front = TlsFront::start(&server_ca, Some(&client_ca), backend);
    let url = format!("https://127.0.0.1:{}/mcp", front.addr().port());
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = client_ca.leaf("mcp-proxy", Vec::new());
    for (name, pem) in [
        ("ca.pem", &server_ca.pem),
        ("client.pem", &cert),
        ("client.key", &key),
    ] {
        std::fs::write(dir.path().join(name), pem).unwrap();
    }
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    // The web PKI alone does not trust the private CA: the client is
    // answered with a JSON-RPC error, and nothing reached the server.
    let mut p = proxy_to(&url, &[]);
    let init = p.initialize();
    assert!(init["error"]["message"].is_string(), "{init}");
    assert_eq!(front.handshakes(), 0);
    drop(p);

    // With the CA and a client certificate, the session is governed as
    // over plain HTTP, and the server saw the certificate.
    let mut p = proxy_to(
        &url,
        &[
            "--upstream-ca",
            &path("ca.pem"),
            "--upstream-client-cert",
            &path("client.pem"),
            "--upstream-client-key",
            &path("client.key"),
        ],
    );
    let init = p.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture", "{init}");
    let echo = p.tool(1, "echo", json!({"text": "bo@example.com"}));
    assert_eq!(text_of(&echo), r#"{"text": "[email]"}"#);
    assert!(
        front.client_certificates() >= 1,
        "the client certificate was presented"
    );
    drop(p);
}

#[test]
fn an_upstream_event_over_the_message_bound_fails_the_call_closed() {
    let (_server, port) = http_fixture();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut p = proxy_to(&url, &["--max-message-bytes", "4096"]);
    let init = p.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture", "{init}");
    // The call fits the bound; its answer does not (the echoed quotes are
    // escaped twice over in it): the event is refused, never skipped, and
    // the client gets a tool error instead of an answer the chain did not
    // see.
    let echo = p.tool(1, "echo", json!({"text": "\"".repeat(1500)}));
    assert_eq!(echo["result"]["isError"], true, "{echo}");
    assert!(text_of(&echo).contains("over 4096 bytes"), "{echo}");
    let small = p.tool(2, "echo", json!({"text": "ok"}));
    assert_eq!(small["result"]["isError"], false, "{small}");
    drop(p);
}
