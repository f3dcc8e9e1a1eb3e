//! Who may use a gateway that holds the upstream keys: with a clients
//! file, only a listed client token is admitted, on every route and in
//! every API's own error shape; each client is a principal that owns its
//! sessions and has its own quota; a line removed from the file is a
//! revoked token on the next request, with no restart. The official SDKs
//! send the token as their API key.

use std::path::Path;
use std::sync::Arc;

use hookwire_edge::token::sha256_hex;
use hookwire_gateway::{CredentialPool, Secret, WatchedClients};
use serde_json::{Value, json};

use super::history::post;
use super::{allow_all, gateway, host};
use hookwire_testkit::model_upstream::clients::{Sdk, run_as};
use hookwire_testkit::model_upstream::{Upstream, chat, messages, responses};

const ALICE: &str = "hwc_alice0123456789";
const BOB: &str = "hwc_bob0123456789";
const POOLED: &str = "sk-pooled-upstream-key";

fn pool() -> CredentialPool {
    CredentialPool::new()
        .with_key("pool", Secret::new(POOLED))
        .unwrap()
}

fn list(path: &Path, clients: &[(&str, &str)]) {
    let text: String = clients
        .iter()
        .map(|(name, token)| format!("{name} {}\n", sha256_hex(token)))
        .collect();
    std::fs::write(path, text).unwrap();
}

fn watched(path: &Path) -> Option<Arc<WatchedClients>> {
    Some(Arc::new(WatchedClients::open(path).unwrap()))
}

/// One API as a client meets it: its route, its SDK and SDK case, and
/// where its SDK sends the key.
struct Api {
    route: &'static str,
    sdk: Sdk,
    case: &'static str,
    messages_shape: bool,
}

const APIS: [Api; 3] = [
    Api {
        route: "/v1/chat/completions",
        sdk: Sdk::OpenAi,
        case: "chat-stream",
        messages_shape: false,
    },
    Api {
        route: "/v1/responses",
        sdk: Sdk::OpenAi,
        case: "text",
        messages_shape: false,
    },
    Api {
        route: "/v1/messages",
        sdk: Sdk::Anthropic,
        case: "text",
        messages_shape: true,
    },
];

fn body_for(api: &Api) -> Value {
    match api.route {
        "/v1/chat/completions" => {
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        }
        "/v1/responses" => json!({"model": "m", "input": "hi"}),
        _ => json!({"model": "m", "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hi"}]}),
    }
}

/// The refusal is a 401 in the API's own shape, naming no token.
fn assert_refused(api: &Api, status: u16, body: &Value, token: &str) {
    assert_eq!(status, 401, "{}: {body}", api.route);
    if api.messages_shape {
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], "authentication_error", "{body}");
    } else {
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");
    }
    assert!(
        !token.is_empty() && !body.to_string().contains(token),
        "{body}"
    );
}

/// The SDK's answer is its own authentication error, a 401.
fn assert_sdk_refused(api: &Api, answer: &Value) {
    assert_eq!(
        answer["error"], "AuthenticationError",
        "{}: {answer}",
        api.route
    );
    assert_eq!(answer["status"], 401, "{answer}");
}

/// No request the upstream received carried a client token; each carried
/// the pooled key.
fn assert_pooled_only(up: &Upstream) {
    let seen = up.seen();
    assert!(!seen.is_empty());
    for r in seen {
        let values: Vec<&String> = r.headers.values().collect();
        assert!(
            values
                .iter()
                .all(|v| !v.contains(ALICE) && !v.contains(BOB)),
            "a client token went upstream: {values:?}"
        );
        assert!(
            values.iter().any(|v| v.contains(POOLED)),
            "no pooled key upstream: {values:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_listed_tokens_are_admitted_and_a_revoked_one_is_refused_in_each_apis_shape() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway-clients");
    list(&file, &[("alice", ALICE), ("bob", BOB)]);
    let mut running = Vec::new();
    for api in &APIS {
        let up = match api.route {
            "/v1/chat/completions" => chat::serve(chat::conversation).await,
            "/v1/responses" => responses::serve(responses::conversation).await,
            _ => messages::serve(messages::conversation).await,
        };
        let (h, _) = host(vec![allow_all()]);
        let (g, gw) = gateway(h, &up, pool(), |c| c.clients = watched(&file)).await;
        running.push((api, up, g, gw));
    }

    for (api, up, _, gw) in &running {
        let base = if api.messages_shape {
            gw.base_url().trim_end_matches("/v1").to_owned()
        } else {
            gw.base_url()
        };
        // A listed client, through its official SDK: served, and the
        // upstream saw the pool's key, never the token.
        let ok = run_as(api.sdk, &base, Some(ALICE), &[api.case]).await;
        assert!(ok[0].get("error").is_none(), "{}: {}", api.route, ok[0]);
        assert_pooled_only(up);
        let upstream_calls = up.seen().len();

        // No token, an unlisted one, a malformed header: refused, and
        // nothing went upstream.
        let body = body_for(api);
        for headers in [
            vec![("x-api-key", "")],
            vec![
                ("authorization", "Bearer hwc_not_listed"),
                ("x-api-key", "hwc_not_listed"),
            ],
            vec![
                ("authorization", "Basic YWxpY2U6cHc="),
                ("x-api-key", "a b"),
            ],
        ] {
            let (status, answer) = post(gw.addr(), api.route, &headers, &body).await;
            assert_refused(api, status, &answer, "hwc_not_listed");
        }
        assert_eq!(
            up.seen().len(),
            upstream_calls,
            "a refused request went upstream"
        );
    }

    // Every other route asks for a token too, and a callback header is no
    // way around it there.
    let (_, _, _, chat_gw) = &running[0];
    for (path, headers) in [
        (
            "/v1/messages/count_tokens",
            vec![("x-api-key", "hwc_not_listed")],
        ),
        (
            "/v1/models",
            vec![
                ("authorization", "Bearer hwc_not_listed"),
                ("x-hookwire-callback", "forged"),
            ],
        ),
    ] {
        let method = if path == "/v1/models" { "GET" } else { "POST" };
        let (status, body) = super::raw(chat_gw.addr(), method, path, &headers, &json!({})).await;
        assert_eq!(status, 401, "{path}: {body}");
    }

    // Alice's line removed: her next request is refused by every API
    // (the official SDKs raise their authentication error); Bob, still
    // listed, is served.
    list(&file, &[("bob", BOB)]);
    for (api, _, _, gw) in &running {
        let base = if api.messages_shape {
            gw.base_url().trim_end_matches("/v1").to_owned()
        } else {
            gw.base_url()
        };
        let refused = run_as(api.sdk, &base, Some(ALICE), &[api.case]).await;
        assert_sdk_refused(api, &refused[0]);
        let key = if api.messages_shape {
            "x-api-key"
        } else {
            "authorization"
        };
        let bob = if api.messages_shape {
            BOB.to_owned()
        } else {
            format!("Bearer {BOB}")
        };
        let headers = [(key, bob.as_str()), ("anthropic-version", "2023-06-01")];
        let (status, answer) = post(gw.addr(), api.route, &headers, &body_for(api)).await;
        assert_eq!(status, 200, "{}: {answer}", api.route);
    }

    // A clients file that became unusable refuses everyone (503), until
    // it is fixed.
    std::fs::write(&file, "bob not-a-hash\n").unwrap();
    let (_, _, _, gw) = &running[1];
    let bearer = format!("Bearer {BOB}");
    let (status, answer) = post(
        gw.addr(),
        "/v1/responses",
        &[("authorization", &bearer)],
        &body_for(&APIS[1]),
    )
    .await;
    assert_eq!(status, 503, "{answer}");
    assert_eq!(
        answer["error"]["code"], "hookwire_clients_unavailable",
        "{answer}"
    );
    list(&file, &[("bob", BOB)]);
    let (status, answer) = post(
        gw.addr(),
        "/v1/responses",
        &[("authorization", &bearer)],
        &body_for(&APIS[1]),
    )
    .await;
    assert_eq!(status, 200, "{answer}");

    for (_, _, g, gw) in running {
        gw.shutdown().await.unwrap();
        drop(g);
    }
}

/// Two clients behind one pooled key are two principals: neither can use
/// or end the other's session, and one's flood of sessions displaces only
/// its own least recently used ones while the other's stay open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_owns_its_sessions_and_has_its_own_quota() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway-clients");
    list(&file, &[("alice", ALICE), ("bob", BOB)]);
    let up = chat::serve(chat::conversation).await;
    let (h, records) = host(vec![allow_all()]);
    let (g, gw) = gateway(h, &up, pool(), |c| {
        c.clients = watched(&file);
        c.max_sessions = 100;
        c.max_sessions_per_credential = 3;
    })
    .await;
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");
    let body = body_for(&APIS[0]);
    let as_ = |token: &str, session: &str| -> Vec<(&'static str, String)> {
        vec![
            ("authorization", token.to_owned()),
            ("x-hookwire-session", session.to_owned()),
        ]
    };
    let send = |headers: Vec<(&'static str, String)>| {
        let body = body.clone();
        let addr = gw.addr();
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            post(addr, "/v1/chat/completions", &h, &body).await
        }
    };

    let (s, b) = send(as_(&alice, "alice-1")).await;
    assert_eq!(s, 200, "{b}");
    // Bob names Alice's session: refused, as an owned session.
    let (s, b) = send(as_(&bob, "alice-1")).await;
    assert_eq!(s, 403, "{b}");
    assert_eq!(
        b["error"]["code"], "hookwire:session_owned_by_another_client",
        "{b}"
    );
    // Nor may he end it; Alice may.
    let end = |token: &str| {
        let token = token.to_owned();
        let addr = gw.addr();
        async move {
            let h = [("authorization", token.as_str())];
            let path = "/v1/hookwire/sessions/alice-1";
            super::raw(addr, "DELETE", path, &h, &Value::Null).await.0
        }
    };
    assert_eq!(end(&bob).await, 404);
    assert_eq!(end(&alice).await, 204);

    // Bob opens one; Alice floods: she never holds more than her quota,
    // and Bob's session stays.
    let (s, b) = send(as_(&bob, "bob-1")).await;
    assert_eq!(s, 200, "{b}");
    let mut codes = Vec::new();
    for i in 0..6 {
        let (s, _) = send(as_(&alice, &format!("flood-{i}"))).await;
        codes.push(s);
        assert!(g.open_sessions() <= 4, "Alice's 3 and Bob's 1");
    }
    assert_eq!(codes, [200; 6]);
    assert_eq!(g.open_sessions(), 4);
    let (s, b) = send(as_(&bob, "bob-1")).await;
    assert_eq!(s, 200, "Bob keeps working: {b}");
    assert_eq!(g.open_sessions(), 4);
    let startups = |session: &str| {
        records
            .session(session)
            .iter()
            .filter(|r| r.interception_point.as_str() == "agent_startup")
            .count()
    };
    assert_eq!(startups("bob-1"), 1, "Bob's session was never displaced");
    assert_eq!(startups("flood-0"), 1);
    let ended = records.session("flood-0");
    assert_eq!(
        ended.last().map(|r| r.interception_point.as_str()),
        Some("agent_shutdown"),
        "Alice's least recent session was ended"
    );
    gw.shutdown().await.unwrap();
    drop(g);
}
