//! Routing a call to a named executor, and effects acting only under
//! enforcement from a permitting, granted binding.

use super::*;

/// A chain that routes `bash` to the `sandbox` executor and `rm` to one
/// the agent does not have, and remembers each `post_tool_call` context.
fn routing_host() -> (Host, RecordLog, Arc<Mutex<Vec<AgentContext>>>) {
    let posts: Arc<Mutex<Vec<AgentContext>>> = Arc::default();
    let seen = posts.clone();
    let records = RecordLog::new();
    let router = interceptor_fn(move |ctx: AgentContext| {
        let seen = seen.clone();
        async move {
            let mut response = hookwire::InterceptorResponse::from(Verdict::allow());
            if ctx.point() == PostToolCall {
                seen.lock().unwrap().push(ctx.clone());
            }
            let tool = ctx
                .get("tool_call")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str);
            let executor = match (ctx.point(), tool) {
                (PreToolCall, Some("bash")) => Some("sandbox"),
                (PreToolCall, Some("rm")) => Some("nowhere"),
                _ => None,
            };
            if let Some(executor) = executor {
                response
                    .extensions
                    .insert("hookwire".into(), json!({"route": {"executor": executor}}));
            }
            Ok::<_, BoxError>(response)
        }
    });
    let host = Host::builder("agent-under-test", "hookwire")
        .interceptor("router", router)
        .record_sink(records.clone())
        .build()
        .unwrap();
    (host, records, posts)
}

#[tokio::test]
async fn a_pre_tool_call_verdict_routes_a_call_to_a_named_executor_and_an_unknown_one_fails_closed()
{
    let (host, records, posts) = routing_host();
    let local = Arc::default();
    let sandboxed = Arc::default();
    let model = Scripted::new([
        calls(&[
            ("c1", "bash", json!({"cmd": "ls"})),
            ("c2", "calc", json!({"expr": "1+1"})),
            ("c3", "rm", json!({"path": "/"})),
        ]),
        answer("done"),
    ]);
    let mut agent = agent(
        &host,
        model.clone(),
        echo_tools(&["bash", "calc", "rm"], Arc::clone(&local)),
    )
    .executor("sandbox", echo_tools(&["bash"], Arc::clone(&sandboxed)));
    let (turn, _) = agent.run_once(user("go"), InputRole::User).await.unwrap();
    assert_eq!(turn.outcome_name(), "completed");

    // bash ran in the sandbox only, calc locally, rm nowhere.
    assert_eq!(
        *sandboxed.lock().unwrap(),
        [("bash".to_owned(), json!({"cmd": "ls"}))]
    );
    assert_eq!(
        *local.lock().unwrap(),
        [("calc".to_owned(), json!({"expr": "1+1"}))]
    );
    // The routes are reported, the unknown one as not run.
    assert_eq!(
        turn.routed,
        [
            RoutedCall {
                call_id: "c1".into(),
                executor: "sandbox".into(),
                ran: true
            },
            RoutedCall {
                call_id: "c3".into(),
                executor: "nowhere".into(),
                ran: false
            },
        ]
    );
    // The routed call's post_tool_call says where it ran; the unknown
    // executor's post is the host's own deny, never dispatched.
    let posts = posts.lock().unwrap().clone();
    let c1 = posts
        .iter()
        .find(|c| c.get("tool_call").and_then(|t| t.get("id")) == Some(&json!("c1")))
        .expect("c1's post_tool_call");
    assert_eq!(
        c1.get("extensions"),
        Some(&json!({"hookwire": {"executor": "sandbox"}}))
    );
    assert!(
        !posts
            .iter()
            .any(|c| c.get("tool_call").and_then(|t| t.get("id")) == Some(&json!("c3")))
    );
    let recs = records.session("s-1");
    let c3_post = recs
        .iter()
        .filter(|r| r.interception_point == PostToolCall)
        .find(|r| r.verdict.reason.as_deref() == Some("host_error:verdict_invalid"))
        .expect("the unknown executor's post_tool_call is a host error deny");
    assert!(!c3_post.proceeds());
    match &turn.tool_calls[2] {
        ToolCallOutcome::Discarded { call, .. } => assert_eq!(call.id, "c3"),
        other => panic!("c3 should be discarded, got {other:?}"),
    }
    // The model saw the failure as a tool error.
    let second = &model.seen()[1];
    let c3_msg = second
        .iter()
        .find(|m| m["tool_call_id"] == "c3")
        .expect("a tool message for c3");
    assert_eq!(c3_msg["is_error"], true);
}

/// Approves every consultation with `allow`.
struct Approve;

impl hookwire_client::ApprovalResolver for Approve {
    fn resolve<'a>(
        &'a self,
        request: &'a hookwire::approval::ApprovalRequest,
    ) -> BoxFuture<'a, Result<hookwire_client::ApprovalAnswer, BoxError>> {
        Box::pin(async move {
            Ok(hookwire::approval::ApprovalResolution::approve(request, Verdict::allow()).into())
        })
    }
}

/// Where one `bash` call went when a router answered `verdict` with a
/// route to `sandbox` at `pre_tool_call`.
struct Routed {
    sandboxed: usize,
    local: usize,
    routed: Vec<RoutedCall>,
    pre: InterceptionRecord,
}

async fn route_once(
    mode: Mode,
    verdict: Verdict,
    grant: impl FnOnce(hookwire_client::InterceptorBinding) -> hookwire_client::InterceptorBinding,
) -> Routed {
    let records = RecordLog::new();
    let router = interceptor_fn(move |ctx: AgentContext| {
        let verdict = verdict.clone();
        async move {
            if ctx.point() != PreToolCall {
                return Ok::<_, BoxError>(Verdict::allow().into());
            }
            let mut response = hookwire::InterceptorResponse::from(verdict);
            response
                .extensions
                .insert("hookwire".into(), json!({"route": {"executor": "sandbox"}}));
            Ok(response)
        }
    });
    let host = Host::builder("agent-under-test", "hookwire")
        .mode(mode)
        .bind(grant(hookwire_client::InterceptorBinding::local(
            "router", router,
        )))
        .approval_resolver(Approve)
        .record_sink(records.clone())
        .build()
        .unwrap();
    let (local, sandboxed) = (Arc::default(), Arc::default());
    let model = Scripted::new([calls(&[("c1", "bash", json!({"cmd": "ls"}))]), answer("ok")]);
    let mut agent = agent(&host, model, echo_tools(&["bash"], Arc::clone(&local)))
        .executor("sandbox", echo_tools(&["bash"], Arc::clone(&sandboxed)));
    let (turn, _) = agent.run_once(user("go"), InputRole::User).await.unwrap();
    let pre = records
        .session("s-1")
        .into_iter()
        .find(|r| r.interception_point == PreToolCall)
        .expect("a pre_tool_call record");
    let count = |log: Arc<Mutex<Vec<(String, Value)>>>| log.lock().unwrap().len();
    Routed {
        sandboxed: count(sandboxed),
        local: count(local),
        routed: turn.routed,
        pre,
    }
}

fn effects_fact(r: &InterceptionRecord) -> Value {
    r.extensions
        .get("hookwire")
        .and_then(|h| h.get("effects"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_route_acts_only_under_enforcement_from_a_permitting_granted_binding() {
    use hookwire_client::Effect;
    let to_sandbox = vec![RoutedCall {
        call_id: "c1".into(),
        executor: "sandbox".into(),
        ran: true,
    }];
    // Granted (explicitly, or by declaring no grant at all): routed.
    for grant in [
        (|b| b) as fn(hookwire_client::InterceptorBinding) -> hookwire_client::InterceptorBinding,
        |b| b.may_effect([Effect::Route]),
        |b| {
            b.may_transform(["$target"])
                .may_effect([Effect::Route, Effect::Headers])
        },
    ] {
        let r = route_once(Mode::Enforce, Verdict::allow(), grant).await;
        assert_eq!((r.sandboxed, r.local), (1, 0));
        assert_eq!(r.routed, to_sandbox);
        assert_eq!(
            effects_fact(&r.pre),
            json!({"router": {"kinds": ["route"], "fate": "released"}})
        );
    }
    // A transform that permits routes too.
    let rewrite = Verdict::transform("$target.cmd", json!("ls -l"));
    let r = route_once(Mode::Enforce, rewrite, |b| {
        b.may_transform(["$target"]).may_effect([Effect::Route])
    })
    .await;
    assert_eq!((r.sandboxed, r.local), (1, 0));

    // evaluate_only: the call runs on the agent's own tools.
    let r = route_once(Mode::EvaluateOnly, Verdict::allow(), |b| {
        b.may_effect([Effect::Route])
    })
    .await;
    assert_eq!((r.sandboxed, r.local), (0, 1));
    assert!(r.routed.is_empty());
    assert_eq!(
        effects_fact(&r.pre),
        json!({"router": {"kinds": ["route"], "fate": "evaluate_only"}})
    );

    // An escalation the approval seam lifted: the call runs, unrouted.
    let r = route_once(Mode::Enforce, Verdict::escalate("policy:ask"), |b| {
        b.may_effect([Effect::Route])
    })
    .await;
    assert!(r.pre.proceeds(), "the approval lifted the deny");
    assert_eq!((r.sandboxed, r.local), (0, 1));
    assert!(r.routed.is_empty());
    assert_eq!(
        effects_fact(&r.pre),
        json!({"router": {"kinds": ["route"], "fate": "not_permitted"}})
    );

    // Outside the grant (transform paths only, or another kind): refused,
    // in either mode; under enforcement the call does not run at all.
    for grant in [
        (|b| b.may_transform(["$target"]))
            as fn(hookwire_client::InterceptorBinding) -> hookwire_client::InterceptorBinding,
        |b| b.may_effect([Effect::ModelParams]),
        |b| b.may_effect([]),
    ] {
        let r = route_once(Mode::Enforce, Verdict::allow(), grant).await;
        assert_eq!((r.sandboxed, r.local), (0, 0));
        assert_eq!(
            r.pre.verdict.reason.as_deref(),
            Some("host_error:verdict_invalid")
        );
        assert_eq!(
            effects_fact(&r.pre),
            json!({"router": {"kinds": ["route"], "fate": "refused"}})
        );
        assert_eq!(
            r.pre.extensions["hookwire"]["mutation_refused"],
            json!(["router"])
        );
        let shadow = route_once(Mode::EvaluateOnly, Verdict::allow(), grant).await;
        assert_eq!(effects_fact(&shadow.pre)["router"]["fate"], "refused");
        assert_eq!((shadow.sandboxed, shadow.local), (0, 1));
        assert_eq!(
            shadow.pre.verdict.reason.as_deref(),
            Some("host_error:verdict_invalid"),
            "shadow mode shows what enforcement would refuse"
        );
    }
}

#[tokio::test]
async fn a_transform_outside_its_paths_records_the_effects_it_asked_outside_its_kinds_too() {
    let rewrite = Verdict::transform("$target.cmd", json!("ls -l"));
    let r = route_once(Mode::Enforce, rewrite, |b| {
        b.may_transform(["$target.other"])
    })
    .await;
    assert_eq!((r.sandboxed, r.local), (0, 0));
    let message = r.pre.verdict.message.clone().unwrap_or_default();
    assert!(message.contains("transform path outside"), "{message}");
    assert_eq!(
        r.pre.extensions["hookwire"]["mutation_refused"],
        json!(["router"])
    );
    assert_eq!(
        effects_fact(&r.pre),
        json!({"router": {"kinds": ["route"], "fate": "refused"}})
    );
}
