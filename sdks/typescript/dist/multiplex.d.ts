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
import { type ServerDuplexStream } from '@grpc/grpc-js';
import type { Wire } from './context.js';
import { type Dispatch } from './dispatch.js';
/** Most emissions one stream has in flight, the host's own bound. */
export declare const MAX_IN_FLIGHT = 1024;
type Call = ServerDuplexStream<Wire, Wire>;
/** One `Multiplex` call: reads requests, runs emissions, writes answers. */
export declare class MultiplexStream {
    private readonly dispatch;
    private readonly call;
    private readonly maxInFlight;
    private readonly running;
    private readonly waiting;
    private closed;
    private draining;
    /**
     * @param dispatch answers each emission
     * @param call the grpc-js duplex call
     * @param maxInFlight the bound on emissions running at once
     */
    constructor(dispatch: Dispatch, call: Call, maxInFlight?: number);
    /** Starts reading; the stream then runs to its end on its own. */
    serve(): void;
    /** Stops reading; ends the stream once the emissions in flight are answered. */
    drain(): void;
    private endIfDrained;
    /** The end of the stream: every emission still running is cancelled. */
    private finish;
    private write;
    private error;
    private handle;
    private start;
    private answered;
    private makeRoom;
}
export {};
