//! Writes the seed corpora of every fuzz target into `fuzz/seeds/<target>/`,
//! one file per distinct input, named by the SHA-256 of its bytes (so a
//! re-run adds nothing twice and the committed set stays deduplicated).
//!
//! Seeds come from the official conformance vectors (their verdicts,
//! approval resolutions and host declarations; `scripts/setup.sh` installs
//! them into `.cache/ctk/vectors/`), from the repository's declaration
//! examples, from per-point contexts shaped like the tests' fixtures, and
//! from the gateway adapters' request bodies and event streams (each
//! target module's `seeds`).
//!
//! ```text
//! cargo run --manifest-path fuzz/Cargo.toml --example seed_corpora [-- VECTORS_DIR]
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use hookwire::approval::{ApprovalRequest, StreamRequest};
use hookwire::canonical::sha256_identity;
use hookwire::wire::context_to_request;
use hookwire::{AgentContext, InterceptionPoint, InterceptorResponse, Verdict, json, pb};
use hookwire_fuzz::wire_context::{POINTS, encode_request};
use hookwire_fuzz::{
    chat_request, chat_stream, hook_payload, mcp_message, messages_request, messages_stream,
    transform, wire_approval, wire_verdict,
};
use serde_json::{Map, Value, json};

/// Inputs per target, keyed by target name.
#[derive(Default)]
struct Seeds(BTreeMap<&'static str, Vec<Vec<u8>>>);

impl Seeds {
    fn add(&mut self, target: &'static str, bytes: Vec<u8>) {
        self.0.entry(target).or_default().push(bytes);
    }

    fn write(&self, root: &Path) -> std::io::Result<()> {
        for (target, inputs) in &self.0 {
            let dir = root.join(target);
            fs::create_dir_all(&dir)?;
            let mut fresh = 0;
            for bytes in inputs {
                let hash = sha256_identity(bytes);
                let hex = hash.rsplit(':').next().unwrap_or(&hash);
                let path = dir.join(&hex[..16]);
                if !path.exists() {
                    fs::write(&path, bytes)?;
                    fresh += 1;
                }
            }
            println!("seeds/{target}: {} inputs, {fresh} new", inputs.len());
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fuzz_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = fuzz_dir.parent().expect("fuzz/ sits in the workspace");
    let vectors_dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".cache/ctk/vectors"));
    let vectors = read_vectors(&vectors_dir)?;
    println!(
        "{} conformance vectors from {}",
        vectors.len(),
        vectors_dir.display()
    );

    let mut seeds = Seeds::default();
    contexts(&mut seeds);
    verdicts(&mut seeds, &vectors);
    approvals(&mut seeds, &vectors);
    json_texts(&mut seeds, &vectors);
    transforms(&mut seeds, &vectors);
    declarations(&mut seeds, &vectors, root)?;
    for input in hook_payload::seeds() {
        seeds.add("hook_payload", input);
    }
    for input in mcp_message::seeds() {
        seeds.add("mcp_message", input);
    }
    for input in messages_request::seeds() {
        seeds.add("messages_request", input);
    }
    for input in messages_stream::seeds() {
        seeds.add("messages_stream", input);
    }
    for input in chat_request::seeds() {
        seeds.add("chat_request", input);
    }
    for input in chat_stream::seeds() {
        seeds.add("chat_stream", input);
    }
    seeds.write(&fuzz_dir.join("seeds"))?;
    Ok(())
}

fn read_vectors(dir: &Path) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e} (run scripts/setup.sh first)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| Ok(serde_json::from_slice(&fs::read(p)?)?))
        .collect()
}

/// The interceptor script steps of a vector that return a verdict, with
/// the point they answer at.
fn script_returns(vector: &Value) -> Vec<(String, Value)> {
    let mut scripts: Vec<&Value> = Vec::new();
    if let Some(all) = vector.get("interceptor_scripts").and_then(Value::as_array) {
        scripts.extend(all);
    }
    if let Some(one) = vector.get("interceptor_script") {
        scripts.push(one);
    }
    scripts
        .iter()
        .filter_map(|s| s.as_array())
        .flatten()
        .filter_map(|step| {
            let at = step.get("at")?.as_str()?.to_owned();
            Some((at, step.get("return")?.clone()))
        })
        .collect()
}

/// A context at `point` like the tests' fixtures; `rich` adds every
/// optional member the wire carries in a field of its own.
fn context_json(point: InterceptionPoint, rich: bool) -> Map<String, Value> {
    let tool_call = json!({"id": "call-1", "name": "bash", "args": {"cmd": "ls", "n": 3}});
    let model = if rich {
        json!({"id": "model-1", "vendor": "acme", "params": {"temperature": 0.5}, "x": 1})
    } else {
        json!({"id": "model-1"})
    };
    let mut m = Map::new();
    m.insert("spec".into(), json!(hookwire::SPEC_VERSION));
    m.insert("interception_point".into(), json!(point.as_str()));
    m.insert("timestamp".into(), json!("2026-01-01T00:00:00Z"));
    m.insert("sequence".into(), json!(1));
    m.insert(
        "agent".into(),
        json!({"id": "test-agent", "framework": "hookwire"}),
    );
    m.insert("session".into(), json!({"id": "s"}));
    let members: Vec<(&str, Value)> = match point {
        InterceptionPoint::AgentStartup => {
            vec![("agent_init", json!({"tools_registered": ["bash"]}))]
        }
        InterceptionPoint::Input => vec![("input", json!({"content": "hello", "role": "user"}))],
        InterceptionPoint::PreModelCall => vec![
            ("model", model),
            ("messages", json!([{"role": "user", "content": "hello"}])),
        ],
        InterceptionPoint::PostModelCall => vec![
            ("model", model),
            (
                "response",
                json!({"content": "hi", "tool_calls": [], "finish_reason": "stop"}),
            ),
        ],
        InterceptionPoint::PreToolCall => vec![("tool_call", tool_call)],
        InterceptionPoint::PostToolCall => vec![
            ("tool_call", tool_call),
            (
                "tool_result",
                json!({"value": "file.txt", "is_error": false, "duration_ms": 12}),
            ),
        ],
        InterceptionPoint::Output => vec![("output", json!({"content": "done"}))],
        InterceptionPoint::AgentShutdown => vec![("summary", json!({"reason": "completed"}))],
    };
    m.extend(members.into_iter().map(|(k, v)| (k.to_owned(), v)));
    if rich {
        m.insert(
            "agent".into(),
            json!({"id": "test-agent", "framework": "hookwire", "name": "a", "version": "1", "x": [1]}),
        );
        m.insert(
            "session".into(),
            json!({"id": "s", "started_at": "2026-01-01T00:00:00Z", "turn": 2}),
        );
        m.insert("trace".into(), json!({"trace_id": "t", "span_id": "u"}));
        m.insert("tenant".into(), json!({"id": "t1", "name": "acme"}));
        m.insert("actor".into(), json!({"id": "u1", "kind": "human"}));
        m.insert("budgets".into(), json!({"tokens": 1000, "cost": 1.5}));
        m.insert(
            "extensions".into(),
            json!({"acme": {"n": -1, "f": 1e-7, "big": 18446744073709551615u64}}),
        );
        if matches!(
            point,
            InterceptionPoint::PreModelCall | InterceptionPoint::PostModelCall
        ) {
            m.insert("request_id".into(), json!("r-1"));
            m.insert("tools".into(), json!([{"name": "bash"}]));
            m.insert("usage".into(), json!({"input_tokens": 3}));
        } else {
            m.insert(
                "messages".into(),
                json!([{"role": "user", "content": "é\u{1F600}"}]),
            );
        }
    }
    m
}

fn context(point: InterceptionPoint, rich: bool) -> Option<AgentContext> {
    match AgentContext::from_json(Value::Object(context_json(point, rich))) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!(
                "skipping the {} fixture (rich: {rich}): {e}",
                point.as_str()
            );
            None
        }
    }
}

fn contexts(seeds: &mut Seeds) {
    for point in POINTS {
        for rich in [false, true] {
            let Some(ctx) = context(point, rich) else {
                continue;
            };
            match context_to_request(&ctx) {
                Ok(request) => seeds.add("wire_context", encode_request(&request)),
                Err(e) => eprintln!("skipping {}: {e}", point.as_str()),
            }
        }
    }
}

fn verdicts(seeds: &mut Seeds, vectors: &[Value]) {
    for vector in vectors {
        for (_, ret) in script_returns(vector) {
            let Some(v) = transform::verdict(&ret) else {
                continue;
            };
            let wire = pb::Verdict::from(&v);
            seeds.add(
                "wire_verdict",
                wire_verdict::input(wire_verdict::VERDICT, &wire),
            );
            let mut response = pb::InterceptorResponse::from(&InterceptorResponse::from(v));
            response.extensions.insert(
                "acme".into(),
                pb::JsonValue {
                    json: r#"{"receipt":{"id":"r-1","n":1.5}}"#.into(),
                },
            );
            seeds.add(
                "wire_verdict",
                wire_verdict::input(wire_verdict::RESPONSE, &response),
            );
        }
    }
    let manifest = pb::Manifest::from(&hookwire::manifest("fuzz", "1.0"));
    seeds.add(
        "wire_verdict",
        wire_verdict::input(wire_verdict::MANIFEST, &manifest),
    );
}

fn approvals(seeds: &mut Seeds, vectors: &[Value]) {
    // Requests: each liftable deny of the vectors, offered with a context
    // at the point it was returned for.
    for vector in vectors {
        for (at, ret) in script_returns(vector) {
            let Some(verdict) = Verdict::from_json(&ret).ok().filter(Verdict::is_liftable) else {
                continue;
            };
            let Some(point) = POINTS.into_iter().find(|p| p.as_str() == at) else {
                continue;
            };
            let Some(context) = context(point, false) else {
                continue;
            };
            let request = StreamRequest {
                request_id: "req-1".into(),
                request: ApprovalRequest {
                    context_identity: Some("jcs-sha256:00".into()),
                    interception_point: point,
                    verdict,
                    context,
                },
                deadline: std::time::Duration::from_millis(30_000),
            };
            seeds.add(
                "wire_approval",
                wire_approval::input(wire_approval::REQUEST, &pb::ApprovalRequest::from(&request)),
            );
        }
        // Resolutions: what the vectors' approvers answer.
        let steps = vector.get("approval_script").and_then(Value::as_array);
        for step in steps.into_iter().flatten() {
            let Some(resolve) = step.get("resolve") else {
                continue;
            };
            let outcome = match resolve.get("outcome").and_then(Value::as_str) {
                Some("approve") => pb::ApprovalOutcome::Approve,
                Some("reject") => pb::ApprovalOutcome::Reject,
                Some("unresolved") => pb::ApprovalOutcome::Unresolved,
                _ => pb::ApprovalOutcome::Unspecified,
            };
            let resolution = pb::ApprovalResolution {
                request_id: "req-1".into(),
                outcome: outcome as i32,
                context_identity: Some("jcs-sha256:00".into()),
                verdict: resolve
                    .get("verdict")
                    .and_then(transform::verdict)
                    .map(|v| pb::Verdict::from(&v)),
                approver: "approver@example".into(),
            };
            seeds.add(
                "wire_approval",
                wire_approval::input(wire_approval::RESOLUTION, &resolution),
            );
        }
    }
}

fn json_texts(seeds: &mut Seeds, vectors: &[Value]) {
    let handmade = [
        "null",
        "[1,-1,0.5,1e300,-0.0,18446744073709551615,-9223372036854775808]",
        r#"{"a":{"b":[true,false,null,"\u00e9\ud83d\ude00"]}}"#,
        "[18446744073709551616, 1.5]",
        r#"{"a":1,"a":2}"#,
        r#""\ud800""#,
        "1e400",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "9007199254740993",
        "5e-324",
    ];
    for text in handmade {
        seeds.add("json_text", text.as_bytes().to_vec());
    }
    for point in POINTS {
        let ctx = Value::Object(context_json(point, true));
        seeds.add("json_text", json::encode(&ctx).into_bytes());
    }
    for vector in vectors {
        for (_, ret) in script_returns(vector) {
            seeds.add("json_text", json::encode(&ret).into_bytes());
        }
    }
}

fn transforms(seeds: &mut Seeds, vectors: &[Value]) {
    let target_of = |point: InterceptionPoint| {
        let members = context_json(point, false);
        let mut v = Value::Object(members);
        for key in point.target_location() {
            v = v.get(*key).cloned().unwrap_or(Value::Null);
        }
        v
    };
    let profiles = [
        "sequential/first_deny",
        "sequential/run_all",
        "parallel/strictest",
        "parallel/unanimous",
    ];
    for vector in vectors {
        let mut by_point: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for (at, ret) in script_returns(vector) {
            by_point.entry(at).or_default().push(ret);
        }
        let profile = vector
            .pointer("/composition/profile")
            .and_then(Value::as_str)
            .unwrap_or(profiles[0]);
        let mode = vector
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("enforce");
        for (at, verdicts) in by_point {
            let Some(point) = POINTS.into_iter().find(|p| p.as_str() == at) else {
                continue;
            };
            let doc = json!({
                "point": at, "mode": mode, "profile": profile,
                "target": target_of(point), "verdicts": verdicts,
            });
            seeds.add("transform", json::encode(&doc).into_bytes());
        }
    }
    for (i, profile) in profiles.iter().enumerate() {
        let doc = json!({
            "point": "pre_tool_call", "mode": "enforce", "profile": profile,
            "target": {"cmd": "ls", "argv": ["-l", {"x": 1}]},
            "verdicts": [
                {"decision": "transform", "transform": {"path": "$target.argv[1].x", "value": i}},
                {"decision": "transform", "transform": {"path": "$target[\"cmd\"]", "value": "pwd"}},
                {"decision": "allow", "warnings": [{"reason": "acme:w", "message": "m"}]},
            ],
        });
        seeds.add("transform", json::encode(&doc).into_bytes());
    }
}

fn declarations(
    seeds: &mut Seeds,
    vectors: &[Value],
    root: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    for vector in vectors {
        if let Some(doc) = vector.get("host_declaration") {
            seeds.add("declaration", json::encode(doc).into_bytes());
        }
    }
    // The `hookwire.grpc` config members the examples leave out: replicas,
    // re-resolution, metadata from the environment, visibility, mutation.
    let grpc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{
            "id": "policy",
            "kind": "hookwire.grpc",
            "config": {
                "endpoint": "http://127.0.0.1:1",
                "endpoints": ["http://127.0.0.2:1", "http://127.0.0.3:1"],
                "dns_refresh_ms": 1000,
                "metadata": {"authorization": {"env": "FUZZ_TOKEN", "prefix": "Bearer "}},
                "visibility": ["actor", "tenant"],
                "mutation": ["$target.cmd"]
            },
            "at": ["pre_tool_call"],
            "timeout_ms": 500
        }, {"id": "pass", "kind": "hookwire.allow"}]
    });
    seeds.add("declaration", json::encode(&grpc).into_bytes());
    let examples = root.join("examples/declarations");
    let mut paths: Vec<PathBuf> = fs::read_dir(&examples)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for path in paths {
        seeds.add("declaration", fs::read(path)?);
    }
    Ok(())
}
