/**
 * One emission answered, the same way for the unary RPCs and the Multiplex
 * stream: decode the context, run the policy's hook under the emission's
 * deadline and cancellation, validate its verdict (§5) and encode it.
 *
 * Every failure is a {@link Failure} carrying the gRPC status the host turns
 * into its fail-closed `host_error:*` deny: an invalid context is
 * `INVALID_ARGUMENT` (naming the member, never its value), a throwing or
 * rejecting hook or an invalid verdict `INTERNAL` with a fixed message (the
 * error's text may quote the payload, so only its name is logged), a passed
 * deadline `DEADLINE_EXCEEDED`, a cancelled emission `CANCELLED`.
 *
 * Node runs hooks on one thread: a hook that computes synchronously for long
 * holds every other call back. Keep hooks short, or `await` slow work and
 * watch `call.signal`.
 *
 * @module
 */
import { status } from '@grpc/grpc-js';
import { type AgentContext, type Wire } from './context.js';
import type { Point } from './points.js';
import { Response, type Verdict } from './verdict.js';
/** How an emission reached the service. */
export type Transport = 'unary' | 'multiplex';
/** What a hook learns about the call it decides, beside the context. */
export interface CallInfo {
    /** The point decided. */
    readonly point: Point;
    /** `unary` or `multiplex`. */
    readonly transport: Transport;
    /**
     * Aborted when the host gives up on the emission: its deadline passed or
     * the host cancelled it (an answer sent after that is discarded).
     */
    readonly signal: AbortSignal;
    /** The host's deadline (`Date.now()` milliseconds), or undefined without one. */
    readonly deadline: number | undefined;
    /** Milliseconds left before the deadline (never negative), or undefined without one. */
    timeRemaining(): number | undefined;
}
/** A point's hook: the verdict (or {@link Response}) for one context, directly or as a promise. */
export type Hook = (ctx: AgentContext, call: CallInfo) => Verdict | Response | Promise<Verdict | Response>;
/** Told of every call whose context decoded, before its hook runs (a call log). */
export type Observer = (point: Point, ctx: AgentContext, transport: Transport) => void;
/** Where the package's own log lines go (never payload). */
export type Logger = (line: string) => void;
/** An emission that gets no verdict: the status the host receives. */
export declare class Failure extends Error {
    readonly code: status;
    /**
     * @param code the gRPC status code
     * @param message a short message naming the kind of failure, never payload
     */
    constructor(code: status, message: string);
}
/** Options of one {@link Dispatch.answer}. */
export interface AnswerOptions {
    /** Milliseconds the host waits, from now; undefined: unbounded. */
    readonly timeoutMs: number | undefined;
    /** How the emission came. */
    readonly transport: Transport;
    /** Aborted when the host cancels the emission (or the call breaks). */
    readonly signal?: AbortSignal;
}
/** Answers emissions for one policy: its hooks by point, the observer, the logger. */
export declare class Dispatch {
    private readonly hooks;
    private readonly observe;
    private readonly log;
    /**
     * @param hooks each point's hook (a point without one allows)
     * @param observe told of every decoded call
     * @param log where failures are logged, by kind only
     */
    constructor(hooks: ReadonlyMap<Point, Hook>, observe: Observer | undefined, log: Logger);
    /**
     * The `InterceptorResponse` for one request, or a rejection with a
     * {@link Failure}.
     */
    answer(point: Point, request: Wire, options: AnswerOptions): Promise<Record<string, unknown>>;
    private run;
}
