// Runs axe-core on every page of a running inklink, in light and dark mode, in both languages,
// at 1366 and 375 px, takes a screenshot of each (target/screenshots/axe/), and fails on any
// serious or critical violation.
// Usage: node check.mjs BASE_URL USER PASSWORD [ADMIN_PAGE…]
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const [base, user, password, ...morePages] = process.argv.slice(2);
const shots = new URL("../../target/screenshots/axe/", import.meta.url).pathname;
mkdirSync(shots, { recursive: true });
const WIDTHS = [1366, 375];
const WECHAT =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2c) NetType/WIFI Language/zh_CN";

const adminPages = [
  "/admin/links", "/admin/links/new", "/admin/links/import", "/admin/links/axe1",
  "/admin/links/axe1/edit", "/admin/links/axe1/stats", "/admin/links/axe1/delete",
  "/admin/dashboard", "/admin/tags", "/admin/tags/spring/stats", "/admin/sms", "/admin/batches",
  "/admin/domains", "/admin/users", "/admin/keys", "/admin/audit", "/admin/api",
  "/admin/webhooks", "/admin/webhooks/1",
  "/admin/account", "/admin/account/two-factor", ...morePages,
];
// Visitor pages: [path, user agent, language].
const visitorPages = [
  ["/", null, "en"], ["/nothing-here", null, "zh-CN"], ["/axe-off", null, "en"],
  ["/axe-pw", null, "zh-CN"], ["/axe-wx", WECHAT, "zh-CN"], ["/axe-soon", null, "en"],
];

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
let failures = 0;

async function check(page, label) {
  const name = label.replace(/[^A-Za-z0-9-]+/g, "_").replace(/^_|_$/g, "");
  await page.screenshot({ path: `${shots}${name}.png`, fullPage: true });
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () =>
    await window.axe.run(document, { resultTypes: ["violations"] }));
  for (const v of result.violations) {
    if (v.impact !== "serious" && v.impact !== "critical") continue;
    failures += 1;
    console.log(`FAIL ${label}: ${v.id} (${v.impact}) ${v.help}`);
    for (const node of v.nodes.slice(0, 3)) console.log(`    ${node.target.join(" ")}: ${node.failureSummary.split("\n").join(" ")}`);
  }
}

for (const scheme of ["light", "dark"]) {
  for (const width of WIDTHS) {
  for (const language of ["en", "zh-CN"]) {
  const context = await browser.newContext({
    colorScheme: scheme, bypassCSP: true, viewport: { width, height: 900 },
    locale: language, extraHTTPHeaders: { "Accept-Language": language },
  });
  const page = await context.newPage();
  await page.goto(`${base}/admin/login`);
  await check(page, `${scheme} ${width} ${language} /admin/login`);
  await page.fill("#username", user);
  await page.fill("#password", password);
  await Promise.all([page.waitForNavigation(), page.click("form button[type=submit]")]);
  for (const path of adminPages) {
    const response = await page.goto(base + path);
    if (!response || response.status() >= 400) {
      failures += 1;
      console.log(`FAIL ${scheme} ${width} ${language} ${path}: HTTP ${response && response.status()}`);
      continue;
    }
    await check(page, `${scheme} ${width} ${language} ${path}`);
  }
  await context.close();
  }
  for (const [path, agent, language] of visitorPages) {
    const visitor = await browser.newContext({
      colorScheme: scheme, bypassCSP: true, locale: language, viewport: { width, height: 900 },
      ...(agent ? { userAgent: agent } : {}), extraHTTPHeaders: { "Accept-Language": language },
    });
    const page = await visitor.newPage();
    await page.goto(base + path);
    await check(page, `${scheme} ${width} ${path} (${language})`);
    await visitor.close();
  }
  }
}
await browser.close();
if (failures > 0) {
  console.log(`${failures} serious or critical accessibility violations`);
  process.exit(1);
}
console.log(`axe-core: no serious or critical violation on any page, light or dark, English or Chinese, at ${WIDTHS.join(" and ")} px; screenshots in ${shots}`);
