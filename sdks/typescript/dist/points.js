/**
 * The eight interception points (AGENT-HOOKS-0.1 §3): their names, the
 * gRPC method and hook method of each, and where each point's target lives
 * in the context (§4.2, §4.3).
 *
 * @module
 */
/** The contract version a service implements. */
export const SPEC = 'agent-hooks/0.1';
/** The eight points, in emission order. */
export const POINTS = [
    'agent_startup',
    'input',
    'pre_model_call',
    'post_model_call',
    'pre_tool_call',
    'post_tool_call',
    'output',
    'agent_shutdown',
];
/** The unary gRPC method of each point. */
export const RPC = {
    agent_startup: 'AgentStartup',
    input: 'Input',
    pre_model_call: 'PreModelCall',
    post_model_call: 'PostModelCall',
    pre_tool_call: 'PreToolCall',
    post_tool_call: 'PostToolCall',
    output: 'Output',
    agent_shutdown: 'AgentShutdown',
};
/** The method name a subclass of `Interceptor` overrides for each point. */
export const HOOK_METHOD = {
    agent_startup: 'agentStartup',
    input: 'input',
    pre_model_call: 'preModelCall',
    post_model_call: 'postModelCall',
    pre_tool_call: 'preToolCall',
    post_tool_call: 'postToolCall',
    output: 'output',
    agent_shutdown: 'agentShutdown',
};
/** The path of each point's target inside the context (§4.3). */
export const TARGET_LOCATION = {
    agent_startup: ['agent_init'],
    input: ['input'],
    pre_model_call: ['messages'],
    post_model_call: ['response'],
    pre_tool_call: ['tool_call', 'args'],
    post_tool_call: ['tool_result', 'value'],
    output: ['output'],
    agent_shutdown: ['summary'],
};
/** Points where a transform is forbidden (§4.3). */
export const NO_TRANSFORM = new Set(['agent_startup', 'agent_shutdown']);
/** Whether `name` is one of the eight point names. */
export function isPoint(name) {
    return typeof name === 'string' && POINTS.includes(name);
}
/** Throws a `RangeError` naming the unknown ones unless every name is a point. */
export function checkPoints(names) {
    const unknown = names.filter((p) => !isPoint(p));
    if (unknown.length)
        throw new RangeError(`unknown interception point(s): ${unknown.join(', ')}`);
    return names;
}
