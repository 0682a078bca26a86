import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, until, useStories } from "./test-helpers.js";
import { webuiHtml } from "./webui.js";

// The chat page in a real browser: headless Chromium from the system's packages (Debian's
// `chromium`; MINFER_CHROMIUM names another), driven by playwright-core (no browser download).

const CANDIDATES = [
  process.env.MINFER_CHROMIUM,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
];
function browserPath(): string {
  const p = CANDIDATES.find((c) => c && existsSync(c));
  if (!p)
    throw new Error(
      "no Chromium for the web page tests: install Debian's `chromium` package (apt-get install chromium) or set MINFER_CHROMIUM",
    );
  return p;
}

const stories = useStories();
let browser: Browser;
let shots: string;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: browserPath(), headless: true, args: ["--no-sandbox"] });
  shots = mkdtempSync(join(tmpdir(), "minfer-webui-"));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  rmSync(shots, { recursive: true, force: true });
});

/** Each open page's JavaScript errors and console errors, as they came. */
const pageErrors = new Map<Page, string[]>();

async function openPage(s: Running): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  pageErrors.set(page, errors);
  await page.goto(`${s.url}/`);
  return page;
}
/** The text of the first element `selector` finds. */
const text = async (page: Page, selector: string) =>
  (await page.locator(selector).first().textContent()) ?? "";
const jsErrors = (page: Page) => pageErrors.get(page) ?? [];

/** Every distinct length the last assistant message's text took while it streamed. */
async function watchLengths(page: Page): Promise<void> {
  // (a script string: the page's DOM types are not this package's)
  await page.evaluate(`
    window.lengths = [];
    new MutationObserver(() => {
      const all = document.querySelectorAll(".message.assistant .content");
      const n = all.length ? (all[all.length - 1].textContent ?? "").length : 0;
      if (n > 0 && window.lengths.at(-1) !== n) window.lengths.push(n);
    }).observe(document.getElementById("messages"), { childList: true, subtree: true, characterData: true });
  `);
}

async function setSetting(page: Page, id: string, value: string) {
  if (await page.locator("#settings").isHidden()) await page.click("#settings-toggle");
  await page.fill(`#${id}`, value);
  await page.dispatchEvent(`#${id}`, "change");
}

describe("the chat page", () => {
  it("is built into the package and served at / with a strict content policy", async () => {
    const html = webuiHtml();
    expect(html).toBeDefined();
    // nothing is fetched from elsewhere: the markup outside the one inline script refers to no URL
    const markup = html!.slice(0, html!.indexOf("<script>")) + html!.slice(html!.lastIndexOf("</script>"));
    expect(markup.match(/<[a-z]+[^>]+(src|href)="(?!data:)[^"]*"/i)?.[0] ?? null).toBeNull();
    expect(html!.match(/<script[^>]*>/gi)).toEqual(["<script>"]);
    const s = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 512 } });
    try {
      const r = await fetch(`${s.url}/`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-security-policy")).toContain("connect-src 'self'");
      expect(await r.text()).toBe(html);
    } finally {
      await s.server.close();
    }
    const off = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 512 }, webui: false });
    try {
      const r = await fetch(`${off.url}/`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain("--no-webui");
    } finally {
      await off.server.close();
    }
  });

  it("streams an answer, stops one, regenerates and edits", async () => {
    const s = await start({
      model: stories(),
      parallel: 1,
      contextOptions: { nCtx: 256 },
      contextShift: true,
    });
    try {
      const page = await openPage(s);
      await expect.poll(() => page.locator("#model option").count()).toBe(1);
      await setSetting(page, "temperature", "0");
      await setSetting(page, "max_tokens", "200");
      await watchLengths(page);
      await page.fill("#input", "Once upon a time");
      await page.press("#input", "Enter");
      await page.locator(".message.assistant .stats").waitFor({ timeout: 20_000 });
      const first = await text(page, ".message.assistant .content");
      expect(first.length).toBeGreaterThan(20);
      const lengths = (await page.evaluate("window.lengths")) as number[];
      expect(lengths.length, `the text grew in steps: ${lengths}`).toBeGreaterThan(2); // streamed, not at once
      expect(await text(page, ".message.user .content")).toBe("Once upon a time");

      // a long generation (context shift keeps it going) stopped from the page
      await setSetting(page, "max_tokens", "100000");
      await page.click(".regenerate");
      await until(
        async () => (await text(page, ".message.assistant .content")).length > 50,
        20_000,
        "tokens",
      );
      await page.click("#stop");
      await page
        .locator(".message.assistant .stats")
        .filter({ hasText: "stopped" })
        .waitFor({ timeout: 5000 });
      await expect.poll(() => page.locator("#send").isVisible()).toBe(true);
      expect(await page.locator(".message.assistant").count()).toBe(1);
      await until(
        async () =>
          ((await (await fetch(`${s.url}/slots`)).json()) as { is_processing: boolean }[])[0]!
            .is_processing === false,
        5000,
        "the slot to stop",
      );

      // regenerate: the same answer at temperature 0
      await setSetting(page, "max_tokens", "200");
      await page.click(".regenerate");
      await page
        .locator(".message.assistant .stats")
        .filter({ hasNotText: "stopped" })
        .waitFor({ timeout: 20_000 });
      expect(await text(page, ".message.assistant .content")).toBe(first);

      // edit the question: the conversation goes on from the edited message
      await page.click(".message.user .edit");
      await page.fill(".message.user textarea.edit", "The little dog");
      await page.click(".save-edit");
      await page.locator(".message.assistant .stats").waitFor({ timeout: 20_000 });
      expect(await text(page, ".message.user .content")).toBe("The little dog");
      expect(await page.locator(".message.assistant").count()).toBe(1);
      expect(await text(page, ".message.assistant .content")).not.toBe(first);
      expect(await page.locator("#conversations li").count()).toBe(1);

      const shot = await page.screenshot({ path: join(shots, "conversation.png") });
      expect(shot.subarray(1, 4).toString()).toBe("PNG");
      expect(shot.readUInt32BE(16)).toBe(1100); // width
      expect(shot.readUInt32BE(20)).toBe(700); // height
      expect(readFileSync(join(shots, "conversation.png")).length).toBeGreaterThan(20_000); // text, not a blank page
      expect(jsErrors(page)).toEqual([]);
      await page.close();
    } finally {
      await s.server.close();
    }
  }, 120_000);

  it("asks for the API key when the server requires one, then works with it", async () => {
    const s = await start({
      model: stories(),
      parallel: 1,
      contextOptions: { nCtx: 256 },
      apiKey: "sk-test",
    });
    try {
      const page = await openPage(s);
      await page.locator("#key-dialog[open]").waitFor({ timeout: 5000 });
      expect(await page.locator("#model option").count()).toBe(0);
      await page.fill("#key-input", "sk-test");
      await page.press("#key-input", "Enter");
      await expect.poll(() => page.locator("#model option").count()).toBe(1);
      await page.fill("#input", "Once");
      await page.press("#input", "Enter");
      await page.locator(".message.assistant .stats").waitFor({ timeout: 20_000 });
      expect((await text(page, ".message.assistant .content")).length).toBeGreaterThan(0);
      expect(await page.locator("#error").isHidden()).toBe(true);
      await page.close();
    } finally {
      await s.server.close();
    }
  }, 60_000);
});
