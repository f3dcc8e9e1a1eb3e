// The builders and the §5 validation with hookwire's bounds.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  InvalidVerdict, LIMITS, Response, allow, deny, escalate, transform, validate, validateResponse, warn,
} from '../dist/index.js';

test('the builders make the spec shapes', () => {
  assert.deepEqual(allow(), { decision: 'allow' });
  assert.deepEqual(deny('policy:x', 'no'), { decision: 'deny', reason: 'policy:x', message: 'no' });
  assert.deepEqual(transform('$target.a', 1n, { reason: 'r' }), {
    decision: 'transform', reason: 'r', transform: { path: '$target.a', value: 1n },
  });
  assert.deepEqual(warn('w', 'm'), { decision: 'allow', warnings: [{ reason: 'w', message: 'm' }] });
  assert.deepEqual(escalate('policy:big'), { decision: 'deny', reason: 'policy:big', approval: {} });
  assert.deepEqual(transform('$target', undefined).transform, { path: '$target', value: null });
});

test('what the host would refuse is refused before sending', () => {
  const bad = [
    [null, /an object/],
    [{ decision: 'maybe' }, /decision/],
    [{ decision: 'allow', extra: 1 }, /unknown verdict members: extra/],
    [{ decision: 'deny', reason: 'host_error:timeout' }, /host_error/],
    [{ decision: 'allow', reason: 'x'.repeat(LIMITS.reasonBytes + 1) }, /reason is over/],
    [{ decision: 'allow', message: 'é'.repeat(LIMITS.messageBytes / 2 + 1) }, /message is over/],
    [{ decision: 'allow', warnings: Array(LIMITS.warnings + 1).fill({}) }, /warnings/],
    [{ decision: 'allow', warnings: [{ reason: 'a', other: 1 }] }, /a warning is/],
    [{ decision: 'allow', result_labels: [1] }, /result label/],
    [{ decision: 'allow', approval: {} }, /deny only/],
    [{ decision: 'deny', approval: [] }, /approval is an object/],
    [{ decision: 'allow', transform: { path: '$target', value: 1 } }, /exactly on a transform/],
    [{ decision: 'transform' }, /exactly on a transform/],
    [{ decision: 'transform', transform: { path: 'args', value: 1 } }, /rooted at \$target/],
    [{ decision: 'transform', transform: { path: '$target', value: 2 ** 60 } }, /transform.value/],
    [{ decision: 'deny', reason: 'r', evidence: { blob: 'x'.repeat(LIMITS.evidenceBytes) } }, /evidence is over/],
  ];
  for (const [v, why] of bad) assert.throws(() => validate(v), (e) => e instanceof InvalidVerdict && why.test(e.message), JSON.stringify(v));
  assert.throws(() => deny('host_error:x'), InvalidVerdict);
  assert.throws(() => transform('$target', () => 1), InvalidVerdict);
});

test('a transform is forbidden at agent_startup and agent_shutdown', () => {
  const t = transform('$target', {});
  assert.throws(() => validate(t, 'agent_startup'), /forbidden at agent_startup/);
  assert.throws(() => validate(t, 'agent_shutdown'), /forbidden/);
  assert.doesNotThrow(() => validate(t, 'input'));
});

test('response extensions: namespaces and size', () => {
  assert.equal(validateResponse(new Response(allow(), { acme: { receipt: 1 } })).extensions.acme.receipt, 1);
  assert.throws(() => validateResponse(new Response(allow(), { Acme: 1 })), /namespace/);
  assert.throws(() => validateResponse(new Response(allow(), { acme: 'x'.repeat(LIMITS.responseExtensionsBytes) })), /extensions are over/);
  assert.throws(() => validateResponse(undefined), /no verdict/);
});
