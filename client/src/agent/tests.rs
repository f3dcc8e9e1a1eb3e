//! The reference loop against an in-process host: every obligation of §6,
//! §6.1a, §6.2 and §12 observed through the records and what the model and
//! the tools actually received.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::{AgentContext, InterceptionPoint, InterceptionRecord, Mode, Verdict};
use serde_json::{Value, json};

use super::*;
use crate::{
    BoxError, BoxFuture, Error, Host, InputRole, ModelResponse, RecordLog, ShutdownReason,
    ToolCall, interceptor_fn,
};

use InterceptionPoint::*;

/// A model that plays back scripted responses and remembers what it saw.
#[derive(Default)]
struct Scripted {
    responses: Mutex<VecDeque<ModelResponse>>,
    seen: Mutex<Vec<Vec<Value>>>,
}

impl Scripted {
    fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Arc<Self> {
        Arc::new(Self {
            responses: Mutex::new(responses.into_iter().collect()),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<Vec<Value>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Model for Scripted {
    fn id(&self) -> &str {
        "mock"
    }

    fn respond<'a>(
        &'a self,
        messages: &'a [Value],
    ) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        self.seen.lock().unwrap().push(messages.to_vec());
        let next = self.responses.lock().unwrap().pop_front();
        Box::pin(async move { next.ok_or_else(|| "script exhausted".into()) })
    }
}

fn answer(text: &str) -> ModelResponse {
    ModelResponse {
        content: json!(text),
        tool_calls: Vec::new(),
        finish_reason: "stop".into(),
    }
}

fn calls(list: &[(&str, &str, Value)]) -> ModelResponse {
    ModelResponse {
        content: Value::Null,
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.clone()))
            .collect(),
        finish_reason: "tool_calls".into(),
    }
}

/// Tools that echo their name and arguments, logging every invocation.
fn echo_tools(names: &[&str], log: Arc<Mutex<Vec<(String, Value)>>>) -> Tools {
    names.iter().fold(Tools::new(), |tools, name| {
        let log = log.clone();
        let owned = (*name).to_owned();
        tools.with(tool_fn(*name, move |args: Value| {
            let log = log.clone();
            let name = owned.clone();
            async move {
                log.lock().unwrap().push((name.clone(), args.clone()));
                Ok(json!({"tool": name, "args": args}))
            }
        }))
    })
}

fn host(
    mode: Mode,
    decide: impl Fn(&AgentContext) -> Verdict + Send + Sync + 'static,
) -> (Host, RecordLog) {
    let decide = Arc::new(decide);
    let records = RecordLog::new();
    let host = Host::builder("agent-under-test", "hookwire")
        .mode(mode)
        .interceptor(
            "policy",
            interceptor_fn(move |ctx: AgentContext| {
                let decide = decide.clone();
                async move { Ok::<_, BoxError>(decide(&ctx)) }
            }),
        )
        .record_sink(records.clone())
        .build()
        .unwrap();
    (host, records)
}

fn agent<T: Toolbox>(host: &Host, model: Arc<Scripted>, tools: T) -> Agent<Arc<Scripted>, T> {
    Agent::new(host.session("s-1").unwrap(), model, tools)
}

fn points(records: &[InterceptionRecord]) -> Vec<InterceptionPoint> {
    records.iter().map(|r| r.interception_point).collect()
}

fn user(text: &str) -> Value {
    json!(text)
}

#[tokio::test]
async fn a_permitted_turn_visits_all_eight_points_in_order() {
    let (host, records) = host(Mode::Enforce, |_| Verdict::allow());
    let log = Arc::default();
    let model = Scripted::new([
        calls(&[("c1", "calc", json!({"expr": "2+2"}))]),
        answer("4"),
    ]);
    let mut agent = agent(
        &host,
        model.clone(),
        echo_tools(&["calc"], Arc::clone(&log)),
    );
    let (turn, shutdown) = agent.run_once(user("2+2?"), InputRole::User).await.unwrap();

    assert_eq!(turn.outcome_name(), "completed");
    assert_eq!(turn.output(), Some(&json!("4")));
    assert_eq!(turn.model_calls, 2);
    assert_eq!(
        shutdown.context().get("summary"),
        Some(&json!({"reason": "completed"}))
    );
    let recs = records.session("s-1");
    assert_eq!(
        points(&recs),
        [
            AgentStartup,
            Input,
            PreModelCall,
            PostModelCall,
            PreToolCall,
            PostToolCall,
            PreModelCall,
            PostModelCall,
            Output,
            AgentShutdown
        ]
    );
    let seq: Vec<i64> = recs.iter().map(|r| r.sequence).collect();
    assert_eq!(seq, (0..10).collect::<Vec<_>>());
    assert_eq!(
        *log.lock().unwrap(),
        [("calc".to_owned(), json!({"expr": "2+2"}))]
    );
    // The second model call saw the request, the tool request and the result.
    let second = &model.seen()[1];
    assert_eq!(second[0], json!({"role": "user", "content": "2+2?"}));
    assert_eq!(second[1]["tool_calls"][0]["name"], "calc");
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["tool_call_id"], "c1");
    assert_eq!(second[2]["content"]["args"], json!({"expr": "2+2"}));
}

#[tokio::test]
async fn a_denied_startup_processes_no_input_and_shuts_down_with_error() {
    let (host, records) = host(Mode::Enforce, |ctx| match ctx.point() {
        AgentStartup => Verdict::deny("closed"),
        _ => Verdict::allow(),
    });
    let model = Scripted::new([answer("never")]);
    let mut agent = agent(&host, model.clone(), Tools::new());
    let (turn, shutdown) = agent.run_once(user("hi"), InputRole::User).await.unwrap();

    assert_eq!(turn.outcome_name(), "blocked");
    assert_eq!(turn.blocked_by().unwrap().interception_point, AgentStartup);
    assert_eq!(
        shutdown.context().get("summary"),
        Some(&json!({"reason": "error"}))
    );
    assert_eq!(
        points(&records.session("s-1")),
        [AgentStartup, AgentShutdown]
    );
    assert!(model.seen().is_empty());
}

#[tokio::test]
async fn a_denied_input_never_begins_the_turn() {
    let (host, records) = host(Mode::Enforce, |ctx| match ctx.point() {
        Input => Verdict::deny("off_topic"),
        _ => Verdict::allow(),
    });
    let model = Scripted::new([answer("never")]);
    let mut agent = agent(&host, model.clone(), Tools::new());
    let (turn, _) = agent.run_once(user("hi"), InputRole::User).await.unwrap();

    assert_eq!(
        turn.blocked_by().unwrap().verdict.reason.as_deref(),
        Some("off_topic")
    );
    assert_eq!(
        points(&records.session("s-1")),
        [AgentStartup, Input, AgentShutdown]
    );
    assert!(model.seen().is_empty());
    assert!(agent.transcript().is_empty());
}

#[tokio::test]
async fn a_blocked_tool_call_is_a_tool_error_and_the_loop_continues() {
    let (host, records) = host(Mode::Enforce, |ctx| match ctx.point() {
        PreToolCall if ctx.tool_name() == Some("rm") => Verdict::deny("dangerous_tool"),
        _ => Verdict::allow(),
    });
    let log = Arc::default();
    let model = Scripted::new([
        calls(&[("c1", "rm", json!({"path": "/"}))]),
        answer("could not"),
    ]);
    let mut agent = agent(&host, model.clone(), echo_tools(&["rm"], Arc::clone(&log)));
    let (turn, _) = agent
        .run_once(user("clean up"), InputRole::User)
        .await
        .unwrap();

    assert_eq!(turn.outcome_name(), "completed");
    assert!(log.lock().unwrap().is_empty(), "the tool ran");
    assert_eq!(turn.tool_invocations().count(), 0);
    assert!(matches!(
        turn.tool_calls[0],
        ToolCallOutcome::Blocked { .. }
    ));
    let recs = records.session("s-1");
    assert!(!points(&recs).contains(&PostToolCall));
    let surfaced = &model.seen()[1][2];
    assert_eq!(surfaced["is_error"], true);
    assert_eq!(surfaced["content"]["reason"], "dangerous_tool");
    assert_eq!(surfaced["content"]["interception_point"], "pre_tool_call");
}

#[tokio::test]
async fn a_denied_tool_result_is_discarded() {
    let (host, _) = host(Mode::Enforce, |ctx| match ctx.point() {
        PostToolCall => Verdict::deny("tainted"),
        _ => Verdict::allow(),
    });
    let secret = tool_fn("fetch", |_| async { Ok(json!("SECRET")) });
    let model = Scripted::new([calls(&[("c1", "fetch", json!({}))]), answer("done")]);
    let mut agent = agent(&host, model.clone(), Tools::new().with(secret));
    let (turn, _) = agent.run_once(user("go"), InputRole::User).await.unwrap();

    assert_eq!(turn.outcome_name(), "completed");
    assert!(matches!(
        turn.tool_calls[0],
        ToolCallOutcome::Discarded { .. }
    ));
    assert_eq!(turn.tool_invocations().count(), 1, "the tool did run");
    let second = serde_json::to_string(&model.seen()[1]).unwrap();
    assert!(!second.contains("SECRET"), "{second}");
    assert!(second.contains("tainted"), "{second}");
    assert!(
        !serde_json::to_string(agent.transcript())
            .unwrap()
            .contains("SECRET")
    );
}

#[tokio::test]
async fn every_action_consumes_its_transformed_target() {
    let (host, _) = host(Mode::Enforce, |ctx| match ctx.point() {
        Input => Verdict::transform("$target.content", json!("clean input")),
        PreModelCall if ctx.get("messages").unwrap().as_array().unwrap().len() > 1 => {
            Verdict::transform("$target[0].content", json!("redacted history"))
        }
        PreToolCall => Verdict::transform("$target.n", json!(41)),
        PostToolCall => Verdict::transform("$target", json!("scrubbed result")),
        Output => Verdict::transform("$target.content", json!("polished")),
        _ => Verdict::allow(),
    });
    let log = Arc::default();
    let model = Scripted::new([calls(&[("c1", "t", json!({"n": 1}))]), answer("raw")]);
    let mut a = agent(&host, model.clone(), echo_tools(&["t"], Arc::clone(&log)));
    let (turn, _) = a
        .run_once(user("dirty input"), InputRole::User)
        .await
        .unwrap();

    // input: the turn starts from the transformed request.
    assert_eq!(
        model.seen()[0][0],
        json!({"role": "user", "content": "clean input"})
    );
    // pre_tool_call: the tool receives the transformed arguments, and the
    // turn reports them as received.
    assert_eq!(*log.lock().unwrap(), [("t".to_owned(), json!({"n": 41}))]);
    assert_eq!(
        turn.tool_invocations().next().unwrap().args,
        json!({"n": 41})
    );
    // post_tool_call and pre_model_call: the model sees the transformed
    // result and the transformed history, which the transcript keeps.
    let second = &model.seen()[1];
    assert_eq!(second[0]["content"], "redacted history");
    assert_eq!(second[2]["content"], "scrubbed result");
    assert_eq!(a.transcript()[0]["content"], "redacted history");
    // output: what is released is the transformed content.
    assert_eq!(turn.output(), Some(&json!("polished")));
}

#[tokio::test]
async fn a_post_model_transform_replaces_the_response() {
    let (host, _) = host(Mode::Enforce, |ctx| match ctx.point() {
        PostModelCall if ctx.get("response").unwrap()["tool_calls"][0]["args"]["n"] == 1 => {
            Verdict::transform("$target.tool_calls[0].args.n", json!(2))
        }
        _ => Verdict::allow(),
    });
    let log = Arc::default();
    let model = Scripted::new([calls(&[("c1", "t", json!({"n": 1}))]), answer("ok")]);
    let mut a = agent(&host, model, echo_tools(&["t"], Arc::clone(&log)));
    a.run_once(user("x"), InputRole::User).await.unwrap();
    assert_eq!(*log.lock().unwrap(), [("t".to_owned(), json!({"n": 2}))]);
}

#[tokio::test]
async fn nothing_is_released_when_output_is_denied() {
    let (host, _) = host(Mode::Enforce, |ctx| match ctx.point() {
        Output => Verdict::deny("leak"),
        _ => Verdict::allow(),
    });
    let model = Scripted::new([answer("the secret")]);
    let mut a = agent(&host, model, Tools::new());
    let (turn, shutdown) = a.run_once(user("x"), InputRole::User).await.unwrap();
    assert_eq!(turn.outcome_name(), "blocked");
    assert_eq!(turn.output(), None);
    assert_eq!(turn.blocked_by().unwrap().interception_point, Output);
    assert!(
        !serde_json::to_string(a.transcript())
            .unwrap()
            .contains("the secret")
    );
    assert_eq!(
        shutdown.context().get("summary"),
        Some(&json!({"reason": "error"}))
    );
}

#[tokio::test]
async fn a_denied_model_response_is_discarded() {
    let (host, records) = host(Mode::Enforce, |ctx| match ctx.point() {
        PostModelCall => Verdict::deny("unsafe_plan"),
        _ => Verdict::allow(),
    });
    let log = Arc::default();
    let model = Scripted::new([calls(&[("c1", "t", json!({}))])]);
    let mut a = agent(&host, model, echo_tools(&["t"], Arc::clone(&log)));
    let (turn, _) = a.run_once(user("x"), InputRole::User).await.unwrap();
    assert_eq!(turn.blocked_by().unwrap().interception_point, PostModelCall);
    assert!(log.lock().unwrap().is_empty());
    assert!(!points(&records.session("s-1")).contains(&PreToolCall));
}

#[tokio::test]
async fn a_denied_model_call_is_never_dispatched() {
    let (host, _) = host(Mode::Enforce, |ctx| match ctx.point() {
        PreModelCall => Verdict::deny("budget"),
        _ => Verdict::allow(),
    });
    let model = Scripted::new([answer("never")]);
    let mut a = agent(&host, model.clone(), Tools::new());
    let (turn, _) = a.run_once(user("x"), InputRole::User).await.unwrap();
    assert_eq!(turn.blocked_by().unwrap().interception_point, PreModelCall);
    assert!(model.seen().is_empty());
    assert_eq!(turn.model_calls, 0);
}

#[tokio::test]
async fn evaluate_only_records_denies_and_proceeds() {
    let (host, records) = host(Mode::EvaluateOnly, |ctx| match ctx.point() {
        PreToolCall => Verdict::deny("would_block"),
        Output => Verdict::transform("$target.content", json!("never applied")),
        _ => Verdict::allow(),
    });
    let log = Arc::default();
    let model = Scripted::new([calls(&[("c1", "t", json!({}))]), answer("raw")]);
    let mut a = agent(&host, model, echo_tools(&["t"], Arc::clone(&log)));
    let (turn, _) = a.run_once(user("x"), InputRole::User).await.unwrap();
    assert_eq!(turn.output(), Some(&json!("raw")));
    assert_eq!(log.lock().unwrap().len(), 1);
    let recs = records.session("s-1");
    let pre = recs
        .iter()
        .find(|r| r.interception_point == PreToolCall)
        .unwrap();
    assert_eq!(pre.verdict.reason.as_deref(), Some("would_block"));
}

#[tokio::test]
async fn tool_calls_of_one_response_run_concurrently_each_bracketed() {
    let (host, records) = host(Mode::Enforce, |_| Verdict::allow());
    // Each tool waits for the other: only a concurrent loop gets past it.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tool = |name: &'static str| {
        let barrier = barrier.clone();
        tool_fn(name, move |args: Value| {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok(json!({"from": name, "args": args}))
            }
        })
    };
    let tools = Tools::new().with(tool("a")).with(tool("b"));
    let model = Scripted::new([
        calls(&[("c1", "a", json!({"i": 1})), ("c2", "b", json!({"i": 2}))]),
        answer("both"),
    ]);
    let mut a = agent(&host, model.clone(), tools);
    let (turn, _) = tokio::time::timeout(
        Duration::from_secs(5),
        a.run_once(user("x"), InputRole::User),
    )
    .await
    .expect("tool calls ran one after the other")
    .unwrap();
    assert_eq!(turn.output(), Some(&json!("both")));
    let recs = records.session("s-1");
    let pre = recs
        .iter()
        .filter(|r| r.interception_point == PreToolCall)
        .count();
    let post = recs
        .iter()
        .filter(|r| r.interception_point == PostToolCall)
        .count();
    assert_eq!((pre, post), (2, 2));
    let seq: Vec<i64> = recs.iter().map(|r| r.sequence).collect();
    assert_eq!(seq, (0..seq.len() as i64).collect::<Vec<_>>());
    // Results come back in request order whatever the completion order.
    let second = &model.seen()[1];
    assert_eq!(second[2]["tool_call_id"], "c1");
    assert_eq!(second[3]["tool_call_id"], "c2");
}

#[tokio::test]
async fn several_turns_share_one_session() {
    let (host, records) = host(Mode::Enforce, |_| Verdict::allow());
    let model = Scripted::new([answer("one"), answer("two")]);
    let mut a = agent(&host, model.clone(), Tools::new());
    a.start().await.unwrap();
    let t1 = a.run_turn(user("first"), InputRole::User).await.unwrap();
    let t2 = a.run_turn(user("second"), InputRole::User).await.unwrap();
    a.shutdown(ShutdownReason::Completed).await.unwrap();

    assert_eq!(t1.output(), Some(&json!("one")));
    assert_eq!(t2.output(), Some(&json!("two")));
    assert_eq!(
        points(&records.session("s-1")),
        [
            AgentStartup,
            Input,
            PreModelCall,
            PostModelCall,
            Output,
            Input,
            PreModelCall,
            PostModelCall,
            Output,
            AgentShutdown
        ]
    );
    // The second turn carries the first one's exchange.
    let second = &model.seen()[1];
    assert_eq!(second.len(), 3);
    assert_eq!(second[1], json!({"role": "assistant", "content": "one"}));
    assert!(matches!(
        a.run_turn(user("late"), InputRole::User).await,
        Err(Error::Closed(_))
    ));
}

#[tokio::test]
async fn the_iteration_bound_ends_a_runaway_turn() {
    let (host, _) = host(Mode::Enforce, |_| Verdict::allow());
    let model = Scripted::new((0..10).map(|i| calls(&[(&*format!("c{i}"), "t", json!({}))])));
    let mut a = agent(&host, model, echo_tools(&["t"], Arc::default())).max_model_calls(3);
    let (turn, shutdown) = a.run_once(user("loop"), InputRole::User).await.unwrap();
    assert!(matches!(
        turn.outcome,
        TurnOutcome::Failed {
            error: TurnError::MaxModelCalls(3)
        }
    ));
    assert_eq!(turn.model_calls, 3);
    assert_eq!(turn.outcome_name(), "error");
    assert_eq!(
        shutdown.context().get("summary"),
        Some(&json!({"reason": "error"}))
    );
}

#[tokio::test]
async fn model_and_tool_failures_fail_soft() {
    let (host, _) = host(Mode::Enforce, |_| Verdict::allow());
    let failing = tool_fn("f", |_| async { Err(ToolError::new("boom")) });
    let model = Scripted::new([calls(&[
        ("c1", "f", json!({})),
        ("c2", "missing", json!({})),
    ])]);
    let mut a = agent(&host, model.clone(), Tools::new().with(failing));
    let (turn, _) = a.run_once(user("x"), InputRole::User).await.unwrap();
    // The script ran out: the second model call errored.
    assert!(matches!(
        turn.outcome,
        TurnOutcome::Failed {
            error: TurnError::Model(_)
        }
    ));
    let results: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|o| match o {
            ToolCallOutcome::Completed { result, .. } => (result.is_error, result.value.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(results[0], (true, json!("boom")));
    assert!(results[1].0);
}

#[tokio::test]
async fn lifecycle_misuse_is_an_error() {
    let (host, _) = host(Mode::Enforce, |_| Verdict::allow());
    let mut a = agent(&host, Scripted::new([]), Tools::new());
    assert!(matches!(
        a.run_turn(user("x"), InputRole::User).await,
        Err(Error::NotStarted(_))
    ));
    a.start().await.unwrap();
    assert!(matches!(a.start().await, Err(Error::AlreadyStarted(_))));
}

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

impl crate::ApprovalResolver for Approve {
    fn resolve<'a>(
        &'a self,
        request: &'a hookwire::approval::ApprovalRequest,
    ) -> BoxFuture<'a, Result<crate::ApprovalAnswer, BoxError>> {
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
    grant: impl FnOnce(crate::InterceptorBinding) -> crate::InterceptorBinding,
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
        .bind(grant(crate::InterceptorBinding::local("router", router)))
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
    use crate::Effect;
    let to_sandbox = vec![RoutedCall {
        call_id: "c1".into(),
        executor: "sandbox".into(),
        ran: true,
    }];
    // Granted (explicitly, or by declaring no grant at all): routed.
    for grant in [
        (|b| b) as fn(crate::InterceptorBinding) -> crate::InterceptorBinding,
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
            as fn(crate::InterceptorBinding) -> crate::InterceptorBinding,
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
