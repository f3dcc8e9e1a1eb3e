/**
 * The request of one point turned into the spec-shaped AgentContext
 * (AGENT-HOOKS-0.1 §4): the mirror of the Rust host's `src/wire/context.rs`.
 *
 * Every `JsonValue` is parsed exactly ({@link parse}); a member carried in
 * the wrong field, a missing required member or JSON the host would refuse
 * is an {@link InvalidContext}, which the server answers `INVALID_ARGUMENT`
 * naming the member, never its value. The result is deep-frozen: a policy
 * builds new values instead of editing the context.
 *
 * @module
 */

import { InvalidJson, defineMember, parse, type Json } from './json.js';
import { TARGET_LOCATION, type Point } from './points.js';

/** `tool_call` at the tool points (§4.2). */
export interface ToolCallMember {
  /** Pairs the pre and post emission of one call. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The arguments, a JSON object. */
  readonly args?: Json;
  /** `sha256:<hex>`, host-opaque. */
  readonly content_hash?: string;
}

/** The `input` member (§4.2): the message and its sender. */
export interface InputMember {
  /** Who sent it. */
  readonly role: 'user' | 'system' | 'external';
  /** The message (text or structured): the target a transform rewrites. */
  readonly content: Json;
}

/** The `output` member (§4.2): the answer the agent is about to return. */
export interface OutputMember {
  /** The answer (text or structured): the target a transform rewrites. */
  readonly content: Json;
}

/**
 * An AgentContext (§4): the spec JSON, `target` included (rebuilt from the
 * point's target field, the same object). Integers beyond ±(2^53 − 1) are
 * `bigint`s, `sequence` and `session.turn` included.
 */
export interface AgentContext {
  /** The contract version the host targets. */
  readonly spec: string;
  /** The point this context is emitted at. */
  readonly interception_point: Point;
  /** The point's target (§4.3), the value a transform rewrites. */
  readonly target?: Json;
  /** RFC 3339 instant at which the host built the context. */
  readonly timestamp: string;
  /** Strictly increasing within the session, 0 at `agent_startup`. */
  readonly sequence: number | bigint;
  /** The agent definition. */
  readonly agent: { readonly id: string; readonly framework: string; readonly [k: string]: unknown };
  /** The run or conversation. */
  readonly session: { readonly id: string; readonly turn?: number | bigint; readonly [k: string]: unknown };
  /** At `input` (§4.2): what enters the loop and who sent it. */
  readonly input?: InputMember;
  /** At `output` (§4.2): the final answer leaving the loop. */
  readonly output?: OutputMember;
  /** At the tool points. */
  readonly tool_call?: ToolCallMember;
  /** At `post_tool_call`. */
  readonly tool_result?: { readonly value?: Json; readonly is_error: boolean; readonly [k: string]: unknown };
  /** `<namespace>` → JSON (§4.6). */
  readonly extensions?: { readonly [ns: string]: Json };
  /** Every other member, as §4 names it. */
  readonly [member: string]: unknown;
}

/** A request that does not carry a well-formed context. */
export class InvalidContext extends Error {
  /** @param message the member at fault, never its value */
  constructor(message: string) {
    super(message);
    this.name = 'InvalidContext';
  }
}

/** A protobuf message as `@grpc/proto-loader` decodes it. */
export type Wire = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const AGENT_FIELDS = ['id', 'framework', 'name', 'version'];
const SESSION_FIELDS = ['id', 'started_at', 'turn'];
const TRACE_FIELDS = ['trace_id', 'span_id'];
const TENANT_FIELDS = ['id', 'name'];
const ACTOR_FIELDS = ['id', 'kind'];
const MODEL_FIELDS = ['id', 'vendor', 'params'];
const TOOL_RESULT_FIELDS = ['value', 'is_error', 'duration_ms'];
const COMMON_MEMBERS = [
  'spec', 'interception_point', 'target', 'timestamp', 'sequence', 'agent', 'session',
  'messages', 'trace', 'tenant', 'actor', 'budgets', 'extensions',
];
const POINT_MEMBERS: Record<Point, string[]> = {
  agent_startup: ['agent_init'],
  input: ['input'],
  pre_model_call: ['model', 'request_id', 'tools', 'usage'],
  post_model_call: ['model', 'response', 'request_id', 'tools', 'usage'],
  pre_tool_call: ['tool_call'],
  post_tool_call: ['tool_call', 'tool_result'],
  output: ['output'],
  agent_shutdown: ['summary'],
};
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const present = (v: unknown): boolean => v !== undefined && v !== null;

function json(member: string, jv: Wire): Json {
  try {
    return parse(typeof jv.json === 'string' ? jv.json : '');
  } catch (e) {
    if (e instanceof InvalidJson) throw new InvalidContext(`${member}: ${e.message}`);
    throw e;
  }
}

/** A uint64 (decoded as decimal text): a number, or a bigint beyond 2^53 − 1. */
function uint64(s: unknown): number | bigint {
  const big = BigInt(s === undefined || s === null ? '0' : String(s));
  return big <= SAFE ? Number(big) : big;
}

function additional(parent: string, entries: Wire | undefined, typed: string[]): Record<string, unknown> {
  const obj: Record<string, unknown> = {};
  for (const [k, jv] of Object.entries(entries ?? {})) {
    if (typed.includes(k)) throw new InvalidContext(`${parent}.${k}: carried in its typed field`);
    defineMember(obj, k, json(parent, jv as Wire));
  }
  return obj;
}

function putJson(obj: Record<string, unknown>, key: string, jv: Wire | undefined): void {
  if (present(jv)) defineMember(obj, key, json(key, jv as Wire));
}

function putStr(obj: Record<string, unknown>, key: string, s: unknown): void {
  if (present(s)) obj[key] = s;
}

function openObject(name: string, msg: Wire, fields: string[]): Record<string, unknown> {
  const obj = additional(name, msg.additional, fields);
  for (const f of fields) putStr(obj, f, msg[f]);
  return obj;
}

function core(ctx: Record<string, unknown>, req: Wire): void {
  const c = req.core as Wire | undefined;
  if (!present(c)) throw new InvalidContext('core: present');
  ctx.spec = c!.spec ?? '';
  ctx.timestamp = c!.timestamp ?? '';
  ctx.sequence = uint64(c!.sequence);
  if (!present(c!.agent)) throw new InvalidContext('agent: present');
  const a = c!.agent as Wire;
  const agent = additional('agent', a.additional, AGENT_FIELDS);
  agent.id = a.id ?? '';
  agent.framework = a.framework ?? '';
  putStr(agent, 'name', a.name);
  putStr(agent, 'version', a.version);
  ctx.agent = agent;
  if (!present(c!.session)) throw new InvalidContext('session: present');
  const s = c!.session as Wire;
  const session = additional('session', s.additional, SESSION_FIELDS);
  session.id = s.id ?? '';
  putStr(session, 'started_at', s.started_at);
  if (present(s.turn)) session.turn = uint64(s.turn);
  ctx.session = session;
}

function model(ctx: Record<string, unknown>, req: Wire): void {
  const m = req.model as Wire | undefined;
  if (!present(m)) throw new InvalidContext('model: present');
  const out = additional('model', m!.additional, MODEL_FIELDS);
  out.id = m!.id ?? '';
  putStr(out, 'vendor', m!.vendor);
  putJson(out, 'params', m!.params);
  ctx.model = out;
  const mc = req.model_call as Wire | undefined;
  if (present(mc)) {
    putStr(ctx, 'request_id', mc!.request_id);
    putJson(ctx, 'tools', mc!.tools);
    putJson(ctx, 'usage', mc!.usage);
  }
}

function toolCall(ctx: Record<string, unknown>, req: Wire, point: Point): void {
  const c = req.tool_call as Wire | undefined;
  if (!present(c)) throw new InvalidContext('tool_call: present');
  const call: Record<string, unknown> = { id: c!.id ?? '', name: c!.name ?? '' };
  putJson(call, 'args', c!.args);
  putStr(call, 'content_hash', c!.content_hash);
  ctx.tool_call = call;
  if (point !== 'post_tool_call') return;
  const r = req.tool_result as Wire | undefined;
  if (!present(r)) throw new InvalidContext('tool_result: present');
  const result = additional('tool_result', r!.additional, TOOL_RESULT_FIELDS);
  putJson(result, 'value', r!.value);
  result.is_error = r!.is_error === true;
  putJson(result, 'duration_ms', r!.duration_ms);
  ctx.tool_result = result;
}

function optional(ctx: Record<string, unknown>, point: Point, req: Wire): void {
  const o = req.optional as Wire | undefined;
  if (!present(o)) return;
  if (present(o!.messages)) {
    if (point === 'pre_model_call') throw new InvalidContext('messages: carried in PreModelCallRequest.messages');
    putJson(ctx, 'messages', o!.messages);
  }
  if (present(o!.trace)) ctx.trace = openObject('trace', o!.trace, TRACE_FIELDS);
  if (present(o!.tenant)) ctx.tenant = openObject('tenant', o!.tenant, TENANT_FIELDS);
  if (present(o!.actor)) ctx.actor = openObject('actor', o!.actor, ACTOR_FIELDS);
  putJson(ctx, 'budgets', o!.budgets);
  if (present(o!.extensions) && Object.keys(o!.extensions).length) {
    ctx.extensions = additional('extensions', o!.extensions, []);
  }
  const typed = COMMON_MEMBERS.concat(POINT_MEMBERS[point]);
  for (const [k, jv] of Object.entries((o!.additional ?? {}) as Wire)) {
    // An empty `extensions` object has no presence of its own in a map
    // field: it travels here, and only as `{}`.
    const emptyExtensions = k === 'extensions' && !('extensions' in ctx);
    if (typed.includes(k) && !emptyExtensions) throw new InvalidContext(`${k}: carried in its typed field`);
    const v = json(k, jv as Wire);
    if (emptyExtensions && (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length)) {
      throw new InvalidContext('extensions: only an empty object travels in additional');
    }
    defineMember(ctx, k, v);
  }
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/**
 * The spec-shaped AgentContext (§4) of one request, with `target` rebuilt
 * from the point's target field (the same object, §4.3); throws
 * {@link InvalidContext}.
 */
export function contextFromRequest(point: Point, req: Wire): AgentContext {
  const ctx: Record<string, unknown> = { interception_point: point };
  core(ctx, req);
  switch (point) {
    case 'agent_startup':
      putJson(ctx, 'agent_init', req.agent_init);
      break;
    case 'input':
      putJson(ctx, 'input', req.input);
      break;
    case 'pre_model_call':
      model(ctx, req);
      putJson(ctx, 'messages', req.messages);
      break;
    case 'post_model_call':
      model(ctx, req);
      putJson(ctx, 'response', req.response);
      break;
    case 'pre_tool_call':
    case 'post_tool_call':
      toolCall(ctx, req, point);
      break;
    case 'output':
      putJson(ctx, 'output', req.output);
      break;
    case 'agent_shutdown':
      putJson(ctx, 'summary', req.summary);
      break;
  }
  optional(ctx, point, req);
  let target: unknown = ctx;
  for (const key of TARGET_LOCATION[point]) {
    if (target === null || typeof target !== 'object' || !Object.prototype.hasOwnProperty.call(target, key)) {
      return deepFreeze(ctx) as unknown as AgentContext; // no target field: the host never sends such a context
    }
    target = (target as Record<string, unknown>)[key];
  }
  ctx.target = target;
  return deepFreeze(ctx) as unknown as AgentContext;
}
