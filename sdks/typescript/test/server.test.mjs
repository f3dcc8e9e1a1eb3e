// The unary RPCs, Describe and health from a real grpc-js client: verdicts,
// refusals, bounds, failures, deadlines, cancellation and a graceful stop.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Interceptor, Response, allow, deny, transform } from '../dist/index.js';
import { core, grpc, preToolCall, started, unary, until } from './helpers.mjs';

/** A policy whose pre_tool_call does what the tool's name says. */
function probes(seen = []) {
  const p = new Interceptor({ name: 'probes', version: '1.2.3', description: 'test probes' });
  p.hook('pre_tool_call', async (ctx, call) => {
    seen.push({ ctx, call });
    switch (ctx.tool_call.name) {
      case 'echo':
        return transform('$target', ctx.target);
      case 'throw':
        throw new Error('secret payload text');
      case 'reject':
        return Promise.reject(new TypeError('secret payload text'));
      case 'invalid':
        return { decision: 'deny', reason: 'host_error:forged' };
      case 'nothing':
        return undefined;
      case 'wait':
        await new Promise((resolve) => call.signal.addEventListener('abort', resolve));
        return allow();
      case 'receipt':
        return new Response(allow(), { acme: { receipt: 18446744073709551615n } });
      default:
        return ctx.tool_call.name === 'bash' ? deny('policy:no_shell', 'no shell') : allow();
    }
  });
  return p;
}

test('Describe declares the hooked points and the Multiplex stream; health serves', async (t) => {
  const s = await started(probes());
  t.after(() => s.close());
  const m = await unary(s.client, 'Describe', {});
  assert.equal(m.name, 'probes');
  assert.equal(m.version, '1.2.3');
  assert.equal(m.spec, 'agent-hooks/0.1');
  assert.deepEqual(m.points, ['PRE_TOOL_CALL']);
  assert.equal(m.multiplex_version, 1);
  assert.equal(m.extensions.hookwire.json, '{"multiplex":1}');
  const { HealthImplementation, service } = await import('grpc-health-check');
  assert.ok(HealthImplementation);
  const Health = grpc.makeGenericClientConstructor(service, 'Health');
  const health = new Health(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());
  t.after(() => health.close());
  for (const name of ['', 'hookwire.v1.Interceptor']) {
    const r = await new Promise((res, rej) => health.check({ service: name }, (e, v) => (e ? rej(e) : res(v))));
    assert.equal(r.status, 'SERVING');
  }
});

test('verdicts come back on the wire; exact values round trip', async (t) => {
  const s = await started(probes());
  t.after(() => s.close());
  const deny = await unary(s.client, 'PreToolCall', preToolCall('bash', '{"cmd":"ls"}'));
  assert.equal(deny.verdict.decision, 'DENY');
  assert.equal(deny.verdict.reason, 'policy:no_shell');
  const args = '{"n":18446744073709551615,"f":1.0,"z":-0.0,"u":"\\u2028é"}';
  const echo = await unary(s.client, 'PreToolCall', preToolCall('echo', args));
  assert.equal(echo.verdict.decision, 'TRANSFORM');
  assert.equal(echo.verdict.transform.value.json, args);
  const receipt = await unary(s.client, 'PreToolCall', preToolCall('receipt'));
  assert.equal(receipt.extensions.acme.json, '{"receipt":18446744073709551615}');
  // A point without a hook allows.
  const out = await unary(s.client, 'Output', { core: core(), output: { json: '{"content":"hi"}' } });
  assert.equal(out.verdict.decision, 'ALLOW');
});

test('the hook sees the context as the spec shapes it, big integers exact', async (t) => {
  const seen = [];
  const s = await started(probes(seen));
  t.after(() => s.close());
  const req = preToolCall('ok', '{"big":9007199254740993}');
  req.core.sequence = '18446744073709551615';
  req.core.session.turn = '3';
  req.optional = { extensions: { acme: { json: '{"k":[1,2]}' } }, additional: { x_note: { json: 'null' } } };
  await unary(s.client, 'PreToolCall', req);
  const { ctx, call } = seen[0];
  assert.equal(ctx.interception_point, 'pre_tool_call');
  assert.equal(ctx.sequence, 18446744073709551615n);
  assert.equal(ctx.session.turn, 3);
  assert.equal(ctx.target, ctx.tool_call.args);
  assert.equal(ctx.target.big, 9007199254740993n);
  assert.deepEqual(ctx.extensions, { acme: { k: [1, 2] } });
  assert.equal(ctx.x_note, null);
  assert.ok(Object.isFrozen(ctx) && Object.isFrozen(ctx.tool_call));
  assert.equal(call.transport, 'unary');
  assert.ok(call.timeRemaining() > 0 && call.timeRemaining() <= 10_000);
});

test('a throwing, rejecting or lying hook is INTERNAL with no text leaked', async (t) => {
  const s = await started(probes());
  t.after(() => s.close());
  for (const [tool, details] of [['throw', 'hook failed'], ['reject', 'hook failed'], ['invalid', 'invalid verdict'], ['nothing', 'invalid verdict']]) {
    await assert.rejects(unary(s.client, 'PreToolCall', preToolCall(tool)), (e) => {
      assert.equal(e.code, grpc.status.INTERNAL, tool);
      assert.equal(e.details, details);
      return true;
    });
  }
  assert.ok(s.logs.length >= 4);
  assert.ok(s.logs.every((l) => !l.includes('secret payload')), s.logs.join('\n'));
  // Still serving.
  assert.equal((await unary(s.client, 'PreToolCall', preToolCall('ok'))).verdict.decision, 'ALLOW');
});

test('an invalid context is INVALID_ARGUMENT naming the member, never its value', async (t) => {
  const s = await started(probes());
  t.after(() => s.close());
  const cases = [
    [{ core: core() }, 'tool_call: present'],
    [{ tool_call: { id: 'c', name: 'x' } }, 'core: present'],
    [preToolCall('x', '{"secret":1,"secret":2}'), 'duplicate object member name'],
    [preToolCall('x', '{"secret":18446744073709551616}'), 'beyond the 64-bit range'],
    [{ ...preToolCall('x'), optional: { additional: { tool_call: { json: '{}' } } } }, 'tool_call: carried in its typed field'],
  ];
  for (const [req, why] of cases) {
    await assert.rejects(unary(s.client, 'PreToolCall', req), (e) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
      assert.ok(e.details.includes(why), e.details);
      assert.ok(!e.details.includes('secret":'), e.details);
      return true;
    });
  }
});

test('past its deadline a call is DEADLINE_EXCEEDED and the hook is told', async (t) => {
  const seen = [];
  const s = await started(probes(seen));
  t.after(() => s.close());
  await assert.rejects(unary(s.client, 'PreToolCall', preToolCall('wait'), { timeoutMs: 200 }), (e) => {
    assert.equal(e.code, grpc.status.DEADLINE_EXCEEDED);
    return true;
  });
  await until(() => seen.length === 1 && seen[0].call.signal.aborted);
});

test('a call the client cancels aborts its hook', async (t) => {
  const seen = [];
  const s = await started(probes(seen));
  t.after(() => s.close());
  const call = s.client.PreToolCall(preToolCall('wait'), () => {});
  await until(() => seen.length === 1);
  call.cancel();
  await until(() => seen[0].call.signal.aborted);
});

test('a request over the message bound is refused', async (t) => {
  const s = await started(probes());
  t.after(() => s.close());
  const big = preToolCall('ok', JSON.stringify({ blob: 'x'.repeat(9 * 1024 * 1024) }));
  await assert.rejects(unary(s.client, 'PreToolCall', big), (e) => e.code === grpc.status.RESOURCE_EXHAUSTED);
});

test('a graceful stop lets the call in flight finish and refuses new ones', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  let entered = false;
  const p = new Interceptor({ name: 'slow' });
  p.hook('pre_tool_call', async () => {
    entered = true;
    await gate;
    return allow();
  });
  const s = await started(p);
  const inFlight = unary(s.client, 'PreToolCall', preToolCall('x'));
  await until(() => entered);
  const stopped = s.server.stop(10_000);
  assert.ok(s.server.isDraining);
  release();
  assert.equal((await inFlight).verdict.decision, 'ALLOW');
  await stopped;
  await assert.rejects(unary(s.client, 'PreToolCall', preToolCall('x'), { timeoutMs: 2000 }));
  s.client.close();
});

test('a subclass decides by its methods; unknown points are refused', () => {
  class P extends Interceptor {
    output() {
      return allow();
    }
  }
  const p = new P({ name: 'p' });
  assert.deepEqual(p.declaredPoints(), ['output']);
  assert.throws(() => new Interceptor({ points: ['pre_tool'] }), /unknown interception point/);
  assert.throws(() => p.hook('later', () => allow()), /unknown interception point/);
});

test('unary only: the stream is neither declared nor served', async (t) => {
  const s = await started(probes(), { multiplex: false });
  t.after(() => s.close());
  const m = await unary(s.client, 'Describe', {});
  assert.equal(m.multiplex_version, undefined);
  assert.equal(m.extensions, undefined);
  const call = s.client.Multiplex();
  const status = await new Promise((resolve) => call.on('error', (e) => resolve(e.code)));
  assert.equal(status, grpc.status.UNIMPLEMENTED);
});

test('a graceful stop turns health NOT_SERVING for its watchers', async () => {
  const s = await started(probes());
  const { service } = await import('grpc-health-check');
  const Health = grpc.makeGenericClientConstructor(service, 'Health');
  const health = new Health(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());
  const watch = health.watch({ service: 'hookwire.v1.Interceptor' });
  const seen = [];
  watch.on('data', (m) => seen.push(m.status));
  watch.on('error', () => {});
  await until(() => seen.includes('SERVING'));
  const stopped = s.server.stop(500);
  await until(() => seen.includes('NOT_SERVING'));
  await stopped;
  health.close();
  s.client.close();
});
