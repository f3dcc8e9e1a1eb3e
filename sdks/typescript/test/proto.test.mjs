// The proto shipped in the package is the repository's contract.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { PROTO_DIR, PROTO_FILE } from '../dist/index.js';

const repoProto = fileURLToPath(new URL('../../../proto/', import.meta.url));

test('the shipped copy of the proto equals proto/', { skip: !existsSync(repoProto) && 'not in a checkout' }, () => {
  const shipped = readFileSync(join(PROTO_DIR, PROTO_FILE), 'utf8');
  const source = readFileSync(join(repoProto, PROTO_FILE), 'utf8');
  assert.ok(shipped === source, `${join(PROTO_DIR, PROTO_FILE)} is stale: copy ${join(repoProto, PROTO_FILE)} over it`);
});
