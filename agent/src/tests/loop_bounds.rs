//! Concurrent tool calls, several turns in one session, the iteration
//! bound, soft failures and lifecycle misuse.

use super::*;

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
