'use strict';
// Plumbing for writing a hookwire interceptor service in Node.js with
// @grpc/grpc-js and @grpc/proto-loader (the proto is loaded at run time from
// proto/, nothing is generated).
//
// A service author writes an object with one method per interception point
// it cares about and calls `main(service)`. Each method receives the
// spec-shaped AgentContext (AGENT-HOOKS-0.1 §4) -- `target` included, rebuilt
// from the point's target field -- and returns (or resolves to) a verdict
// built with allow(), deny(), transform(), warn() or escalate():
//
//   const hw = require('./hookwire');
//   hw.main({
//     name: 'no-bash',
//     points: ['pre_tool_call'],
//     preToolCall(ctx) {
//       return ctx.tool_call.name === 'bash' ? hw.deny('policy:no_shell') : hw.allow();
//     },
//   });
//
// The rest lives here: the proto <-> spec JSON mapping (the mirror of the
// Rust host's src/wire/context.rs and src/wire/verdict.rs), exact JSON text,
// the Describe manifest, serving on 127.0.0.1 with a `PORT <n>` line on
// stdout, and a graceful stop on SIGTERM.
//
// ## Numbers: what JavaScript can carry, and what this helper does about it
//
// A JavaScript number is a double: JSON.parse rounds integers beyond
// ±(2^53 − 1) and reads `1.0` as `1`. So this helper
//
// - parses every JsonValue with its own strict parser that keeps, for each
//   object and array, the exact JSON text it came from, and deep-freezes the
//   result. Writing a value back (a transform, an approval, evidence, the
//   call log) reuses that text for every object or array the policy passed
//   through untouched, at any depth: `transform('$target', ctx.target)` or
//   `{args: ctx.tool_call.args, ...}` carry 2^63 − 1 and 1.0 exactly.
// - writes numbers the policy computed itself with JSON.stringify, except an
//   integer beyond ±(2^53 − 1), which it refuses to write (it may already be
//   rounded): the call fails and the host denies with
//   `host_error:interceptor_failed`. Fail closed, never a silently rounded
//   integer. Use a BigInt to write a large integer on purpose.
// - reads `sequence` and `session.turn` (uint64 on the wire) as numbers, or
//   as BigInts beyond 2^53 − 1.
//
// What a policy *reads* from the context is still JavaScript: a large integer
// is seen rounded (compare it as a string, or keep it in a container you pass
// through), and a computed `3.0` is written as `3`.
//
// Fail-closed: a handler that throws (or rejects), returns no verdict, or
// returns a value that cannot be written as JSON becomes the gRPC status
// INTERNAL (message: the error's name only), which the host turns into
// `deny host_error:interceptor_failed`.

const fs = require('fs');
const path = require('path');
const { parseArgs } = require('util');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { HealthImplementation } = require('grpc-health-check');

const SPEC = 'agent-hooks/0.1';

/** The eight interception points (§3), in emission order. */
const POINTS = [
  'agent_startup',
  'input',
  'pre_model_call',
  'post_model_call',
  'pre_tool_call',
  'post_tool_call',
  'output',
  'agent_shutdown',
];

/** Where each point's target lives in the context (§4.2, §4.3). */
const TARGET_LOCATION = {
  agent_startup: ['agent_init'],
  input: ['input'],
  pre_model_call: ['messages'],
  post_model_call: ['response'],
  pre_tool_call: ['tool_call', 'args'],
  post_tool_call: ['tool_result', 'value'],
  output: ['output'],
  agent_shutdown: ['summary'],
};

// The gRPC method and the handler name of each point.
const RPC = {
  agent_startup: 'AgentStartup',
  input: 'Input',
  pre_model_call: 'PreModelCall',
  post_model_call: 'PostModelCall',
  pre_tool_call: 'PreToolCall',
  post_tool_call: 'PostToolCall',
  output: 'Output',
  agent_shutdown: 'AgentShutdown',
};
const HANDLER = {
  agent_startup: 'agentStartup',
  input: 'input',
  pre_model_call: 'preModelCall',
  post_model_call: 'postModelCall',
  pre_tool_call: 'preToolCall',
  post_tool_call: 'postToolCall',
  output: 'output',
  agent_shutdown: 'agentShutdown',
};

const PROTO_ROOT = process.env.HOOKWIRE_PROTO_ROOT || path.join(__dirname, '..', '..', 'proto');
const PROTO_FILE = 'hookwire/v1/interceptor.proto';

// ---------------------------------------------------------------------------
// Exact JSON text
// ---------------------------------------------------------------------------

/** A JSON text the host would refuse too. The message never quotes it. */
class InvalidJson extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidJson';
  }
}

// The JSON text each parsed (frozen) object or array came from.
const RAW = new WeakMap();
const MAX_DEPTH = 512;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

function defineMember(obj, key, value) {
  // defineProperty, not assignment: a member named `__proto__` stays a member.
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Parses one JSON value strictly (RFC 8259; duplicate member names and
 * non-finite numbers refused, as the host does). Objects and arrays come back
 * deep-frozen and remember their exact text, so `stringify` writes them back
 * byte for byte.
 */
function parse(text) {
  let i = 0;
  const n = text.length;
  const fail = (what) => {
    throw new InvalidJson(`${what} at offset ${i}`);
  };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const string = () => {
    const start = i++;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      i += c === 0x5c ? 2 : 1;
    }
    i++;
    try {
      return JSON.parse(text.slice(start, i));
    } catch {
      i = start;
      return fail('malformed string');
    }
  };
  const value = (depth) => {
    if (depth > MAX_DEPTH) fail('nesting too deep');
    ws();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const obj = {};
      ws();
      if (text[i] === '}') i++;
      else {
        for (;;) {
          ws();
          if (text[i] !== '"') fail('expected a member name');
          const key = string();
          ws();
          if (text[i] !== ':') fail("expected ':'");
          i++;
          const v = value(depth + 1);
          if (Object.prototype.hasOwnProperty.call(obj, key)) fail('duplicate member name');
          defineMember(obj, key, v);
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === '}') {
            i++;
            break;
          } else fail("expected ',' or '}'");
        }
      }
      RAW.set(Object.freeze(obj), text.slice(start, i));
      return obj;
    }
    if (c === '[') {
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') i++;
      else {
        for (;;) {
          arr.push(value(depth + 1));
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === ']') {
            i++;
            break;
          } else fail("expected ',' or ']'");
        }
      }
      RAW.set(Object.freeze(arr), text.slice(start, i));
      return arr;
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) fail('expected a value');
    i += m[0].length;
    const num = Number(m[0]);
    if (!Number.isFinite(num)) fail('number out of range');
    return num;
  };
  if (typeof text !== 'string') throw new InvalidJson('not a string');
  const v = value(0);
  ws();
  if (i !== n) fail('trailing characters');
  return v;
}

/** The exact JSON text a parsed object or array came from, if any. */
function rawJson(value) {
  return value !== null && typeof value === 'object' ? RAW.get(value) : undefined;
}

function writeNumber(v) {
  if (!Number.isFinite(v)) throw new RangeError('non-finite number');
  if (Number.isInteger(v) && !Number.isSafeInteger(v) && Math.abs(v) < 1e21) {
    // Beyond 2^53 - 1 a double may already be a rounded integer: refuse
    // rather than write a different number than the one the host sent.
    throw new RangeError('integer beyond 2^53 - 1 cannot be written exactly');
  }
  return JSON.stringify(v);
}

const SKIPPED = (v) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/**
 * Writes one JSON value as compact text: parsed objects and arrays as the
 * exact text they came from, BigInts exactly, and everything else like
 * JSON.stringify -- except integers it cannot write exactly (see above).
 */
function stringify(v) {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      return writeNumber(v);
    case 'bigint':
      return v.toString();
    case 'object': {
      if (v === null) return 'null';
      const raw = RAW.get(v);
      if (raw !== undefined) return raw;
      if (typeof v.toJSON === 'function') return stringify(v.toJSON());
      if (Array.isArray(v)) {
        return `[${v.map((x) => (SKIPPED(x) ? 'null' : stringify(x))).join(',')}]`;
      }
      const parts = [];
      for (const k of Object.keys(v)) {
        if (!SKIPPED(v[k])) parts.push(`${JSON.stringify(k)}:${stringify(v[k])}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      throw new TypeError(`not a JSON value (${typeof v})`);
  }
}

// ---------------------------------------------------------------------------
// Verdicts (§5)
// ---------------------------------------------------------------------------

function verdict(decision, { reason, message, warnings, labels } = {}) {
  const v = { decision };
  if (reason !== undefined && reason !== null) v.reason = reason;
  if (message !== undefined && message !== null) v.message = message;
  if (warnings && warnings.length) v.warnings = [...warnings];
  if (labels && labels.length) v.result_labels = [...labels];
  return v;
}

/** `allow`: the action proceeds with the target unchanged. */
function allow(options = {}) {
  return verdict('allow', options);
}

/**
 * `deny`: the action does not proceed. `reason` is a machine id of your own
 * (never `host_error:*`, which the host reserves). An `approval` object makes
 * it liftable (see escalate()).
 */
function deny(reason, message, { approval, evidence, warnings } = {}) {
  const v = verdict('deny', { reason, message, warnings });
  if (approval !== undefined) v.approval = approval;
  if (evidence !== undefined) v.evidence = evidence;
  return v;
}

/**
 * `transform`: the action proceeds with the value at `path` (rooted at
 * `$target`; `$target` alone replaces the whole target) replaced by `value`.
 * Forbidden at agent_startup and agent_shutdown.
 */
function transform(path, value, options = {}) {
  const v = verdict('transform', options);
  v.transform = { path, value: value === undefined ? null : value };
  return v;
}

/** `warn` sugar (§5.1): an allow carrying one warning. */
function warn(reason, message) {
  const w = { reason };
  if (message !== undefined) w.message = message;
  return allow({ warnings: [w] });
}

/**
 * `escalate` sugar (§5.1): a deny with an `approval` object, lifted only if
 * the host's approval resolver approves.
 */
function escalate(reason, message, approval = {}) {
  return deny(reason, message, { approval });
}

/** A verdict plus namespaced transport metadata (§5.5). */
function response(v, extensions = {}) {
  return { [RESPONSE]: true, verdict: v, extensions };
}
const RESPONSE = Symbol('hookwire.response');

// ---------------------------------------------------------------------------
// Request -> AgentContext (mirror of src/wire/context.rs)
// ---------------------------------------------------------------------------

/** A request that does not carry a well-formed context. */
class InvalidContext extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidContext';
  }
}

const AGENT_FIELDS = ['id', 'framework', 'name', 'version'];
const SESSION_FIELDS = ['id', 'started_at', 'turn'];
const TRACE_FIELDS = ['trace_id', 'span_id'];
const TENANT_FIELDS = ['id', 'name'];
const ACTOR_FIELDS = ['id', 'kind'];
const MODEL_FIELDS = ['id', 'vendor', 'params'];
const TOOL_RESULT_FIELDS = ['value', 'is_error', 'duration_ms'];
const COMMON_MEMBERS = [
  'spec',
  'interception_point',
  'target',
  'timestamp',
  'sequence',
  'agent',
  'session',
  'messages',
  'trace',
  'tenant',
  'actor',
  'budgets',
  'extensions',
];
const POINT_MEMBERS = {
  agent_startup: ['agent_init'],
  input: ['input'],
  pre_model_call: ['model', 'request_id', 'tools', 'usage'],
  post_model_call: ['model', 'response', 'request_id', 'tools', 'usage'],
  pre_tool_call: ['tool_call'],
  post_tool_call: ['tool_call', 'tool_result'],
  output: ['output'],
  agent_shutdown: ['summary'],
};

const present = (v) => v !== undefined && v !== null;

function json(member, jv) {
  try {
    return parse(jv.json === undefined ? '' : jv.json);
  } catch (e) {
    throw new InvalidContext(`${member}: ${e.message}`);
  }
}

// uint64 fields arrive as decimal strings (longs: String).
function uint64(s) {
  const text = s === undefined ? '0' : String(s);
  const big = BigInt(text);
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

function additional(parent, entries, typed) {
  const obj = {};
  for (const [k, jv] of Object.entries(entries || {})) {
    if (typed.includes(k)) throw new InvalidContext(`${parent}.${k}: carried in its typed field`);
    defineMember(obj, k, json(parent, jv));
  }
  return obj;
}

function putJson(obj, key, jv) {
  if (present(jv)) defineMember(obj, key, json(key, jv));
}

function putStr(obj, key, s) {
  if (present(s)) obj[key] = s;
}

function openObject(name, msg, fields) {
  const obj = additional(name, msg.additional, fields);
  for (const f of fields) putStr(obj, f, msg[f]);
  return obj;
}

function decodeCore(ctx, req) {
  const core = req.core;
  if (!present(core)) throw new InvalidContext('core: present');
  ctx.spec = core.spec || '';
  ctx.timestamp = core.timestamp || '';
  ctx.sequence = uint64(core.sequence);
  if (!present(core.agent)) throw new InvalidContext('agent: present');
  const agent = additional('agent', core.agent.additional, AGENT_FIELDS);
  agent.id = core.agent.id || '';
  agent.framework = core.agent.framework || '';
  putStr(agent, 'name', core.agent.name);
  putStr(agent, 'version', core.agent.version);
  ctx.agent = agent;
  if (!present(core.session)) throw new InvalidContext('session: present');
  const session = additional('session', core.session.additional, SESSION_FIELDS);
  session.id = core.session.id || '';
  putStr(session, 'started_at', core.session.started_at);
  if (present(core.session.turn)) session.turn = uint64(core.session.turn);
  ctx.session = session;
}

function decodeModel(ctx, req) {
  const m = req.model;
  if (!present(m)) throw new InvalidContext('model: present');
  const model = additional('model', m.additional, MODEL_FIELDS);
  model.id = m.id || '';
  putStr(model, 'vendor', m.vendor);
  putJson(model, 'params', m.params);
  ctx.model = model;
}

function decodeModelCall(ctx, req) {
  const mc = req.model_call;
  if (present(mc)) {
    putStr(ctx, 'request_id', mc.request_id);
    putJson(ctx, 'tools', mc.tools);
    putJson(ctx, 'usage', mc.usage);
  }
}

function decodeToolCall(ctx, req) {
  const c = req.tool_call;
  if (!present(c)) throw new InvalidContext('tool_call: present');
  const call = { id: c.id || '', name: c.name || '' };
  putJson(call, 'args', c.args);
  putStr(call, 'content_hash', c.content_hash);
  ctx.tool_call = call;
}

function decodeToolResult(ctx, req) {
  const r = req.tool_result;
  if (!present(r)) throw new InvalidContext('tool_result: present');
  const result = additional('tool_result', r.additional, TOOL_RESULT_FIELDS);
  putJson(result, 'value', r.value);
  result.is_error = r.is_error === true;
  putJson(result, 'duration_ms', r.duration_ms);
  ctx.tool_result = result;
}

function decodeOptional(ctx, point, req) {
  const o = req.optional;
  if (!present(o)) return;
  if (present(o.messages)) {
    if (point === 'pre_model_call') {
      throw new InvalidContext('messages: carried in PreModelCallRequest.messages');
    }
    putJson(ctx, 'messages', o.messages);
  }
  if (present(o.trace)) ctx.trace = openObject('trace', o.trace, TRACE_FIELDS);
  if (present(o.tenant)) ctx.tenant = openObject('tenant', o.tenant, TENANT_FIELDS);
  if (present(o.actor)) ctx.actor = openObject('actor', o.actor, ACTOR_FIELDS);
  putJson(ctx, 'budgets', o.budgets);
  if (present(o.extensions) && Object.keys(o.extensions).length) {
    ctx.extensions = additional('extensions', o.extensions, []);
  }
  const typed = COMMON_MEMBERS.concat(POINT_MEMBERS[point]);
  for (const [k, jv] of Object.entries(o.additional || {})) {
    // An empty `extensions` object has no presence of its own in a map
    // field: it travels here, and only as `{}`.
    const emptyExtensions = k === 'extensions' && !('extensions' in ctx);
    if (typed.includes(k) && !emptyExtensions) {
      throw new InvalidContext(`${k}: carried in its typed field`);
    }
    const v = json(k, jv);
    if (emptyExtensions && (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length)) {
      throw new InvalidContext('extensions: only an empty object travels in additional');
    }
    defineMember(ctx, k, v);
  }
}

function deepFreeze(v) {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/**
 * The spec-shaped AgentContext (§4) of one request, with `target` rebuilt
 * from the point's target field (the same object, §4.3). Deep-frozen: a
 * policy builds new values instead of editing the context.
 */
function contextFromRequest(point, req) {
  const ctx = { interception_point: point };
  decodeCore(ctx, req);
  switch (point) {
    case 'agent_startup':
      putJson(ctx, 'agent_init', req.agent_init);
      break;
    case 'input':
      putJson(ctx, 'input', req.input);
      break;
    case 'pre_model_call':
    case 'post_model_call':
      decodeModel(ctx, req);
      if (point === 'pre_model_call') putJson(ctx, 'messages', req.messages);
      else putJson(ctx, 'response', req.response);
      decodeModelCall(ctx, req);
      break;
    case 'pre_tool_call':
    case 'post_tool_call':
      decodeToolCall(ctx, req);
      if (point === 'post_tool_call') decodeToolResult(ctx, req);
      break;
    case 'output':
      putJson(ctx, 'output', req.output);
      break;
    case 'agent_shutdown':
      putJson(ctx, 'summary', req.summary);
      break;
    default:
      throw new InvalidContext('unknown point');
  }
  decodeOptional(ctx, point, req);
  let target = ctx;
  let found = true;
  for (const key of TARGET_LOCATION[point]) {
    if (target !== null && typeof target === 'object' && Object.prototype.hasOwnProperty.call(target, key)) {
      target = target[key];
    } else {
      found = false;
      break;
    }
  }
  if (found) ctx.target = target;
  return deepFreeze(ctx);
}

// ---------------------------------------------------------------------------
// Verdict -> wire (mirror of src/wire/verdict.rs)
// ---------------------------------------------------------------------------

const DECISIONS = { allow: 'ALLOW', deny: 'DENY', transform: 'TRANSFORM' };

/**
 * Encodes a handler's result (a verdict, or response()) 1:1 without
 * validating it: the host validates (§5) and denies an invalid verdict with
 * `host_error:verdict_invalid`.
 */
function responseToWire(result) {
  let v = result;
  let extensions = {};
  if (result !== null && typeof result === 'object' && result[RESPONSE]) {
    v = result.verdict;
    extensions = result.extensions || {};
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new TypeError('a handler must return a verdict object');
  }
  const out = {
    decision: DECISIONS[v.decision] || 'DECISION_UNSPECIFIED',
    warnings: (v.warnings || []).map((w) => {
      const pw = {};
      if (present(w.reason)) pw.reason = w.reason;
      if (present(w.message)) pw.message = w.message;
      return pw;
    }),
    result_labels: [...(v.result_labels || [])],
  };
  if (present(v.reason)) out.reason = v.reason;
  if (present(v.message)) out.message = v.message;
  if (v.approval !== undefined) out.approval = { json: stringify(v.approval) };
  if (v.transform !== undefined) {
    const t = v.transform || {};
    out.transform = { path: t.path || '', value: { json: stringify(t.value === undefined ? null : t.value) } };
  }
  if (v.evidence !== undefined) out.evidence = { json: stringify(v.evidence) };
  const ext = {};
  for (const [k, x] of Object.entries(extensions)) ext[k] = { json: stringify(x) };
  return { verdict: out, extensions: ext };
}

// ---------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------

function loadService() {
  const definition = protoLoader.loadSync(PROTO_FILE, {
    includeDirs: [PROTO_ROOT],
    keepCase: true, // field names exactly as in the proto (and the spec)
    longs: String, // uint64 as decimal text, never a rounded number
    enums: String,
    defaults: false, // absent stays absent: presence matters (§4.5)
    oneofs: false,
  });
  return grpc.loadPackageDefinition(definition).hookwire.v1.Interceptor.service;
}

/**
 * Serves `service` until SIGTERM or SIGINT. Prints `PORT <n>` on stdout once
 * it accepts calls (`port` 0 picks a free port), then stops gracefully: new
 * calls are refused, calls in flight get `graceMs`.
 *
 * `service`: `{name, version, description, points, agentStartup(ctx),
 * input(ctx), preModelCall(ctx), postModelCall(ctx), preToolCall(ctx),
 * postToolCall(ctx), output(ctx), agentShutdown(ctx)}`; a missing method
 * allows, a method may be async. Each method also gets the grpc-js call as
 * a second argument: `call.getDeadline()` is the host's deadline (its
 * per-call timeout, sent as `grpc-timeout`); past it the host has denied
 * with `host_error:interceptor_timeout` and ignores the answer. `points`:
 * the point names to declare in Describe (empty or absent: all eight); a
 * host built with `HostBuilder::connect` binds the service at these points
 * only.
 */
function serve(service, { host = '127.0.0.1', port = 0, points, callLog, graceMs = 2000 } = {}) {
  const declared = points !== undefined ? points : service.points || [];
  const unknown = declared.filter((p) => !POINTS.includes(p));
  if (unknown.length) throw new Error(`unknown interception point(s): ${unknown.join(', ')}`);
  const definition = loadService();
  const implementation = {};
  for (const point of POINTS) {
    const handler = service[HANDLER[point]];
    implementation[RPC[point]] = async (call, callback) => {
      let reply;
      try {
        const ctx = contextFromRequest(point, call.request);
        if (callLog) fs.appendFileSync(callLog, `${stringify({ point, context: ctx })}\n`);
        const result = handler ? await handler.call(service, ctx, call) : allow();
        if (result === undefined || result === null) throw new TypeError('handler returned no verdict');
        reply = responseToWire(result);
      } catch (e) {
        // Only the error's name: a message may quote target content (§14).
        const name = e && typeof e === 'object' && typeof e.name === 'string' ? e.name : 'Error';
        callback({ code: grpc.status.INTERNAL, details: name });
        return;
      }
      callback(null, reply);
    };
  }
  implementation.Describe = (call, callback) => {
    callback(null, {
      name: service.name || 'node-interceptor',
      version: service.version || '0.0.0',
      spec: SPEC,
      points: declared.map((p) => p.toUpperCase()),
      description: service.description || '',
    });
  };
  const server = new grpc.Server({
    // The host bounds a context at 5 MiB (§12.3); grpc's default is 4.
    'grpc.max_receive_message_length': 8 * 1024 * 1024,
  });
  server.addService(definition, implementation);
  // grpc.health.v1 (recommended: operators and `hookwire check` probe it),
  // SERVING for the whole server and for the Interceptor service.
  const health = new HealthImplementation({
    '': 'SERVING',
    'hookwire.v1.Interceptor': 'SERVING',
  });
  health.addToServer(server);
  server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
    if (err) {
      process.stderr.write(`could not bind ${host}:${port}: ${err.message}\n`);
      process.exit(1);
    }
    process.stdout.write(`PORT ${bound}\n`);
  });
  const stop = () => {
    // Probes see NOT_SERVING while calls in flight drain.
    health.setStatus('', 'NOT_SERVING');
    health.setStatus('hookwire.v1.Interceptor', 'NOT_SERVING');
    setTimeout(() => {
      server.forceShutdown();
      process.exit(0);
    }, graceMs).unref();
    server.tryShutdown(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return server;
}

/** The options every example shares, for util.parseArgs. */
const OPTIONS = {
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '0' },
  points: { type: 'string' },
  'call-log': { type: 'string' },
};

/**
 * Parses the shared command line (`--host`, `--port`, `--points` as
 * comma-separated names or `all`, `--call-log`) plus `extra` options, and
 * returns `{serveOptions, values}`.
 */
function parseCommandLine(extra = {}, argv = process.argv.slice(2)) {
  const { values } = parseArgs({ args: argv, options: { ...OPTIONS, ...extra }, strict: true });
  let points;
  if (values.points !== undefined) {
    points = values.points === 'all' ? [] : values.points.split(',').map((p) => p.trim()).filter(Boolean);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port: not a port number');
  return { serveOptions: { host: values.host, port, points, callLog: values['call-log'] }, values };
}

/** Parses the shared command line and serves `service`. */
function main(service, extra = {}) {
  const { serveOptions } = parseCommandLine(extra);
  return serve(service, serveOptions);
}

module.exports = {
  SPEC,
  POINTS,
  TARGET_LOCATION,
  InvalidJson,
  InvalidContext,
  parse,
  stringify,
  rawJson,
  allow,
  deny,
  transform,
  warn,
  escalate,
  response,
  contextFromRequest,
  responseToWire,
  serve,
  parseCommandLine,
  main,
};
