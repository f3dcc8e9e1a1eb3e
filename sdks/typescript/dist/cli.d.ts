/**
 * The command line every Node service shares (`--host`, `--port`,
 * `--unix`, `--points`, `--call-log`, `--help`) and {@link run}, which
 * serves a policy until SIGTERM or SIGINT with a `PORT <n>` line (`SOCKET
 * unix:<path>` with `--unix`) on stdout once it accepts calls.
 *
 * @module
 */
import { type ParseArgsConfig } from 'node:util';
import type { Observer } from './dispatch.js';
import { type Interceptor } from './server.js';
/** The `--help` text's example. */
export declare const EXAMPLE = "example:\n  node policy.js --port 50051 --points pre_tool_call,output\n  # prints PORT 50051, serves until SIGTERM; a hookwire host binds\n  # http://127.0.0.1:50051 (unary or over the Multiplex stream)\n  node policy.js --unix \"$XDG_RUNTIME_DIR/hookwire/policy.sock\"\n  # prints SOCKET unix:<path>; an owner-only socket (0600) a host on this\n  # machine binds as that unix: endpoint";
type Options = NonNullable<ParseArgsConfig['options']>;
/** The shared options, in `util.parseArgs` form. */
export declare const OPTIONS: Options;
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
export declare function parseCommandLine(description: string, extra?: Options, extraHelp?: string, argv?: string[]): CommandLine;
/**
 * A call log: one JSON line per call, `{"point", "context", "transport"}`,
 * appended before the hook runs (what the service saw and how it came),
 * for tests and debugging. It holds payload: keep it where the payload may be.
 */
export declare function callLog(path: string): Observer;
/**
 * Serves `policy` with the options of `line` (default: parsed from
 * `process.argv`) until SIGTERM or SIGINT, then stops gracefully. Prints
 * `PORT <n>` once it accepts calls; exits 1 with a one-line error when it
 * cannot start.
 */
export declare function run(policy: Interceptor, line?: CommandLine): Promise<void>;
export {};
