'use strict';
// An interceptor service in Node.js: the same policy as
// examples/python/policy.py.
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
// Run it with `node policy.js [--port N] [--wire-limit N]`; it prints
// `PORT <n>` once it serves. `--probes` adds the behaviours the test suite
// uses to check the wire (see `probes` below); they are off by default.

const hw = require('./hookwire');

const SHELL_TOOLS = new Set(['bash', 'sh', 'shell', 'zsh']);

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const PHONE_CANDIDATE = /(?<![A-Za-z0-9_+])\+?\(?[0-9][0-9 ().-]{5,}[0-9](?![A-Za-z0-9_])/g;
const AWS_ACCESS_KEY_ID = /(?<![A-Z0-9])AKIA[A-Z0-9]{16}(?![A-Z0-9])/;

const DESTRUCTIVE = [
  /\bmkfs(?:\.[a-z0-9]+)?\b/i,
  /\bdd\b[^;|&\n]*\bof=\/dev\//i,
  // `:(){ :|:& };:` and the same with any function name.
  /([A-Za-z_:][A-Za-z0-9_:]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&/,
  />\s*\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|disk[0-9])/,
  /\b(?:shred|wipefs)\b[^;|&\n]*\/dev\//i,
];
const RM = /(?:^|[\s;|&(`])rm\s+([^;|&\n]*)/g;

/** Every string in a JSON value, member names included. */
function* stringsIn(value) {
  if (typeof value === 'string') yield value;
  else if (Array.isArray(value)) for (const v of value) yield* stringsIn(v);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      yield k;
      yield* stringsIn(v);
    }
  }
}

function isRecursiveForcedRm(command) {
  for (const m of command.matchAll(RM)) {
    let recursive = false;
    let forced = false;
    for (const word of m[1].split(/\s+/).filter(Boolean)) {
      if (word === '--recursive') recursive = true;
      else if (word === '--force') forced = true;
      else if (word.startsWith('-') && !word.startsWith('--')) {
        recursive = recursive || word.includes('r') || word.includes('R');
        forced = forced || word.includes('f');
      }
    }
    if (recursive && forced) return true;
  }
  return false;
}

function isDestructive(command) {
  return isRecursiveForcedRm(command) || DESTRUCTIVE.some((p) => p.test(command));
}

function redact(text) {
  return text.replace(EMAIL, '[redacted:email]').replace(PHONE_CANDIDATE, (s) => {
    const digits = (s.match(/[0-9]/g) || []).length;
    return digits >= 7 && digits <= 15 && (s.startsWith('+') || digits >= 9) ? '[redacted:phone]' : s;
  });
}

/**
 * Redacts every string of a JSON value (member names stay). Returns the very
 * same object wherever nothing changed, so untouched parts keep their exact
 * JSON text (see hookwire.js).
 */
function redactValue(value) {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) {
    const out = value.map(redactValue);
    return out.every((v, i) => v === value[i]) ? value : out;
  }
  if (value !== null && typeof value === 'object') {
    const out = {};
    let same = true;
    for (const [k, v] of Object.entries(value)) {
      const r = redactValue(v);
      same = same && r === v;
      Object.defineProperty(out, k, { value: r, enumerable: true, writable: true, configurable: true });
    }
    return same ? value : out;
  }
  return value;
}

/** The transfer amount as a number, or null when it is not one. */
function amountOf(args) {
  const a = args !== null && typeof args === 'object' ? args.amount : undefined;
  if (typeof a === 'number') return a;
  if (typeof a === 'string' && /^[0-9]+(?:\.[0-9]+)?$/.test(a.trim())) return Number(a.trim());
  return null;
}

function policy({ wireLimit = 10000 } = {}) {
  return {
    name: 'node-policy',
    version: '0.1.0',
    description:
      'denies destructive shell commands, escalates large wire transfers, redacts PII in input, blocks AWS keys in tool output',
    points: ['input', 'pre_tool_call', 'post_tool_call', 'output'],

    input(ctx) {
      const content = ctx.target.content;
      const redacted = redactValue(content);
      if (redacted !== content) {
        return hw.transform('$target.content', redacted, { reason: 'policy:pii_redacted' });
      }
      return hw.allow();
    },

    preToolCall(ctx) {
      const name = ctx.tool_call.name;
      const args = ctx.target;
      if (SHELL_TOOLS.has(name) && [...stringsIn(args)].some(isDestructive)) {
        return hw.deny('policy:destructive_command', 'shell commands that wipe files or devices are not allowed');
      }
      if (name === 'wire_transfer') {
        const amount = amountOf(args);
        if (amount === null || amount < 0) {
          return hw.deny('policy:invalid_amount', 'wire_transfer needs a non-negative amount');
        }
        if (amount > wireLimit) {
          return hw.escalate('policy:approval_required', `wire transfers above ${wireLimit} need a human approval`, {
            approver_role: 'finance',
            limit: wireLimit,
          });
        }
      }
      return hw.allow();
    },

    postToolCall(ctx) {
      if ([...stringsIn(ctx.target)].some((s) => AWS_ACCESS_KEY_ID.test(s))) {
        return hw.deny('policy:secret_in_tool_output', 'the tool output contains an AWS access key id');
      }
      return hw.allow();
    },

    output(ctx) {
      if ([...stringsIn(ctx.target)].some((s) => s.search(EMAIL) >= 0)) {
        return hw.warn('policy:pii_in_output', 'the final answer contains an e-mail address');
      }
      return hw.allow();
    },
  };
}

// The policy plus behaviours that let a test look at the wire itself:
// - tool `echo` at pre_tool_call: transform `$target` to the arguments
//   exactly as received (a round trip of the JSON text);
// - tool `echo` at post_tool_call: transform `$target` to
//   `{args, result, next}`: the arguments and the result as received, and
//   `args.counter + 1` computed here (refused beyond 2^53 - 1, see
//   hookwire.js);
// - tool `fail`: the handler throws;
// - tool `sleep`: the handler waits `args.ms` milliseconds first.
function probes(options) {
  const base = policy(options);
  return {
    ...base,
    async preToolCall(ctx) {
      const name = ctx.tool_call.name;
      if (name === 'echo') return hw.transform('$target', ctx.target);
      if (name === 'fail') throw new Error('probe failure');
      if (name === 'sleep') await new Promise((resolve) => setTimeout(resolve, Number(ctx.target.ms) || 0));
      return base.preToolCall(ctx);
    },
    postToolCall(ctx) {
      if (ctx.tool_call.name === 'echo') {
        const args = ctx.tool_call.args;
        const value = { args, result: ctx.target };
        if (args !== null && typeof args === 'object' && Number.isInteger(args.counter)) {
          value.next = args.counter + 1;
        }
        return hw.transform('$target', value);
      }
      return base.postToolCall(ctx);
    },
  };
}

if (require.main === module) {
  const extra = {
    'wire-limit': { type: 'string', default: '10000' },
    probes: { type: 'boolean', default: false },
  };
  const { serveOptions, values } = hw.parseCommandLine(extra);
  const wireLimit = Number(values['wire-limit']);
  if (!Number.isFinite(wireLimit) || wireLimit < 0) throw new Error('--wire-limit: not a non-negative number');
  const service = (values.probes ? probes : policy)({ wireLimit });
  hw.serve(service, serveOptions);
}

module.exports = { policy, probes, isDestructive, redact };
