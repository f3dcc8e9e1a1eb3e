//! The MCP mediation table: every method of the revisions the proxy
//! speaks, in both directions, and every member of its parameters and
//! result, classified as governed (the point and the context member it
//! passes), inert (relayed: it cannot act or reach the model as content),
//! or refused (not relayed). The session consults it for every message;
//! a method it does not list is refused, unless the operator declared it
//! inert (`--inert-method`). docs/mcp.md prints the same table, and a test
//! walks the official SDK's schema types and fails on anything unlisted.

use std::collections::BTreeSet;

/// The revisions with the `initialize` handshake the proxy mediates,
/// newest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revisions (no handshake: the version in every
/// request's `_meta`) the proxy mediates, newest first.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every revision the proxy mediates, whose every method and member the
/// table classifies (docs/mcp.md, "Protocol versions").
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// Who receives the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Client → server.
    ToServer,
    /// Server → client.
    ToClient,
}

impl Direction {
    /// The name the docs and the schema walk use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToServer => "to_server",
            Self::ToClient => "to_client",
        }
    }
}

/// A request (answered) or a notification (not answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// It has an id and gets an answer.
    Request,
    /// It has no id.
    Notification,
}

impl Kind {
    /// The name the docs and the schema walk use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Notification => "notification",
        }
    }
}

/// What the proxy does with a method or a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// It passes a point; the text says which and as which member.
    Governed(&'static str),
    /// Relayed as it is; the text says why that is safe.
    Inert(&'static str),
    /// Not relayed; the text says why.
    Refused(&'static str),
}

impl Class {
    /// `governed`, `inert` or `refused`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Governed(_) => "governed",
            Self::Inert(_) => "inert",
            Self::Refused(_) => "refused",
        }
    }

    /// What the class says about the method or member.
    pub fn how(&self) -> &'static str {
        match self {
            Self::Governed(h) | Self::Inert(h) | Self::Refused(h) => h,
        }
    }
}

/// One line of the table: a method (`member` empty) or one member of its
/// `params`, `result` or `error` (`params.arguments`, `result.content`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Who receives it.
    pub direction: Direction,
    /// Request or notification.
    pub kind: Kind,
    /// The method.
    pub method: &'static str,
    /// The member, or empty for the method itself.
    pub member: &'static str,
    /// What happens to it.
    pub class: Class,
}

const META: Class = Class::Inert("request metadata (progress token, protocol keys), relayed");
const CURSOR: Class = Class::Inert("a pagination cursor");
const DECLARED: Class =
    Class::Inert("the server's declaration, relayed as declared (not the result of an action)");
const TASKS: Class = Class::Refused(
    "tasks are not offered: the proxy removes the tasks capability and runs a task-augmented tools/call as a plain one, governed",
);
const MODEL_CONTENT: Class = Class::Refused(
    "content that reaches the model outside a tool call, which no point governs: refused unless the operator declares the method inert",
);
const ELICITATION: Class = Class::Refused(
    "elicitation is not offered: the proxy removes the capability from the client's initialize",
);
const SAMPLING: Class = Class::Refused(
    "sampling is a model call outside any governed turn: the proxy removes the capability",
);
const RESULT_TYPE: Class = Class::Inert("the result's kind (2026-07-28)");
const CACHE_HINT: Class = Class::Inert("a caching hint (2026-07-28)");
const INPUT_RESPONSES: Class = Class::Refused(
    "answers to a server's input requests, which the proxy never relays (it offers no input capability): not forwarded",
);
const INPUT_REQUESTS: Class = Class::Refused(
    "a server's input requests (sampling, elicitation, roots), never relayed: the request is answered with an error instead",
);
const REQUEST_STATE_IN: Class = Class::Refused(
    "never forwarded: it names a call the proxy parked (input_required) and resumes, bound to its caller and its arguments",
);
const REQUEST_STATE_OUT: Class =
    Class::Refused("an upstream's multi-round-trip state, refused with its inputRequests");
const STREAM: Class = Class::Refused(
    "a server-initiated notification stream, which the proxy does not open (as GET /mcp is 405)",
);

use Class::{Governed, Inert};
use Direction::{ToClient, ToServer};
use Kind::{Notification, Request};

macro_rules! rows {
    ($($dir:ident $kind:ident $method:literal $member:literal => $class:expr;)*) => {
        &[$(Row { direction: $dir, kind: $kind, method: $method, member: $member, class: $class }),*]
    };
}

/// The table, for the revisions 2024-11-05 to 2026-07-28.
pub const TABLE: &[Row] = rows![
    // The handshake.
    ToServer Request "initialize" "" => Governed("agent_startup once the upstream answered (its tool names as tools_registered)");
    ToServer Request "initialize" "params.protocolVersion" => Governed("negotiated: only a version both the proxy and the upstream speak");
    ToServer Request "initialize" "params.capabilities" => Governed("sampling, elicitation and tasks removed before it is forwarded");
    ToServer Request "initialize" "params.clientInfo" => Inert("the client's name and version");
    ToServer Request "initialize" "params._meta" => META;
    ToServer Request "initialize" "result.protocolVersion" => Governed("checked: a version the proxy does not speak ends the session");
    ToServer Request "initialize" "result.capabilities" => Governed("tasks removed before the client sees it");
    ToServer Request "initialize" "result.serverInfo" => DECLARED;
    ToServer Request "initialize" "result.instructions" => DECLARED;
    ToServer Request "initialize" "result._meta" => META;
    ToServer Notification "notifications/initialized" "" => Governed("absorbed: the proxy sent it upstream at initialize");
    ToServer Notification "notifications/initialized" "params._meta" => META;
    ToServer Request "ping" "" => Inert("liveness, no content");
    ToServer Request "ping" "params._meta" => META;
    ToServer Request "ping" "result._meta" => META;
    ToClient Request "ping" "" => Governed("answered by the proxy, never relayed");
    ToClient Request "ping" "params._meta" => META;
    ToClient Request "ping" "result._meta" => META;
    // The stateless revision (2026-07-28): no handshake; the version and
    // the client's capabilities travel in every request's `_meta`.
    ToServer Request "server/discover" "" => Governed("answered by the proxy from the upstream's discover, which it asks at the session's start");
    ToServer Request "server/discover" "params._meta" => META;
    ToServer Request "server/discover" "result.supportedVersions" => Governed("only the stateless versions both the proxy and the upstream speak, then the handshake's");
    ToServer Request "server/discover" "result.capabilities" => Governed("tasks, extensions and subscriptions removed");
    ToServer Request "server/discover" "result.instructions" => DECLARED;
    ToServer Request "server/discover" "result.resultType" => RESULT_TYPE;
    ToServer Request "server/discover" "result.ttlMs" => CACHE_HINT;
    ToServer Request "server/discover" "result.cacheScope" => CACHE_HINT;
    ToServer Request "server/discover" "result._meta" => META;
    ToServer Request "subscriptions/listen" "" => STREAM;
    ToServer Request "subscriptions/listen" "params.notifications" => STREAM;
    ToServer Request "subscriptions/listen" "params._meta" => STREAM;
    ToServer Request "subscriptions/listen" "result.resultType" => STREAM;
    ToServer Request "subscriptions/listen" "result._meta" => STREAM;
    ToClient Notification "notifications/subscriptions/acknowledged" "" => STREAM;
    ToClient Notification "notifications/subscriptions/acknowledged" "params.notifications" => STREAM;
    ToClient Notification "notifications/subscriptions/acknowledged" "params._meta" => STREAM;
    // Tools.
    ToServer Request "tools/list" "" => Inert("the server's declaration; hidden tools removed");
    ToServer Request "tools/list" "params.cursor" => CURSOR;
    ToServer Request "tools/list" "params._meta" => META;
    ToServer Request "tools/list" "result.tools" => Governed("hidden tools removed; the names are agent_startup's tools_registered");
    ToServer Request "tools/list" "result.nextCursor" => CURSOR;
    ToServer Request "tools/list" "result._meta" => META;
    ToServer Request "tools/list" "result.resultType" => RESULT_TYPE;
    ToServer Request "tools/list" "result.ttlMs" => CACHE_HINT;
    ToServer Request "tools/list" "result.cacheScope" => CACHE_HINT;
    ToServer Request "tools/call" "" => Governed("pre_tool_call, then post_tool_call (a notification without id is refused)");
    ToServer Request "tools/call" "params.name" => Governed("pre_tool_call tool_call.name");
    ToServer Request "tools/call" "params.arguments" => Governed("pre_tool_call target tool_call.args");
    ToServer Request "tools/call" "params.task" => TASKS;
    ToServer Request "tools/call" "params._meta" => META;
    ToServer Request "tools/call" "result.content" => Governed("post_tool_call target tool_result.value");
    ToServer Request "tools/call" "result.isError" => Governed("post_tool_call tool_result.is_error");
    ToServer Request "tools/call" "result.structuredContent" => Governed("post_tool_call extensions.mcp.structured_content (withheld when the content is rewritten)");
    ToServer Request "tools/call" "result._meta" => META;
    ToServer Request "tools/call" "error.message" => Governed("post_tool_call target tool_result.value (first text block)");
    ToServer Request "tools/call" "error.data" => Governed("post_tool_call target tool_result.value (second text block, JSON)");
    ToServer Request "tools/call" "error.code" => Governed("post_tool_call extensions.mcp.jsonrpc_error.code");
    ToServer Request "tools/call" "params.requestState" => REQUEST_STATE_IN;
    ToServer Request "tools/call" "params.inputResponses" => INPUT_RESPONSES;
    ToServer Request "tools/call" "result.resultType" => Governed("complete is relayed; an upstream's input_required is answered as a tool error (no result exists); the proxy's own input_required parks a call still waiting for its verdict");
    ToServer Request "tools/call" "result.inputRequests" => INPUT_REQUESTS;
    ToServer Request "tools/call" "result.requestState" => REQUEST_STATE_OUT;
    ToClient Notification "notifications/tools/list_changed" "" => Inert("a signal, no content");
    ToClient Notification "notifications/tools/list_changed" "params._meta" => META;
    // Resources and prompts: listings are declarations, contents are
    // what a model reads.
    ToServer Request "resources/list" "" => DECLARED;
    ToServer Request "resources/list" "params.cursor" => CURSOR;
    ToServer Request "resources/list" "params._meta" => META;
    ToServer Request "resources/list" "result.resources" => DECLARED;
    ToServer Request "resources/list" "result.nextCursor" => CURSOR;
    ToServer Request "resources/list" "result._meta" => META;
    ToServer Request "resources/list" "result.resultType" => RESULT_TYPE;
    ToServer Request "resources/list" "result.ttlMs" => CACHE_HINT;
    ToServer Request "resources/list" "result.cacheScope" => CACHE_HINT;
    ToServer Request "resources/templates/list" "" => DECLARED;
    ToServer Request "resources/templates/list" "params.cursor" => CURSOR;
    ToServer Request "resources/templates/list" "params._meta" => META;
    ToServer Request "resources/templates/list" "result.resourceTemplates" => DECLARED;
    ToServer Request "resources/templates/list" "result.nextCursor" => CURSOR;
    ToServer Request "resources/templates/list" "result._meta" => META;
    ToServer Request "resources/templates/list" "result.resultType" => RESULT_TYPE;
    ToServer Request "resources/templates/list" "result.ttlMs" => CACHE_HINT;
    ToServer Request "resources/templates/list" "result.cacheScope" => CACHE_HINT;
    ToServer Request "resources/read" "" => MODEL_CONTENT;
    ToServer Request "resources/read" "params.uri" => MODEL_CONTENT;
    ToServer Request "resources/read" "params._meta" => META;
    ToServer Request "resources/read" "result.contents" => MODEL_CONTENT;
    ToServer Request "resources/read" "result.ttlMs" => MODEL_CONTENT;
    ToServer Request "resources/read" "result.cacheScope" => MODEL_CONTENT;
    ToServer Request "resources/read" "result._meta" => META;
    ToServer Request "resources/read" "params.requestState" => MODEL_CONTENT;
    ToServer Request "resources/read" "params.inputResponses" => MODEL_CONTENT;
    ToServer Request "resources/read" "result.resultType" => MODEL_CONTENT;
    ToServer Request "resources/read" "result.inputRequests" => MODEL_CONTENT;
    ToServer Request "resources/read" "result.requestState" => MODEL_CONTENT;
    ToServer Request "resources/subscribe" "" => Inert("asks for update signals, no content");
    ToServer Request "resources/subscribe" "params.uri" => Inert("a resource name");
    ToServer Request "resources/subscribe" "params._meta" => META;
    ToServer Request "resources/subscribe" "result._meta" => META;
    ToServer Request "resources/unsubscribe" "" => Inert("stops update signals, no content");
    ToServer Request "resources/unsubscribe" "params.uri" => Inert("a resource name");
    ToServer Request "resources/unsubscribe" "params._meta" => META;
    ToServer Request "resources/unsubscribe" "result._meta" => META;
    ToClient Notification "notifications/resources/updated" "" => Inert("a signal naming a resource, no content");
    ToClient Notification "notifications/resources/updated" "params.uri" => Inert("a resource name");
    ToClient Notification "notifications/resources/updated" "params._meta" => META;
    ToClient Notification "notifications/resources/list_changed" "" => Inert("a signal, no content");
    ToClient Notification "notifications/resources/list_changed" "params._meta" => META;
    ToServer Request "prompts/list" "" => DECLARED;
    ToServer Request "prompts/list" "params.cursor" => CURSOR;
    ToServer Request "prompts/list" "params._meta" => META;
    ToServer Request "prompts/list" "result.prompts" => DECLARED;
    ToServer Request "prompts/list" "result.nextCursor" => CURSOR;
    ToServer Request "prompts/list" "result._meta" => META;
    ToServer Request "prompts/list" "result.resultType" => RESULT_TYPE;
    ToServer Request "prompts/list" "result.ttlMs" => CACHE_HINT;
    ToServer Request "prompts/list" "result.cacheScope" => CACHE_HINT;
    ToServer Request "prompts/get" "" => MODEL_CONTENT;
    ToServer Request "prompts/get" "params.name" => MODEL_CONTENT;
    ToServer Request "prompts/get" "params.arguments" => MODEL_CONTENT;
    ToServer Request "prompts/get" "params._meta" => META;
    ToServer Request "prompts/get" "result.description" => MODEL_CONTENT;
    ToServer Request "prompts/get" "result.messages" => MODEL_CONTENT;
    ToServer Request "prompts/get" "result._meta" => META;
    ToServer Request "prompts/get" "params.requestState" => MODEL_CONTENT;
    ToServer Request "prompts/get" "params.inputResponses" => MODEL_CONTENT;
    ToServer Request "prompts/get" "result.resultType" => MODEL_CONTENT;
    ToServer Request "prompts/get" "result.inputRequests" => MODEL_CONTENT;
    ToServer Request "prompts/get" "result.requestState" => MODEL_CONTENT;
    ToClient Notification "notifications/prompts/list_changed" "" => Inert("a signal, no content");
    ToClient Notification "notifications/prompts/list_changed" "params._meta" => META;
    // Utilities.
    ToServer Request "completion/complete" "" => Inert("argument suggestions for the user's input, not the model's");
    ToServer Request "completion/complete" "params.ref" => Inert("names the prompt or resource template");
    ToServer Request "completion/complete" "params.argument" => Inert("the user's partial input");
    ToServer Request "completion/complete" "params.context" => Inert("earlier arguments of the user");
    ToServer Request "completion/complete" "params._meta" => META;
    ToServer Request "completion/complete" "result.completion" => Inert("suggestions shown to the user");
    ToServer Request "completion/complete" "result._meta" => META;
    ToServer Request "completion/complete" "result.resultType" => RESULT_TYPE;
    ToServer Request "logging/setLevel" "" => Inert("sets the server's log level");
    ToServer Request "logging/setLevel" "params.level" => Inert("a level name");
    ToServer Request "logging/setLevel" "params._meta" => META;
    ToServer Request "logging/setLevel" "result._meta" => META;
    ToClient Notification "notifications/message" "" => Inert("a log line for the client's log, not the model");
    ToClient Notification "notifications/message" "params.level" => Inert("a level name");
    ToClient Notification "notifications/message" "params.logger" => Inert("a logger name");
    ToClient Notification "notifications/message" "params.data" => Inert("the log line, for the client's log");
    ToClient Notification "notifications/message" "params._meta" => META;
    ToServer Notification "notifications/cancelled" "" => Governed("cancels the request in flight: its pending emission is dropped, the upstream told");
    ToServer Notification "notifications/cancelled" "params.requestId" => Governed("mapped to the upstream's id");
    ToServer Notification "notifications/cancelled" "params.reason" => Inert("a reason for the server's log");
    ToServer Notification "notifications/cancelled" "params._meta" => META;
    ToClient Notification "notifications/cancelled" "" => Inert("cancels a server request relayed to the client");
    ToClient Notification "notifications/cancelled" "params.requestId" => Inert("an id");
    ToClient Notification "notifications/cancelled" "params.reason" => Inert("a reason for the client's log");
    ToClient Notification "notifications/cancelled" "params._meta" => META;
    ToServer Notification "notifications/progress" "" => Inert("progress of a server request the client handles");
    ToServer Notification "notifications/progress" "params.progressToken" => Inert("a token");
    ToServer Notification "notifications/progress" "params.progress" => Inert("a number");
    ToServer Notification "notifications/progress" "params.total" => Inert("a number");
    ToServer Notification "notifications/progress" "params.message" => Inert("a status line for the server");
    ToServer Notification "notifications/progress" "params._meta" => META;
    ToClient Notification "notifications/progress" "" => Inert("progress of a call, routed to where its answer goes");
    ToClient Notification "notifications/progress" "params.progressToken" => Inert("a token");
    ToClient Notification "notifications/progress" "params.progress" => Inert("a number");
    ToClient Notification "notifications/progress" "params.total" => Inert("a number");
    ToClient Notification "notifications/progress" "params.message" => Inert("a status line for the user");
    ToClient Notification "notifications/progress" "params._meta" => META;
    // Roots: the client's own folders, asked for by the server.
    ToClient Request "roots/list" "" => Inert("relayed to a client that can answer (stdio); names the client's folders");
    ToClient Request "roots/list" "params._meta" => META;
    ToClient Request "roots/list" "result.roots" => Inert("the client's folders, which it chose to share");
    ToClient Request "roots/list" "result._meta" => META;
    ToServer Notification "notifications/roots/list_changed" "" => Inert("a signal, no content");
    ToServer Notification "notifications/roots/list_changed" "params._meta" => META;
    // Server-initiated model calls and questions.
    ToClient Request "sampling/createMessage" "" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.messages" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.systemPrompt" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.includeContext" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.maxTokens" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.metadata" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.modelPreferences" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.stopSequences" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.temperature" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.tools" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.toolChoice" => SAMPLING;
    ToClient Request "sampling/createMessage" "params.task" => SAMPLING;
    ToClient Request "sampling/createMessage" "params._meta" => SAMPLING;
    ToClient Request "sampling/createMessage" "result.content" => SAMPLING;
    ToClient Request "sampling/createMessage" "result.model" => SAMPLING;
    ToClient Request "sampling/createMessage" "result.role" => SAMPLING;
    ToClient Request "sampling/createMessage" "result.stopReason" => SAMPLING;
    ToClient Request "sampling/createMessage" "result._meta" => SAMPLING;
    ToClient Request "elicitation/create" "" => ELICITATION;
    ToClient Request "elicitation/create" "params.message" => ELICITATION;
    ToClient Request "elicitation/create" "params.mode" => ELICITATION;
    ToClient Request "elicitation/create" "params.requestedSchema" => ELICITATION;
    ToClient Request "elicitation/create" "params.url" => ELICITATION;
    ToClient Request "elicitation/create" "params.elicitationId" => ELICITATION;
    ToClient Request "elicitation/create" "params.task" => ELICITATION;
    ToClient Request "elicitation/create" "params._meta" => ELICITATION;
    ToClient Request "elicitation/create" "result.action" => ELICITATION;
    ToClient Request "elicitation/create" "result.content" => ELICITATION;
    ToClient Request "elicitation/create" "result._meta" => ELICITATION;
    ToClient Notification "notifications/elicitation/complete" "" => ELICITATION;
    ToClient Notification "notifications/elicitation/complete" "params.elicitationId" => ELICITATION;
    // Tasks (2025-11-25), in both directions.
    ToServer Request "tasks/get" "" => TASKS;
    ToServer Request "tasks/list" "" => TASKS;
    ToServer Request "tasks/result" "" => TASKS;
    ToServer Request "tasks/cancel" "" => TASKS;
    ToClient Request "tasks/get" "" => TASKS;
    ToClient Request "tasks/list" "" => TASKS;
    ToClient Request "tasks/result" "" => TASKS;
    ToClient Request "tasks/cancel" "" => TASKS;
    ToServer Notification "notifications/tasks/status" "" => TASKS;
    ToClient Notification "notifications/tasks/status" "" => TASKS;
];

/// The class of a method nobody listed.
pub const UNKNOWN: Class = Class::Refused(
    "not in the mediation table: refused unless the operator declares it inert (--inert-method)",
);

/// The class of a method the operator declared inert.
pub const DECLARED_INERT: Class = Class::Inert("declared inert by the operator (--inert-method)");

/// The table with the operator's additions.
#[derive(Debug, Clone, Default)]
pub struct Mediation {
    inert: BTreeSet<String>,
}

impl Mediation {
    /// The table, with `inert` methods relayed although the table refuses
    /// them or does not list them; `Err` names a method the table governs
    /// (in either direction, as either kind), which cannot be made inert.
    pub fn new(inert: BTreeSet<String>) -> Result<Self, String> {
        if let Some(m) = inert.iter().find(|m| is_governed(m)) {
            return Err(format!("{m} is governed: it cannot be declared inert"));
        }
        Ok(Self { inert })
    }

    /// What happens to `method` sent in `direction` as `kind`.
    pub fn method(&self, direction: Direction, kind: Kind, method: &str) -> Class {
        let listed = row(direction, kind, method, "").map(|r| r.class);
        match listed {
            Some(c @ Class::Governed(_)) => c,
            _ if self.inert.contains(method) => DECLARED_INERT,
            Some(c) => c,
            None => UNKNOWN,
        }
    }
}

/// Whether the table governs `method` anywhere.
pub fn is_governed(method: &str) -> bool {
    TABLE
        .iter()
        .any(|r| r.method == method && r.member.is_empty() && r.class.name() == "governed")
}

/// The row of a method (`member` empty) or of one of its members.
pub fn row(direction: Direction, kind: Kind, method: &str, member: &str) -> Option<&'static Row> {
    TABLE.iter().find(|r| {
        r.direction == direction && r.kind == kind && r.method == method && r.member == member
    })
}

/// The members of `method`'s `part` (`params`, `result`) the table lists.
pub fn members(direction: Direction, kind: Kind, method: &str, part: &str) -> Vec<&'static str> {
    TABLE
        .iter()
        .filter(|r| r.direction == direction && r.kind == kind && r.method == method)
        .filter_map(|r| r.member.strip_prefix(part)?.strip_prefix('.'))
        .collect()
}

/// One row as docs/mcp.md's table prints it.
pub fn markdown_row(r: &Row) -> String {
    let member = if r.member.is_empty() {
        "(the method)".to_owned()
    } else {
        format!("`{}`", r.member)
    };
    format!(
        "| {} | {} | `{}` | {member} | {} | {} |",
        r.direction.as_str(),
        r.kind.as_str(),
        r.method,
        r.class.name(),
        r.class.how()
    )
}

/// How many rows of each class: (governed, inert, refused).
pub fn counts() -> (usize, usize, usize) {
    let n = |c: &str| TABLE.iter().filter(|r| r.class.name() == c).count();
    (n("governed"), n("inert"), n("refused"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_mcp_md_prints_the_table_as_it_is() {
        let docs = include_str!("../../docs/mcp.md");
        let missing: Vec<String> = TABLE
            .iter()
            .map(markdown_row)
            .filter(|line| !docs.lines().any(|l| l == line))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/mcp.md lacks:\n{}",
            missing.join("\n")
        );
        let (g, i, r) = counts();
        let summary = format!("{g} governed, {i} inert, {r} refused");
        assert!(
            docs.contains(&summary),
            "docs/mcp.md lacks the counts: {summary}"
        );
    }

    #[test]
    fn every_line_is_listed_once_and_every_member_has_its_method() {
        let mut seen = BTreeSet::new();
        for r in TABLE {
            assert!(
                seen.insert((r.direction, r.kind, r.method, r.member)),
                "listed twice: {r:?}"
            );
            assert!(
                row(r.direction, r.kind, r.method, "").is_some(),
                "a member without its method: {r:?}"
            );
            assert!(!r.class.how().is_empty());
        }
    }

    #[test]
    fn unknown_methods_are_refused_unless_declared_inert() {
        let m = Mediation::default();
        assert_eq!(m.method(ToServer, Request, "vendor/x"), UNKNOWN);
        assert_eq!(
            m.method(ToServer, Notification, "tools/call").name(),
            "refused"
        );
        assert_eq!(m.method(ToServer, Request, "resources/read"), MODEL_CONTENT);
        let m = Mediation::new(["resources/read".into(), "vendor/x".into()].into()).unwrap();
        assert_eq!(
            m.method(ToServer, Request, "resources/read"),
            DECLARED_INERT
        );
        assert_eq!(m.method(ToClient, Notification, "vendor/x"), DECLARED_INERT);
        for governed in [
            "tools/call",
            "initialize",
            "notifications/cancelled",
            "ping",
        ] {
            let e = Mediation::new([governed.to_owned()].into()).unwrap_err();
            assert!(e.contains(governed), "{e}");
        }
        assert_eq!(
            members(ToServer, Request, "tools/call", "result"),
            [
                "content",
                "isError",
                "structuredContent",
                "_meta",
                "resultType",
                "inputRequests",
                "requestState"
            ]
        );
    }
}
