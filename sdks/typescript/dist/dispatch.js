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
import { InvalidContext, contextFromRequest } from './context.js';
import { InvalidVerdict, allow, validateResponse } from './verdict.js';
import { responseToWire } from './wire.js';
/** An emission that gets no verdict: the status the host receives. */
export class Failure extends Error {
    code;
    /**
     * @param code the gRPC status code
     * @param message a short message naming the kind of failure, never payload
     */
    constructor(code, message) {
        super(message);
        this.code = code;
        this.name = 'Failure';
    }
}
/** The longest timer Node keeps (about 24.8 days); longer deadlines are capped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const errorName = (e) => e !== null && typeof e === 'object' && typeof e.name === 'string' ? e.name : typeof e;
/** Answers emissions for one policy: its hooks by point, the observer, the logger. */
export class Dispatch {
    hooks;
    observe;
    log;
    /**
     * @param hooks each point's hook (a point without one allows)
     * @param observe told of every decoded call
     * @param log where failures are logged, by kind only
     */
    constructor(hooks, observe, log) {
        this.hooks = hooks;
        this.observe = observe;
        this.log = log;
    }
    /**
     * The `InterceptorResponse` for one request, or a rejection with a
     * {@link Failure}.
     */
    async answer(point, request, options) {
        let ctx;
        try {
            ctx = contextFromRequest(point, request);
        }
        catch (e) {
            if (e instanceof InvalidContext)
                throw new Failure(status.INVALID_ARGUMENT, `invalid context: ${e.message}`);
            this.log(`hookwire: decoding a ${point} context failed (${errorName(e)}); answering INTERNAL`);
            throw new Failure(status.INTERNAL, 'invalid context');
        }
        if (this.observe !== undefined) {
            try {
                this.observe(point, ctx, options.transport);
            }
            catch (e) {
                this.log(`hookwire: the call observer failed (${errorName(e)}); answering INTERNAL`);
                throw new Failure(status.INTERNAL, 'observer failed');
            }
        }
        const hook = this.hooks.get(point);
        if (hook === undefined)
            return responseToWire(validateResponse(allow(), point));
        const result = await this.run(point, hook, ctx, options);
        try {
            return responseToWire(validateResponse(result, point));
        }
        catch (e) {
            const why = e instanceof InvalidVerdict ? e.message : errorName(e);
            this.log(`hookwire: the ${point} hook returned an invalid verdict (${why}); answering INTERNAL`);
            throw new Failure(status.INTERNAL, 'invalid verdict');
        }
    }
    run(point, hook, ctx, options) {
        const controller = new AbortController();
        const { timeoutMs, signal } = options;
        const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
        const info = {
            point,
            transport: options.transport,
            signal: controller.signal,
            deadline,
            timeRemaining: () => (deadline === undefined ? undefined : Math.max(0, deadline - Date.now())),
        };
        return new Promise((resolve, reject) => {
            let timer;
            const settle = () => {
                if (timer !== undefined)
                    clearTimeout(timer);
                signal?.removeEventListener('abort', onCancel);
            };
            const onCancel = () => {
                settle();
                controller.abort(new Failure(status.CANCELLED, 'cancelled by the host'));
                reject(new Failure(status.CANCELLED, 'cancelled by the host'));
            };
            if (signal?.aborted)
                return onCancel();
            signal?.addEventListener('abort', onCancel, { once: true });
            if (timeoutMs !== undefined) {
                timer = setTimeout(() => {
                    settle();
                    controller.abort(new Failure(status.DEADLINE_EXCEEDED, 'deadline exceeded'));
                    reject(new Failure(status.DEADLINE_EXCEEDED, 'deadline exceeded'));
                }, Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS));
            }
            new Promise((run) => run(hook(ctx, info))).then((value) => {
                settle();
                resolve(value);
            }, (e) => {
                settle();
                if (!controller.signal.aborted) {
                    this.log(`hookwire: the ${point} hook failed (${errorName(e)}); answering INTERNAL`);
                }
                reject(new Failure(status.INTERNAL, 'hook failed'));
            });
        });
    }
}
