/**
 * The command line every Node service shares (`--host`, `--port`,
 * `--unix`, `--points`, `--call-log`, `--help`) and {@link run}, which
 * serves a policy until SIGTERM or SIGINT with a `PORT <n>` line (`SOCKET
 * unix:<path>` with `--unix`) on stdout once it accepts calls.
 *
 * @module
 */

import { appendFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';

import type { Observer } from './dispatch.js';
import { stringify } from './json.js';
import { Server, type Interceptor } from './server.js';

/** The `--help` text's example. */
export const EXAMPLE = `example:
  node policy.js --port 50051 --points pre_tool_call,output
  # prints PORT 50051, serves until SIGTERM; a hookwire host binds
  # http://127.0.0.1:50051 (unary or over the Multiplex stream)
  node policy.js --unix "$XDG_RUNTIME_DIR/hookwire/policy.sock"
  # prints SOCKET unix:<path>; an owner-only socket (0600) a host on this
  # machine binds as that unix: endpoint`;

type Options = NonNullable<ParseArgsConfig['options']>;

/** The shared options, in `util.parseArgs` form. */
export const OPTIONS: Options = {
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '0' },
  unix: { type: 'string' },
  points: { type: 'string' },
  'call-log': { type: 'string' },
  'unary-only': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
};

const HELP = `  --host ADDR        address to bind (default 127.0.0.1)
  --port N           port to bind (default 0: any free port)
  --unix PATH        serve on an owner-only Unix socket at PATH instead (0600, in a directory only you can write to)
  --points LIST      comma-separated points to declare in Describe, or 'all' (default: the policy's own)
  --call-log FILE    append one JSON line per call: the point, the context seen and the transport
  --unary-only       leave the Multiplex stream out (hosts then call the unary RPCs)
  -h, --help         this text`;

/** What {@link parseCommandLine} found. */
export interface CommandLine {
  /** Address to bind. */
  host: string;
  /** Port to bind. */
  port: number;
  /** An owner-only Unix socket to serve on instead, if any. */
  unix: string | undefined;
  /** Points to declare (undefined: the policy's own; []: all). */
  points: string[] | undefined;
  /** The call log's path, if any. */
  callLog: string | undefined;
  /** Serve and declare the Multiplex stream. */
  multiplex: boolean;
  /** Every option's value, the caller's own `extra` ones included. */
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
}

/**
 * Parses the shared options plus `extra` (described by `extraHelp` lines in
 * `--help`); prints the help and exits 0 on `--help`, throws a `TypeError`
 * naming the option on a bad value.
 */
export function parseCommandLine(
  description: string,
  extra: Options = {},
  extraHelp = '',
  argv: string[] = process.argv.slice(2),
): CommandLine {
  const { values } = parseArgs({ args: argv, options: { ...OPTIONS, ...extra }, strict: true, allowPositionals: false });
  if (values.help) {
    // A policy without a description starts the help at its options, not
    // with blank lines.
    const intro = description.trim() ? `${description.trim()}\n\n` : '';
    process.stdout.write(`${intro}options:\n${HELP}\n${extraHelp}${extraHelp ? '\n' : ''}\n${EXAMPLE}\n`);
    process.exit(0);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError('--port: not a port number');
  let points: string[] | undefined;
  if (typeof values.points === 'string') {
    points = values.points === 'all' ? [] : values.points.split(',').map((p) => p.trim()).filter(Boolean);
  }
  const callLog = typeof values['call-log'] === 'string' ? values['call-log'] : undefined;
  const unix = typeof values.unix === 'string' ? values.unix : undefined;
  return { host: String(values.host), port, unix, points, callLog, multiplex: values['unary-only'] !== true, values };
}

/**
 * A call log: one JSON line per call, `{"point", "context", "transport"}`,
 * appended before the hook runs (what the service saw and how it came),
 * for tests and debugging. It holds payload: keep it where the payload may be.
 */
export function callLog(path: string): Observer {
  return (point, ctx, transport) => appendFileSync(path, `${stringify({ point, context: ctx, transport })}\n`);
}

/**
 * Serves `policy` with the options of `line` (default: parsed from
 * `process.argv`) until SIGTERM or SIGINT, then stops gracefully. Prints
 * `PORT <n>` once it accepts calls; exits 1 with a one-line error when it
 * cannot start.
 */
export async function run(policy: Interceptor, line?: CommandLine): Promise<void> {
  let server: Server;
  try {
    const opts = line ?? parseCommandLine(policy.description);
    const observe = opts.callLog === undefined ? undefined : callLog(opts.callLog);
    server = new Server(policy, {
      host: opts.host,
      port: opts.port,
      unix: opts.unix,
      points: opts.points,
      observe,
      multiplex: opts.multiplex,
    });
    const port = await server.start();
    process.stdout.write(opts.unix === undefined ? `PORT ${port}\n` : `SOCKET ${server.endpoint}\n`);
  } catch (e) {
    process.stderr.write(`hookwire: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.stop();
}
