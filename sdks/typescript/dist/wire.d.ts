/**
 * A validated {@link Response} encoded as the `InterceptorResponse` message
 * (in `@grpc/proto-loader`'s object shape): the mirror of the Rust host's
 * `src/wire/verdict.rs`. Every JSON member is written exactly
 * ({@link stringify}).
 *
 * @module
 */
import type { Response } from './verdict.js';
/** The `InterceptorResponse` of a response already validated. */
export declare function responseToWire(response: Response): Record<string, unknown>;
