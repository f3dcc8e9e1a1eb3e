// Exact JSON: big integers kept, passed-through text kept, refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidJson, MAX_DEPTH, canonicalLength, parse, rawJson, stringify } from '../dist/index.js';

test('integers beyond 2^53 - 1 are bigints, exactly, and written back exactly', () => {
  const v = parse('[9007199254740991,9007199254740993,-9223372036854775808,18446744073709551615,0,-1]');
  assert.deepEqual(v, [9007199254740991, 9007199254740993n, -9223372036854775808n, 18446744073709551615n, 0, -1]);
  assert.equal(stringify([...v]), '[9007199254740991,9007199254740993,-9223372036854775808,18446744073709551615,0,-1]');
  assert.equal(stringify({ next: 18446744073709551614n + 1n }), '{"next":18446744073709551615}');
});

test('integers outside the 64-bit range are refused, read or written', () => {
  assert.throws(() => parse('18446744073709551616'), InvalidJson);
  assert.throws(() => parse('-9223372036854775809'), InvalidJson);
  assert.throws(() => parse('1' + '0'.repeat(400)), InvalidJson);
  assert.throws(() => stringify(2n ** 64n), InvalidJson);
});

test('an unsafe integer number is never written (it may be rounded already)', () => {
  assert.throws(() => stringify({ n: 2 ** 53 }), /bigint/);
  assert.equal(stringify({ n: 2 ** 53 - 1, f: 0.5 }), '{"n":9007199254740991,"f":0.5}');
  assert.throws(() => stringify(Number.NaN), InvalidJson);
  assert.throws(() => stringify(Infinity), InvalidJson);
});

test('a value passed through keeps its exact text: 1.0, -0.0, escapes', () => {
  const text = '{"f":[1.0,-0.0,1e300,5e-324],"s":"\\u00e9\\u2028","n":{"a":[]}}';
  const v = parse(text);
  assert.ok(Object.isFrozen(v) && Object.isFrozen(v.f));
  assert.equal(rawJson(v), text);
  assert.equal(stringify({ kept: v, f: v.f }), `{"kept":${text},"f":[1.0,-0.0,1e300,5e-324]}`);
});

test('duplicate member names are refused, and the message quotes nothing', () => {
  assert.throws(() => parse('{"secret":1,"secret":2}'), (e) => e instanceof InvalidJson && !e.message.includes('secret'));
  assert.throws(() => parse('{"a":{"b":1,"b":1}}'), InvalidJson);
});

test('a __proto__ member stays a member and pollutes nothing', () => {
  const v = parse('{"__proto__":{"polluted":true}}');
  assert.deepEqual(Object.keys(v), ['__proto__']);
  assert.equal({}.polluted, undefined);
  assert.equal(stringify({ ...v }), '{"__proto__":{"polluted":true}}');
});

test('nesting is bounded both ways', () => {
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  assert.doesNotThrow(() => parse(deep(MAX_DEPTH)));
  assert.throws(() => parse(deep(MAX_DEPTH + 1)), /nested deeper/);
  assert.throws(() => parse(deep(100_000)), /nested deeper/);
  let v = [];
  for (let i = 0; i < MAX_DEPTH + 1; i++) v = [v];
  assert.throws(() => stringify(v), /nested deeper/);
});

test('malformed text is refused', () => {
  for (const bad of ['', '{', '[1,]', '{"a" 1}', 'NaN', '01', '1.', '"\u0001"', '"\\x"', 'true false', "'a'", '{"a":1}x']) {
    assert.throws(() => parse(bad), InvalidJson, JSON.stringify(bad));
  }
});

test('what is not JSON is not written', () => {
  for (const bad of [undefined, () => 1, Symbol('s'), new Map(), new Date(0), [undefined]]) {
    assert.throws(() => stringify(bad), InvalidJson);
  }
  assert.equal(stringify({ a: undefined, b: null }), '{"b":null}');
});

test('canonical length sorts keys and ignores the kept text', () => {
  const v = parse('{ "b" : 1 , "a" : "é" }');
  assert.equal(canonicalLength(v), Buffer.byteLength('{"a":"é","b":1}'));
});
