/**
 * A validated {@link Response} encoded as the `InterceptorResponse` message
 * (in `@grpc/proto-loader`'s object shape): the mirror of the Rust host's
 * `src/wire/verdict.rs`. Every JSON member is written exactly
 * ({@link stringify}).
 *
 * @module
 */
import { stringify } from './json.js';
const DECISIONS = { allow: 'ALLOW', deny: 'DENY', transform: 'TRANSFORM' };
/** The `InterceptorResponse` of a response already validated. */
export function responseToWire(response) {
    const v = response.verdict;
    const out = {
        decision: DECISIONS[v.decision],
        warnings: (v.warnings ?? []).map((w) => {
            const pw = {};
            if (w.reason !== undefined)
                pw.reason = w.reason;
            if (w.message !== undefined)
                pw.message = w.message;
            return pw;
        }),
        result_labels: [...(v.result_labels ?? [])],
    };
    if (v.reason !== undefined)
        out.reason = v.reason;
    if (v.message !== undefined)
        out.message = v.message;
    if (v.approval !== undefined)
        out.approval = { json: stringify(v.approval) };
    if (v.transform !== undefined) {
        out.transform = { path: v.transform.path, value: { json: stringify(v.transform.value ?? null) } };
    }
    if (v.evidence !== undefined)
        out.evidence = { json: stringify(v.evidence) };
    const extensions = {};
    for (const [k, x] of Object.entries(response.extensions))
        extensions[k] = { json: stringify(x) };
    return { verdict: out, extensions };
}
