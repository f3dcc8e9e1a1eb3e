// The shared command line: defaults, points, refusals, and --help's example.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { parseCommandLine } from '../dist/index.js';

test('defaults, points and the unary-only switch', () => {
  const d = parseCommandLine('x', {}, '', []);
  assert.deepEqual([d.host, d.port, d.points, d.callLog, d.multiplex], ['127.0.0.1', 0, undefined, undefined, true]);
  const l = parseCommandLine('x', {}, '', ['--port', '50051', '--points', 'pre_tool_call, output', '--unary-only']);
  assert.deepEqual([l.port, l.points, l.multiplex], [50051, ['pre_tool_call', 'output'], false]);
  assert.deepEqual(parseCommandLine('x', {}, '', ['--points', 'all']).points, []);
});

test('a bad port or an unknown option is refused', () => {
  for (const port of ['-1', '65536', 'http', '1.5']) {
    assert.throws(() => parseCommandLine('x', {}, '', ['--port', port]), /--port/);
  }
  assert.throws(() => parseCommandLine('x', {}, '', ['--prot', '1']), /Unknown option/);
});

test('--help prints the options and an example, and exits 0', () => {
  const script = `import { parseCommandLine } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
parseCommandLine('A test service.', { extra: { type: 'string' } }, '  --extra X          an extra option', process.argv.slice(1));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, '--', '--help'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
  });
  assert.match(out, /^A test service\./);
  assert.match(out, /--unary-only/);
  assert.match(out, /--extra X/);
  assert.match(out, /example:\n {2}node policy\.js --port 50051/);
});

test('--help of a policy without a description starts at its options, not with blank lines', () => {
  const script = `import { parseCommandLine } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
parseCommandLine('', {}, '', process.argv.slice(1));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, '--', '--help'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
  });
  assert.match(out, /^options:\n {2}--host ADDR/);
});
