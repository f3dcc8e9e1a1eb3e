//! Property tests of the wire layer: every valid context of every point and
//! every verdict survives domain → `pb` → protobuf bytes → `pb` → domain
//! unchanged, JSON text decodes exactly, and malformed input is refused
//! without panicking.

use hookwire::json::{self, InvalidJson};
use hookwire::pb;
use hookwire::wire::{PointRequest, context_from_request, context_to_request};
use hookwire::{
    AgentContext, Decision, InterceptionPoint, InterceptorResponse, InvalidVerdict,
    RESPONSE_EXTENSIONS_MAX_BYTES, Transform, Verdict, Warning,
};
use proptest::prelude::*;
use prost::Message;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------
// JSON values
// ---------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,8}",
        prop::collection::vec(any::<char>(), 0..10).prop_map(String::from_iter),
        prop::sample::select(vec![
            "",
            "😀 émoji ∑ 中文",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "\"quoted\" \\back\\slash /",
            "line\nbreak\ttab\r",
            "\u{2028}\u{2029}\u{feff}",
            "18446744073709551616",
            "1e400",
        ])
        .prop_map(str::to_owned),
    ]
}

fn float() -> impl Strategy<Value = f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO,
        prop::sample::select(vec![
            1.0,
            -1.0,
            0.5,
            1.5,
            1e300,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            9_007_199_254_740_993.0,
        ]),
    ]
}

/// A JSON leaf. `safe` keeps integers within ±(2^53−1), the canonical
/// (RFC 8785) domain that size caps are measured in.
fn leaf(safe: bool) -> BoxedStrategy<Value> {
    const SAFE: i64 = 9_007_199_254_740_991;
    let ints = if safe {
        prop_oneof![
            (-SAFE..=SAFE).prop_map(Value::from),
            prop::sample::select(vec![0, -1, 1, SAFE, -SAFE]).prop_map(Value::from),
        ]
        .boxed()
    } else {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop::sample::select(vec![
                json!(i64::MIN),
                json!(i64::MAX),
                json!(u64::MAX),
                json!(0),
                json!(-1),
            ]),
        ]
        .boxed()
    };
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        ints,
        float().prop_map(Value::from),
        text().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, nested a few levels.
fn json_value_with(safe: bool) -> BoxedStrategy<Value> {
    leaf(safe)
        .prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

fn json_value() -> BoxedStrategy<Value> {
    json_value_with(false)
}

fn json_object_with(safe: bool) -> BoxedStrategy<Map<String, Value>> {
    prop::collection::btree_map(text(), json_value_with(safe), 0..4)
        .prop_map(|m| m.into_iter().collect())
        .boxed()
}

fn json_object() -> BoxedStrategy<Map<String, Value>> {
    json_object_with(false)
}

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------

/// Extra members for an open object, none named like its typed `fields`.
fn unknown_members(fields: &'static [&'static str]) -> BoxedStrategy<Map<String, Value>> {
    prop::collection::btree_map(text(), json_value(), 0..3)
        .prop_map(move |m| {
            m.into_iter()
                .filter(|(k, _)| !fields.contains(&k.as_str()))
                .collect()
        })
        .boxed()
}

/// An open object: its typed members plus random unknown ones.
fn open_object(
    fields: &'static [&'static str],
    typed: impl Strategy<Value = Vec<(&'static str, Option<Value>)>> + 'static,
) -> BoxedStrategy<Value> {
    (typed, unknown_members(fields))
        .prop_map(|(typed, mut extra)| {
            for (k, v) in typed {
                if let Some(v) = v {
                    extra.insert(k.to_owned(), v);
                }
            }
            Value::Object(extra)
        })
        .boxed()
}

fn non_empty() -> impl Strategy<Value = String> {
    text().prop_filter("non-empty", |s| !s.is_empty())
}

fn opt_string() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(text().prop_map(Value::String))
}

fn agent() -> BoxedStrategy<Value> {
    open_object(
        &["id", "framework", "name", "version"],
        (non_empty(), "[a-z0-9_-]{1,12}", opt_string(), opt_string()).prop_map(
            |(id, fw, name, version)| {
                vec![
                    ("id", Some(Value::String(id))),
                    ("framework", Some(Value::String(fw))),
                    ("name", name),
                    ("version", version),
                ]
            },
        ),
    )
}

fn session() -> BoxedStrategy<Value> {
    open_object(
        &["id", "started_at", "turn"],
        (non_empty(), opt_string(), prop::option::of(any::<u64>())).prop_map(
            |(id, started, turn)| {
                vec![
                    ("id", Some(Value::String(id))),
                    ("started_at", started),
                    ("turn", turn.map(Value::from)),
                ]
            },
        ),
    )
}

fn two_optional_strings(fields: &'static [&'static str; 2]) -> BoxedStrategy<Option<Value>> {
    prop::option::of(open_object(
        fields,
        (opt_string(), opt_string()).prop_map(move |(a, b)| vec![(fields[0], a), (fields[1], b)]),
    ))
    .boxed()
}

fn model() -> BoxedStrategy<Value> {
    open_object(
        &["id", "vendor", "params"],
        (text(), opt_string(), prop::option::of(json_value())).prop_map(|(id, vendor, params)| {
            vec![
                ("id", Some(Value::String(id))),
                ("vendor", vendor),
                ("params", params),
            ]
        }),
    )
}

fn tool_call() -> BoxedStrategy<Value> {
    (non_empty(), non_empty(), json_object(), opt_string())
        .prop_map(|(id, name, args, hash)| {
            let mut m = Map::new();
            m.insert("id".into(), Value::String(id));
            m.insert("name".into(), Value::String(name));
            m.insert("args".into(), Value::Object(args));
            if let Some(h) = hash {
                m.insert("content_hash".into(), h);
            }
            Value::Object(m)
        })
        .boxed()
}

fn tool_result() -> BoxedStrategy<Value> {
    open_object(
        &["value", "is_error", "duration_ms"],
        (json_value(), any::<bool>(), prop::option::of(json_value())).prop_map(
            |(value, is_error, duration)| {
                vec![
                    ("value", Some(value)),
                    ("is_error", Some(Value::Bool(is_error))),
                    ("duration_ms", duration),
                ]
            },
        ),
    )
}

/// An object with the required members `fields` (values from `required`)
/// plus random unknown ones: the shape of the whole-target members.
fn target_object(
    fields: &'static [&'static str],
    required: impl Strategy<Value = Vec<Value>> + 'static,
) -> BoxedStrategy<Value> {
    open_object(
        fields,
        required.prop_map(move |vals| {
            fields
                .iter()
                .copied()
                .zip(vals.into_iter().map(Some))
                .collect()
        }),
    )
}

fn one_of(options: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::sample::select(options).prop_map(Value::from)
}

/// The point's conditional members (§4.2) and its point-only optionals.
fn point_members(point: InterceptionPoint) -> BoxedStrategy<Vec<(&'static str, Option<Value>)>> {
    use InterceptionPoint::*;
    let model_call = || {
        (
            opt_string(),
            prop::option::of(json_value()),
            prop::option::of(json_value()),
        )
    };
    match point {
        AgentStartup => target_object(
            &["tools_registered"],
            prop::collection::vec(text().prop_map(Value::String), 0..4)
                .prop_map(|t| vec![Value::Array(t)]),
        )
        .prop_map(|v| vec![("agent_init", Some(v))])
        .boxed(),
        Input => target_object(
            &["content", "role"],
            (json_value(), one_of(&["user", "system", "external"])).prop_map(|(c, r)| vec![c, r]),
        )
        .prop_map(|v| vec![("input", Some(v))])
        .boxed(),
        PreModelCall => (
            model(),
            prop::collection::vec(json_value(), 0..4),
            model_call(),
        )
            .prop_map(|(model, messages, (rid, tools, usage))| {
                vec![
                    ("model", Some(model)),
                    ("messages", Some(Value::Array(messages))),
                    ("request_id", rid),
                    ("tools", tools),
                    ("usage", usage),
                ]
            })
            .boxed(),
        PostModelCall => (
            model(),
            target_object(
                &["content", "tool_calls", "finish_reason"],
                (
                    json_value(),
                    prop::collection::vec(json_value(), 0..3),
                    json_value(),
                )
                    .prop_map(|(c, t, f)| vec![c, Value::Array(t), f]),
            ),
            model_call(),
        )
            .prop_map(|(model, response, (rid, tools, usage))| {
                vec![
                    ("model", Some(model)),
                    ("response", Some(response)),
                    ("request_id", rid),
                    ("tools", tools),
                    ("usage", usage),
                ]
            })
            .boxed(),
        PreToolCall => tool_call()
            .prop_map(|c| vec![("tool_call", Some(c))])
            .boxed(),
        PostToolCall => (tool_call(), tool_result())
            .prop_map(|(c, r)| vec![("tool_call", Some(c)), ("tool_result", Some(r))])
            .boxed(),
        Output => target_object(&["content"], json_value().prop_map(|c| vec![c]))
            .prop_map(|v| vec![("output", Some(v))])
            .boxed(),
        AgentShutdown => target_object(
            &["reason"],
            one_of(&["completed", "error", "cancelled"]).prop_map(|r| vec![r]),
        )
        .prop_map(|v| vec![("summary", Some(v))])
        .boxed(),
    }
}

/// Top-level members with a typed place somewhere: unknown members avoid
/// them (members of *other* points are fair game, see below).
const NAMED_EVERYWHERE: &[&str] = &[
    "spec",
    "interception_point",
    "target",
    "timestamp",
    "sequence",
    "agent",
    "session",
    "messages",
    "trace",
    "tenant",
    "actor",
    "budgets",
    "extensions",
];

fn named_at(point: InterceptionPoint) -> &'static [&'static str] {
    use InterceptionPoint::*;
    match point {
        AgentStartup => &["agent_init"],
        Input => &["input"],
        PreModelCall => &["model", "request_id", "tools", "usage"],
        PostModelCall => &["model", "response", "request_id", "tools", "usage"],
        PreToolCall => &["tool_call"],
        PostToolCall => &["tool_call", "tool_result"],
        Output => &["output"],
        AgentShutdown => &["summary"],
    }
}

fn common_optionals(point: InterceptionPoint) -> BoxedStrategy<Vec<(&'static str, Option<Value>)>> {
    let budgets = prop::option::of(
        prop::collection::btree_map(
            prop::sample::select(vec![
                "tool_call_count",
                "token_count",
                "elapsed_seconds",
                "cost_usd",
            ]),
            prop_oneof![
                any::<u64>().prop_map(Value::from),
                float().prop_map(Value::from)
            ],
            0..4,
        )
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
    );
    let extensions = prop::option::of(
        prop::collection::btree_map("[a-z][a-z0-9_]{0,8}", json_value(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    );
    let messages = if point == InterceptionPoint::PreModelCall {
        Just(None).boxed()
    } else {
        prop::option::of(json_value()).boxed()
    };
    (
        messages,
        two_optional_strings(&["trace_id", "span_id"]),
        two_optional_strings(&["id", "name"]),
        two_optional_strings(&["id", "kind"]),
        budgets,
        extensions,
    )
        .prop_map(|(messages, trace, tenant, actor, budgets, extensions)| {
            vec![
                ("messages", messages),
                ("trace", trace),
                ("tenant", tenant),
                ("actor", actor),
                ("budgets", budgets),
                ("extensions", extensions),
            ]
        })
        .boxed()
}

/// Top-level members this contract version does not name at `point`,
/// including members that belong to other points.
fn unknown_top_level(point: InterceptionPoint) -> BoxedStrategy<Map<String, Value>> {
    let key = prop_oneof![
        text(),
        prop::sample::select(vec![
            "tool_call",
            "tool_result",
            "model",
            "response",
            "input",
            "output",
            "summary",
            "agent_init",
            "request_id",
            "x_future",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::btree_map(key, json_value(), 0..3)
        .prop_map(move |m| {
            m.into_iter()
                .filter(|(k, _)| {
                    !NAMED_EVERYWHERE.contains(&k.as_str())
                        && !named_at(point).contains(&k.as_str())
                })
                .collect()
        })
        .boxed()
}

/// A valid context (§4 envelope) at `point`, with random optional members.
fn context(point: InterceptionPoint) -> BoxedStrategy<AgentContext> {
    (
        prop_oneof![
            Just("agent-hooks/0.1".to_owned()),
            "agent-hooks/[0-9]{1,3}\\.[0-9]{1,3}"
        ],
        text(),
        any::<u64>(),
        agent(),
        session(),
        point_members(point),
        common_optionals(point),
        unknown_top_level(point),
    )
        .prop_map(
            move |(spec, timestamp, sequence, agent, session, conditional, optionals, unknown)| {
                let mut m = unknown;
                m.insert("spec".into(), Value::String(spec));
                m.insert("interception_point".into(), Value::from(point.as_str()));
                m.insert("timestamp".into(), Value::String(timestamp));
                m.insert("sequence".into(), Value::from(sequence));
                m.insert("agent".into(), agent);
                m.insert("session".into(), session);
                for (k, v) in conditional.into_iter().chain(optionals) {
                    if let Some(v) = v {
                        m.insert(k.to_owned(), v);
                    }
                }
                AgentContext::from_json(Value::Object(m))
                    .unwrap_or_else(|e| panic!("generator built an invalid context: {e}"))
            },
        )
        .boxed()
}

/// Serializes the request to protobuf bytes and parses it back.
fn through_bytes(req: PointRequest) -> PointRequest {
    fn again<M: Message + Default>(m: &M) -> M {
        M::decode(m.encode_to_vec().as_slice()).expect("prost round trip")
    }
    match req {
        PointRequest::AgentStartup(r) => PointRequest::AgentStartup(again(&r)),
        PointRequest::Input(r) => PointRequest::Input(again(&r)),
        PointRequest::PreModelCall(r) => PointRequest::PreModelCall(again(&r)),
        PointRequest::PostModelCall(r) => PointRequest::PostModelCall(again(&r)),
        PointRequest::PreToolCall(r) => PointRequest::PreToolCall(again(&r)),
        PointRequest::PostToolCall(r) => PointRequest::PostToolCall(again(&r)),
        PointRequest::Output(r) => PointRequest::Output(again(&r)),
        PointRequest::AgentShutdown(r) => PointRequest::AgentShutdown(again(&r)),
    }
}

fn encode_request(req: &PointRequest) -> Vec<u8> {
    match req {
        PointRequest::AgentStartup(r) => r.encode_to_vec(),
        PointRequest::Input(r) => r.encode_to_vec(),
        PointRequest::PreModelCall(r) => r.encode_to_vec(),
        PointRequest::PostModelCall(r) => r.encode_to_vec(),
        PointRequest::PreToolCall(r) => r.encode_to_vec(),
        PointRequest::PostToolCall(r) => r.encode_to_vec(),
        PointRequest::Output(r) => r.encode_to_vec(),
        PointRequest::AgentShutdown(r) => r.encode_to_vec(),
    }
}

fn decode_request(point: InterceptionPoint, bytes: &[u8]) -> Option<PointRequest> {
    use InterceptionPoint::*;
    Some(match point {
        AgentStartup => PointRequest::AgentStartup(Message::decode(bytes).ok()?),
        Input => PointRequest::Input(Message::decode(bytes).ok()?),
        PreModelCall => PointRequest::PreModelCall(Message::decode(bytes).ok()?),
        PostModelCall => PointRequest::PostModelCall(Message::decode(bytes).ok()?),
        PreToolCall => PointRequest::PreToolCall(Message::decode(bytes).ok()?),
        PostToolCall => PointRequest::PostToolCall(Message::decode(bytes).ok()?),
        Output => PointRequest::Output(Message::decode(bytes).ok()?),
        AgentShutdown => PointRequest::AgentShutdown(Message::decode(bytes).ok()?),
    })
}

fn assert_round_trip(ctx: &AgentContext) -> Result<(), TestCaseError> {
    let req = context_to_request(ctx).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(req.point(), ctx.point());
    let back =
        context_from_request(through_bytes(req)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, ctx);
    prop_assert_eq!(back.to_json(), ctx.to_json());
    Ok(())
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn agent_startup_round_trips(ctx in context(InterceptionPoint::AgentStartup)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn input_round_trips(ctx in context(InterceptionPoint::Input)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn pre_model_call_round_trips(ctx in context(InterceptionPoint::PreModelCall)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn post_model_call_round_trips(ctx in context(InterceptionPoint::PostModelCall)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn pre_tool_call_round_trips(ctx in context(InterceptionPoint::PreToolCall)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn post_tool_call_round_trips(ctx in context(InterceptionPoint::PostToolCall)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn output_round_trips(ctx in context(InterceptionPoint::Output)) {
        assert_round_trip(&ctx)?;
    }

    #[test]
    fn agent_shutdown_round_trips(ctx in context(InterceptionPoint::AgentShutdown)) {
        assert_round_trip(&ctx)?;
    }
}

/// A context of any point, for the properties that do not care which.
fn any_context() -> BoxedStrategy<AgentContext> {
    prop::sample::select(InterceptionPoint::ALL.to_vec())
        .prop_flat_map(context)
        .boxed()
}

proptest! {
    #![proptest_config(config(128))]

    /// Corrupted request bytes never make decoding panic: they are refused
    /// by prost or by the conversion, or decode to a context that passes
    /// the envelope check.
    #[test]
    fn corrupted_requests_never_panic(
        ctx in any_context(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let req = context_to_request(&ctx).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut bytes = encode_request(&req);
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Some(req) = decode_request(ctx.point(), &bytes)
            && let Ok(back) = context_from_request(req)
        {
            prop_assert!(back.validate().is_ok());
        }
    }

    #[test]
    fn json_text_round_trips_exactly(v in json_value()) {
        let text = json::encode(&v);
        prop_assert_eq!(json::decode(&text), Ok(v));
    }

    /// Any integer literal beyond the 64-bit range is refused, wherever it
    /// sits; any literal inside it is read exactly.
    #[test]
    fn integer_literals_are_exact_or_refused(
        magnitude in "[1-9][0-9]{0,24}",
        negative in any::<bool>(),
        prefix in prop::sample::select(vec!["", "[", "{\"k\":", "[1.5,", "{\"a\":\"-99999999999999999999999\",\"b\":"]),
    ) {
        let literal = if negative { format!("-{magnitude}") } else { magnitude.clone() };
        let closing = match prefix.chars().next() {
            Some('[') => "]",
            Some('{') => "}",
            _ => "",
        };
        let text = format!("{prefix}{literal}{closing}");
        let fits = if negative {
            format!("-{magnitude}").parse::<i64>().is_ok()
        } else {
            magnitude.parse::<u64>().is_ok()
        };
        match json::decode(&text) {
            Ok(v) => {
                prop_assert!(fits, "{} accepted", text);
                let n = if v.is_number() { v } else if let Some(a) = v.as_array() {
                    a[a.len() - 1].clone()
                } else {
                    v.get("k").or_else(|| v.get("b")).cloned().unwrap_or(Value::Null)
                };
                prop_assert_eq!(n.to_string(), literal);
            }
            Err(InvalidJson::IntegerOutOfRange(at)) => {
                prop_assert!(!fits, "{} refused", text);
                prop_assert_eq!(at, prefix.len());
            }
            Err(e) => prop_assert!(false, "{}: {}", text, e),
        }
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,40}|[-0-9eE.+\\[\\]{},:\" ]{0,40}") {
        let _ = json::decode(&s);
    }
}

// ---------------------------------------------------------------------------
// Verdicts
// ---------------------------------------------------------------------------

fn label() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z:_]{0,12}", text()]
}

fn reason() -> impl Strategy<Value = Option<String>> {
    prop::option::of(label().prop_filter("not reserved", |r| !r.starts_with("host_error:")))
}

fn warning() -> impl Strategy<Value = Warning> {
    (prop::option::of(label()), prop::option::of(text()))
        .prop_map(|(reason, message)| Warning { reason, message })
}

/// A valid verdict of any decision.
fn verdict() -> BoxedStrategy<Verdict> {
    verdict_with(false)
}

/// A valid verdict whose JSON is, with `safe`, within the canonical
/// integer domain a whole response is measured in (§5.5 bounds).
fn verdict_with(safe: bool) -> BoxedStrategy<Verdict> {
    (
        prop::sample::select(vec![Decision::Allow, Decision::Deny, Decision::Transform]),
        reason(),
        prop::option::of(text()),
        prop::collection::vec(warning(), 0..3),
        prop::option::of(json_object_with(safe)),
        (
            "\\$target(\\.[a-z]{1,5}|\\[[0-9]\\])*",
            json_value_with(safe),
        ),
        prop::option::of(json_object_with(true)),
        prop::collection::vec(label(), 0..3),
    )
        .prop_map(
            |(decision, reason, message, warnings, approval, (path, value), evidence, labels)| {
                Verdict {
                    decision,
                    reason,
                    message,
                    warnings,
                    approval: approval.filter(|_| decision == Decision::Deny),
                    transform: (decision == Decision::Transform)
                        .then_some(Transform { path, value }),
                    evidence,
                    result_labels: labels,
                }
            },
        )
        .boxed()
}

fn through_verdict_bytes(v: &Verdict) -> pb::Verdict {
    let bytes = pb::Verdict::from(v).encode_to_vec();
    pb::Verdict::decode(bytes.as_slice()).expect("prost round trip")
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn verdicts_round_trip(v in verdict()) {
        prop_assert!(v.validate().is_ok());
        prop_assert_eq!(Verdict::try_from(through_verdict_bytes(&v)), Ok(v));
    }

    #[test]
    fn responses_round_trip(
        v in verdict_with(true),
        ext in prop::collection::btree_map("[a-z][a-z0-9_]{0,8}", json_value_with(true), 0..3),
    ) {
        let resp = InterceptorResponse {
            verdict: v,
            extensions: ext.into_iter().collect(),
        };
        let bytes = pb::InterceptorResponse::from(&resp).encode_to_vec();
        let wire = pb::InterceptorResponse::decode(bytes.as_slice()).expect("prost round trip");
        prop_assert_eq!(InterceptorResponse::try_from(wire), Ok(resp));
    }

    /// Invalid verdicts travel faithfully: the receiver sees them and
    /// refuses them, it never receives a "repaired" verdict.
    #[test]
    fn invalid_verdicts_are_carried_and_refused(v in verdict(), which in 0..4u8) {
        let mut bad = v;
        let expected = match which {
            0 => {
                bad.reason = Some(format!("host_error:{}", bad.reason.clone().unwrap_or_default()));
                InvalidVerdict::ReservedReason
            }
            1 => {
                bad.reason = None;
                bad.decision = Decision::Transform;
                bad.approval = None;
                bad.transform = None;
                InvalidVerdict::Transform
            }
            2 => {
                bad.reason = None;
                bad.decision = Decision::Allow;
                bad.transform = None;
                bad.approval = Some(Map::new());
                InvalidVerdict::Approval
            }
            _ => {
                bad.reason = None;
                bad.approval = None;
                bad.decision = Decision::Deny;
                bad.transform = Some(Transform { path: "$target".into(), value: Value::Null });
                InvalidVerdict::Transform
            }
        };
        let wire = through_verdict_bytes(&bad);
        prop_assert_eq!(wire.decision, pb::Decision::from(bad.decision) as i32);
        prop_assert_eq!(wire.transform.is_some(), bad.transform.is_some());
        prop_assert_eq!(wire.approval.is_some(), bad.approval.is_some());
        prop_assert_eq!(Verdict::try_from(wire), Err(expected));
    }
}

// ---------------------------------------------------------------------------
// Fixed cases named by the contract
// ---------------------------------------------------------------------------

#[test]
fn json_decode_boundaries() {
    for refused in ["18446744073709551616", "-9223372036854775809"] {
        assert_eq!(
            json::decode(refused),
            Err(InvalidJson::IntegerOutOfRange(0)),
            "{refused}"
        );
    }
    for refused in ["1e400", "-1e400", "[1e999]"] {
        assert!(
            matches!(json::decode(refused), Err(InvalidJson::Syntax(_))),
            "{refused} must be refused, not read as infinity"
        );
    }
    assert_eq!(
        json::decode("18446744073709551615"),
        Ok(Value::from(u64::MAX))
    );
    assert_eq!(
        json::decode("-9223372036854775808"),
        Ok(Value::from(i64::MIN))
    );
    assert_eq!(json::decode("1.5"), Ok(json!(1.5)));
    let one_f = json::decode("1.0").unwrap();
    assert!(one_f.is_f64());
    assert_eq!(one_f, json!(1.0));
    assert_ne!(one_f, json!(1));
    assert_eq!(json::encode(&one_f), "1.0");
}

#[test]
fn response_extension_cap_is_enforced_on_the_wire() {
    let big = "x".repeat(RESPONSE_EXTENSIONS_MAX_BYTES);
    let mut resp = InterceptorResponse::from(Verdict::allow());
    resp.extensions.insert("acme".into(), json!(big));
    let wire = pb::InterceptorResponse::from(&resp);
    assert_eq!(
        InterceptorResponse::try_from(wire),
        Err(InvalidVerdict::ExtensionsTooLarge)
    );
}

#[test]
fn empty_extensions_and_nulls_survive() {
    let ctx = AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "post_tool_call",
        "timestamp": "t",
        "sequence": 0,
        "agent": {"id": "a", "framework": "f", "extra": null},
        "session": {"id": "s"},
        "tool_call": {"id": "c", "name": "n", "args": {"x": null}},
        "tool_result": {"value": null, "is_error": true},
        "extensions": {},
        "messages": null,
        "budgets": {"cost_usd": 3, "elapsed_seconds": 3.0},
    }))
    .unwrap();
    assert_round_trip(&ctx).unwrap();
}
