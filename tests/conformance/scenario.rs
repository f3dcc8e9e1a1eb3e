//! The scenario's mock model (the vector's own response texts, numbers
//! unparsed) and mock tools.

use super::*;

/// Plays back `scenario.model_script`, one response per call: a chunked
/// stream when the step has `stream`, otherwise the step's JSON text as
/// written in the vector (its numbers unparsed).
pub(crate) struct ScenarioModel {
    script: Mutex<VecDeque<(Value, Option<String>)>>,
}

impl ScenarioModel {
    /// The model playing `scenario`'s script with the response `texts`.
    pub(crate) fn new(scenario: &Value, texts: &[String]) -> Self {
        let script = scenario["model_script"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, step)| (step["respond"].clone(), texts.get(i).cloned()))
            .collect();
        Self {
            script: Mutex::new(script),
        }
    }

    fn next_step(&self) -> Option<(Value, Option<String>)> {
        self.script.lock().expect("model script").pop_front()
    }

    fn peek_streams(&self) -> bool {
        self.script
            .lock()
            .expect("model script")
            .front()
            .is_some_and(|(respond, _)| respond.get("stream").is_some())
    }
}

impl Model for ScenarioModel {
    fn id(&self) -> &str {
        "mock"
    }

    fn respond<'a>(&'a self, _: &'a [Value]) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        let next = self.next_step();
        Box::pin(async move {
            let (respond, _) = next.ok_or("the scenario's model script is exhausted")?;
            Ok(serde_json::from_value(respond)?)
        })
    }

    fn respond_json<'a>(
        &'a self,
        _: &'a [Value],
    ) -> Option<BoxFuture<'a, Result<String, BoxError>>> {
        if self.peek_streams() {
            return None;
        }
        let next = self.next_step();
        Some(Box::pin(async move {
            match next {
                Some((_, Some(text))) => Ok(text),
                Some((respond, None)) => Ok(serde_json::to_string(&respond)?),
                None => Err("the scenario's model script is exhausted".into()),
            }
        }))
    }

    fn respond_stream<'a>(&'a self, _: &'a [Value]) -> Option<ChunkStream<'a>> {
        if !self.peek_streams() {
            return None;
        }
        let (respond, _) = self.next_step()?;
        let mut events: Vec<Result<StreamEvent, BoxError>> = respond["stream"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                Ok(StreamEvent::Chunk(
                    c.as_str().unwrap_or_default().to_owned(),
                ))
            })
            .collect();
        if respond["stream_truncated"].as_bool() == Some(true) {
            events.push(Err("the stream broke".into()));
        } else {
            let tool_calls: Vec<ToolCall> =
                serde_json::from_value(respond["tool_calls"].clone()).unwrap_or_default();
            events.push(Ok(StreamEvent::Finished {
                finish_reason: respond["finish_reason"]
                    .as_str()
                    .unwrap_or("stop")
                    .to_owned(),
                tool_calls,
            }));
        }
        Some(futures::stream::iter(events).boxed())
    }
}

/// The text of each vector file's model-script responses, by vector id,
/// sliced from the file without parsing their numbers.
pub(crate) fn vector_texts() -> Result<HashMap<String, Vec<String>>, String> {
    #[derive(serde::Deserialize)]
    struct File<'a> {
        id: String,
        #[serde(borrow, default)]
        scenario: Option<Scenario<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Scenario<'a> {
        #[serde(borrow, default)]
        model_script: Vec<Step<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Step<'a> {
        #[serde(borrow)]
        respond: &'a RawValue,
    }
    let dir = vectors_dir();
    let mut texts = HashMap::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("AH-CTK-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).map_err(|e| format!("{name}: {e}"))?;
        let file: File<'_> = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
        let steps = file.scenario.map(|s| s.model_script).unwrap_or_default();
        texts.insert(
            file.id,
            steps.iter().map(|s| s.respond.get().to_owned()).collect(),
        );
    }
    Ok(texts)
}

/// The scenario's tools: the first behavior whose `when_args` matches (or
/// that has none) answers. Every invocation is logged as received.
pub(crate) struct ScenarioTools {
    /// The scenario's tool specifications.
    pub(crate) specs: Vec<Value>,
    /// Every invocation the tools received, for the runner.
    pub(crate) log: Arc<Mutex<Vec<Value>>>,
}

impl Toolbox for ScenarioTools {
    fn names(&self) -> Vec<String> {
        self.specs
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.log
            .lock()
            .expect("tool log")
            .push(json!({"name": name, "args": args}));
        let behavior = self
            .specs
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["behavior"].as_array())
            .and_then(|bs| {
                bs.iter()
                    .find(|b| b.get("when_args").is_none_or(|w| w == args))
            })
            .cloned();
        Box::pin(async move {
            let Some(b) = behavior else {
                return Err(ToolError::new(format!("no behavior of {name} matches")));
            };
            if b["is_error"].as_bool() == Some(true) {
                Err(ToolError::new(b["return"].clone()))
            } else {
                Ok(b["return"].clone())
            }
        })
    }
}

/// The inputs of the scenario, one per turn: `input`, or `inputs` for a
/// multi-turn scenario.
pub(crate) fn scenario_inputs(scenario: &Value) -> Vec<(Value, InputRole)> {
    let one = |input: &Value| {
        let role = match input["role"].as_str() {
            Some("system") => InputRole::System,
            Some("external") => InputRole::External,
            _ => InputRole::User,
        };
        (input["content"].clone(), role)
    };
    match (&scenario["inputs"], &scenario["input"]) {
        (Value::Array(inputs), _) => inputs.iter().map(one).collect(),
        (_, input @ Value::Object(_)) => vec![one(input)],
        _ => Vec::new(),
    }
}
