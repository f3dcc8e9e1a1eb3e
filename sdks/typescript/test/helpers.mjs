// What the tests share: a real server on 127.0.0.1:0 and a real grpc-js
// client over the shipped proto, calling unary RPCs and the Multiplex stream.
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

import { LOAD_OPTIONS, PROTO_FILE, Server } from '../dist/index.js';

const definition = loadSync(PROTO_FILE, LOAD_OPTIONS);
const v1 = grpc.loadPackageDefinition(definition).hookwire.v1;

/** Starts `policy` on 127.0.0.1:0; returns the server, a client and a closer. */
export async function started(policy, options = {}) {
  const logs = [];
  const server = new Server(policy, { log: (line) => logs.push(line), ...options });
  const port = await server.start();
  const client = new v1.Interceptor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    server,
    client,
    port,
    logs,
    async close() {
      client.close();
      await server.stop(1000);
    },
  };
}

/** One unary call: resolves to the response, rejects with the status error. */
export function unary(client, method, request, { timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/** A Multiplex stream whose answers are awaited by id. */
export function multiplex(client) {
  const call = client.Multiplex();
  const waiting = new Map();
  const answers = new Map();
  let ended = null;
  const endWaiters = [];
  call.on('data', (m) => {
    const w = waiting.get(m.id);
    if (w) {
      waiting.delete(m.id);
      w(m);
    } else answers.set(m.id, m);
  });
  const onEnd = (e) => {
    ended = e ?? 'end';
    for (const f of endWaiters) f(ended);
  };
  call.on('end', () => onEnd());
  call.on('error', (e) => onEnd(e));
  return {
    call,
    send(message) {
      call.write(message);
    },
    answer(id, timeoutMs = 10_000) {
      const key = String(id);
      if (answers.has(key)) {
        const m = answers.get(key);
        answers.delete(key);
        return Promise.resolve(m);
      }
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no answer for ${key} within ${timeoutMs} ms`)), timeoutMs);
        waiting.set(key, (m) => {
          clearTimeout(t);
          resolve(m);
        });
      });
    },
    ended(timeoutMs = 10_000) {
      if (ended !== null) return Promise.resolve(ended);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('the stream did not end')), timeoutMs);
        endWaiters.push((e) => {
          clearTimeout(t);
          resolve(e);
        });
      });
    },
    close() {
      call.end();
    },
  };
}

/** A minimal well-formed core. */
export function core(sequence = '4') {
  return {
    spec: 'agent-hooks/0.1',
    timestamp: '2026-01-01T00:00:00Z',
    sequence,
    agent: { id: 'a', framework: 'test' },
    session: { id: 's' },
  };
}

/** A `PreToolCallRequest` for tool `name` with `args` as JSON text. */
export function preToolCall(name, argsJson = '{}') {
  return { core: core(), tool_call: { id: 'c1', name, args: { json: argsJson } } };
}

/** Resolves once `predicate()` holds, checking on every turn of the loop, within `timeoutMs`. */
export async function until(predicate, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setImmediate(r));
  }
}

export { grpc, v1 };
