// Opens the approval web page in a real headless Chromium, signs in with
// the approver token in $APPROVER_TOKEN (from the environment, never the
// command line), waits for the first pending request to show up, reports
// what the page shows for it, checks the layout at 1280 and 390 px wide
// (screenshots in <artifacts>), tries the filters, and decides it:
//
//   APPROVER_TOKEN=... node tests/web/click.mjs <page-url> <action> <artifacts-dir> [spki]
//
// <action> is `approve` (by keyboard: `j` selects, `a` approves),
// `reject:<reason>` (the card's Reject opens the request; the reason is
// typed and Reject clicked), or `approve-edited:<json>` (opens the
// request, which records that the approver saw it; invalid JSON is refused
// first; then <json> replaces the arguments and the confirmation's diff is
// read before approving).
//
// Before signing in it checks that the API refuses it (401) and that the
// page offers a sign-in form. With [spki], the page is served over HTTPS
// by a test authority; Chromium is told to trust only that certificate's
// key, by SPKI hash.
//
// Prints one JSON line on success: the card's fields as the page rendered
// them, the "seen by" before and after opening, the session cookie's
// flags, the filters' effect, the layout checks, the diff, the status line
// after the decision and the decision's history row. Exits non-zero with a
// message on stderr on any failure. Used by tests/approval_web.rs.
import { mkdtempSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, action, artifacts, spki] = process.argv.slice(2);
const token = process.env.APPROVER_TOKEN;
const after = (prefix) => (action && action.startsWith(prefix) ? action.slice(prefix.length) : undefined);
const edited = after("approve-edited:") !== undefined ? JSON.parse(after("approve-edited:")) : undefined;
const rejectReason = after("reject:");
const kind = action === "approve" ? "approve" : edited !== undefined ? "approve-edited" : rejectReason ? "reject" : null;
if (!url || !kind || !token || !artifacts) {
  console.error("usage: APPROVER_TOKEN=... click.mjs <page-url> approve|reject:<reason>|approve-edited:<json> <artifacts-dir> [spki-sha256]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
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

  const row = page.locator("#pending li[data-request-id]").first();
  await row.locator("button[data-action=approve]").waitFor({ state: "visible" });
  // Wait for the countdown to be filled in by the page's own clock.
  await page.waitForFunction(() => {
    const s = document.querySelector("#pending li[data-request-id] .left");
    return s && s.textContent.trim().length > 0;
  });
  const field = async (cls) => (await row.locator(`.${cls}`).first().textContent()).trim();
  const id = await row.getAttribute("data-request-id");
  const shown = {
    approver: who,
    cookie: { httpOnly: session.httpOnly, sameSite: session.sameSite, secure: session.secure },
    request_id: id,
    point: await field("point"),
    tool: await field("tool"),
    agent: await field("agent"),
    tenant: await field("tenant"),
    submitted: await field("submitted"),
    args: JSON.parse(await field("args")),
    reason: await field("reason"),
    session: await field("session"),
    time_left: await field("left"),
    seen_before: await field("seen"),
    connection: (await page.locator("#conn").innerText()).trim(),
    shortcuts_documented: (await page.locator("#help dl.keys").textContent()).includes("approve the selected request"),
    labelled_inputs: await page.evaluate(() => [...document.querySelectorAll("input, select, textarea")]
      .every((e) => e.labels && e.labels.length > 0)),
  };

  // Filters and search.
  const visible = () => row.isVisible();
  await page.locator("#f-tool").selectOption(shown.tool);
  const byTool = await visible();
  await page.locator("#f-point").selectOption(shown.point);
  const byPoint = await visible();
  await page.locator("#search").fill("no-request-looks-like-this");
  await page.locator("#filtered-empty").waitFor({ state: "visible" });
  const searchHidden = !(await visible());
  await page.locator("#search").fill(shown.session);
  const searchFound = await visible();
  await page.locator("#f-clear").click();
  await row.waitFor({ state: "visible" });
  shown.filters = { by_tool: byTool, by_point: byPoint, search_hidden: searchHidden, search_found: searchFound,
    cleared: await visible() };

  // Layout: no horizontal overflow, screenshots at both widths.
  const overflows = () => page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
  const shot = (name) => page.screenshot({ path: join(artifacts, `${kind}-${name}.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  shown.overflow_1280 = await overflows();
  await shot("1280");
  await page.setViewportSize({ width: 390, height: 844 });
  shown.overflow_390 = await overflows();
  await shot("390");

  if (kind === "approve") {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator("body").press("j");
    await row.and(page.locator(".selected")).waitFor();
    await page.locator("body").press("a");
  } else if (kind === "reject") {
    await row.locator("button[data-action=reject]").click();
    await page.locator("#detail").waitFor({ state: "visible" });
    shown.reject_focus = await page.evaluate(() => document.activeElement.id);
    // A rejection needs its reason.
    await page.locator("#detail-reject").click();
    shown.reject_without_reason = (await page.locator("#detail-error").textContent()).trim();
    await page.locator("#detail-note").fill(rejectReason);
    await page.locator("#detail-reject").click();
  } else {
    await row.locator("button[data-action=open]").click();
    await page.locator("#detail").waitFor({ state: "visible" });
    shown.detail_context = JSON.parse((await page.locator("#detail-context").textContent()).trim());
    shown.detail_approval = JSON.parse((await page.locator("#detail-approval").textContent()).trim());
    shown.detail_facts = (await page.locator("#detail-facts").textContent()).trim();
    // The other approvers (and this page) learn that someone opened it.
    await page.waitForFunction(
      (name) => document.querySelector("#pending li[data-request-id] .seen").textContent.includes(name), who);
    shown.seen_after = await field("seen");
    shown.overflow_390_detail = await overflows();
    await shot("390-detail");
    await page.setViewportSize({ width: 1280, height: 900 });
    // Invalid JSON is refused before anything is sent.
    await page.locator("#detail-args").fill("{\"amount\": 40,");
    await page.locator("#detail-approve-edited").click();
    shown.invalid_json = (await page.locator("#detail-error").textContent()).trim();
    shown.invalid_marked = await page.locator("#detail-args").getAttribute("aria-invalid");
    await page.locator("#detail-args").fill(JSON.stringify(edited, null, 2));
    await page.locator("#detail-note").fill("capped by the desk");
    await page.locator("#detail-approve-edited").click();
    await page.locator("#confirm").waitFor({ state: "visible" });
    shown.diff = (await page.locator("#confirm-diff li").allTextContents()).map((t) => t.trim());
    await shot("1280-confirm");
    await page.locator("#confirm-ok").click();
  }
  await page.locator("#status").filter({ hasText: id }).waitFor();
  shown.status = (await page.locator("#status").innerText()).trim();
  // The card goes away once the service reports the request resolved.
  await page.locator(`#pending li[data-request-id="${id}"]`).waitFor({ state: "detached" });
  // The decision is in the history, under the signed-in name (`h`).
  await page.locator("body").press("h");
  const entry = page.locator(`#history tr[data-request-id="${id}"]`).first();
  await entry.waitFor({ state: "visible" });
  const cell = async (cls) => (await entry.locator(`td.${cls}`).innerText()).trim();
  shown.history = {
    approver: await cell("approver"),
    outcome: await cell("outcome"),
    status: await cell("status"),
    note: await cell("note"),
    edits: await cell("edits"),
    session: await cell("session"),
    instance: await cell("instance"),
  };
  await page.setViewportSize({ width: 390, height: 844 });
  shown.overflow_390_history = await overflows();
  await shot("390-history");
  console.log(JSON.stringify(shown));
} catch (e) {
  console.error(`click.mjs: ${e && e.message ? e.message : e}`);
  process.exitCode = 1;
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
