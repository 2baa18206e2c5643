// Drives a `hangwatch report --format html` page in headless Chromium (puppeteer-core) and
// prints what it saw as one JSON object; report_html_browser_test.cc asserts on it.
//
//   node browser_check.js interact PAGE.html OUT_DIR   clicks, zooms, searches, keyboard,
//                                                       screenshots (light and dark) into OUT_DIR
//   node browser_check.js cause PAGE.html FILTER       filters the table by FILTER, clicks the
//                                                       first hang: its cause line and the stacks
//                                                       shown side by side
//   node browser_check.js load PAGE.html RUNS          RUNS fresh loads: time until the page is
//                                                       interactive, and until a click on a hang
//                                                       has drawn its flame graph
//
// Every run records console errors, page errors and every request that is not file: or data:
// (such requests are aborted, so a page that needs the network fails visibly).
'use strict';
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

async function launch() {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

// A page that records errors and outside requests into `log`.
async function openPage(browser, log, width = 1400, height = 900) {
  const page = await browser.newPage();
  await page.setViewport({width, height});
  await page.setRequestInterception(true);
  page.on('request', r => {
    const url = r.url();
    if (url.startsWith('file:') || url.startsWith('data:')) {
      r.continue();
    } else {
      log.requests.push(url);
      r.abort();
    }
  });
  page.on('console', m => {
    if (m.type() === 'error' || m.type() === 'warn') log.console.push(m.type() + ': ' + m.text());
  });
  page.on('pageerror', e => log.console.push('pageerror: ' + e.message));
  return page;
}

async function load(page, file) {
  await page.goto('file://' + path.resolve(file), {waitUntil: 'load'});
  await page.waitForSelector('html[data-ready]', {timeout: 30000});
  return page.evaluate(() => +document.documentElement.dataset.ready);
}

// Distinct colours of a PNG, counted in a blank page of its own (canvas pixels).
async function pngColors(browser, png) {
  const page = await browser.newPage();
  const colors = await page.evaluate(async b64 => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < px.length; i += 4) seen.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
    return {distinct: seen.size, width: c.width, height: c.height};
  }, png.toString('base64'));
  await page.close();
  return colors;
}

async function screenshot(browser, page, file) {
  const png = await page.screenshot({path: file});
  return {file, ...(await pngColors(browser, png))};
}

// What the flame graph shows: its boxes with their text and geometry.
function flameBoxes(page) {
  return page.evaluate(() => {
    const box = document.querySelector('#detail .flame');
    if (!box) return null;
    const w = box.clientWidth;
    return {width: w, boxes: [...box.querySelectorAll('.fr')].map(e => ({
      name: e.textContent, width: e.getBoundingClientRect().width, top: e.offsetTop,
      match: e.classList.contains('match'), root: e.classList.contains('cls-root'),
      culprit: e.classList.contains('culprit'), truncated: e.scrollWidth > e.clientWidth,
    }))};
  });
}

// Clicks the k-th row of the table and waits until the panel shows what it names.
async function clickRow(page, k = 0) {
  const row = (await page.$$('#table .row'))[k];
  const id = await row.evaluate(r => r.dataset.id);
  const group = await page.$eval('#tab-groups', t => t.getAttribute('aria-selected') === 'true');
  await row.click();
  if (group) {
    await page.waitForFunction(() => /^group /.test(document.querySelector('#detail').dataset.shown));
  } else {
    await page.waitForFunction(id => document.querySelector('#detail').dataset.shown === 'hang ' + id,
                               {}, id);
  }
  await page.waitForSelector('#detail .flame .fr');
}

// Types into a filter field (replacing what is there) and waits for the table to follow.
async function filterBy(page, text) {
  await page.click('#filter', {clickCount: 3});
  await page.keyboard.press('Backspace');
  await page.type('#filter', text);
  await page.waitForFunction(t => document.querySelector('#filter').value === t &&
      document.querySelector('#count').textContent.includes(' of '), {}, text);
  await new Promise(r => setTimeout(r, 100));  // the filter applies 60 ms after the last key
}

async function interact(file, outDir) {
  const log = {console: [], requests: []};
  const browser = await launch();
  const out = {};
  try {
    const page = await openPage(browser, log);
    out.ready_ms = await load(page, file);
    out.summary = await page.evaluate(() => ({
      hangs: document.querySelector('#stat-hangs b').textContent,
      total: document.querySelector('#stat-total').title,
      by_class: Object.fromEntries([...document.querySelectorAll('#by-class [data-class]')]
          .map(e => [e.dataset.class, +e.dataset.count])),
      lag: document.querySelector('#lag') && {
        figures: Object.fromEntries([...document.querySelectorAll('#lag [data-figure]')]
            .map(e => [e.dataset.figure, +e.dataset.ms])),
        bars: document.querySelectorAll('#lag .lagbars span').length,
        text: document.querySelector('#lag > .muted').textContent,
      },
    }));
    const rows = () => page.evaluate(() => [...document.querySelectorAll('#table .row')].map(r =>
        ({id: +r.dataset.id, selected: r.getAttribute('aria-selected') === 'true',
          cells: [...r.children].map(c => c.textContent)})));
    const headers = await page.evaluate(() =>
        [...document.querySelectorAll('#table .head button')].map(b => b.textContent));
    const durCol = headers.indexOf('Duration');
    const durations = async () => (await rows()).map(r => r.cells[durCol]);
    out.table = {headers, rendered_rows: (await rows()).length,
                 count: await page.$eval('#count', e => e.textContent),
                 durations_default: await durations()};
    await page.click('#table .head button[data-key=duration]');
    out.table.durations_after_click = await durations();
    await page.click('#table .head button[data-key=duration]');

    // The filter: only the hangs whose culprit is the real program's.
    await filterBy(page, 'StallTheMainThread');
    out.filter = {count: await page.$eval('#count', e => e.textContent),
                  culprits: (await rows()).map(r => r.cells[r.cells.length - 1])};

    // Clicking the hang shows its flame graph, culprit, source line, timeline, text.
    await clickRow(page);
    await page.waitForFunction(() => !document.querySelector('#hang-text').textContent.startsWith('inflating'));
    out.hang = await page.evaluate(() => ({
      culprit: document.querySelector('#culprit').textContent,
      location: document.querySelector('#culprit-location').textContent,
      source_line: (document.querySelector('#source .hl') || {}).textContent || null,
      runs: document.querySelector('#timeline-runs').textContent,
      state_cells: document.querySelectorAll('#timeline-states div').length,
      text_head: document.querySelector('#hang-text').textContent.split('\n').slice(0, 3),
      hash: location.hash,
    }));
    out.hang.flame = await flameBoxes(page);
    // Copy: to the clipboard, or (without the permission, as here) the text is selected.
    await page.click('#copy-text');
    await page.waitForFunction(() => document.querySelector('#copy-note').textContent !== '');
    out.copy = await page.evaluate(() => ({
      note: document.querySelector('#copy-note').textContent,
      selected_is_text: getSelection().toString() === document.querySelector('#hang-text').textContent,
    }));
    out.screenshot_hang = await screenshot(browser, page, path.join(outDir, 'report-hang.png'));

    // Hover: the tooltip names the function with its file:line and module.
    const target = await page.$$eval('#detail .flame .fr', es =>
        es.findIndex(e => e.textContent === 'StallTheMainThread'));
    const boxes = await page.$$('#detail .flame .fr');
    await boxes[target].hover();
    out.tooltip = await page.$eval('#tooltip', e => ({hidden: e.hidden, text: e.innerText}));

    // Search highlights the matching frames.
    await page.type('#flame-search', 'stall');
    const searched = await flameBoxes(page);
    out.search = {matches: searched.boxes.filter(b => b.match).map(b => b.name),
                  others: searched.boxes.filter(b => !b.match).map(b => b.name),
                  status: await page.$eval('.flame-tools span', e => e.textContent)};
    out.screenshot_search = await screenshot(browser, page, path.join(outDir, 'report-search.png'));
    await page.click('#flame-search', {clickCount: 3});
    await page.keyboard.press('Escape');

    // The keyboard: clear the filter, move down the table, into the flame graph and zoom.
    await page.click('#filter');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');  // leaves the field
    await page.waitForFunction(() => !document.querySelector('#count').textContent.includes(' of '));
    await page.keyboard.press('Home');
    const before = (await rows()).find(r => r.selected);
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    const after = (await rows()).find(r => r.selected);
    await page.keyboard.press('f');
    const focus1 = await page.evaluate(() => document.activeElement.textContent);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    const focus2 = await page.evaluate(() => document.activeElement.textContent);
    await page.keyboard.press('Enter');
    const zoomedByKey = await flameBoxes(page);
    await page.waitForFunction(() => document.querySelector('#timeline-runs'));
    const runs = await page.$eval('#timeline-runs', e => e.textContent);
    out.keyboard = {before: before ? before.id : null, after: after ? after.id : null, runs,
                    focus1, focus2,
                    zoomed_full_width: zoomedByKey.boxes.filter(b => b.width >= zoomedByKey.width - 2)
                        .map(b => b.name)};

    // Grouped by signature: the group of both classes keeps one root per class.
    await page.click('#tab-groups');
    await filterBy(page, 'flushSegment');
    out.groups = {count: await page.$eval('#count', e => e.textContent),
                  headers: await page.evaluate(() =>
                      [...document.querySelectorAll('#table .head button')].map(b => b.textContent)),
                  rows: (await rows()).map(r => r.cells)};
    await clickRow(page);
    const g = await flameBoxes(page);
    out.groups.roots = g.boxes.filter(b => b.top === 0).map(b => ({name: b.name, root: b.root}));
    out.screenshot_groups = await screenshot(browser, page, path.join(outDir, 'report-groups.png'));

    // Clicking a frame zooms: the narrowest box drawn (in the group's graph, which has many
    // branches) becomes the full width, under its callers.
    const full = await flameBoxes(page);
    const pick = full.boxes.map((b, k) => ({...b, k})).filter(b => !b.root && b.width > 4)
        .sort((a, b) => a.width - b.width)[0];
    out.zoom = {name: pick.name, before: pick.width, container: full.width};
    await (await page.$$('#detail .flame .fr'))[pick.k].click();
    const zoomed = await flameBoxes(page);
    const same = zoomed.boxes.find(b => b.name === pick.name && b.top === pick.top);
    out.zoom.after = same ? same.width : null;
    out.zoom.above = zoomed.boxes.filter(b => b.top < pick.top).map(b => b.name);
    out.zoom.same_row = zoomed.boxes.filter(b => b.top === pick.top).length;
    await page.click('.flame-tools button');  // Reset zoom
    const back = (await flameBoxes(page)).boxes.find(b => b.name === pick.name && b.top === pick.top);
    out.zoom.after_reset = back ? back.width : null;


    // A name too long for its box: cut with an ellipsis, whole in the tooltip.
    await page.click('#tab-hangs');
    await filterBy(page, 'Visitor');
    await clickRow(page);
    const v = await flameBoxes(page);
    const longIdx = v.boxes.findIndex(b => b.name.length > 200);
    out.long = {count: await page.$eval('#count', e => e.textContent), name: null};
    if (longIdx >= 0) {
      out.long.name = v.boxes[longIdx].name;
      out.long.truncated = v.boxes[longIdx].truncated;
      out.long.width = v.boxes[longIdx].width;
      out.long.container = v.width;
      await (await page.$$('#detail .flame .fr'))[longIdx].hover();
      out.long.tooltip = await page.$eval('#tooltip .name', e => e.textContent);
    }

    out.long.cell = await page.$eval('#table .row .cell:last-child', c =>
        ({text: c.textContent, title: c.title, truncated: c.scrollWidth > c.clientWidth}));

    // The screenshot docs/reports.md shows: the real hang, light theme, with the whole table beside it.
    await filterBy(page, 'StallTheMainThread');
    await clickRow(page);
    await page.click('#filter');
    await page.keyboard.press('Escape');  // clears the filter; the hang stays selected
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('#count').textContent.includes(' of '));
    await page.mouse.move(5, 5);
    out.screenshot_light = await screenshot(browser, page, path.join(outDir, 'report-light.png'));
    out.background_light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'dark'}]);
    out.screenshot_dark = await screenshot(browser, page, path.join(outDir, 'report-dark.png'));
    out.background_dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.close();
  } finally {
    await browser.close();
  }
  out.console = log.console;
  out.requests = log.requests;
  return out;
}

async function loadTimes(file, runs) {
  const log = {console: [], requests: []};
  const browser = await launch();
  const out = {ready_ms: [], click_ms: [], rows: 0};
  try {
    for (let k = 0; k < runs; k++) {
      const page = await openPage(browser, log);
      out.ready_ms.push(await load(page, file));
      // From the click to the flame graph being in the page (measured in the page).
      out.click_ms.push(await page.evaluate(async () => {
        const row = document.querySelector('#table .row');
        const t0 = performance.now();
        row.click();
        if (!document.querySelector('#detail .flame .fr')) return -1;
        await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        return performance.now() - t0;
      }));
      out.rows = await page.$eval('#count', e => e.textContent);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  const median = a => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  out.ready_median_ms = median(out.ready_ms);
  out.click_median_ms = median(out.click_ms);
  out.html_bytes = fs.statSync(file).size;
  out.console = log.console;
  out.requests = log.requests;
  return out;
}

// The cause section of the first hang matching `filter`.
async function cause(file, filter) {
  const log = {console: [], requests: []};
  const browser = await launch();
  const out = {};
  try {
    const page = await openPage(browser, log);
    await load(page, file);
    await filterBy(page, filter);
    await clickRow(page);
    out.cause = await page.evaluate(() => {
      const c = document.querySelector('#cause');
      return c && {
        heading: document.querySelector('#cause-section h2').textContent,
        text: c.textContent,
        columns: [...document.querySelectorAll('#cause-threads .side-stack')].map(s => ({
          id: s.id,
          title: s.querySelector('.side-title').textContent,
          sub: (s.querySelector('.muted') || {}).textContent || '',
          frames: [...s.querySelectorAll('ol.frames li')].map(li => li.textContent),
          marked: [...s.querySelectorAll('ol.frames li.hl')].map(li => li.textContent),
          left: s.getBoundingClientRect().left, top: s.getBoundingClientRect().top,
        })),
      };
    });
  } finally {
    await browser.close();
  }
  return {...out, ...log};
}

async function main() {
  const [mode, file, arg] = process.argv.slice(2);
  let out;
  if (mode === 'interact' && file && arg) {
    fs.mkdirSync(arg, {recursive: true});
    out = await interact(file, arg);
  } else if (mode === 'cause' && file && arg) {
    out = await cause(file, arg);
  } else if (mode === 'load' && file) {
    out = await loadTimes(file, Math.max(1, +(arg || 1)));
  } else {
    console.error('usage: browser_check.js interact PAGE OUT_DIR | cause PAGE FILTER | load PAGE RUNS');
    process.exit(2);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(e => {
  console.error('browser_check: ' + (e && e.stack || e));
  process.exit(1);
});
