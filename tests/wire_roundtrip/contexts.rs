//! Every valid context of every point, through domain → pb → bytes →
//! pb → domain unchanged.

use super::*;

/// Extra members for an open object, none named like its typed `fields`.
pub(super) fn unknown_members(
    fields: &'static [&'static str],
) -> BoxedStrategy<Map<String, Value>> {
    prop::collection::btree_map(text(), json_value(), 0..3)
        .prop_map(move |m| {
            m.into_iter()
                .filter(|(k, _)| !fields.contains(&k.as_str()))
                .collect()
        })
        .boxed()
}

/// An open object: its typed members plus random unknown ones.
pub(super) fn open_object(
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

pub(super) fn non_empty() -> impl Strategy<Value = String> {
    text().prop_filter("non-empty", |s| !s.is_empty())
}

pub(super) fn opt_string() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(text().prop_map(Value::String))
}

pub(super) fn agent() -> BoxedStrategy<Value> {
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

pub(super) fn session() -> BoxedStrategy<Value> {
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

pub(super) fn two_optional_strings(
    fields: &'static [&'static str; 2],
) -> BoxedStrategy<Option<Value>> {
    prop::option::of(open_object(
        fields,
        (opt_string(), opt_string()).prop_map(move |(a, b)| vec![(fields[0], a), (fields[1], b)]),
    ))
    .boxed()
}

pub(super) fn model() -> BoxedStrategy<Value> {
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

pub(super) fn tool_call() -> BoxedStrategy<Value> {
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

pub(super) fn tool_result() -> BoxedStrategy<Value> {
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
pub(super) fn target_object(
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

pub(super) fn one_of(options: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::sample::select(options).prop_map(Value::from)
}

/// The point's conditional members (§4.2) and its point-only optionals.
pub(super) fn point_members(
    point: InterceptionPoint,
) -> BoxedStrategy<Vec<(&'static str, Option<Value>)>> {
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
pub(super) const NAMED_EVERYWHERE: &[&str] = &[
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

pub(super) fn named_at(point: InterceptionPoint) -> &'static [&'static str] {
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

pub(super) fn common_optionals(
    point: InterceptionPoint,
) -> BoxedStrategy<Vec<(&'static str, Option<Value>)>> {
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
pub(super) fn unknown_top_level(point: InterceptionPoint) -> BoxedStrategy<Map<String, Value>> {
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
pub(super) fn context(point: InterceptionPoint) -> BoxedStrategy<AgentContext> {
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
pub(super) fn through_bytes(req: PointRequest) -> PointRequest {
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

pub(super) fn encode_request(req: &PointRequest) -> Vec<u8> {
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

pub(super) fn decode_request(point: InterceptionPoint, bytes: &[u8]) -> Option<PointRequest> {
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

pub(super) fn assert_round_trip(ctx: &AgentContext) -> Result<(), TestCaseError> {
    let req = context_to_request(ctx).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(req.point(), ctx.point());
    let back =
        context_from_request(through_bytes(req)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, ctx);
    prop_assert_eq!(back.to_json(), ctx.to_json());
    Ok(())
}

pub(super) fn config(cases: u32) -> ProptestConfig {
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
pub(super) fn any_context() -> BoxedStrategy<AgentContext> {
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
