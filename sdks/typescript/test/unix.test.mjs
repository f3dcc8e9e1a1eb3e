// Serving on an owner-only Unix socket (`unix` option, `--unix`): calls over
// it, its mode, each refusal, stale-socket replacement and its removal on
// stop.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { Interceptor, Server, allow, deny } from '../dist/index.js';
import { grpc, preToolCall, unary, v1 } from './helpers.mjs';

function noBash() {
  const p = new Interceptor({ name: 'no-bash', version: '1.0.0' });
  p.hook('pre_tool_call', (ctx) => (ctx.tool_call.name === 'bash' ? deny('policy:no_shell', 'no shell') : allow()));
  return p;
}

function privateDir(t, mode = 0o700) {
  const dir = mkdtempSync(join(tmpdir(), 'hookwire-unix-'));
  chmodSync(dir, mode);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('calls reach the policy over an owner-only socket, removed on stop', async (t) => {
  const dir = privateDir(t);
  const path = join(dir, 'policy.sock');
  const server = new Server(noBash(), { unix: path, log: () => {} });
  assert.equal(await server.start(), 0);
  assert.equal(server.endpoint, `unix:${join(realpathSync(dir), 'policy.sock')}`);
  const info = lstatSync(path);
  assert.ok(info.isSocket());
  assert.equal(info.mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(dir), ['policy.sock'], 'no staging directory is left');
  const client = new v1.Interceptor(`unix:${path}`, grpc.credentials.createInsecure());
  try {
    const r = await unary(client, 'PreToolCall', preToolCall('bash', '{"cmd":"ls"}'));
    assert.equal(r.verdict.decision, 'DENY');
    assert.equal(r.verdict.reason, 'policy:no_shell');
  } finally {
    client.close();
    await server.stop(1000);
  }
  assert.equal(existsSync(path), false);
});

for (const mode of [0o777, 0o770, 0o1777]) {
  test(`a directory others can write (${mode.toString(8)}) is refused`, async (t) => {
    const dir = privateDir(t, mode);
    const server = new Server(noBash(), { unix: join(dir, 'policy.sock'), log: () => {} });
    await assert.rejects(server.start(), /group- or world-writable/);
    assert.deepEqual(readdirSync(dir), []);
  });
}

test('a file that is not a socket, a live socket and a long path are refused', async (t) => {
  const dir = privateDir(t);
  const precious = join(dir, 'policy.sock');
  writeFileSync(precious, 'precious');
  await assert.rejects(new Server(noBash(), { unix: precious }).start(), /is not a socket/);
  assert.equal(readFileSync(precious, 'utf8'), 'precious');

  const livePath = join(dir, 'live.sock');
  const live = new Server(noBash(), { unix: livePath, log: () => {} });
  await live.start();
  try {
    await assert.rejects(new Server(noBash(), { unix: livePath }).start(), /another process is listening/);
    assert.ok(existsSync(livePath), 'the refused server left the live socket alone');
  } finally {
    await live.stop(1000);
  }
  await assert.rejects(new Server(noBash(), { unix: join(dir, 's'.repeat(80)) }).start(), /longer than/);
});

test('a stale socket is replaced', async (t) => {
  const dir = privateDir(t);
  const path = join(dir, 'policy.sock');
  // A socket file nobody listens on (what a crashed service leaves): bound,
  // never listened, not unlinked.
  execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', path]);
  assert.ok(lstatSync(path).isSocket());
  const server = new Server(noBash(), { unix: path, log: () => {} });
  await server.start();
  const client = new v1.Interceptor(`unix:${path}`, grpc.credentials.createInsecure());
  try {
    const r = await unary(client, 'PreToolCall', preToolCall('ls'));
    assert.equal(r.verdict.decision, 'ALLOW');
  } finally {
    client.close();
    await server.stop(1000);
  }
});
