// The Multiplex stream from a real grpc-js client: answers in any order,
// per-emission deadlines, cancellation, refusals, the in-flight bound, the
// host closing its side, and a draining server.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Interceptor, allow, deny } from '../dist/index.js';
import { grpc, multiplex, preToolCall, started, until } from './helpers.mjs';

/** A policy whose hooks wait for `release(name)` (or their signal) when the tool is `hold:<name>`. */
function gated() {
  const gates = new Map();
  const entered = [];
  const aborted = [];
  const events = [];
  const p = new Interceptor({ name: 'gated' });
  p.hook('pre_tool_call', async (ctx, call) => {
    const name = ctx.tool_call.name;
    entered.push(name);
    events.push(`enter:${name}`);
    if (name === 'throw') throw new Error('secret');
    if (name.startsWith('hold:')) {
      await new Promise((resolve) => {
        gates.set(name.slice(5), resolve);
        call.signal.addEventListener('abort', () => {
          aborted.push(name);
          resolve();
        });
      });
    }
    events.push(`exit:${name}`);
    return name === 'bash' ? deny('policy:no_shell') : allow({ reason: name });
  });
  return { policy: p, entered, aborted, events, release: (name) => gates.get(name)() };
}

const emission = (id, tool, timeout_ms = '10000') => ({ id: String(id), timeout_ms, pre_tool_call: preToolCall(tool) });

test('each id is answered once, in the order decisions are made', async (t) => {
  const g = gated();
  const s = await started(g.policy);
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(1, 'hold:a'));
  m.send(emission(2, 'bash'));
  const second = await m.answer(2);
  assert.equal(second.response.verdict.reason, 'policy:no_shell');
  g.release('a');
  const first = await m.answer(1);
  assert.equal(first.response.verdict.reason, 'hold:a');
  m.send(emission(3, 'throw'));
  const failed = await m.answer(3);
  assert.deepEqual(failed.error, { code: grpc.status.INTERNAL, message: 'hook failed' });
  m.close();
  assert.equal(await m.ended(), 'end');
});

test('a passed deadline answers DEADLINE_EXCEEDED and aborts the hook', async (t) => {
  const g = gated();
  const s = await started(g.policy);
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(7, 'hold:late', '100'));
  const a = await m.answer(7);
  assert.equal(a.error.code, grpc.status.DEADLINE_EXCEEDED);
  await until(() => g.aborted.includes('hold:late'));
  m.close();
});

test('a cancel answers CANCELLED at once and aborts the hook; the late verdict is not sent', async (t) => {
  const g = gated();
  const s = await started(g.policy);
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(5, 'hold:c', '0'));
  await until(() => g.entered.includes('hold:c'));
  m.send({ id: '5', cancel: {} });
  assert.equal((await m.answer(5)).error.code, grpc.status.CANCELLED);
  await until(() => g.aborted.includes('hold:c'));
  // The stream goes on; nothing more arrives for id 5.
  m.send(emission(6, 'ok'));
  assert.equal((await m.answer(6)).response.verdict.decision, 'ALLOW');
  await assert.rejects(m.answer(5, 200), /no answer/);
  m.close();
});

test('a reused id in flight, a message without a body, an invalid context', async (t) => {
  const g = gated();
  const s = await started(g.policy);
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(9, 'hold:dup'));
  await until(() => g.entered.includes('hold:dup'));
  m.send(emission(9, 'ok'));
  assert.equal((await m.answer(9)).error.code, grpc.status.ALREADY_EXISTS);
  m.send({ id: '10', timeout_ms: '1000' });
  assert.deepEqual((await m.answer(10)).error, { code: grpc.status.INVALID_ARGUMENT, message: 'a stream message without a body' });
  m.send({ id: '11', pre_tool_call: { core: preToolCall('x').core } });
  const bad = await m.answer(11);
  assert.equal(bad.error.code, grpc.status.INVALID_ARGUMENT);
  assert.match(bad.error.message, /tool_call: present/);
  g.release('dup');
  assert.equal((await m.answer(9)).response.verdict.reason, 'hold:dup');
  m.close();
});

test('at the in-flight bound cancels are read, and an emission waits for room', async (t) => {
  const g = gated();
  const s = await started(g.policy, { maxInFlight: 2 });
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(1, 'hold:1'));
  m.send(emission(2, 'hold:2'));
  await until(() => g.entered.length === 2);
  m.send({ id: '2', cancel: {} });
  assert.equal((await m.answer(2)).error.code, grpc.status.CANCELLED);
  m.send(emission(3, 'hold:3'));
  m.send(emission(4, 'fourth'));
  await until(() => g.entered.includes('hold:3'));
  g.release('1');
  assert.equal((await m.answer(1)).response.verdict.reason, 'hold:1');
  assert.equal((await m.answer(4)).response.verdict.reason, 'fourth');
  // `fourth` started only once `hold:1` had ended.
  assert.ok(g.events.indexOf('exit:hold:1') < g.events.indexOf('enter:fourth'), g.events.join(' '));
  g.release('3');
  await m.answer(3);
  m.close();
});

test('the host closing its side cancels what still runs', async (t) => {
  const g = gated();
  const s = await started(g.policy);
  t.after(() => s.close());
  const m = multiplex(s.client);
  m.send(emission(1, 'hold:x', '0'));
  await until(() => g.entered.includes('hold:x'));
  m.close();
  await until(() => g.aborted.includes('hold:x'));
});

test('a draining server answers what is in flight, then ends the stream', async () => {
  const g = gated();
  const s = await started(g.policy);
  const m = multiplex(s.client);
  m.send(emission(1, 'hold:d', '0'));
  await until(() => g.entered.includes('hold:d'));
  const stopped = s.server.stop(10_000);
  g.release('d');
  assert.equal((await m.answer(1)).response.verdict.reason, 'hold:d');
  assert.equal(await m.ended(), 'end');
  await stopped;
  s.client.close();
});
