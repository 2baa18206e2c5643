// The report's data (tools/report_html_data.h describes the layout) and small helpers.

const CLASSES = ['busy', 'blocked', 'mixed', 'unknown'];
const KINDS = ['application', 'system', 'runtime'];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) {
    if (c !== undefined && c !== null && c !== false) e.append(c);
  }
  return e;
}

// Appends the children that are not null (Element.append would write "null").
function appendAll(parent, ...children) {
  for (const c of children) if (c !== null && c !== undefined && c !== false) parent.append(c);
}

function fmtMs(ms) {
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  const m = Math.floor(ms / 60000);
  return m + ' min ' + Math.round((ms - m * 60000) / 1000) + ' s';
}

function pad2(n) { return n < 10 ? '0' + n : '' + n; }

// "2026-11-23 23:28:41" (UTC, as the text report).
function fmtTime(unixMs) {
  const d = new Date(unixMs);
  return d.getUTCFullYear() + '-' + pad2(d.getUTCMonth() + 1) + '-' + pad2(d.getUTCDate()) +
      ' ' + pad2(d.getUTCHours()) + ':' + pad2(d.getUTCMinutes()) + ':' + pad2(d.getUTCSeconds());
}

function baseName(path) { return path.slice(path.lastIndexOf('/') + 1); }

// A colour that depends only on the name, so a function keeps it across hangs and graphs.
function hashHue(name, from, span) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return from + ((h >>> 0) % span);
}

class Model {
  constructor(data) {
    this.title = data.title;
    this.strings = data.strings;
    this.frames = data.frames;
    this.stacks = data.stacks;
    this.stackTop = data.stack_top;
    this.h = data.hangs;
    this.n = data.hangs.duration.length;
    this.stalls = data.stalls;
    this.lag = data.lag;  // the main thread's; null without its lag records
    this.lagRoles = data.lag_roles || [];  // the same for each other thread role
    // A hang of a watched thread other than main (hangwatch/threads.h): a Thread column.
    this.hasThreads = data.hangs.thread.some(t => this.strings[t] !== 'main');
    this.hasHost = data.hangs.host.some(h => h !== 0);
    // Hangs that say what their pass served, or whether a person waited: Context and Seen
    // columns.
    this.hasContext = data.hangs.context.some(c => c !== 0);
    this.hasPerceived = data.hangs.perceived.some(p => p >= 0);
    this.skipped = data.skipped;
    this.firstError = data.first_error;
    this.sources = new Map(data.sources.map(s => [s[0], {first: s[1], lines: s[2]}]));
    this.details = null;  // parsed when the first hang is shown
    this.detailChunk = data.detail_chunk;
    this.inflated = new Map();  // chunk -> promise of its hangs' details
    this.groupList = null;
  }

  frameName(f) { return this.strings[this.frames[5 * f]]; }
  frameModule(f) { return this.strings[this.frames[5 * f + 1]]; }
  frameFile(f) { return this.strings[this.frames[5 * f + 2]]; }
  frameLine(f) { return this.frames[5 * f + 3]; }
  frameKind(f) { return this.frames[5 * f + 4]; }
  frameLocation(f) {
    const file = this.frameFile(f), line = this.frameLine(f);
    return file ? (line > 0 ? file + ':' + line : file) : '';
  }

  process(i) { return this.strings[this.h.process[i]]; }
  host(i) { return this.strings[this.h.host[i]]; }
  // The thread role of hang i ('main' for the main thread) and the thread's own name.
  thread(i) { return this.strings[this.h.thread[i]]; }
  threadName(i) { return this.strings[this.h.thread_name[i]]; }
  // What hang i's pass served: its context key ('' unknown) and the context in words; whether
  // input waited, in words; perceived: 1 a person waited, 0 not, -1 unknown.
  context(i) { return this.strings[this.h.context[i]]; }
  contextText(i) { return this.strings[this.h.context_text[i]]; }
  inputText(i) { return this.strings[this.h.input[i]]; }
  perceived(i) { return this.h.perceived[i]; }
  signature(i) { return this.strings[this.h.signature[i]]; }
  culprit(i) { const f = this.h.culprit[i]; return f < 0 ? '?' : this.frameName(f); }
  className(i) { return CLASSES[this.h.class[i]]; }
  // Why hang i waited: its cause's kind and summary ('' without a cause).
  causeKind(i) { return this.h.cause_kind ? this.strings[this.h.cause_kind[i]] : ''; }
  cause(i) { return this.h.cause ? this.strings[this.h.cause[i]] : ''; }
  // [{tid, name, role, activity, stack}]: the threads on the other side of hang i's wait (the
  // lock's owners, every thread of a deadlock), stack -1 when not captured.
  causeThreads(i) {
    const c = this.h.cause_threads ? this.h.cause_threads[i] : [], out = [];
    for (let k = 0; k < c.length; k += 5) {
      out.push({tid: c[k], name: this.strings[c[k + 1]], role: this.strings[c[k + 2]],
                activity: this.strings[c[k + 3]], stack: c[k + 4]});
    }
    return out;
  }

  // [{stack, count, cpuUs}] of hang i, most samples first.
  hangStacks(i) {
    const s = this.h.stacks[i], out = [];
    for (let k = 0; k < s.length; k += 3) out.push({stack: s[k], count: s[k + 1], cpuUs: s[k + 2]});
    return out;
  }

  // What only the hang on display needs, inflated from the page with the other hangs of its
  // chunk: {timeline: [{t, stack (global id or -1), cpuUs, state}], text (FormatText)}.
  async detail(i) {
    if (!this.details) this.details = document.getElementById('hw-details').textContent.trim().split('\n');
    const k = Math.floor(i / this.detailChunk);
    if (!this.inflated.has(k)) {
      const b64 = atob(this.details[k]), bytes = new Uint8Array(b64.length);
      for (let j = 0; j < b64.length; j++) bytes[j] = b64.charCodeAt(j);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
      this.inflated.set(k, new Response(stream).text().then(t => t.split('\0')));
    }
    const part = (await this.inflated.get(k))[i % this.detailChunk];
    const nl1 = part.indexOf('\n'), nl2 = part.indexOf('\n', nl1 + 1);
    const tl = JSON.parse(part.slice(0, nl1)), states = part.slice(nl1 + 1, nl2);
    const local = this.h.stacks[i], timeline = [];
    for (let k = 0, j = 0; k < tl.length; k += 3, j++) {
      const p = tl[k + 1];
      timeline.push({t: tl[k], stack: p < 0 ? -1 : local[3 * p], cpuUs: tl[k + 2], state: states[j]});
    }
    return {timeline, text: part.slice(nl2 + 1)};
  }

  // What a filter string is matched against.
  haystack(i) {
    return (this.process(i) + ' ' + this.host(i) + ' ' + this.thread(i) + ' ' + this.threadName(i) +
            ' ' + this.culprit(i) + ' ' + this.signature(i) + ' ' +
            this.strings[this.h.fingerprint[i]] + ' ' + this.className(i) + ' ' +
            this.causeKind(i) + ' ' + this.cause(i) + ' ' + this.contextText(i) + ' ' +
            (this.h.culprit[i] >= 0 ? this.frameLocation(this.h.culprit[i]) : '') + ' ' +
            this.h.pid[i]).toLowerCase();
  }

  // Hangs grouped by thread role and signature ("what hangs most"), most total time first: each
  // role's hangs apart. A hang without a signature is grouped by its culprit.
  groups() {
    if (this.groupList) return this.groupList;
    const byKey = new Map();
    for (let i = 0; i < this.n; i++) {
      const key = this.thread(i) + '\n' + (this.signature(i) || 'culprit:' + this.culprit(i));
      let g = byKey.get(key);
      if (!g) {
        g = {key, signature: this.signature(i), culprit: this.culprit(i), thread: this.thread(i),
             hangs: [], total: 0, max: 0, classes: [0, 0, 0, 0], processes: new Set()};
        byKey.set(key, g);
      }
      g.hangs.push(i);
      g.total += this.h.duration[i];
      g.max = Math.max(g.max, this.h.duration[i]);
      g.classes[this.h.class[i]]++;
      g.processes.add(this.process(i));
    }
    this.groupList = [...byKey.values()].sort((a, b) => b.total - a.total);
    return this.groupList;
  }
}
