/**
 * The wire contract, loaded at run time by `@grpc/proto-loader` from the
 * copy of `proto/` shipped in this package (nothing generated, no protoc):
 * the `Interceptor` service definition and the decoding options every
 * message of this package is read with.
 *
 * @module
 */
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
/** The folder holding `hookwire/v1/interceptor.proto`, a copy of the repository's `proto/`. */
export const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url));
/** The contract's file inside {@link PROTO_DIR}. */
export const PROTO_FILE = 'hookwire/v1/interceptor.proto';
/**
 * How messages are decoded: field names as in the proto (and the spec),
 * 64-bit integers as decimal text (never a rounded number), enums by name,
 * absent fields left absent (presence matters, §4.5), the set member of
 * each oneof named (`body`, `outcome`).
 */
export const LOAD_OPTIONS = {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
    includeDirs: [PROTO_DIR],
};
let cached;
/** The loaded `hookwire.v1` package (its services and message types). */
export function hookwireV1() {
    if (cached === undefined) {
        const definition = loadSync(PROTO_FILE, LOAD_OPTIONS);
        const root = loadPackageDefinition(definition);
        cached = root.hookwire.v1;
    }
    return cached;
}
/** The `hookwire.v1.Interceptor` service definition. */
export function interceptorService() {
    return hookwireV1().Interceptor.service;
}
