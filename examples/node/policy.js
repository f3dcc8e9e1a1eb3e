// An interceptor service in Node.js on the @hookwire/sdk package: the same
// policy as examples/python/policy.py.
//
// - pre_tool_call: deny shell calls (bash, sh, ...) that run destructive
//   commands (recursive forced rm, mkfs, dd of=/dev/..., fork bombs,
//   redirection onto a block device, shred/wipefs on a device); escalate
//   wire_transfer calls above --wire-limit (default 10000) to a human (a deny
//   with an `approval` object); deny a wire_transfer whose amount is not a
//   number.
// - input: redact e-mail addresses and phone numbers from the request by
//   transforming `$target.content`.
// - post_tool_call: block tool output that contains an AWS access key id.
// - output: warn when the final answer contains an e-mail address.
//
// `node policy.js --help` lists the options; it prints `PORT <n>` once it
// serves. `--probes` adds the behaviours the test suite uses to check the
// wire (see `Probes` below); they are off by default.

import { setTimeout as sleep } from 'node:timers/promises';

import * as hw from '@hookwire/sdk';

const SHELL_TOOLS = new Set(['bash', 'sh', 'shell', 'zsh']);
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const PHONE = /(?<![A-Za-z0-9_+])\+?\(?[0-9][0-9 ().-]{5,}[0-9](?![A-Za-z0-9_])/g;
const AWS_ACCESS_KEY_ID = /(?<![A-Z0-9])AKIA[A-Z0-9]{16}(?![A-Z0-9])/;
const DESTRUCTIVE = [
  /\bmkfs(?:\.[a-z0-9]+)?\b/i,
  /\bdd\b[^;|&\n]*\bof=\/dev\//i,
  /([A-Za-z_:][A-Za-z0-9_:]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&/, // `:(){ :|:& };:`, any name
  />\s*\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|disk[0-9])/,
  /\b(?:shred|wipefs)\b[^;|&\n]*\/dev\//i,
];
const RM = /(?:^|[\s;|&(`])rm\s+([^;|&\n]*)/g;

/** Every string in a JSON value, member names included. */
function* stringsIn(v) {
  if (typeof v === 'string') yield v;
  else if (Array.isArray(v)) for (const x of v) yield* stringsIn(x);
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) yield* [k, ...stringsIn(x)];
}

function isDestructive(command) {
  for (const m of command.matchAll(RM)) {
    const words = m[1].split(/\s+/).filter((w) => w.startsWith('-'));
    const flag = (long, ...short) => words.some((w) => w === long || (!w.startsWith('--') && short.some((c) => w.includes(c))));
    if (flag('--recursive', 'r', 'R') && flag('--force', 'f')) return true;
  }
  return DESTRUCTIVE.some((p) => p.test(command));
}

function redact(text) {
  return text.replace(EMAIL, '[redacted:email]').replace(PHONE, (s) => {
    const digits = (s.match(/[0-9]/g) || []).length;
    return digits >= 7 && digits <= 15 && (s.startsWith('+') || digits >= 9) ? '[redacted:phone]' : s;
  });
}

/** Redacts every string of a JSON value; the very same value where nothing changed. */
function redactValue(v) {
  if (typeof v === 'string') return redact(v);
  if (v === null || typeof v !== 'object') return v;
  const entries = Object.entries(v).map(([k, x]) => [k, redactValue(x)]);
  if (entries.every(([k, x]) => x === v[k])) return v;
  return Array.isArray(v) ? entries.map(([, x]) => x) : Object.fromEntries(entries);
}

/** The transfer amount as a number, or null when it is not one. */
function amountOf(args) {
  const a = args?.amount;
  if (typeof a === 'number' || typeof a === 'bigint') return Number(a);
  return typeof a === 'string' && /^[0-9]+(?:\.[0-9]+)?$/.test(a.trim()) ? Number(a.trim()) : null;
}

/** The policy: one method per point it decides on. */
export class Policy extends hw.Interceptor {
  constructor(wireLimit = 10000) {
    super({
      name: 'node-policy',
      version: '0.1.0',
      description: 'denies destructive shell commands, escalates large wire transfers, redacts PII in input, blocks AWS keys in tool output',
      points: ['input', 'pre_tool_call', 'post_tool_call', 'output'],
    });
    this.wireLimit = wireLimit;
  }

  input(ctx) {
    const content = ctx.target.content;
    const redacted = redactValue(content);
    return redacted === content ? hw.allow() : hw.transform('$target.content', redacted, { reason: 'policy:pii_redacted' });
  }

  preToolCall(ctx) {
    const { name } = ctx.tool_call;
    if (SHELL_TOOLS.has(name) && [...stringsIn(ctx.target)].some(isDestructive)) {
      return hw.deny('policy:destructive_command', 'shell commands that wipe files or devices are not allowed');
    }
    if (name === 'wire_transfer') {
      const amount = amountOf(ctx.target);
      if (amount === null || amount < 0) return hw.deny('policy:invalid_amount', 'wire_transfer needs a non-negative amount');
      if (amount > this.wireLimit) {
        return hw.escalate('policy:approval_required', `wire transfers above ${this.wireLimit} need a human approval`, {
          approver_role: 'finance',
          limit: this.wireLimit,
        });
      }
    }
    return hw.allow();
  }

  postToolCall(ctx) {
    return [...stringsIn(ctx.target)].some((s) => AWS_ACCESS_KEY_ID.test(s))
      ? hw.deny('policy:secret_in_tool_output', 'the tool output contains an AWS access key id')
      : hw.allow();
  }

  output(ctx) {
    return [...stringsIn(ctx.target)].some((s) => s.search(EMAIL) >= 0)
      ? hw.warn('policy:pii_in_output', 'the final answer contains an e-mail address')
      : hw.allow();
  }
}

/**
 * The policy plus behaviours that let a test look at the wire: tool `echo`
 * transforms `$target` to the arguments as received (pre) or to
 * `{args, result, next}` with `next = args.counter + 1` computed here,
 * exactly, as a bigint (post); tool `fail` throws; tool `sleep` waits
 * `args.ms` milliseconds first (given up when the host does).
 */
export class Probes extends Policy {
  async preToolCall(ctx, call) {
    const { name } = ctx.tool_call;
    if (name === 'echo') return hw.transform('$target', ctx.target);
    if (name === 'fail') throw new Error('probe failure');
    if (name === 'sleep') await sleep(Number(ctx.target.ms) || 0, undefined, { signal: call.signal });
    return super.preToolCall(ctx);
  }

  postToolCall(ctx) {
    if (ctx.tool_call.name !== 'echo') return super.postToolCall(ctx);
    const { args } = ctx.tool_call;
    const value = { args, result: ctx.target };
    const counter = args?.counter;
    if (typeof counter === 'bigint' || Number.isInteger(counter)) value.next = BigInt(counter) + 1n;
    return hw.transform('$target', value);
  }
}

const line = hw.parseCommandLine(
  'A hookwire interceptor service: the example policy.',
  { 'wire-limit': { type: 'string', default: '10000' }, probes: { type: 'boolean', default: false } },
  '  --wire-limit N     escalate wire transfers above N (default 10000)\n  --probes           add the test suite\'s wire probes',
);
const wireLimit = Number(line.values['wire-limit']);
if (!Number.isFinite(wireLimit) || wireLimit < 0) throw new TypeError('--wire-limit: not a non-negative number');
await hw.run(new (line.values.probes ? Probes : Policy)(wireLimit), line);
