/**
 * The eight interception points (AGENT-HOOKS-0.1 §3): their names, the
 * gRPC method and hook method of each, and where each point's target lives
 * in the context (§4.2, §4.3).
 *
 * @module
 */
/** The contract version a service implements. */
export declare const SPEC = "agent-hooks/0.1";
/** The eight points, in emission order. */
export declare const POINTS: readonly ["agent_startup", "input", "pre_model_call", "post_model_call", "pre_tool_call", "post_tool_call", "output", "agent_shutdown"];
/** One of the eight interception points, by its spec name. */
export type Point = (typeof POINTS)[number];
/** The unary gRPC method of each point. */
export declare const RPC: Readonly<Record<Point, string>>;
/** The method name a subclass of `Interceptor` overrides for each point. */
export declare const HOOK_METHOD: {
    readonly agent_startup: "agentStartup";
    readonly input: "input";
    readonly pre_model_call: "preModelCall";
    readonly post_model_call: "postModelCall";
    readonly pre_tool_call: "preToolCall";
    readonly post_tool_call: "postToolCall";
    readonly output: "output";
    readonly agent_shutdown: "agentShutdown";
};
/** The path of each point's target inside the context (§4.3). */
export declare const TARGET_LOCATION: Readonly<Record<Point, readonly string[]>>;
/** Points where a transform is forbidden (§4.3). */
export declare const NO_TRANSFORM: ReadonlySet<Point>;
/** Whether `name` is one of the eight point names. */
export declare function isPoint(name: unknown): name is Point;
/** Throws a `RangeError` naming the unknown ones unless every name is a point. */
export declare function checkPoints(names: readonly string[]): Point[];
