// npm run screenshots [-- --out DIR] [-- --url URL --key KEY]
// Opens the dashboard in Debian's headless Chromium at a desktop (1440×900) and a phone
// (390×844) width and writes full-page PNGs to DIR (default screenshots/, ignored by git).
// Without --url it starts the server with the demo data `npm start` writes (an in-memory
// database unless TEST_DATABASE_URL is set); with --url and --key it opens a running server.
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CHROMIUM, chromiumMissing, launchChromium } from "../test/browser/chromium.js";
import { panelsSettled, signIn } from "../test/browser/dashboard-page.js";
import { startDemoServer } from "../test/browser/demo-server.js";

const VIEWPORTS = [
  { name: "desktop", width: 1440, height: 900 },
  { name: "phone", width: 390, height: 844 },
];

const { values } = parseArgs({
  options: { out: { type: "string", default: "screenshots" }, url: { type: "string" }, key: { type: "string" } },
});

if (chromiumMissing) {
  console.error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  process.exit(1);
}
if ((values.url === undefined) !== (values.key === undefined)) {
  console.error("--url and --key go together");
  process.exit(1);
}

const out = resolve(values.out);
await mkdir(out, { recursive: true });
const demo = values.url ? undefined : await startDemoServer();
const url = values.url ?? demo!.url;
const key = values.key ?? demo!.ownerKey;
try {
  for (const viewport of VIEWPORTS) {
    const browser = await launchChromium({ width: viewport.width, height: viewport.height });
    try {
      const page = await browser.context.newPage();
      await page.goto(url);
      const gate = join(out, `${viewport.name}-key.png`);
      await page.screenshot({ path: gate });
      await signIn(page, key);
      await panelsSettled(page);
      // uPlot draws on the next frame after a resize; let the last chart settle.
      await page.waitForTimeout(300);
      const full = join(out, `${viewport.name}.png`);
      await page.screenshot({ path: full, fullPage: true });
      console.log(`${gate}\n${full}`);
    } finally {
      await browser.close();
    }
  }
} finally {
  await demo?.close();
}
