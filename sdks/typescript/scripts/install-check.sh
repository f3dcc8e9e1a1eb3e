#!/usr/bin/env bash
# The documented install, as a new user runs it from a fresh clone: the
# package's tracked files only (the built dist/ is checked in; no
# node_modules), installed into a new project as the README says:
#   npm pack PATH/TO/hookwire/sdks/typescript
#   npm install ./hookwire-sdk-0.1.0.tgz
# then imported, its exports used, and a consumer's TypeScript checked
# against the installed types (ctx.input?.content, ctx.output?.content).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(git rev-parse --show-toplevel)"
tsc="$(pwd)/node_modules/.bin/tsc"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

mkdir -p "${tmp}/hookwire"
(cd "${root}" && git ls-files -z -- sdks/typescript | xargs -0 cp --parents -t "${tmp}/hookwire")
if [ ! -f "${tmp}/hookwire/sdks/typescript/dist/index.js" ]; then
  echo "sdks/typescript: dist/ is not tracked: a fresh clone could not install the package" >&2
  exit 1
fi

mkdir "${tmp}/app"
cd "${tmp}/app"
printf '{"name": "consumer", "version": "1.0.0", "private": true, "type": "module"}\n' >package.json
tarball="$(npm pack --loglevel=error ../hookwire/sdks/typescript | tail -n1)"
npm install --no-audit --no-fund --loglevel=error "./${tarball}"
# What a TypeScript project of the user's has beside it.
npm install --save-dev --no-audit --no-fund --loglevel=error @types/node@20.19.8
if [ -L node_modules/@hookwire/sdk ]; then
  echo "sdks/typescript: npm linked the package instead of installing it" >&2
  exit 1
fi

node --input-type=module -e '
  import { Interceptor, allow, deny, run } from "@hookwire/sdk";
  const policy = new Interceptor({ name: "no-bash", version: "1.0.0" });
  policy.hook("pre_tool_call", (ctx) => (ctx.tool_call?.name === "bash" ? deny("policy:no_shell") : allow()));
  if (typeof run !== "function") throw new Error("run is not exported");
  console.log("sdks/typescript: the documented install imports and builds an interceptor");
'

cat >consumer.ts <<'TS'
import { Interceptor, allow, deny, type AgentContext } from '@hookwire/sdk';

const policy = new Interceptor({ name: 'typed', version: '1.0.0' });
policy.hook('input', (ctx: AgentContext) => {
  const content = ctx.input?.content;
  return typeof content === 'string' && content.includes('secret') ? deny('policy:secret') : allow();
});
policy.hook('output', (ctx: AgentContext) => (ctx.output?.content === null ? deny('policy:empty') : allow()));
TS
# The README's interceptor (examples/no-bash.ts, the docs' block), as a
# user's own file.
cp "${tmp}/hookwire/sdks/typescript/examples/no-bash.ts" no-bash.ts
printf '{"compilerOptions": {"target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "noEmit": true, "skipLibCheck": true}, "files": ["consumer.ts", "no-bash.ts"]}\n' >tsconfig.json
"${tsc}" -p tsconfig.json
echo "sdks/typescript: a consumer's TypeScript and the README's example check against the installed types"
