/**
 * Exact JSON text, as the wire contract requires of every `JsonValue`.
 *
 * A JavaScript number is a double: `JSON.parse` rounds integers beyond
 * ±(2^53 − 1) and reads `1.0` as `1`. So this module parses with its own
 * bounded parser that refuses what the hookwire host refuses (malformed
 * text, duplicate member names, non-finite numbers, nesting deeper than
 * {@link MAX_DEPTH}, integers outside the 64-bit range) and
 *
 * - reads an integer beyond ±(2^53 − 1) as a `bigint`, exactly;
 * - returns objects and arrays deep-frozen, each remembering the exact text
 *   it came from: {@link stringify} writes a value the policy passed
 *   through untouched byte for byte (`1.0` stays `1.0`);
 * - writes a `bigint` exactly and refuses to write an unsafe integer
 *   `number` (it may already be rounded): fail closed, never a silently
 *   different number.
 *
 * Error messages name the kind of fault, never the text.
 *
 * @module
 */
/** Deepest nesting accepted, the host's own bound. */
export declare const MAX_DEPTH = 128;
/** Smallest integer a hookwire host represents exactly (i64). */
export declare const MIN_INT: bigint;
/** Largest integer a hookwire host represents exactly (u64). */
export declare const MAX_INT: bigint;
/** A JSON value as this package reads and writes it. */
export type Json = null | boolean | number | bigint | string | readonly Json[] | {
    readonly [key: string]: Json;
};
/** A JSON text or value the host would refuse; the message never quotes it. */
export declare class InvalidJson extends Error {
    /** @param message the kind of fault */
    constructor(message: string);
}
/** Sets a member by definition, so one named `__proto__` stays a member. */
export declare function defineMember(obj: object, key: string, value: unknown): void;
/**
 * Parses one JSON value exactly (RFC 8259, I-JSON), or throws
 * {@link InvalidJson}. Objects and arrays come back deep-frozen.
 */
export declare function parse(text: string): Json;
/** The exact JSON text a parsed object or array came from, if any. */
export declare function rawJson(value: unknown): string | undefined;
/**
 * Writes one JSON value as compact RFC 8259 text, or throws
 * {@link InvalidJson}: parsed objects and arrays as the exact text they came
 * from, `bigint`s exactly, plain objects and arrays member by member
 * (`undefined` members omitted). Anything else (a function, a class
 * instance, `undefined` in an array, an unsafe integer `number`) is refused.
 */
export declare function stringify(value: unknown): string;
/** Throws {@link InvalidJson} unless `value` is JSON the host accepts. */
export declare function check(value: unknown): void;
/**
 * The UTF-8 length of `value` written compact with sorted keys: the size the
 * host bounds evidence and response extensions by (close to JCS; equal for
 * the strings and integers such members hold).
 */
export declare function canonicalLength(value: unknown): number;
