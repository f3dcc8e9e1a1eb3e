import hookwire

policy = hookwire.Interceptor("no-bash", "1.0.0")

@policy.hook("pre_tool_call")
def no_bash(ctx):                       # ctx: hookwire.Context, the §4 AgentContext
    if ctx.tool_name == "bash":         # ctx.tool_args: the call's arguments, e.g. {"cmd": "ls"}
        return hookwire.deny("policy:no_shell", f"no shell here: {ctx.tool_args}")
    return hookwire.allow()

@policy.hook("post_tool_call")
def cap_result(ctx):                    # ctx.target: what this point rewrites (§4.3)
    if len(str(ctx.target)) > 10_000:
        return hookwire.transform("$target", str(ctx.target)[:10_000])
    return hookwire.allow()

hookwire.run(policy)                    # --host, --port, --points, --unary-only; prints PORT <n>
