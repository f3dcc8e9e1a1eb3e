//! Label flow through the loop (§5.4): a labelled tool result is kept with
//! its data and resurfaced as `source_labels` on the model call and the
//! answer that derive from it.

use super::*;

/// The labels each emission carried, by point.
type SeenLabels = Arc<Mutex<Vec<(InterceptionPoint, Option<Value>)>>>;

#[tokio::test]
async fn result_labels_are_persisted_with_their_data_and_resurface_later() {
    let seen: SeenLabels = Arc::default();
    let log = Arc::clone(&seen);
    let policy = interceptor_fn(move |ctx: AgentContext| {
        let labels = ctx
            .get("extensions")
            .and_then(|e| e.get("hookwire"))
            .and_then(|h| h.get("source_labels"))
            .cloned();
        log.lock().unwrap().push((ctx.point(), labels));
        let point = ctx.point();
        async move {
            Ok::<_, BoxError>(match point {
                InterceptionPoint::PostToolCall => Verdict::allow().with_label("pii"),
                _ => Verdict::allow(),
            })
        }
    });
    let host = Host::builder("agent", "hookwire")
        .interceptor("labeler", policy)
        .build()
        .unwrap();
    let calls = Arc::new(Mutex::new(0));
    let model = model_fn("m", move |_| {
        let first = {
            let mut n = calls.lock().unwrap();
            *n += 1;
            *n == 1
        };
        async move {
            Ok::<_, BoxError>(if first {
                ModelResponse {
                    content: Value::Null,
                    tool_calls: vec![ToolCall::new("c1", "lookup", json!({}))],
                    finish_reason: "tool_calls".into(),
                }
            } else {
                ModelResponse {
                    content: json!("done"),
                    tool_calls: Vec::new(),
                    finish_reason: "stop".into(),
                }
            })
        }
    });
    let tools = Tools::new().with(tool_fn("lookup", |_| async { Ok(json!("alice@x")) }));
    let mut agent = Agent::new(host.session("l").unwrap(), model, tools);
    let (turn, _) = agent.run_once(json!("hi"), InputRole::User).await.unwrap();
    assert!(turn.is_completed());

    let persisted = agent.result_labels();
    assert_eq!(persisted.len(), 1);
    assert_eq!(persisted[0].subject, "c1");
    assert_eq!(persisted[0].data, json!("alice@x"));
    assert_eq!(persisted[0].labels, ["pii"]);

    let seen = seen.lock().unwrap();
    let labels_at = |point| {
        seen.iter()
            .filter(|(p, _)| *p == point)
            .map(|(_, l)| l.clone())
            .collect::<Vec<_>>()
    };
    // The first model call came before the labelled result; the second
    // and the answer derive from it.
    assert_eq!(
        labels_at(InterceptionPoint::PreModelCall),
        [None, Some(json!(["pii"]))]
    );
    assert_eq!(labels_at(InterceptionPoint::Output), [Some(json!(["pii"]))]);
}
