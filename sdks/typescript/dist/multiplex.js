/**
 * The `Multiplex` stream served (a hookwire extension): the emissions of
 * many sessions over one long-lived stream, with the Rust SDK's semantics
 * (`server/src/multiplex.rs`):
 *
 * - every id is answered exactly once, in any order: a response, or an
 *   error outcome where the unary RPC would have answered a status;
 * - **its deadline**, from receipt (`timeout_ms`; 0 is unbounded), after
 *   which it answers `DEADLINE_EXCEEDED` and its hook's signal aborts;
 * - **cancellation**: the host's `cancel` aborts its hook's signal and
 *   answers `CANCELLED` at once; an id already in flight is
 *   `ALREADY_EXISTS`, a message without a body `INVALID_ARGUMENT`;
 * - **no ordering**: each emission starts when its request is read;
 * - **bounded**: at most {@link MAX_IN_FLIGHT} run at once; at the bound,
 *   cancellations are still read, but an emission read then waits for room
 *   and the stream is not read further until one ends (HTTP/2 flow control
 *   then holds the host back);
 * - the host closing its side, or the stream breaking, cancels every
 *   emission still running; a draining server stops reading and ends the
 *   stream once the emissions in flight are answered.
 *
 * @module
 */
import { status } from '@grpc/grpc-js';
import { Failure } from './dispatch.js';
import { isPoint } from './points.js';
/** Most emissions one stream has in flight, the host's own bound. */
export const MAX_IN_FLIGHT = 1024;
/** One `Multiplex` call: reads requests, runs emissions, writes answers. */
export class MultiplexStream {
    dispatch;
    call;
    maxInFlight;
    running = new Map();
    waiting = [];
    closed = false;
    draining = false;
    /**
     * @param dispatch answers each emission
     * @param call the grpc-js duplex call
     * @param maxInFlight the bound on emissions running at once
     */
    constructor(dispatch, call, maxInFlight = MAX_IN_FLIGHT) {
        this.dispatch = dispatch;
        this.call = call;
        this.maxInFlight = maxInFlight;
    }
    /** Starts reading; the stream then runs to its end on its own. */
    serve() {
        this.call.on('data', (m) => this.handle(m));
        // The host closed its side: nothing more will be asked.
        this.call.on('end', () => this.finish());
        this.call.on('error', () => this.finish());
        this.call.on('cancelled', () => this.finish());
    }
    /** Stops reading; ends the stream once the emissions in flight are answered. */
    drain() {
        if (this.closed || this.draining)
            return;
        this.draining = true;
        this.call.pause();
        this.waiting.length = 0;
        this.endIfDrained();
    }
    endIfDrained() {
        if (this.draining && this.running.size === 0 && !this.closed) {
            this.closed = true;
            this.call.end();
        }
    }
    /** The end of the stream: every emission still running is cancelled. */
    finish() {
        if (this.closed)
            return;
        this.closed = true;
        for (const controller of this.running.values())
            controller.abort();
        this.running.clear();
        this.waiting.length = 0;
        try {
            this.call.end();
        }
        catch {
            // Already broken: nothing left to tell the host.
        }
    }
    write(message) {
        if (!this.closed)
            this.call.write(message);
    }
    error(id, code, message) {
        this.write({ id, error: { code, message } });
    }
    handle(message) {
        if (this.closed || this.draining)
            return;
        const id = String(message.id ?? '0');
        const body = message.body;
        if (body === 'cancel') {
            const controller = this.running.get(id);
            if (controller !== undefined) {
                this.running.delete(id);
                controller.abort();
                this.error(id, status.CANCELLED, 'cancelled by the host');
                this.makeRoom();
            }
            else {
                const i = this.waiting.findIndex((p) => p.id === id);
                if (i >= 0) {
                    this.waiting.splice(i, 1);
                    this.error(id, status.CANCELLED, 'cancelled by the host');
                }
            }
            return;
        }
        if (!isPoint(body) || message[body] === undefined || message[body] === null) {
            this.error(id, status.INVALID_ARGUMENT, 'a stream message without a body');
            return;
        }
        if (this.running.has(id) || this.waiting.some((p) => p.id === id)) {
            this.error(id, status.ALREADY_EXISTS, 'request id already in flight on this stream');
            return;
        }
        if (this.running.size >= this.maxInFlight) {
            // At the bound: this one waits for room, and the stream is not read further.
            this.waiting.push({ id, message });
            this.call.pause();
            return;
        }
        this.start(id, message);
    }
    start(id, message) {
        const point = message.body;
        const controller = new AbortController();
        this.running.set(id, controller);
        const timeout = Number(message.timeout_ms ?? 0);
        const timeoutMs = timeout > 0 ? timeout : undefined;
        this.dispatch.answer(point, message[point], { timeoutMs, transport: 'multiplex', signal: controller.signal }).then((response) => this.answered(id, controller, { id, response }), (e) => {
            const f = e instanceof Failure ? e : new Failure(status.INTERNAL, 'hook failed');
            this.answered(id, controller, { id, error: { code: f.code, message: f.message } });
        });
    }
    answered(id, controller, answer) {
        // Answered only while still ours: a cancel answered it already.
        if (this.running.get(id) !== controller)
            return;
        this.running.delete(id);
        this.write(answer);
        this.makeRoom();
        this.endIfDrained();
    }
    makeRoom() {
        while (!this.closed && this.running.size < this.maxInFlight && this.waiting.length) {
            const next = this.waiting.shift();
            this.start(next.id, next.message);
        }
        if (!this.closed && !this.draining && this.waiting.length === 0 && this.call.isPaused())
            this.call.resume();
    }
}
