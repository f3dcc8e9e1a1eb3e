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

import {
  Server as GrpcServer,
  ServerCredentials,
  status,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';

import type { Wire } from './context.js';
import { Dispatch, Failure, type Hook, type Logger, type Observer } from './dispatch.js';
import { stringify } from './json.js';
import { MAX_IN_FLIGHT, MultiplexStream } from './multiplex.js';
import { HOOK_METHOD, POINTS, RPC, SPEC, checkPoints, type Point } from './points.js';
import { interceptorService } from './proto.js';
import { OwnerSocket } from './unix.js';

/** Largest request accepted: the host's 5 MiB context bound (§12.3) with room. */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
/** Calls at once on one connection. */
export const MAX_CONCURRENT_STREAMS = 256;
/** Milliseconds calls in flight get to finish on a graceful stop. */
export const DEFAULT_GRACE_MS = 5000;

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
export class Interceptor {
  /** Service name. */
  name = 'node-interceptor';
  /** Service version. */
  version = '0.0.0';
  /** One line on what the service decides. */
  description = '';
  /** The points `Describe` declares; undefined: derived from the hooks. */
  points: readonly string[] | undefined = undefined;
  private readonly registered = new Map<Point, Hook>();

  /** @param options the manifest's members (a subclass may set them as fields instead) */
  constructor(options: InterceptorOptions = {}) {
    if (options.name !== undefined) this.name = options.name;
    if (options.version !== undefined) this.version = options.version;
    if (options.description !== undefined) this.description = options.description;
    if (options.points !== undefined) this.points = checkPoints(options.points);
  }

  /** Registers `fn` as `point`'s hook; returns the policy, for chaining. */
  hook(point: Point, fn: Hook): this {
    checkPoints([point]);
    this.registered.set(point, fn);
    return this;
  }

  /** Every point's hook: registered ones, then methods a subclass defines. */
  hooks(): Map<Point, Hook> {
    const found = new Map(this.registered);
    for (const point of POINTS) {
      const method = (this as unknown as Record<string, unknown>)[HOOK_METHOD[point]];
      if (!found.has(point) && typeof method === 'function') found.set(point, (method as Hook).bind(this));
    }
    return found;
  }

  /** The points `Describe` declares (empty: all eight). */
  declaredPoints(): Point[] {
    if (this.points !== undefined) return checkPoints(this.points);
    const hooked = this.hooks();
    return hooked.size < POINTS.length ? POINTS.filter((p) => hooked.has(p)) : [];
  }
}

/**
 * The `Describe` answer: name, version, spec, points, and the Multiplex
 * stream declared (the field and the older `hookwire` extension).
 */
export function manifest(policy: Interceptor, points?: readonly Point[], multiplex = true): Record<string, unknown> {
  const described: Record<string, unknown> = {
    name: policy.name,
    version: policy.version,
    spec: SPEC,
    points: (points ?? policy.declaredPoints()).map((p) => p.toUpperCase()),
    description: policy.description,
  };
  if (multiplex) {
    described.extensions = { hookwire: { json: stringify({ multiplex: 1 }) } };
    described.multiplex_version = 1;
  }
  return described;
}

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

const stderrLog: Logger = (line) => process.stderr.write(`${line}\n`);

/** A running service: bound with {@link Server.start}, stopped with {@link Server.stop}. */
export class Server {
  private readonly dispatch: Dispatch;
  private readonly described: Record<string, unknown>;
  private readonly health = new HealthImplementation({ '': 'SERVING', 'hookwire.v1.Interceptor': 'SERVING' });
  private readonly streams = new Set<MultiplexStream>();
  private grpc: GrpcServer | undefined;
  private socket: OwnerSocket | undefined;
  private draining = false;
  /** The bound port, once started. */
  port = 0;

  /**
   * @param policy the policy served
   * @param options where and how
   */
  constructor(
    readonly policy: Interceptor,
    private readonly options: ServerOptions = {},
  ) {
    const points = options.points === undefined ? undefined : checkPoints(options.points);
    this.described = manifest(policy, points, options.multiplex ?? true);
    this.dispatch = new Dispatch(policy.hooks(), options.observe, options.log ?? stderrLog);
    if (options.unix !== undefined) this.socket = new OwnerSocket(options.unix);
  }

  /** What a host binds: `http://HOST:PORT`, or `unix:<path>` on a Unix socket. */
  get endpoint(): string {
    if (this.socket !== undefined) return `unix:${this.socket.path}`;
    return `http://${this.options.host ?? '127.0.0.1'}:${this.port}`;
  }

  /** Whether {@link Server.stop} began. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Binds and starts serving; resolves to the bound port (0 on a Unix socket). */
  async start(): Promise<number> {
    if (this.grpc !== undefined) throw new Error('the server is already started');
    const server = new GrpcServer({
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
    });
    const implementation: UntypedServiceImplementation = {};
    for (const point of POINTS) implementation[RPC[point]] = this.unary(point);
    implementation.Describe = (_call: unknown, callback: sendUnaryData<Wire>) => callback(null, this.described);
    if (this.options.multiplex ?? true) {
      implementation.Multiplex = (call: ServerDuplexStream<Wire, Wire>) => this.multiplex(call);
    }
    server.addService(interceptorService(), implementation);
    this.health.addToServer(server);
    const socket = this.socket;
    const address =
      socket === undefined ? `${this.options.host ?? '127.0.0.1'}:${this.options.port ?? 0}` : `unix:${await socket.stage()}`;
    try {
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync(address, ServerCredentials.createInsecure(), (err, port) =>
          err ? reject(new Error(`could not bind ${address}: ${err.message}`)) : resolve(port),
        ),
      );
      socket?.place();
      this.port = socket === undefined ? port : 0;
    } catch (e) {
      server.forceShutdown();
      socket?.remove();
      throw e;
    }
    this.grpc = server;
    return this.port;
  }

  private unary(point: Point) {
    return (call: ServerUnaryCall<Wire, Wire>, callback: sendUnaryData<Wire>): void => {
      const cancel = new AbortController();
      call.once('cancelled', () => cancel.abort());
      const deadline = call.getDeadline();
      const at = deadline instanceof Date ? deadline.getTime() : deadline;
      const timeoutMs = Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
      this.dispatch.answer(point, call.request, { timeoutMs, transport: 'unary', signal: cancel.signal }).then(
        (response) => callback(null, response),
        (e: unknown) => {
          const f = e instanceof Failure ? e : new Failure(status.INTERNAL, 'hook failed');
          callback({ code: f.code, details: f.message });
        },
      );
    };
  }

  private multiplex(call: ServerDuplexStream<Wire, Wire>): void {
    const stream = new MultiplexStream(this.dispatch, call, this.options.maxInFlight ?? MAX_IN_FLIGHT);
    if (this.draining) {
      call.end();
      return;
    }
    this.streams.add(stream);
    const forget = (): void => void this.streams.delete(stream);
    call.once('finish', forget);
    call.once('close', forget);
    call.once('cancelled', forget);
    stream.serve();
  }

  /**
   * Graceful stop: health turns NOT_SERVING, new calls are refused,
   * Multiplex streams stop reading and end once their emissions are
   * answered, and calls in flight get `graceMs` before they are cut.
   */
  async stop(graceMs = DEFAULT_GRACE_MS): Promise<void> {
    const server = this.grpc;
    if (server === undefined) return;
    this.grpc = undefined;
    this.draining = true;
    this.health.setStatus('', 'NOT_SERVING');
    this.health.setStatus('hookwire.v1.Interceptor', 'NOT_SERVING');
    for (const stream of this.streams) stream.drain();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, graceMs);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.socket?.remove();
  }
}

/** Serves `policy` until `signal` aborts, then stops gracefully; `onReady` gets the bound port. */
export async function serve(
  policy: Interceptor,
  options: ServerOptions & { signal?: AbortSignal; onReady?: (port: number) => void; graceMs?: number } = {},
): Promise<void> {
  const server = new Server(policy, options);
  const port = await server.start();
  options.onReady?.(port);
  await new Promise<void>((resolve) => {
    if (options.signal === undefined) return; // forever
    if (options.signal.aborted) resolve();
    else options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.stop(options.graceMs);
}
