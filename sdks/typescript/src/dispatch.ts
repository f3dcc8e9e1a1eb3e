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

import { InvalidContext, contextFromRequest, type AgentContext, type Wire } from './context.js';
import type { Point } from './points.js';
import { InvalidVerdict, Response, allow, validateResponse, type Verdict } from './verdict.js';
import { responseToWire } from './wire.js';

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
export class Failure extends Error {
  /**
   * @param code the gRPC status code
   * @param message a short message naming the kind of failure, never payload
   */
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = 'Failure';
  }
}

/** The longest timer Node keeps (about 24.8 days); longer deadlines are capped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Options of one {@link Dispatch.answer}. */
export interface AnswerOptions {
  /** Milliseconds the host waits, from now; undefined: unbounded. */
  readonly timeoutMs: number | undefined;
  /** How the emission came. */
  readonly transport: Transport;
  /** Aborted when the host cancels the emission (or the call breaks). */
  readonly signal?: AbortSignal;
}

const errorName = (e: unknown): string =>
  e !== null && typeof e === 'object' && typeof (e as Error).name === 'string' ? (e as Error).name : typeof e;

/** Answers emissions for one policy: its hooks by point, the observer, the logger. */
export class Dispatch {
  /**
   * @param hooks each point's hook (a point without one allows)
   * @param observe told of every decoded call
   * @param log where failures are logged, by kind only
   */
  constructor(
    private readonly hooks: ReadonlyMap<Point, Hook>,
    private readonly observe: Observer | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * The `InterceptorResponse` for one request, or a rejection with a
   * {@link Failure}.
   */
  async answer(point: Point, request: Wire, options: AnswerOptions): Promise<Record<string, unknown>> {
    let ctx: AgentContext;
    try {
      ctx = contextFromRequest(point, request);
    } catch (e) {
      if (e instanceof InvalidContext) throw new Failure(status.INVALID_ARGUMENT, `invalid context: ${e.message}`);
      this.log(`hookwire: decoding a ${point} context failed (${errorName(e)}); answering INTERNAL`);
      throw new Failure(status.INTERNAL, 'invalid context');
    }
    if (this.observe !== undefined) {
      try {
        this.observe(point, ctx, options.transport);
      } catch (e) {
        this.log(`hookwire: the call observer failed (${errorName(e)}); answering INTERNAL`);
        throw new Failure(status.INTERNAL, 'observer failed');
      }
    }
    const hook = this.hooks.get(point);
    if (hook === undefined) return responseToWire(validateResponse(allow(), point));
    const result = await this.run(point, hook, ctx, options);
    try {
      return responseToWire(validateResponse(result, point));
    } catch (e) {
      const why = e instanceof InvalidVerdict ? e.message : errorName(e);
      this.log(`hookwire: the ${point} hook returned an invalid verdict (${why}); answering INTERNAL`);
      throw new Failure(status.INTERNAL, 'invalid verdict');
    }
  }

  private run(point: Point, hook: Hook, ctx: AgentContext, options: AnswerOptions): Promise<unknown> {
    const controller = new AbortController();
    const { timeoutMs, signal } = options;
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const info: CallInfo = {
      point,
      transport: options.transport,
      signal: controller.signal,
      deadline,
      timeRemaining: () => (deadline === undefined ? undefined : Math.max(0, deadline - Date.now())),
    };
    return new Promise<unknown>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onCancel);
      };
      const onCancel = (): void => {
        settle();
        controller.abort(new Failure(status.CANCELLED, 'cancelled by the host'));
        reject(new Failure(status.CANCELLED, 'cancelled by the host'));
      };
      if (signal?.aborted) return onCancel();
      signal?.addEventListener('abort', onCancel, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          settle();
          controller.abort(new Failure(status.DEADLINE_EXCEEDED, 'deadline exceeded'));
          reject(new Failure(status.DEADLINE_EXCEEDED, 'deadline exceeded'));
        }, Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS));
      }
      new Promise<unknown>((run) => run(hook(ctx, info))).then(
        (value) => {
          settle();
          resolve(value);
        },
        (e: unknown) => {
          settle();
          if (!controller.signal.aborted) {
            this.log(`hookwire: the ${point} hook failed (${errorName(e)}); answering INTERNAL`);
          }
          reject(new Failure(status.INTERNAL, 'hook failed'));
        },
      );
    });
  }
}
