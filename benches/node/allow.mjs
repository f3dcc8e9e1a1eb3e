// The load tool's Node service: an allow hook at every point, served by the
// @hookwire/sdk package (sdks/typescript, built by scripts/setup.sh) over
// the Multiplex stream, or unary with --unary-only. Prints PORT <n>.
//
//   node benches/node/allow.mjs --port 0 [--unary-only]
import { Interceptor, POINTS, allow, run } from '../../sdks/typescript/dist/index.js';

const policy = new Interceptor({
  name: 'node-allow',
  version: '0.1.0',
  description: 'allows every emission (the load tool\'s Node service)',
  points: [],
});
for (const point of POINTS) policy.hook(point, () => allow());
await run(policy);
