/**
 * The wire contract, loaded at run time by `@grpc/proto-loader` from the
 * copy of `proto/` shipped in this package (nothing generated, no protoc):
 * the `Interceptor` service definition and the decoding options every
 * message of this package is read with.
 *
 * @module
 */
import { type ServiceDefinition } from '@grpc/grpc-js';
import { type Options } from '@grpc/proto-loader';
/** The folder holding `hookwire/v1/interceptor.proto`, a copy of the repository's `proto/`. */
export declare const PROTO_DIR: string;
/** The contract's file inside {@link PROTO_DIR}. */
export declare const PROTO_FILE = "hookwire/v1/interceptor.proto";
/**
 * How messages are decoded: field names as in the proto (and the spec),
 * 64-bit integers as decimal text (never a rounded number), enums by name,
 * absent fields left absent (presence matters, §4.5), the set member of
 * each oneof named (`body`, `outcome`).
 */
export declare const LOAD_OPTIONS: Options;
/** The loaded `hookwire.v1` package (its services and message types). */
export declare function hookwireV1(): Record<string, unknown>;
/** The `hookwire.v1.Interceptor` service definition. */
export declare function interceptorService(): ServiceDefinition;
