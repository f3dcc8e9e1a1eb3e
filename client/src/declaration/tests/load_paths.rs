//! Resolution through resolvers, secrets from the environment, the four
//! load paths yielding one resolved form, the record stamp and buffer.

use super::*;

#[tokio::test]
async fn binding_rejected_by_resolvers_without_echoing_config() {
    let grpc = |config: Value| {
        doc(json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": config}]}))
    };
    refused(
        RefusalClass::BindingRejected,
        &[
            doc(json!({"bindings": [{"id": "a", "kind": "test.verdict", "config": {"deny": 7}}]})),
            doc(json!({"bindings": [{"id": "a", "kind": "test.panics"}]})),
            doc(
                json!({"bindings": [{"id": "a", "kind": "hookwire.allow", "config": {"x": SECRET}}]}),
            ),
            grpc(json!({})),
            grpc(json!(SECRET)),
            grpc(json!({"endpoint": format!("ftp://{SECRET}")})),
            grpc(
                json!({"endpoint": "https://127.0.0.1:1", "tls": {"ca_file": format!("/{SECRET}.pem")}}),
            ),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": {"key": SECRET}})),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": {"domain_name": 7}})),
            grpc(json!({"endpoint": "https://127.0.0.1:1", "tls": SECRET})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "tls": {"ca_file": SECRET}})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "password": SECRET})),
            grpc(json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": SECRET}})),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": {"value": SECRET}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"authorization": {"env": "HOOKWIRE_TEST_SURELY_UNSET_VARIABLE"}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"grpc-timeout": {"env": "PATH"}}}),
            ),
            grpc(
                json!({"endpoint": "http://127.0.0.1:1", "metadata": {"x-key": {"env": "bad name"}}}),
            ),
        ],
    );
}

#[tokio::test]
async fn a_missing_variable_is_named_and_a_present_one_is_sent_as_metadata() {
    let e = Declaration::from_value(&doc(json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": {
        "endpoint": "http://127.0.0.1:1",
        "metadata": {"authorization": {"env": "HOOKWIRE_TEST_SURELY_UNSET_VARIABLE", "prefix": SECRET}},
    }}]})))
    .and_then(|d| Host::declared("a", "hookwire").load(&d, &registry()))
    .unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("HOOKWIRE_TEST_SURELY_UNSET_VARIABLE") && shown.contains("not set"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET));

    // Any variable set for this process with a header-safe value.
    let (name, _) = std::env::vars()
        .find(|(k, v)| {
            k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && !v.is_empty()
                && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        })
        .expect("some environment variable");
    let d = Declaration::from_value(&doc(
        json!({"bindings": [{"id": "p", "kind": "hookwire.grpc", "config": {
            "endpoint": "http://127.0.0.1:1",
            "metadata": {"authorization": {"env": name, "prefix": "Bearer "}},
        }}]}),
    ))
    .unwrap();
    let host = Host::declared("a", "hookwire")
        .load(&d, &registry())
        .unwrap();
    assert_eq!(
        host.remote_endpoints(),
        [("p".to_owned(), "http://127.0.0.1:1".to_owned())]
    );
}

/// One session through every point, the same for every host.
async fn session_records(host: &Host) -> Vec<Value> {
    let s = host.session("s-1").unwrap();
    s.start(["bash"]).await.unwrap();
    s.input(json!("hi"), crate::InputRole::User).await.unwrap();
    s.pre_tool_call(&ToolCall::new("c1", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    s.shutdown(ShutdownReason::Completed).await.unwrap();
    let log = host.record_buffer().expect("no sink: buffered");
    log.session("s-1")
        .iter()
        .map(|r| {
            let mut v = r.to_json();
            v.as_object_mut().unwrap().remove("timestamp");
            v
        })
        .collect()
}

#[tokio::test]
async fn the_four_load_paths_yield_the_same_resolved_form_and_records() {
    let document = json!({
        "$schema": "https://example.invalid/host-declaration-1.0.schema.json",
        "declaration": DECLARATION_VERSION,
        "id": "equivalence",
        "configuration": {
            "composition": {"profile": "sequential/run_all"},
            "identity_provider": "hmac-k1",
            "timeouts": {"interceptor_ms": 2000},
        },
        "bindings": [
            {"id": "gate", "kind": "test.verdict", "config": {"deny": "policy:no_tools"}, "at": ["pre_tool_call"], "timeout_ms": 1000},
            {"id": "pass", "kind": "hookwire.allow"},
        ],
    });
    let path = std::env::temp_dir().join(format!("hookwire-equiv-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let built = Declaration::builder()
        .id("equivalence")
        .composition(hookwire::Composition::new(Profile::SequentialRunAll))
        .identity_provider(Some("hmac-k1"))
        .interceptor_timeout_ms(Some(2000))
        .bind(
            DeclaredBinding::new("gate", "test.verdict")
                .config(json!({"deny": "policy:no_tools"}))
                .at([P::PreToolCall])
                .timeout_ms(Some(1000)),
        )
        .bind(DeclaredBinding::new("pass", "hookwire.allow"))
        .build()
        .unwrap();
    let paths = [
        Declaration::from_path(&path).unwrap(),
        Declaration::from_json(&document.to_string()).unwrap(),
        Declaration::from_value(&document).unwrap(),
        built,
    ];
    std::fs::remove_file(&path).unwrap();
    let registry = registry();
    let canonical: Vec<String> = paths
        .iter()
        .map(|d| d.resolve(&registry).unwrap().canonical_json())
        .collect();
    assert!(
        canonical.iter().all(|c| *c == canonical[0]),
        "{canonical:#?}"
    );
    let mut records = Vec::new();
    for d in &paths {
        let host = Host::declared("agent", "hookwire")
            .load(d, &registry)
            .unwrap();
        records.push(session_records(&host).await);
    }
    assert_eq!(records[0].len(), 4);
    assert!(records.iter().all(|r| *r == records[0]));
    let tool = &records[0][2];
    assert_eq!(tool["declaration"], "agent-hooks-declaration/1.0");
    assert_eq!(tool["interceptors_registered"], 2);
    assert_eq!(tool["verdict"]["reason"], "policy:no_tools");
    assert_eq!(tool["verdicts"][0]["name"], "gate");
    assert_eq!(tool["identity_provider"], "hmac-k1");
    assert_eq!(
        records[0][1]["interceptors_registered"], 1,
        "gate runs at pre_tool_call only"
    );
}

#[tokio::test]
async fn declared_hosts_stamp_records_and_code_configured_hosts_do_not() {
    let log = RecordLog::new();
    let d =
        Declaration::from_value(&doc(json!({"configuration": {"mode": "evaluate_only"}}))).unwrap();
    let host = Host::declared("agent", "hookwire")
        .record_sink(log.clone())
        .load(&d, &registry())
        .unwrap();
    assert_eq!(host.declaration(), Some(DECLARATION_VERSION));
    assert_eq!(host.mode(), Mode::EvaluateOnly);
    assert!(host.record_buffer().is_none(), "a sink was attached");
    let s = host.session("s").unwrap();
    s.start(Vec::<String>::new()).await.unwrap();
    assert_eq!(
        log.records()[0].declaration.as_deref(),
        Some(DECLARATION_VERSION)
    );

    let plain = RecordLog::new();
    let host = Host::builder("agent", "hookwire")
        .record_sink(plain.clone())
        .build()
        .unwrap();
    assert_eq!(host.declaration(), None);
    host.session("s")
        .unwrap()
        .start(Vec::<String>::new())
        .await
        .unwrap();
    assert_eq!(plain.records()[0].declaration, None);
    assert!(plain.records()[0].to_json().get("declaration").is_none());
}

#[tokio::test]
async fn the_record_buffer_keeps_max_buffered_records() {
    let d = Declaration::from_value(&doc(
        json!({"configuration": {"records": {"max_buffered": 2}}}),
    ))
    .unwrap();
    let host = Host::declared("agent", "hookwire")
        .load(&d, &registry())
        .unwrap();
    let s = host.session("s").unwrap();
    s.start(Vec::<String>::new()).await.unwrap();
    s.input(json!("a"), crate::InputRole::User).await.unwrap();
    s.output(json!("b")).await.unwrap();
    let buffer = host.record_buffer().unwrap();
    assert_eq!(buffer.records().len(), 2);
    assert_eq!(buffer.dropped(), 1);
    assert_eq!(buffer.drain().len(), 2);
    assert!(buffer.records().is_empty());
}
