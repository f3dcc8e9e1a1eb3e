// Opens the approval web page signed out in a real headless Chromium and
// reports what it shows: the sign-in form, and whether anything of the
// signed-in screen (the bar with "Signed in as", Pending, History, Sign
// out; the app) is visible, and every element carrying `hidden` that is
// rendered anyway (a stylesheet's `display` overriding the attribute).
//
//   node tests/web/signed_out.mjs <page-url>
//
// Prints one JSON line; exits non-zero with a message on stderr on any
// failure. Used by tests/approval_web.rs.
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [url] = process.argv.slice(2);
if (!url) {
  console.error("usage: signed_out.mjs <page-url>");
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(executablePath)) {
  console.error(`signed_out.mjs: no Chromium at ${executablePath}; run scripts/setup.sh as root`);
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
  // The page decides it is signed out once /api/me answers 401.
  await page.locator("#signin").waitFor({ state: "visible" });
  const shown = await page.evaluate(() => {
    const rendered = (el) => {
      const r = el.getBoundingClientRect();
      return getComputedStyle(el).display !== "none" && r.width > 0 && r.height > 0;
    };
    return {
      signin: rendered(document.getElementById("signin")),
      bar: rendered(document.getElementById("bar")),
      app: rendered(document.getElementById("app")),
      signout: rendered(document.getElementById("signout")),
      text: document.body.innerText,
      hidden_but_rendered: [...document.querySelectorAll("[hidden]")]
        .filter((el) => getComputedStyle(el).display !== "none")
        .map((el) => el.id || el.tagName.toLowerCase()),
    };
  });
  console.log(JSON.stringify(shown));
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
}
