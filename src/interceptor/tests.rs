use serde_json::json;

use super::*;
use crate::Decision;

fn context(point: InterceptionPoint) -> AgentContext {
    let mut m = json!({
        "spec": "agent-hooks/0.1",
        "interception_point": point.as_str(),
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": 1,
        "agent": {"id": "a", "framework": "hookwire"},
        "session": {"id": "s-1"},
    });
    let o = m.as_object_mut().unwrap();
    match point {
        InterceptionPoint::AgentStartup => {
            o.insert("agent_init".into(), json!({"tools_registered": []}))
        }
        InterceptionPoint::Input => {
            o.insert("input".into(), json!({"role": "user", "content": "hi"}))
        }
        InterceptionPoint::PreModelCall => {
            o.insert("model".into(), json!({"id": "m"}));
            o.insert("messages".into(), json!([]))
        }
        InterceptionPoint::PostModelCall => {
            o.insert("model".into(), json!({"id": "m"}));
            o.insert(
                "response".into(),
                json!({"content": "hello", "tool_calls": [], "finish_reason": "stop"}),
            )
        }
        InterceptionPoint::PreToolCall => o.insert(
            "tool_call".into(),
            json!({"id": "c1", "name": "shell", "args": {}}),
        ),
        InterceptionPoint::PostToolCall => {
            o.insert(
                "tool_call".into(),
                json!({"id": "c1", "name": "shell", "args": {}}),
            );
            o.insert("tool_result".into(), json!({"value": 1, "is_error": false}))
        }
        InterceptionPoint::Output => o.insert("output".into(), json!({"content": "bye"})),
        InterceptionPoint::AgentShutdown => {
            o.insert("summary".into(), json!({"reason": "completed"}))
        }
    };
    AgentContext::from_json(m).unwrap()
}

/// Denies at `pre_tool_call`, fails at `output`, allows elsewhere.
struct Policy;

#[derive(Debug, thiserror::Error)]
#[error("policy store unreachable")]
struct Unreachable;

#[async_trait]
impl Interceptor for Policy {
    type Response = Result<Verdict, Unreachable>;

    fn manifest(&self) -> Manifest {
        manifest("policy", "1.0.0")
    }

    async fn pre_tool_call(&self, _ctx: &AgentContext) -> Self::Response {
        Ok(Verdict::deny("shell_forbidden"))
    }

    async fn output(&self, _ctx: &AgentContext) -> Self::Response {
        Err(Unreachable)
    }
}

#[tokio::test]
async fn dispatch_routes_each_point_to_its_hook_and_keeps_failures() {
    for point in InterceptionPoint::ALL {
        let ctx = context(point);
        let response = dispatch(&Policy, &ctx).await;
        match point {
            InterceptionPoint::PreToolCall => {
                let r = response.unwrap();
                assert_eq!(r.verdict.reason.as_deref(), Some("shell_forbidden"));
            }
            InterceptionPoint::Output => {
                assert_eq!(
                    response.unwrap_err().to_string(),
                    "policy store unreachable"
                );
            }
            _ => assert_eq!(response.unwrap().verdict, Verdict::allow(), "{point}"),
        }
    }
}

#[tokio::test]
async fn the_erased_form_and_arc_behave_as_the_policy() {
    let shared: Arc<dyn DynInterceptor> = Arc::new(Arc::new(Policy));
    assert_eq!(shared.describe(), manifest("policy", "1.0.0"));
    let deny = shared
        .decide(&context(InterceptionPoint::PreToolCall))
        .await;
    assert_eq!(deny.unwrap().verdict.decision, Decision::Deny);
    let failed = shared.decide(&context(InterceptionPoint::Output)).await;
    assert!(failed.is_err());
}

#[tokio::test]
async fn closures_implement_the_same_trait() {
    let f = interceptor_fn(|ctx: AgentContext| async move {
        if ctx.point() == InterceptionPoint::Input {
            Err(BoxError::from("no"))
        } else {
            Ok(Verdict::warn("w", "seen"))
        }
    });
    assert_eq!(f.manifest().name, "interceptor_fn");
    let ok = dispatch(&f, &context(InterceptionPoint::Output))
        .await
        .unwrap();
    assert_eq!(ok.verdict, Verdict::warn("w", "seen"));
    assert!(
        dispatch(&f, &context(InterceptionPoint::Input))
            .await
            .is_err()
    );
    let named = f.with_manifest(manifest("named", "2"));
    assert_eq!(Interceptor::manifest(&named).name, "named");
}

#[test]
fn every_response_kind_defaults_to_allow() {
    assert_eq!(Verdict::from_verdict(Verdict::allow()), Verdict::allow());
    let r = <Result<InterceptorResponse, BoxError>>::from_verdict(Verdict::allow());
    assert_eq!(r.into_response().unwrap(), Verdict::allow().into());
}
