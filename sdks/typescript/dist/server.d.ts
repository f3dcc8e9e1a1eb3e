/**
 * Serving a policy over gRPC (`@grpc/grpc-js`): the eight unary RPCs,
 * `Describe` (declaring the Multiplex stream), the Multiplex stream itself,
 * `grpc.health.v1` and a graceful stop.
 *
 * A policy is an {@link Interceptor}: subclass it and override the points
 * you decide on (`preToolCall`, `output`, …), or register hooks on an
 * instance with {@link Interceptor.hook}:
 *
 * ```ts
 * import { Interceptor, allow, deny, run } from '@hookwire/sdk';
 *
 * const policy = new Interceptor({ name: 'no-bash', version: '1.0.0' });
 * policy.hook('pre_tool_call', (ctx) =>
 *   ctx.tool_call?.name === 'bash' ? deny('policy:no_shell', 'no shell here') : allow());
 * await run(policy); // --host, --port, --points; prints PORT <n>
 * ```
 *
 * @module
 */
import { type Hook, type Logger, type Observer } from './dispatch.js';
import { type Point } from './points.js';
/** Largest request accepted: the host's 5 MiB context bound (§12.3) with room. */
export declare const MAX_MESSAGE_BYTES: number;
/** Calls at once on one connection. */
export declare const MAX_CONCURRENT_STREAMS = 256;
/** Milliseconds calls in flight get to finish on a graceful stop. */
export declare const DEFAULT_GRACE_MS = 5000;
/** What an {@link Interceptor} is, for `Describe`. */
export interface InterceptorOptions {
    /** Service name, e.g. `acme-egress-filter`. */
    name?: string;
    /** Service version (semver recommended). */
    version?: string;
    /** One line on what the service decides. */
    description?: string;
    /** The points `Describe` declares (undefined: those with a hook, or all eight when none or all have one). */
    points?: readonly string[];
}
/**
 * A policy: its manifest and one hook per point it decides on. A point
 * without a hook allows.
 */
export declare class Interceptor {
    /** Service name. */
    name: string;
    /** Service version. */
    version: string;
    /** One line on what the service decides. */
    description: string;
    /** The points `Describe` declares; undefined: derived from the hooks. */
    points: readonly string[] | undefined;
    private readonly registered;
    /** @param options the manifest's members (a subclass may set them as fields instead) */
    constructor(options?: InterceptorOptions);
    /** Registers `fn` as `point`'s hook; returns the policy, for chaining. */
    hook(point: Point, fn: Hook): this;
    /** Every point's hook: registered ones, then methods a subclass defines. */
    hooks(): Map<Point, Hook>;
    /** The points `Describe` declares (empty: all eight). */
    declaredPoints(): Point[];
}
/**
 * The `Describe` answer: name, version, spec, points, and the Multiplex
 * stream declared (the field and the older `hookwire` extension).
 */
export declare function manifest(policy: Interceptor, points?: readonly Point[], multiplex?: boolean): Record<string, unknown>;
/** How a {@link Server} serves. */
export interface ServerOptions {
    /** Address to bind (default `127.0.0.1`). */
    host?: string;
    /** Port to bind (default 0: any free port). */
    port?: number;
    /** The points `Describe` declares, overriding the policy's own ([]: all). */
    points?: readonly string[];
    /** Told of every decoded call before its hook runs (a call log). */
    observe?: Observer;
    /** Where failures are logged, by kind only (default: stderr). */
    log?: Logger;
    /**
     * Serve and declare the Multiplex stream (default true); false: the
     * unary RPCs only, so hosts call them (the stream is UNIMPLEMENTED).
     */
    multiplex?: boolean;
    /** Most emissions one Multiplex stream runs at once (default {@link MAX_IN_FLIGHT}). */
    maxInFlight?: number;
    /**
     * Serve on an owner-only Unix socket at this path instead of
     * `host`/`port` (0600, in a directory only this user can write to; see
     * `unix.ts`): a host on the same machine binds it as `unix:<path>`.
     */
    unix?: string;
}
/** A running service: bound with {@link Server.start}, stopped with {@link Server.stop}. */
export declare class Server {
    readonly policy: Interceptor;
    private readonly options;
    private readonly dispatch;
    private readonly described;
    private readonly health;
    private readonly streams;
    private grpc;
    private socket;
    private draining;
    /** The bound port, once started. */
    port: number;
    /**
     * @param policy the policy served
     * @param options where and how
     */
    constructor(policy: Interceptor, options?: ServerOptions);
    /** What a host binds: `http://HOST:PORT`, or `unix:<path>` on a Unix socket. */
    get endpoint(): string;
    /** Whether {@link Server.stop} began. */
    get isDraining(): boolean;
    /** Binds and starts serving; resolves to the bound port (0 on a Unix socket). */
    start(): Promise<number>;
    private unary;
    private multiplex;
    /**
     * Graceful stop: health turns NOT_SERVING, new calls are refused,
     * Multiplex streams stop reading and end once their emissions are
     * answered, and calls in flight get `graceMs` before they are cut.
     */
    stop(graceMs?: number): Promise<void>;
}
/** Serves `policy` until `signal` aborts, then stops gracefully; `onReady` gets the bound port. */
export declare function serve(policy: Interceptor, options?: ServerOptions & {
    signal?: AbortSignal;
    onReady?: (port: number) => void;
    graceMs?: number;
}): Promise<void>;
