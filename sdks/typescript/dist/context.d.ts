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
import { type Json } from './json.js';
import { type Point } from './points.js';
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
    readonly agent: {
        readonly id: string;
        readonly framework: string;
        readonly [k: string]: unknown;
    };
    /** The run or conversation. */
    readonly session: {
        readonly id: string;
        readonly turn?: number | bigint;
        readonly [k: string]: unknown;
    };
    /** At `input` (§4.2): what enters the loop and who sent it. */
    readonly input?: InputMember;
    /** At `output` (§4.2): the final answer leaving the loop. */
    readonly output?: OutputMember;
    /** At the tool points. */
    readonly tool_call?: ToolCallMember;
    /** At `post_tool_call`. */
    readonly tool_result?: {
        readonly value?: Json;
        readonly is_error: boolean;
        readonly [k: string]: unknown;
    };
    /** `<namespace>` → JSON (§4.6). */
    readonly extensions?: {
        readonly [ns: string]: Json;
    };
    /** Every other member, as §4 names it. */
    readonly [member: string]: unknown;
}
/** A request that does not carry a well-formed context. */
export declare class InvalidContext extends Error {
    /** @param message the member at fault, never its value */
    constructor(message: string);
}
/** A protobuf message as `@grpc/proto-loader` decodes it. */
export type Wire = Record<string, any>;
/**
 * The spec-shaped AgentContext (§4) of one request, with `target` rebuilt
 * from the point's target field (the same object, §4.3); throws
 * {@link InvalidContext}.
 */
export declare function contextFromRequest(point: Point, req: Wire): AgentContext;
