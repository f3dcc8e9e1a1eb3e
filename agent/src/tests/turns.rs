//! One turn through the eight points: what is permitted runs, what is
//! denied is never dispatched or is discarded, transforms are consumed.

use super::*;

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
