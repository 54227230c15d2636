// Drives the web build of Mpipe Studio in headless Chromium as a user would, for
// tests/web_build.rs (which builds and serves the site, and asserts on what this reports).
//
//   node check.mjs URL OUT_DIR BAD_FILE_NAME BAD_FILE_TEXT LINK_FRAGMENT LARGE_FRAGMENT LARGE_TITLE
//
// Steps: load the page (the default sample); save it (Ctrl+S: a download) and export its
// chart as PNG (File ▸ Export PNG…: a download); switch samples through a link's fragment
// (`#sample=gpipe.json`, pasted into the open page); open a broken scenario file through the
// browser's file chooser (Ctrl+O); open a scenario carried by a link (`#scenario=…`); open a
// second link, to a large pipeline whose simulation runs in slices over many frames (waited for
// by its own title: the first link's source is already "the link"); reload the page (the
// session comes back from the browser's storage). After each step it records the
// state the page publishes (the canvas's `data-state`) and a screenshot, and for a download
// its name and where it was kept; it prints one JSON object:
// { steps: [{ name, state, screenshot, download? }], errors: [page errors] }.

import { chromium } from "playwright-core";
import path from "node:path";

const [url, outDir, badName, badText, linkFragment, largeFragment, largeTitle] =
  process.argv.slice(2);
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
  ],
});
const errors = [];
const steps = [];
try {
  const page = await browser.newPage({
    viewport: { width: 1600, height: 1000 },
    acceptDownloads: true,
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  // Listening from the start: Playwright intercepts the browser's file chooser only once a
  // listener is in place, and setting that up takes a round trip.
  const chosen = new Promise((resolve) => page.once("filechooser", resolve));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });

  const state = async () =>
    JSON.parse((await page.getAttribute("#mpipe_canvas", "data-state")) ?? "null");
  // Waits until the published state satisfies `ok` (polled in the page), then records it.
  const record = async (name, ok) => {
    await page.waitForFunction(
      (src) => {
        const text = document.getElementById("mpipe_canvas")?.getAttribute("data-state");
        return text ? new Function("s", `return (${src})(s)`)(JSON.parse(text)) : false;
      },
      ok.toString(),
      { timeout: 120000, polling: 100 },
    );
    // Two frames more: what the state says is painted.
    await page.evaluate(
      () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))),
    );
    const screenshot = path.join(outDir, `${name}.png`);
    await page.screenshot({ path: screenshot });
    steps.push({ name, state: await state(), screenshot });
  };

  await page.goto(url);
  await record("default", (s) => s.title !== null);

  // A download the page starts after `act`, kept in the output folder with the name the page
  // gave it.
  const download = async (act) => {
    const started = page.waitForEvent("download", { timeout: 60000 });
    await act();
    const d = await started;
    const kept = path.join(outDir, `download-${d.suggestedFilename()}`);
    await d.saveAs(kept);
    return { name: d.suggestedFilename(), path: kept };
  };
  // The keyboard goes to the canvas once it has been clicked (on the chart's empty corner).
  await page.mouse.click(1590, 990);
  await page.waitForFunction(() => document.activeElement?.id === "mpipe_canvas");
  const saved = await download(() => page.keyboard.press("Control+s"));
  // A predicate runs in the page, so what it compares with is written into its text.
  const says = (notice) => new Function("s", `return s.notice === ${JSON.stringify(notice)}`);
  await record("save", says(`saved ${saved.name}`));
  steps[steps.length - 1].download = saved;
  // The File menu at the top bar's left (its place at 1600×1000), then its Export PNG… item.
  const exported = await download(async () => {
    await page.mouse.click(156, 13);
    await page.waitForTimeout(300);
    await page.mouse.click(185, 141);
  });
  await record("export-png", says(`exported ${exported.name}`));
  steps[steps.length - 1].download = exported;

  await page.evaluate(() => {
    location.hash = "sample=gpipe.json";
  });
  await record("sample", (s) => s.source === "gpipe.json" && s.title !== null);

  await page.mouse.click(1590, 990);
  await page.waitForFunction(() => document.activeElement?.id === "mpipe_canvas");
  await page.keyboard.press("Control+o");
  const chooser = await chosen;
  await chooser.setFiles({
    name: badName,
    mimeType: "application/json",
    buffer: Buffer.from(badText, "utf8"),
  });
  await record("bad-file", (s) => s.notice_is_error);

  await page.evaluate((f) => {
    location.hash = f;
  }, linkFragment);
  await record("link", (s) => s.source === "the link" && s.title !== null);
  steps[steps.length - 1].address = page.url();

  // Whether the page ever said it was simulating (a progress, not null) before the chart came:
  // every change of the published state is seen, however short.
  await page.evaluate(() => {
    window.mpipeSeenSimulating = false;
    new MutationObserver(() => {
      const text = document.getElementById("mpipe_canvas")?.getAttribute("data-state");
      if (text && JSON.parse(text).simulating !== null) window.mpipeSeenSimulating = true;
    }).observe(document.getElementById("mpipe_canvas"), { attributes: true });
  });
  await page.evaluate((f) => {
    location.hash = f;
  }, largeFragment);
  // The title is the chart's, which names the document.
  await record(
    "large-link",
    new Function(
      "s",
      `return s.title !== null && s.title.includes(${JSON.stringify(largeTitle)}) && s.simulating === null`,
    ),
  );
  steps[steps.length - 1].seen_simulating = await page.evaluate(() => window.mpipeSeenSimulating);

  await page.reload();
  await record("reload", (s) => s.title !== null);
} catch (e) {
  errors.push(`the check stopped: ${e}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ steps, errors }));
