//! The `hookwire.grpc` binding's checks: effects, streams, replica sets,
//! Unix socket endpoints, and each refusal naming the member, not the URL.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::resolve_grpc;
use crate::binding::Location;
use crate::declaration::BindingContext;

/// The service target a `hookwire.grpc` config resolves to.
fn target(config: Value) -> Result<crate::remote::ServiceTarget, String> {
    match binding(config)?.location {
        Location::Service(t) => Ok(t),
        Location::InProcess(_) => panic!("a grpc binding is remote"),
    }
}

fn resolve(config: Value) -> Result<(Vec<String>, bool), String> {
    let t = target(config)?;
    Ok((t.endpoints, t.resolve_every.is_some()))
}

/// The binding a `hookwire.grpc` config resolves to.
fn binding(config: Value) -> Result<crate::binding::InterceptorBinding, String> {
    let at = BTreeSet::new();
    let ctx = BindingContext {
        id: "p",
        kind: super::GRPC_KIND,
        at: &at,
        timeout: None,
        host: None,
        declaration_version: "agent-hooks-declaration/1.0",
    };
    resolve_grpc(&config, &ctx)
}

#[test]
fn effects_reach_the_binding_and_an_unknown_kind_is_refused_by_position() {
    use crate::effect::Effect;
    let b = binding(json!({"endpoint": "http://a:1", "effects": ["route", "headers"]})).unwrap();
    assert_eq!(b.effects, Some(vec![Effect::Route, Effect::Headers]));
    assert_eq!(b.mutation, None, "effects alone state no paths");
    let none = binding(json!({"endpoint": "http://a:1", "effects": []})).unwrap();
    assert_eq!(none.effects, Some(vec![]));
    let undeclared = binding(json!({"endpoint": "http://a:1"})).unwrap();
    assert_eq!((undeclared.effects, undeclared.mutation), (None, None));
    let err = binding(json!({"endpoint": "http://a:1", "effects": ["route", "secret-kind"]}))
        .err()
        .unwrap();
    assert!(err.starts_with("config.effects[1] must be one of route, model_params, headers, credential, upstream_body"), "{err}");
    assert!(!err.contains("secret-kind"), "{err}");
    let err = binding(json!({"endpoint": "http://a:1", "effects": "route"}))
        .err()
        .unwrap();
    assert_eq!(err, "config.effects must be an array of strings");
}

#[test]
fn multiplex_streams_reach_the_binding() {
    let streams = |config: Value| target(config).unwrap().streams;
    assert_eq!(
        streams(json!({"endpoint": "http://a:1", "multiplex_streams": 3})),
        Some(3)
    );
    assert_eq!(streams(json!({"endpoint": "http://a:1"})), None);
}

#[test]
fn endpoint_and_endpoints_make_one_replica_set() {
    let (endpoints, dns) = resolve(json!({
        "endpoint": "http://10.0.0.1:1",
        "endpoints": ["http://10.0.0.2:1", "http://10.0.0.3:1"],
    }))
    .unwrap();
    assert_eq!(
        endpoints,
        [
            "http://10.0.0.1:1",
            "http://10.0.0.2:1",
            "http://10.0.0.3:1"
        ]
    );
    assert!(!dns);
    let (endpoints, dns) =
        resolve(json!({"endpoints": ["http://svc:1"], "dns_refresh_ms": 500})).unwrap();
    assert_eq!(endpoints, ["http://svc:1"]);
    assert!(dns);
}

#[test]
fn bad_replica_sets_are_refused_naming_the_member_not_the_url() {
    let cases = [
        (
            json!({}),
            "config.endpoint (or config.endpoints) is required",
        ),
        (
            json!({"endpoints": []}),
            "config.endpoints must list at least one URL",
        ),
        (
            json!({"endpoints": "http://a:1"}),
            "config.endpoints must be an array of strings",
        ),
        (
            json!({"endpoints": ["ftp://secret"]}),
            "config.endpoints[0] must be an absolute",
        ),
        (
            json!({"endpoint": "http://a:1", "endpoints": ["http://a:1"]}),
            "config.endpoints[0] repeats an endpoint already given",
        ),
        (
            json!({"endpoint": "http://a:1", "endpoints": ["https://b:1"]}),
            "must all be http://, all https:// or all unix:",
        ),
        (
            json!({"endpoint": "unix:/run/a.sock", "endpoints": ["http://b:1"]}),
            "must all be http://, all https:// or all unix:",
        ),
        (
            json!({"endpoint": "unix:secret.sock"}),
            "config.endpoint must name an absolute socket path",
        ),
        (
            json!({"endpoint": "unix:/run/secret/"}),
            "config.endpoint must name a socket file",
        ),
        (
            json!({"endpoint": format!("unix:/{}", "secret".repeat(20))}),
            "a socket path is at most 107 bytes",
        ),
        (
            json!({"endpoint": "unix:/run/a.sock", "dns_refresh_ms": 1000}),
            "config.dns_refresh_ms applies to http(s):// endpoints only",
        ),
        (
            json!({"endpoint": "unix:/run/a.sock", "tls": {}}),
            "config.tls applies to https:// endpoints only",
        ),
        (
            json!({"endpoint": "http://a:1", "dns_refresh_ms": 10}),
            "config.dns_refresh_ms must be an integer of at least 100",
        ),
        (
            json!({"endpoint": "http://a:1", "dns_refresh_ms": "fast"}),
            "config.dns_refresh_ms must be an integer",
        ),
        (
            json!({"endpoint": "http://a:1", "multiplex_streams": 0}),
            "config.multiplex_streams must be an integer from 1 to 64",
        ),
        (
            json!({"endpoint": "http://a:1", "multiplex_streams": 65}),
            "config.multiplex_streams must be an integer from 1 to 64",
        ),
        (
            json!({"endpoint": "http://a:1", "multiplex_streams": 2.5}),
            "config.multiplex_streams must be an integer from 1 to 64",
        ),
    ];
    for (config, expected) in cases {
        let err = resolve(config.clone()).unwrap_err();
        assert!(err.contains(expected), "{config}: {err}");
        assert!(!err.contains("secret"), "{err}");
    }
}

#[test]
fn unix_socket_endpoints_make_a_replica_set() {
    let (endpoints, dns) = resolve(json!({
        "endpoint": "unix:/run/hookwire/a.sock",
        "endpoints": ["unix:/run/hookwire/b.sock"],
        "multiplex_streams": 2,
    }))
    .unwrap();
    assert_eq!(
        endpoints,
        ["unix:/run/hookwire/a.sock", "unix:/run/hookwire/b.sock"]
    );
    assert!(!dns);
}
