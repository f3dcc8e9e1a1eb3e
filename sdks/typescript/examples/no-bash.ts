import { Interceptor, allow, deny, run } from '@hookwire/sdk';

const policy = new Interceptor({ name: 'no-bash', version: '1.0.0' });
policy.hook('pre_tool_call', (ctx) =>          // ctx: AgentContext, the §4 JSON, deep-frozen
  ctx.tool_call?.name === 'bash' ? deny('policy:no_shell', 'no shell here') : allow());

await run(policy);                             // --host, --port, --points, --help; prints PORT <n>
