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
import { type Point } from './points.js';
/** Reasons starting with this are the host's own (§6.3). */
export declare const HOST_ERROR_PREFIX = "host_error:";
/** hookwire's bounds, the host's own (`src/response.rs`, `src/verdict.rs`). */
export declare const LIMITS: Readonly<{
    reasonBytes: 1024;
    messageBytes: number;
    warnings: 64;
    resultLabels: 64;
    labelBytes: 1024;
    transformPathBytes: 4096;
    approvalBytes: 65536;
    evidenceBytes: 10240;
    responseExtensionsBytes: 65536;
}>;
/** A recorded concern that does not change control flow (§5.1). */
export interface Warning {
    /** Machine identifier. */
    reason?: string;
    /** Human-readable text. */
    message?: string;
}
/** A verdict in the §5 JSON shape. */
export interface Verdict {
    /** The decision. */
    decision: 'allow' | 'deny' | 'transform';
    /** Machine identifier of your own (never `host_error:*`). */
    reason?: string;
    /** Human-readable text. */
    message?: string;
    /** Concerns recorded on any decision. */
    warnings?: Warning[];
    /** On a deny only: makes it liftable by the approval seam (§9). */
    approval?: Record<string, unknown>;
    /** Present exactly on a transform. */
    transform?: {
        path: string;
        value: unknown;
    };
    /** Opaque pointer to an offline-verifiable artefact (§5.3). */
    evidence?: Record<string, unknown>;
    /** Labels for label-flow tracking (§5.4). */
    result_labels?: string[];
}
/** Options every builder takes. */
export interface VerdictOptions {
    /** Machine identifier. */
    reason?: string;
    /** Human-readable text. */
    message?: string;
    /** Concerns to record. */
    warnings?: Warning[];
    /** Result labels (§5.4). */
    labels?: string[];
}
/** A verdict or response the host would refuse (§5, hookwire's bounds). */
export declare class InvalidVerdict extends Error {
    /** @param message what is wrong, never payload */
    constructor(message: string);
}
/** `allow`: the action proceeds with the target unchanged. */
export declare function allow(options?: VerdictOptions): Verdict;
/**
 * `deny`: the action does not proceed. `reason` is a machine id of your own
 * (never `host_error:*`); an `approval` object makes the deny liftable (see
 * {@link escalate}).
 */
export declare function deny(reason: string, message?: string, options?: {
    warnings?: Warning[];
    approval?: Record<string, unknown>;
    evidence?: Record<string, unknown>;
}): Verdict;
/**
 * `transform`: the action proceeds with the value at `path` (rooted at
 * `$target`; `$target` alone replaces the whole target) replaced by
 * `value`. Forbidden at `agent_startup` and `agent_shutdown`.
 */
export declare function transform(path: string, value: unknown, options?: VerdictOptions): Verdict;
/** `warn` (§5.1): an `allow` carrying one warning. */
export declare function warn(reason: string, message?: string): Verdict;
/**
 * `escalate` (§5.1): a `deny` with an `approval` object, lifted only when
 * the host's approval resolver approves.
 */
export declare function escalate(reason: string, message?: string, approval?: Record<string, unknown>): Verdict;
/**
 * A verdict plus namespaced transport metadata (§5.5); a plain verdict is
 * enough for a policy that sends no receipts.
 */
export declare class Response {
    readonly verdict: Verdict;
    readonly extensions: Record<string, unknown>;
    /**
     * @param verdict the verdict that decides
     * @param extensions `<namespace>` → JSON metadata
     */
    constructor(verdict: Verdict, extensions?: Record<string, unknown>);
}
/**
 * §5 validation and hookwire's bounds; throws {@link InvalidVerdict}. With
 * `point`, also the §4.3 rule that forbids a transform there.
 */
export declare function validate(verdict: unknown, point?: Point): asserts verdict is Verdict;
/**
 * A hook's result (a verdict or a {@link Response}) validated whole: the
 * verdict, then the §5.5 extension namespaces and size.
 */
export declare function validateResponse(result: unknown, point?: Point): Response;
