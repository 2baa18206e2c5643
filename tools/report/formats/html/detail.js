// The right-hand panel: one hang (facts, culprit and its source line, timeline strip, flame
// graph, text report) or one signature (its hangs and their flame graph). Only what is shown
// is built.

const STATE_NAMES = {R: 'running', S: 'sleeping', D: 'uninterruptible', T: 'stopped',
                     t: 'traced', Z: 'zombie', I: 'idle', '?': 'unknown'};

function stateColor(s) {
  const v = s === 'R' ? '--state-r' : s === 'S' ? '--state-s' : s === 'D' ? '--state-d' :
      '--state-other';
  return 'var(' + v + ')';
}

class Detail {
  constructor(model, root, tooltip, openHang) {
    this.model = model;
    this.root = root;
    this.tip = tooltip;
    this.openHang = openHang;  // shows a hang of a group in the hang table
    this.flame = null;
    this.searchInput = null;
    this.current = null;
    this.detailPromise = null;  // the hang's timeline and text, being inflated
  }

  clear() {
    if (this.flame) this.flame.destroy();
    this.flame = null;
    this.tip.hidden = true;
    this.root.replaceChildren();
  }

  // The flame graph section, with its search box; `culprits` are outlined.
  flameSection(ids, culprits) {
    const status = el('span', {class: 'muted', 'aria-live': 'polite'});
    const box = el('div', {class: 'flame', tabindex: '0', 'aria-label': 'Flame graph'});
    this.searchInput = el('input', {type: 'search', id: 'flame-search', autocomplete: 'off',
        placeholder: 'Search functions (s)', 'aria-label': 'Search the flame graph'});
    this.flame = new FlameGraph(box, this.tip, this.model, culprits, t => { status.textContent = t; });
    this.searchInput.addEventListener('input', () => this.flame.search(this.searchInput.value));
    const reset = el('button', {type: 'button', text: 'Reset zoom', title: 'Zoom out (Esc)',
        onclick: () => this.flame.zoom(this.flame.top)});
    const section = el('section', {},
        el('h2', {text: 'Flame graph'}),
        el('div', {class: 'flame-tools'}, this.searchInput, reset, status),
        box,
        el('p', {class: 'muted', text: 'Callers on top. Click a box to zoom in, click it again ' +
            '(or Esc) to zoom out; boxes outlined in red are culprits.'}));
    // Built after the section is in the page, where the graph has a width.
    return {section, draw: () => this.flame.setTree(buildTree(this.model, ids))};
  }

  showHang(i) {
    const m = this.model, h = m.h;
    this.clear();
    this.current = {hang: i};
    this.root.dataset.shown = 'hang ' + i;
    const cls = h.class[i];
    const facts = [
      ['Process', m.process(i) + ' [' + h.pid[i] + ']'],
      ['Date/Time', fmtTime(h.start[i]) + ' UTC'],
      ['Duration', fmtMs(h.duration[i]) + (h.fatal[i] ? ' or more' : '') +
          ' (threshold ' + h.threshold[i] + ' ms)'],
      ['CPU', h.cpu[i] + ' ms (' + h.cpu_pct[i] + '%)'],
      ['Samples', h.samples[i] + ' every ' + h.interval[i] + ' ms' +
          (h.failed[i] ? ', ' + h.failed[i] + ' failed' : '')],
      ['Stacks', String(h.stacks[i].length / 3)],
      ['Signature', m.signature(i) || '-'],
      ['Fingerprint', m.strings[h.fingerprint[i]] || '-'],
    ];
    if (h.stopped[i]) facts.push(['Stopped', h.stopped[i] + ' ms not counted']);
    if (m.host(i)) facts.splice(1, 0, ['Host', m.host(i)]);
    if (h.labels[i]) facts.push(['Labels', m.strings[h.labels[i]]]);
    if (m.contextText(i)) facts.push(['Context', m.contextText(i)]);
    if (m.inputText(i)) facts.push(['Input', m.inputText(i)]);
    const culprit = h.culprit[i];
    const flame = this.flameSection([i], new Set(culprit >= 0 ? [culprit] : []));
    const timeline = el('section', {}, el('h2', {text: 'Timeline'}),
                        el('p', {class: 'muted', text: 'inflating...'}));
    const pre = el('pre', {class: 'text', id: 'hang-text', tabindex: '0', text: 'inflating...'});
    appendAll(this.root,
        el('h2', {}, el('span', {class: 'badge c' + cls, text: CLASSES[cls]}), ' ',
           h.fatal[i] ? el('span', {class: 'badge c0', text: 'FATAL'}) : null,
           ' Hang #' + h.hang_id[i] + ' of ' + m.process(i)),
        el('div', {class: 'culprit-name mono', id: 'culprit', title: 'The culprit: the innermost ' +
            'frame of the dominant stack outside the system libraries and runtimes',
            text: culprit >= 0 ? m.frameName(culprit) : 'no stack was captured'}),
        this.sourceSection(culprit),
        this.causeSection(i),
        el('div', {class: 'facts'}, ...facts.map(([k, v]) =>
            el('div', {title: k + ': ' + v}, el('span', {text: k}), v))),
        timeline,
        flame.section,
        this.textSection(pre));
    flame.draw();
    this.detailPromise = m.detail(i).then(d => {
      if (this.current && this.current.hang === i) {
        const section = this.timelineSection(i, d.timeline);
        if (section) timeline.replaceWith(section);
        else timeline.remove();
        pre.textContent = d.text;
      }
      return d;
    }, err => {
      pre.textContent = 'cannot inflate this hang: ' + err;
      return null;
    });
  }

  // Why it waited: the cause in one line, then the main thread's dominant stack beside the stack
  // of each thread on the other side (the lock's owner and the chain after it, every thread of
  // a deadlock), culprits marked.
  causeSection(i) {
    const m = this.model, kind = m.causeKind(i);
    if (!kind) return null;
    const column = (id, title, sub, stack) => {
      const frames = stack < 0 ? [] : m.stacks[stack];
      const top = stack < 0 ? -1 : m.stackTop[stack];
      return el('div', {class: 'side-stack', id},
          el('div', {class: 'side-title mono', text: title}),
          sub ? el('div', {class: 'mono muted', text: sub}) : null,
          frames.length ? el('ol', {class: 'mono frames'}, ...frames.map((f, k) =>
              el('li', {class: k === top ? 'hl' : null, title: m.frameLocation(f)},
                 m.frameName(f)))) :
              el('p', {class: 'muted', text: 'no stack captured'}));
    };
    const threads = m.causeThreads(i);
    const columns = [column('stack-main', (m.thread(i) === 'main' ? 'main' : m.thread(i)) + ' thread [' + m.h.pid[i] + ']',
                            'dominant stack', m.h.dominant ? m.h.dominant[i] : -1)];
    for (const t of threads) {
      columns.push(column('stack-' + t.tid, 'thread ' + t.tid + ' "' + t.name + '"',
          [t.role, t.activity].filter(s => s).join(', '), t.stack));
    }
    return el('section', {id: 'cause-section'},
        el('h2', {text: kind === 'deadlock' ? 'Why it waited: deadlock' : 'Why it waited'}),
        el('div', {class: 'cause mono', id: 'cause'},
           el('span', {class: 'badge cause-kind', text: kind}), ' ', m.cause(i)),
        threads.length ? el('div', {class: 'side-stacks', id: 'cause-threads'}, ...columns) : null);
  }

  sourceSection(f) {
    const m = this.model;
    if (f < 0) return null;
    const loc = m.frameLocation(f), mod = m.frameModule(f);
    const where = el('div', {class: 'mono muted', id: 'culprit-location',
        text: (loc || 'no source line recorded') + (mod ? '  in ' + baseName(mod) : ''),
        title: (loc ? loc + ' in ' : '') + (mod || 'no module')});
    const src = m.sources.get(f);
    if (!src) return where;
    const line = m.frameLine(f);
    return el('div', {}, where, el('pre', {class: 'source', id: 'source'},
        ...src.lines.map((text, k) => el('div', {class: src.first + k === line ? 'hl' : null},
            el('span', {class: 'ln', text: String(src.first + k)}), text))));
  }

  // Two strips over the hang's time: the scheduler state of each sample, and which function
  // (the stack's culprit) was on top; then the same in words.
  timelineSection(i, tl) {
    const m = this.model;
    if (tl.length === 0) return null;
    const interval = m.h.interval[i] || 1;
    const end = Math.max(m.h.duration[i], tl[tl.length - 1].t + interval);
    const top = s => s.stack < 0 ? '(capture failed)' :
        m.frameName(m.stacks[s.stack][m.stackTop[s.stack]]);
    const samples = tl.map((s, k) => ({...s, end: k + 1 < tl.length ? tl[k + 1].t :
        Math.min(end, s.t + interval), top: top(s)}));
    const pct = v => (100 * v / end) + '%';
    const states = el('div', {class: 'strip', id: 'timeline-states'}, ...samples.map(s =>
        el('div', {class: s.stack < 0 ? 'fail' : null, style: 'left:' + pct(s.t) + ';width:' +
            pct(Math.max(s.end - s.t, end / 2000)) + (s.stack < 0 ? '' : ';background:' +
            stateColor(s.state))})));
    const runs = [];
    for (const s of samples) {
      const last = runs[runs.length - 1];
      if (last && last.name === s.top) last.to = s.end;
      else runs.push({name: s.top, from: s.t, to: s.end});
    }
    const stacks = el('div', {class: 'strip', id: 'timeline-top'}, ...runs.map(r => el('div', {
        class: 'fr', style: 'left:' + pct(r.from) + ';width:' + pct(r.to - r.from) +
            ';background:hsl(' + hashHue(r.name, 8, 42) + ',70%,66%);top:0;height:18px',
        text: r.name})));
    for (const strip of [states, stacks]) {
      strip.addEventListener('mousemove', e => this.sampleTip(e, strip, samples, end));
      strip.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    }
    const words = runs.slice(0, 6).map((r, k) => (k ? 'then ' : '') + fmtMs(r.to - r.from) +
        ' in ' + r.name).join(', ') + (runs.length > 6 ? ', and ' + (runs.length - 6) +
        ' more changes' : '');
    const counts = {};
    for (const s of samples) counts[s.state] = (counts[s.state] || 0) + 1;
    const legend = Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([s, n]) =>
        el('span', {}, el('span', {class: 'dot', style: 'background:' + stateColor(s)}),
           s + ' ' + (STATE_NAMES[s] || '') + ' ' + Math.round(100 * n / samples.length) + '%'));
    return el('section', {},
        el('h2', {text: 'Timeline'}),
        el('div', {class: 'legend'}, ...legend),
        states, stacks,
        el('div', {class: 'strip-label'}, el('span', {text: '0'}), el('span', {text: fmtMs(end)})),
        el('p', {class: 'runs', id: 'timeline-runs', text: words + '.'}),
        m.h.truncated[i] ? el('p', {class: 'muted', text: 'Timeline truncated: the flame ' +
            'graph counts every sample.'}) : null);
  }

  sampleTip(e, strip, samples, end) {
    const box = strip.getBoundingClientRect();
    const t = (e.clientX - box.left) / box.width * end;
    let s = samples[0];
    for (const x of samples) if (x.t <= t) s = x;
    const m = this.model;
    const frames = s.stack < 0 ? [] : m.stacks[s.stack].slice(0, 4).map(f => m.frameName(f));
    this.tip.replaceChildren(
        el('div', {class: 'name', text: s.t + ' ms: ' + s.state + ' ' + (STATE_NAMES[s.state] || '') +
            ', CPU ' + (s.cpuUs / 1000).toFixed(1) + ' ms'}),
        ...frames.map(f => el('div', {class: 'mono', text: f})),
        s.stack < 0 ? el('div', {class: 'muted', text: 'capture failed'}) : null);
    this.tip.hidden = false;
    this.tip.style.left = Math.max(0, Math.min(e.clientX + 14,
        window.innerWidth - this.tip.offsetWidth - 4)) + 'px';
    this.tip.style.top = e.clientY + 18 + 'px';
  }

  textSection(pre) {
    const note = el('span', {class: 'muted', id: 'copy-note', 'aria-live': 'polite'});
    return el('section', {},
        el('h2', {}, 'Text report ',
           el('button', {type: 'button', id: 'copy-text', text: 'Copy', title: 'Copy (c)',
               onclick: () => this.copy(note)}), ' ', note),
        pre);
  }

  async copy(note) {
    const detail = this.detailPromise && await this.detailPromise;
    if (!detail) return;
    const text = detail.text;
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {  // no clipboard permission: select the text for Ctrl+C
      const range = document.createRange();
      range.selectNodeContents(document.getElementById('hang-text'));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      if (note) note.textContent = 'selected: press Ctrl+C';
      return;
    }
    if (note) note.textContent = 'copied';
  }

  showGroup(g) {
    const m = this.model;
    this.clear();
    this.current = {group: g};
    this.root.dataset.shown = 'group ' + g.key;
    this.detailPromise = null;
    const culprits = new Set(g.hangs.map(i => m.h.culprit[i]).filter(f => f >= 0));
    const flame = this.flameSection(g.hangs, culprits);
    const classes = g.classes.map((n, c) => n ? el('span', {class: 'badge c' + c,
        text: n + ' ' + CLASSES[c]}) : null);
    const list = el('div', {class: 'facts'}, ...g.hangs.slice(0, 60).map(i => el('div', {},
        el('a', {href: '#hang=' + i, text: fmtMs(m.h.duration[i]) + ' ' + CLASSES[m.h.class[i]],
            onclick: e => { e.preventDefault(); this.openHang(i); }}),
        ' ' + m.process(i) + ' ' + fmtTime(m.h.start[i]))));
    appendAll(this.root,
        el('h2', {}, ...classes, ' ' + g.hangs.length + ' hang' + (g.hangs.length === 1 ? '' : 's') +
           ', ' + fmtMs(g.total) + ' in all, longest ' + fmtMs(g.max)),
        el('div', {class: 'culprit-name mono', id: 'culprit', text: g.culprit}),
        el('div', {class: 'mono muted', text: 'signature ' + (g.signature || '-') + ' · ' +
            [...g.processes].join(', ')}),
        flame.section,
        el('h2', {text: 'Hangs'}), list,
        g.hangs.length > 60 ? el('p', {class: 'muted', text: '... and ' + (g.hangs.length - 60) +
            ' more: filter the hang table by this signature.'}) : null);
    flame.draw();
  }
}
