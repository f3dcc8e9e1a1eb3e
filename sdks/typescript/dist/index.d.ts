/**
 * hookwire for Node.js: write an AGENT-HOOKS-0.1 interceptor as a gRPC
 * service a hookwire host binds, unary or over the Multiplex stream.
 *
 * The public surface: {@link Interceptor} (subclass or `hook()` API),
 * {@link Server}/{@link serve}/{@link run} to serve it, the verdict builders
 * {@link allow}, {@link deny}, {@link transform}, {@link warn},
 * {@link escalate} and {@link Response}, the typed {@link AgentContext}, and
 * exact JSON ({@link parse}, {@link stringify}).
 *
 * @packageDocumentation
 */
export { EXAMPLE, OPTIONS, callLog, parseCommandLine, run, type CommandLine } from './cli.js';
export { InvalidContext, contextFromRequest, type AgentContext, type InputMember, type OutputMember, type ToolCallMember } from './context.js';
export { Dispatch, Failure, type CallInfo, type Hook, type Logger, type Observer, type Transport } from './dispatch.js';
export { InvalidJson, MAX_DEPTH, MAX_INT, MIN_INT, canonicalLength, check, parse, rawJson, stringify, type Json } from './json.js';
export { MAX_IN_FLIGHT, MultiplexStream } from './multiplex.js';
export { HOOK_METHOD, NO_TRANSFORM, POINTS, RPC, SPEC, TARGET_LOCATION, isPoint, type Point } from './points.js';
export { LOAD_OPTIONS, PROTO_DIR, PROTO_FILE, hookwireV1, interceptorService } from './proto.js';
export { DEFAULT_GRACE_MS, Interceptor, MAX_CONCURRENT_STREAMS, MAX_MESSAGE_BYTES, Server, manifest, serve, type InterceptorOptions, type ServerOptions, } from './server.js';
export { HOST_ERROR_PREFIX, InvalidVerdict, LIMITS, Response, allow, deny, escalate, transform, validate, validateResponse, warn, type Verdict, type VerdictOptions, type Warning, } from './verdict.js';
export { responseToWire } from './wire.js';
