// Opens the approval web page in a real headless Chromium, waits for the
// first pending request to show up, reports what the page shows for it,
// and clicks Approve or Reject.
//
//   node tests/web/click.mjs <page-url> approve|reject [screenshot.png]
//
// Prints one JSON line on success: the row's cells as the page rendered
// them and the status line after the click. Exits non-zero with a message
// on stderr on any failure. Used by tests/approval_web.rs.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url, action, screenshot] = process.argv.slice(2);
if (!url || !["approve", "reject"].includes(action)) {
  console.error("usage: click.mjs <page-url> approve|reject [screenshot.png]");
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
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    timeout: 30_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  await page.goto(url);
  const row = page.locator("tr[data-request-id]").first();
  await row.locator(`button[data-action=${action}]`).waitFor({ state: "visible" });
  // Wait for the countdown to be filled in by the page's own clock.
  await page.waitForFunction(() => {
    const td = document.querySelector("tr[data-request-id] td.left");
    return td && td.textContent.trim().length > 0;
  });
  const cells = async (cls) => (await row.locator(`td.${cls}`).innerText()).trim();
  const shown = {
    request_id: await row.getAttribute("data-request-id"),
    point: await cells("point"),
    tool: await cells("tool"),
    args: JSON.parse(await cells("args")),
    reason: await cells("reason"),
    session: await cells("session"),
    time_left: await cells("left"),
    connection: (await page.locator("#conn").innerText()).trim(),
  };
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  await row.locator(`button[data-action=${action}]`).click();
  await page.locator("#status").filter({ hasText: shown.request_id }).waitFor();
  shown.status = (await page.locator("#status").innerText()).trim();
  // The row goes away once the service reports the request resolved.
  await page.locator(`tr[data-request-id="${shown.request_id}"]`).waitFor({ state: "detached" });
  console.log(JSON.stringify(shown));
} catch (e) {
  console.error(`click.mjs: ${e && e.message ? e.message : e}`);
  process.exitCode = 1;
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
