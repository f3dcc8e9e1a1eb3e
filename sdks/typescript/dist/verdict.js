/**
 * Verdicts (AGENT-HOOKS-0.1 §5): the builders a policy returns, the
 * {@link Response} envelope (§5.5), and the §5 validation with hookwire's
 * bounds applied before anything is sent.
 *
 * A verdict is a plain object in the spec's JSON shape. The builders only
 * make valid ones; {@link validate} catches the rest (a hand-written object,
 * a transform at a point that forbids it), so the server answers `INTERNAL`
 * instead of sending what the host would refuse as
 * `host_error:verdict_invalid`.
 *
 * @module
 */
import { InvalidJson, canonicalLength, check } from './json.js';
import { NO_TRANSFORM } from './points.js';
/** Reasons starting with this are the host's own (§6.3). */
export const HOST_ERROR_PREFIX = 'host_error:';
/** hookwire's bounds, the host's own (`src/response.rs`, `src/verdict.rs`). */
export const LIMITS = Object.freeze({
    reasonBytes: 1024,
    messageBytes: 16 * 1024,
    warnings: 64,
    resultLabels: 64,
    labelBytes: 1024,
    transformPathBytes: 4096,
    approvalBytes: 65_536,
    evidenceBytes: 10_240,
    responseExtensionsBytes: 65_536,
});
/** A verdict or response the host would refuse (§5, hookwire's bounds). */
export class InvalidVerdict extends Error {
    /** @param message what is wrong, never payload */
    constructor(message) {
        super(message);
        this.name = 'InvalidVerdict';
    }
}
function build(decision, o) {
    const v = { decision };
    if (o.reason !== undefined)
        v.reason = o.reason;
    if (o.message !== undefined)
        v.message = o.message;
    if (o.warnings?.length)
        v.warnings = o.warnings.map((w) => ({ ...w }));
    if (o.labels?.length)
        v.result_labels = [...o.labels];
    return v;
}
/** `allow`: the action proceeds with the target unchanged. */
export function allow(options = {}) {
    const v = build('allow', options);
    validate(v);
    return v;
}
/**
 * `deny`: the action does not proceed. `reason` is a machine id of your own
 * (never `host_error:*`); an `approval` object makes the deny liftable (see
 * {@link escalate}).
 */
export function deny(reason, message, options = {}) {
    const v = build('deny', { reason, message, warnings: options.warnings });
    if (options.approval !== undefined)
        v.approval = options.approval;
    if (options.evidence !== undefined)
        v.evidence = options.evidence;
    validate(v);
    return v;
}
/**
 * `transform`: the action proceeds with the value at `path` (rooted at
 * `$target`; `$target` alone replaces the whole target) replaced by
 * `value`. Forbidden at `agent_startup` and `agent_shutdown`.
 */
export function transform(path, value, options = {}) {
    const v = build('transform', options);
    v.transform = { path, value: value === undefined ? null : value };
    validate(v);
    return v;
}
/** `warn` (§5.1): an `allow` carrying one warning. */
export function warn(reason, message) {
    const w = { reason };
    if (message !== undefined)
        w.message = message;
    return allow({ warnings: [w] });
}
/**
 * `escalate` (§5.1): a `deny` with an `approval` object, lifted only when
 * the host's approval resolver approves.
 */
export function escalate(reason, message, approval = {}) {
    return deny(reason, message, { approval });
}
/**
 * A verdict plus namespaced transport metadata (§5.5); a plain verdict is
 * enough for a policy that sends no receipts.
 */
export class Response {
    verdict;
    extensions;
    /**
     * @param verdict the verdict that decides
     * @param extensions `<namespace>` → JSON metadata
     */
    constructor(verdict, extensions = {}) {
        this.verdict = verdict;
        this.extensions = extensions;
    }
}
const MEMBERS = new Set(['decision', 'reason', 'message', 'warnings', 'approval', 'transform', 'evidence', 'result_labels']);
const NAMESPACE = /^[a-z][a-z0-9_]*$/;
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
function boundedString(obj, key, max, where = '') {
    const s = obj[key];
    if (s === undefined)
        return;
    if (typeof s !== 'string')
        throw new InvalidVerdict(`${where}${key} is not a string`);
    if (Buffer.byteLength(s, 'utf8') > max)
        throw new InvalidVerdict(`${where}${key} is over ${max} bytes`);
}
function json(value, member) {
    try {
        check(value);
    }
    catch (e) {
        if (e instanceof InvalidJson)
            throw new InvalidVerdict(`${member}: ${e.message}`);
        throw e;
    }
}
function objectWithin(value, member, max) {
    if (!isObject(value))
        throw new InvalidVerdict(`${member} is an object`);
    json(value, member);
    if (canonicalLength(value) > max)
        throw new InvalidVerdict(`${member} is over ${max} canonical bytes`);
}
/**
 * §5 validation and hookwire's bounds; throws {@link InvalidVerdict}. With
 * `point`, also the §4.3 rule that forbids a transform there.
 */
export function validate(verdict, point) {
    if (!isObject(verdict))
        throw new InvalidVerdict('a verdict is an object');
    const { decision } = verdict;
    if (decision !== 'allow' && decision !== 'deny' && decision !== 'transform') {
        throw new InvalidVerdict('decision is not allow, deny or transform');
    }
    const unknown = Object.keys(verdict).filter((k) => !MEMBERS.has(k) && verdict[k] !== undefined);
    if (unknown.length)
        throw new InvalidVerdict(`unknown verdict members: ${unknown.sort().join(', ')}`);
    boundedString(verdict, 'reason', LIMITS.reasonBytes);
    boundedString(verdict, 'message', LIMITS.messageBytes);
    if (typeof verdict.reason === 'string' && verdict.reason.startsWith(HOST_ERROR_PREFIX)) {
        throw new InvalidVerdict('host_error:* reasons are the host\'s own');
    }
    const warnings = verdict.warnings ?? [];
    if (!Array.isArray(warnings) || warnings.length > LIMITS.warnings) {
        throw new InvalidVerdict(`warnings is an array of at most ${LIMITS.warnings}`);
    }
    for (const w of warnings) {
        if (!isObject(w) || Object.keys(w).some((k) => k !== 'reason' && k !== 'message')) {
            throw new InvalidVerdict('a warning is {reason?, message?}');
        }
        boundedString(w, 'reason', LIMITS.reasonBytes, 'warnings[].');
        boundedString(w, 'message', LIMITS.messageBytes, 'warnings[].');
    }
    const labels = verdict.result_labels ?? [];
    if (!Array.isArray(labels) || labels.length > LIMITS.resultLabels) {
        throw new InvalidVerdict(`result_labels is an array of at most ${LIMITS.resultLabels}`);
    }
    for (const label of labels) {
        if (typeof label !== 'string' || Buffer.byteLength(label, 'utf8') > LIMITS.labelBytes) {
            throw new InvalidVerdict(`a result label is a string of at most ${LIMITS.labelBytes} bytes`);
        }
    }
    if (verdict.approval !== undefined) {
        if (decision !== 'deny')
            throw new InvalidVerdict('approval is allowed on a deny only');
        objectWithin(verdict.approval, 'approval', LIMITS.approvalBytes);
    }
    const t = verdict.transform;
    if ((t !== undefined) !== (decision === 'transform')) {
        throw new InvalidVerdict('transform is present exactly on a transform decision');
    }
    if (t !== undefined) {
        if (!isObject(t) || typeof t.path !== 'string' || Object.keys(t).some((k) => k !== 'path' && k !== 'value')) {
            throw new InvalidVerdict('transform is {path, value}');
        }
        if (!t.path.startsWith('$target') && !t.path.startsWith('$policy_target')) {
            throw new InvalidVerdict('a transform path is rooted at $target');
        }
        if (Buffer.byteLength(t.path, 'utf8') > LIMITS.transformPathBytes) {
            throw new InvalidVerdict(`transform.path is over ${LIMITS.transformPathBytes} bytes`);
        }
        json(t.value === undefined ? null : t.value, 'transform.value');
        if (point !== undefined && NO_TRANSFORM.has(point))
            throw new InvalidVerdict(`transform is forbidden at ${point}`);
    }
    if (verdict.evidence !== undefined)
        objectWithin(verdict.evidence, 'evidence', LIMITS.evidenceBytes);
}
/**
 * A hook's result (a verdict or a {@link Response}) validated whole: the
 * verdict, then the §5.5 extension namespaces and size.
 */
export function validateResponse(result, point) {
    if (result === undefined || result === null)
        throw new InvalidVerdict('the hook returned no verdict');
    const response = result instanceof Response ? result : new Response(result);
    validate(response.verdict, point);
    if (!isObject(response.extensions))
        throw new InvalidVerdict('extensions is an object');
    const keys = Object.keys(response.extensions);
    if (keys.some((k) => !NAMESPACE.test(k))) {
        throw new InvalidVerdict('an extension namespace matches ^[a-z][a-z0-9_]*$');
    }
    if (keys.length) {
        json(response.extensions, 'extensions');
        if (canonicalLength(response.extensions) > LIMITS.responseExtensionsBytes) {
            throw new InvalidVerdict(`extensions are over ${LIMITS.responseExtensionsBytes} canonical bytes`);
        }
    }
    return response;
}
