// Opens the approval web page in a real headless Chromium, signs in with
// the approver token in $APPROVER_TOKEN (from the environment, never the
// command line), waits for the first pending request to show up, reports
// what the page shows for it, and decides it:
//
//   APPROVER_TOKEN=... node tests/web/click.mjs <page-url> <action> [screenshot.png] [ca.pem]
//
// <action> is `approve` or `reject` (the row's buttons), or
// `approve-edited:<json>` (opens the request's detail view, which records
// that the approver saw it, replaces the arguments with <json> and
// approves with them).
//
// Before signing in it checks that the API refuses it (401) and that the
// page offers a sign-in form. With [ca.pem], the page is served over
// HTTPS by a test authority; Chromium is told to trust only that
// certificate's key, by SPKI hash.
//
// Prints one JSON line on success: the row's cells as the page rendered
// them, the "seen by" cell before and after opening, the session cookie's
// flags and the status line after the decision. Exits non-zero with a
// message on stderr on any failure. Used by tests/approval_web.rs.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, action, screenshot, spki] = process.argv.slice(2);
const token = process.env.APPROVER_TOKEN;
const edited = action && action.startsWith("approve-edited:") ? JSON.parse(action.slice("approve-edited:".length)) : undefined;
if (!url || !(["approve", "reject"].includes(action) || edited !== undefined) || !token) {
  console.error("usage: APPROVER_TOKEN=... click.mjs <page-url> approve|reject|approve-edited:<json> [screenshot.png|-] [spki-sha256]");
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(executablePath)) {
  console.error(`click.mjs: no Chromium at ${executablePath}; run scripts/setup.sh as root`);
  process.exit(3);
}

const profile = mkdtempSync(join(tmpdir(), "hookwire-chromium-"));
let context;
try {
  const args = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ];
  // Trust exactly the test server's key (no global certificate bypass).
  if (spki) args.push(`--ignore-certificate-errors-spki-list=${spki}`);
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args,
    timeout: 30_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);

  // Not signed in: the API refuses, the page asks for a token.
  await page.goto(url);
  const before = await page.evaluate(() => fetch("/api/pending").then((r) => r.status));
  if (before !== 401) throw new Error(`/api/pending without a session answered ${before}`);
  await page.locator("#signin").waitFor({ state: "visible" });
  await page.locator("#token").fill(token);
  await page.locator("#signin button[type=submit]").click();
  await page.locator("#app").waitFor({ state: "visible" });
  const who = (await page.locator("#who").innerText()).trim();
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "hookwire_session");
  if (!session) throw new Error("no session cookie after sign-in");
  if (session.value === token) throw new Error("the session cookie is the token");

  const row = page.locator("tr[data-request-id]").first();
  await row.locator("button[data-action=approve]").waitFor({ state: "visible" });
  // Wait for the countdown to be filled in by the page's own clock.
  await page.waitForFunction(() => {
    const td = document.querySelector("tr[data-request-id] td.left");
    return td && td.textContent.trim().length > 0;
  });
  const cells = async (cls) => (await row.locator(`td.${cls}`).innerText()).trim();
  const shown = {
    approver: who,
    cookie: { httpOnly: session.httpOnly, sameSite: session.sameSite, secure: session.secure },
    request_id: await row.getAttribute("data-request-id"),
    point: await cells("point"),
    tool: await cells("tool"),
    args: JSON.parse(await cells("args")),
    reason: await cells("reason"),
    session: await cells("session"),
    time_left: await cells("left"),
    seen_before: await cells("seen"),
    connection: (await page.locator("#conn").innerText()).trim(),
  };
  if (edited !== undefined) {
    await row.locator("button[data-action=open]").click();
    await page.locator("#detail").waitFor({ state: "visible" });
    shown.detail_context = JSON.parse((await page.locator("#detail-context").innerText()).trim());
    // The other approvers (and this page) learn that someone opened it.
    await page.waitForFunction(
      (name) => document.querySelector("tr[data-request-id] td.seen").textContent.includes(name),
      who,
    );
    shown.seen_after = await cells("seen");
    await page.locator("#detail-args").fill(JSON.stringify(edited, null, 2));
    if (screenshot && screenshot !== "-") await page.screenshot({ path: screenshot, fullPage: true });
    await page.locator("#detail button[data-action=approve-edited]").click();
  } else {
    if (screenshot && screenshot !== "-") await page.screenshot({ path: screenshot, fullPage: true });
    await row.locator(`button[data-action=${action}]`).click();
  }
  await page.locator("#status").filter({ hasText: shown.request_id }).waitFor();
  shown.status = (await page.locator("#status").innerText()).trim();
  // The row goes away once the service reports the request resolved.
  await page.locator(`tr[data-request-id="${shown.request_id}"]`).waitFor({ state: "detached" });
  // The decision is in the history, under the signed-in name.
  await page.locator("#tab-history").click();
  const entry = page.locator(`#history tr[data-request-id="${shown.request_id}"]`).first();
  await entry.waitFor({ state: "visible" });
  shown.history = {
    approver: (await entry.locator("td.approver").innerText()).trim(),
    outcome: (await entry.locator("td.outcome").innerText()).trim(),
    status: (await entry.locator("td.status").innerText()).trim(),
  };
  console.log(JSON.stringify(shown));
} catch (e) {
  console.error(`click.mjs: ${e && e.message ? e.message : e}`);
  process.exitCode = 1;
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
