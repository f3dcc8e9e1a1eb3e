//! The reference loop against an in-process host: every obligation of §6,
//! §6.1a, §6.2 and §12 observed through the records and what the model and
//! the tools actually received.

mod labels;
mod loop_bounds;
mod routing;
mod turns;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::{AgentContext, InterceptionPoint, InterceptionRecord, Mode, Verdict};
use serde_json::{Value, json};

use super::*;
use hookwire_client::{
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
