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
export const MAX_DEPTH = 128;
/** Smallest integer a hookwire host represents exactly (i64). */
export const MIN_INT = -(2n ** 63n);
/** Largest integer a hookwire host represents exactly (u64). */
export const MAX_INT = 2n ** 64n - 1n;
/** A JSON text or value the host would refuse; the message never quotes it. */
export class InvalidJson extends Error {
    /** @param message the kind of fault */
    constructor(message) {
        super(message);
        this.name = 'InvalidJson';
    }
}
// The exact text each parsed (frozen) object or array came from.
const RAW = new WeakMap();
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Sets a member by definition, so one named `__proto__` stays a member. */
export function defineMember(obj, key, value) {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
function integer(text) {
    if (text.length > 21)
        throw new InvalidJson('integer beyond the 64-bit range');
    const big = BigInt(text);
    if (big < MIN_INT || big > MAX_INT)
        throw new InvalidJson('integer beyond the 64-bit range');
    return big >= -SAFE && big <= SAFE ? Number(big) : big;
}
/**
 * Parses one JSON value exactly (RFC 8259, I-JSON), or throws
 * {@link InvalidJson}. Objects and arrays come back deep-frozen.
 */
export function parse(text) {
    if (typeof text !== 'string')
        throw new InvalidJson('not a string');
    const n = text.length;
    let i = 0;
    const fail = (what) => {
        throw new InvalidJson(`${what} at offset ${i}`);
    };
    const ws = () => {
        while (i < n) {
            const c = text.charCodeAt(i);
            if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)
                i++;
            else
                break;
        }
    };
    const string = () => {
        const start = i++;
        for (;;) {
            if (i >= n)
                fail('unterminated string');
            const c = text.charCodeAt(i);
            if (c === 0x22)
                break;
            if (c < 0x20)
                fail('control character in a string');
            i += c === 0x5c ? 2 : 1;
        }
        i++;
        try {
            return JSON.parse(text.slice(start, i));
        }
        catch {
            i = start;
            return fail('malformed string');
        }
    };
    const value = (depth) => {
        ws();
        const start = i;
        const c = text[i];
        if (c === '{' || c === '[') {
            if (depth >= MAX_DEPTH)
                fail(`nested deeper than ${MAX_DEPTH}`);
            i++;
            ws();
            if (c === '{') {
                const obj = {};
                if (text[i] === '}')
                    i++;
                else
                    for (;;) {
                        ws();
                        if (text[i] !== '"')
                            fail('expected a member name');
                        const key = string();
                        ws();
                        if (text[i] !== ':')
                            fail("expected ':'");
                        i++;
                        const v = value(depth + 1);
                        if (Object.prototype.hasOwnProperty.call(obj, key))
                            fail('duplicate object member name');
                        defineMember(obj, key, v);
                        ws();
                        if (text[i] === ',')
                            i++;
                        else if (text[i] === '}') {
                            i++;
                            break;
                        }
                        else
                            fail("expected ',' or '}'");
                    }
                RAW.set(Object.freeze(obj), text.slice(start, i));
                return obj;
            }
            const arr = [];
            if (text[i] === ']')
                i++;
            else
                for (;;) {
                    arr.push(value(depth + 1));
                    ws();
                    if (text[i] === ',')
                        i++;
                    else if (text[i] === ']') {
                        i++;
                        break;
                    }
                    else
                        fail("expected ',' or ']'");
                }
            RAW.set(Object.freeze(arr), text.slice(start, i));
            return arr;
        }
        if (c === '"')
            return string();
        if (text.startsWith('true', i))
            return (i += 4), true;
        if (text.startsWith('false', i))
            return (i += 5), false;
        if (text.startsWith('null', i))
            return (i += 4), null;
        NUMBER.lastIndex = i;
        const m = NUMBER.exec(text);
        if (m === null)
            return fail('expected a value');
        i += m[0].length;
        if (!/[.eE]/.test(m[0]))
            return integer(m[0]);
        const num = Number(m[0]);
        if (!Number.isFinite(num))
            fail('number out of range');
        return num;
    };
    const v = value(0);
    ws();
    if (i !== n)
        fail('trailing characters');
    return v;
}
/** The exact JSON text a parsed object or array came from, if any. */
export function rawJson(value) {
    return value !== null && typeof value === 'object' ? RAW.get(value) : undefined;
}
function writeNumber(v) {
    if (!Number.isFinite(v))
        throw new InvalidJson('non-finite number');
    if (Number.isInteger(v) && !Number.isSafeInteger(v) && Math.abs(v) < 1e21) {
        throw new InvalidJson('integer number beyond 2^53 - 1 (use a bigint)');
    }
    return JSON.stringify(v);
}
function writeBigInt(v) {
    if (v < MIN_INT || v > MAX_INT)
        throw new InvalidJson('integer beyond the 64-bit range');
    return v.toString();
}
function write(v, depth, canonical) {
    switch (typeof v) {
        case 'string':
            return JSON.stringify(v);
        case 'boolean':
            return v ? 'true' : 'false';
        case 'number':
            return writeNumber(v);
        case 'bigint':
            return writeBigInt(v);
        case 'object': {
            if (v === null)
                return 'null';
            if (depth >= MAX_DEPTH)
                throw new InvalidJson(`nested deeper than ${MAX_DEPTH}`);
            if (!canonical) {
                const raw = RAW.get(v);
                if (raw !== undefined)
                    return raw;
            }
            if (Array.isArray(v))
                return `[${v.map((x) => write(x, depth + 1, canonical)).join(',')}]`;
            const proto = Object.getPrototypeOf(v);
            if (proto !== Object.prototype && proto !== null) {
                throw new InvalidJson(`not a JSON value: ${v.constructor?.name ?? 'object'}`);
            }
            const keys = Object.keys(v);
            if (canonical)
                keys.sort();
            const parts = [];
            for (const k of keys) {
                const x = v[k];
                if (x === undefined)
                    continue;
                parts.push(`${JSON.stringify(k)}:${write(x, depth + 1, canonical)}`);
            }
            return `{${parts.join(',')}}`;
        }
        default:
            throw new InvalidJson(`not a JSON value: ${typeof v}`);
    }
}
/**
 * Writes one JSON value as compact RFC 8259 text, or throws
 * {@link InvalidJson}: parsed objects and arrays as the exact text they came
 * from, `bigint`s exactly, plain objects and arrays member by member
 * (`undefined` members omitted). Anything else (a function, a class
 * instance, `undefined` in an array, an unsafe integer `number`) is refused.
 */
export function stringify(value) {
    if (value === undefined)
        throw new InvalidJson('not a JSON value: undefined');
    return write(value, 0, false);
}
/** Throws {@link InvalidJson} unless `value` is JSON the host accepts. */
export function check(value) {
    stringify(value);
}
/**
 * The UTF-8 length of `value` written compact with sorted keys: the size the
 * host bounds evidence and response extensions by (close to JCS; equal for
 * the strings and integers such members hold).
 */
export function canonicalLength(value) {
    return Buffer.byteLength(write(value, 0, true), 'utf8');
}
