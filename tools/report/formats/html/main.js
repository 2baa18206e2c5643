// Start-up: summary, table, keyboard. The page is ready (html[data-ready] = ms since the
// navigation started) once the table shows its first rows.

function renderSummary(m) {
  const h = m.h, root = document.getElementById('summary');
  let total = 0, longest = 0, fatal = 0;
  const byClass = [0, 0, 0, 0], timeByClass = [0, 0, 0, 0], processes = new Set();
  for (let i = 0; i < m.n; i++) {
    total += h.duration[i];
    longest = Math.max(longest, h.duration[i]);
    fatal += h.fatal[i];
    byClass[h.class[i]]++;
    timeByClass[h.class[i]] += h.duration[i];
    processes.add(m.process(i) + ' ' + h.pid[i]);
  }
  const stat = (id, label, value, hover) => el('div', {class: 'stat', id, title: hover},
      el('b', {text: value}), el('span', {class: 'muted', text: label}));
  const bar = el('div', {class: 'classbar', title: 'Hang time by class'},
      ...timeByClass.map((t, c) => t ? el('span', {class: 'c' + c,
          style: 'width:' + (100 * t / total) + '%'}) : null));
  const legend = el('div', {class: 'legend', id: 'by-class'}, ...byClass.map((n, c) => n ?
      el('span', {'data-class': CLASSES[c], 'data-count': n},
         el('span', {class: 'dot c' + c}), CLASSES[c] + ' ' + n + ' (' + fmtMs(timeByClass[c]) + ')') :
      null));
  appendAll(root,
      stat('stat-hangs', 'hangs', String(m.n)),
      stat('stat-total', 'total hang time', fmtMs(total), total + ' ms'),
      stat('stat-longest', 'longest', fmtMs(longest)),
      stat('stat-processes', 'processes', String(processes.size)),
      fatal ? stat('stat-fatal', 'fatal (the process died)', String(fatal)) : null,
      m.lag && m.lag.hang_rate !== null ? stat('stat-hang-rate', 'hang rate (s of hang per watched hour)',
          m.lag.hang_rate.toFixed(1) + ' s/h', m.lag.hang_s.toFixed(1) + ' s of hang in ' +
          (m.lag.watched_s / 3600).toFixed(2) + ' h watched (lag records)') : null,
      m.n ? el('div', {}, legend, bar) : null);
  if (m.stalls.length) {
    const worst = Math.max(...m.stalls.map(s => s.duration));
    root.append(stat('stat-stalls', 'start-up stalls, longest ' + fmtMs(worst),
        String(m.stalls.length), m.stalls.map(s => baseName(s.process) + ' [' + s.pid + '] ' +
            s.duration + ' ms').join('\n')));
  }
  if (m.lag) root.append(lagSummary(m.lag, 'lag'));
  // Each other thread role's lag apart: never added to the main thread's.
  for (const l of m.lagRoles) root.append(lagSummary(l, 'lag-' + l.role, l.role));
  if (m.skipped) {
    root.append(el('div', {class: 'muted', text: m.skipped + ' unreadable line' +
        (m.skipped === 1 ? '' : 's') + ' skipped (first: ' + m.firstError + ')'}));
  }
}

// The lag records: every pass of the run loops, timed (not only the hangs); `role`: of a watched
// thread other than main.
function lagSummary(lag, id, role) {
  const ms = v => v < 1 ? v.toFixed(3) + ' ms' : v < 100 ? v.toFixed(1) + ' ms' : fmtMs(v);
  const figures = ['p50', 'p90', 'p99', 'max'].map(k => el('span', {'data-figure': k, 'data-ms': lag[k]},
      el('span', {class: 'muted', text: k + ' '}), ms(lag[k])));
  const most = Math.max(...lag.bars.map(b => b[1]));
  let lower = 0;
  const bars = lag.bars.map(([upper, n]) => {
    const bar = el('span', {title: ms(lower) + ' to ' + ms(upper) + ': ' + n + ' passes',
        style: 'height:' + (n ? 4 + 96 * Math.log1p(n) / Math.log1p(most) : 0) + '%'});
    lower = upper;
    return bar;
  });
  const slow = lag.slow.map(([t, n]) => n + ' over ' + t + ' ms').join(', ');
  const by = lag.by.map(r => (r.process || '?') + (r.host ? '@' + r.host : '') + ': p99 ' +
      ms(r.p99) + ', max ' + ms(r.max) + ' (' + r.passes + ' passes)').join('\n');
  const rate = role && lag.hang_rate !== null ? '; hang rate ' + lag.hang_rate.toFixed(1) + ' s/h' : '';
  return el('div', {class: 'stat lag', id, 'data-role': role || 'main', title: by},
      el('b', {}, ...figures),
      el('span', {class: 'muted', text: (role ? 'lag of thread ' + role : 'lag') + ': ' + lag.passes + ' passes timed in ' + lag.records +
          ' record' + (lag.records === 1 ? '' : 's') + ', ' + lag.groups + ' process' +
          (lag.groups === 1 ? '' : 'es') + (slow ? '; ' + slow : '') + rate}),
      el('div', {class: 'lagbars', title: 'Pass durations: one bar per power of two (log scale)'},
         ...bars));
}

function hangColumns(m) {
  const h = m.h;
  return [
    {key: 'start', title: 'Time (UTC)', width: 160, value: i => h.start[i],
     text: i => fmtTime(h.start[i])},
    {key: 'process', title: 'Process', width: 100, value: i => m.process(i),
     text: i => m.process(i), hover: i => m.process(i) + ' [' + h.pid[i] + ']'},
    m.hasHost ? {key: 'host', title: 'Host', width: 64, value: i => m.host(i),
                 text: i => m.host(i), hover: i => m.host(i)} : null,
    m.hasThreads ? {key: 'thread', title: 'Thread', width: 80, value: i => m.thread(i),
                    text: i => m.thread(i),
                    hover: i => m.thread(i) + (m.threadName(i) ? ' (' + m.threadName(i) + ')' : '')} : null,
    {key: 'class', title: 'Class', width: 70, value: i => h.class[i], text: i => m.className(i)},
    {key: 'duration', title: 'Duration', width: 90, num: true, value: i => h.duration[i],
     text: i => fmtMs(h.duration[i]) + (h.fatal[i] ? '+' : '')},
    // Whether a person waited through it: ● yes, – no, blank unknown.
    m.hasPerceived ? {key: 'perceived', title: 'Seen', width: 44, value: i => m.perceived(i),
                      text: i => ['', '\u2013', '\u25cf'][m.perceived(i) + 1],
                      hover: i => m.inputText(i) || 'not known whether input waited'} : null,
    m.hasContext ? {key: 'context', title: 'Context', width: 130, value: i => m.context(i),
                    text: i => m.context(i), hover: i => m.contextText(i)} : null,
    {key: 'cpu', title: 'CPU', width: 46, num: true, value: i => h.cpu_pct[i],
     text: i => h.cpu_pct[i] + '%'},
    {key: 'culprit', title: 'Culprit', width: 0, value: i => m.culprit(i), text: i => m.culprit(i),
     hover: i => m.culprit(i) + (h.culprit[i] >= 0 && m.frameLocation(h.culprit[i]) ?
         '\n' + m.frameLocation(h.culprit[i]) : '')},
  ].filter(Boolean);
}

function groupColumns(m) {
  const groups = m.groups();
  return [
    {key: 'count', title: 'Hangs', width: 70, num: true, value: g => groups[g].hangs.length,
     text: g => String(groups[g].hangs.length)},
    m.hasThreads ? {key: 'thread', title: 'Thread', width: 80, value: g => groups[g].thread,
                    text: g => groups[g].thread} : null,
    {key: 'total', title: 'Total', width: 80, num: true, value: g => groups[g].total,
     text: g => fmtMs(groups[g].total)},
    {key: 'max', title: 'Longest', width: 86, num: true, value: g => groups[g].max,
     text: g => fmtMs(groups[g].max)},
    {key: 'classes', title: 'Classes', width: 110, value: g => groups[g].classes.join(','),
     text: g => groups[g].classes.map((n, c) => n ? CLASSES[c] + ' ' + n : '').filter(Boolean).join(', ')},
    {key: 'culprit', title: 'Culprit', width: 0, value: g => groups[g].culprit,
     text: g => groups[g].culprit, hover: g => groups[g].culprit + '\nsignature ' +
         (groups[g].signature || '-') + '\n' + [...groups[g].processes].join(', ')},
  ].filter(Boolean);
}

function main() {
  const m = new Model(JSON.parse(document.getElementById('hw-data').textContent));
  document.title = m.title;
  renderSummary(m);
  const tip = document.getElementById('tooltip');
  const filter = document.getElementById('filter');
  const classFilter = document.getElementById('class-filter');
  const count = document.getElementById('count');
  const tabs = {hangs: document.getElementById('tab-hangs'),
                groups: document.getElementById('tab-groups')};
  let view = 'hangs', haystacks = null;
  const sorts = {hangs: ['duration', -1], groups: ['total', -1]};
  const table = new VirtualTable(document.getElementById('table'), id => {
    if (view === 'hangs') {
      detail.showHang(id);
      history.replaceState(null, '', '#hang=' + id);
    } else {
      detail.showGroup(m.groups()[id]);
    }
  });
  const detail = new Detail(m, document.getElementById('detail'), tip, i => {
    setView('hangs');
    filter.value = '';
    classFilter.value = '';
    apply();
    table.select(table.ids.indexOf(i));
  });

  // Every word of the filter must occur in the row (culprit, process, signature, ...).
  function apply() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const cls = classFilter.value === '' ? -1 : +classFilter.value;
    let ids = [];
    if (view === 'hangs') {
      if (words.length && !haystacks) haystacks = Array.from({length: m.n}, (_, i) => m.haystack(i));
      for (let i = 0; i < m.n; i++) {
        if (cls >= 0 && m.h.class[i] !== cls) continue;
        if (words.every(w => haystacks[i].includes(w))) ids.push(i);
      }
    } else {
      m.groups().forEach((g, k) => {
        if (cls >= 0 && !g.classes[cls]) return;
        const text = (g.culprit + ' ' + g.signature + ' ' + g.thread + ' ' +
                      [...g.processes].join(' ')).toLowerCase();
        if (words.every(w => text.includes(w))) ids.push(k);
      });
    }
    table.setRows(ids);
    const all = view === 'hangs' ? m.n : m.groups().length;
    count.textContent = (ids.length === all ? '' : ids.length + ' of ') + all +
        (view === 'hangs' ? ' hangs' : ' signatures');
  }

  function setView(v) {
    if (v === view) return;
    sorts[view] = [table.sortKey, table.sortDir];
    view = v;
    for (const [k, b] of Object.entries(tabs)) b.setAttribute('aria-selected', String(k === v));
    table.selected = -1;
    table.setColumns(v === 'hangs' ? hangColumns(m) : groupColumns(m), ...sorts[v]);
    table.root.scrollTop = 0;
    apply();
  }

  let timer = 0;
  filter.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(apply, 60); });
  classFilter.addEventListener('change', apply);
  tabs.hangs.addEventListener('click', () => setView('hangs'));
  tabs.groups.addEventListener('click', () => setView('groups'));
  document.getElementById('help-button').addEventListener('click',
      () => document.getElementById('help').showModal());

  document.addEventListener('keydown', e => {
    const t = e.target;
    const typing = t.matches && t.matches('input, select, textarea');
    if (e.key === 'Escape' && typing) {
      if (t.value) {
        t.value = '';
        t.dispatchEvent(new Event('input'));
      } else {
        t.blur();
      }
      e.preventDefault();
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (document.getElementById('help').open) return;
    if ((e.key === 'Enter' || e.key === ' ') && t.closest && t.closest('button, a')) return;
    const keys = {
      j: () => table.move(1), ArrowDown: () => table.move(1),
      k: () => table.move(-1), ArrowUp: () => table.move(-1),
      PageDown: () => table.move(table.page()), PageUp: () => table.move(-table.page()),
      Home: () => table.select(0), End: () => table.select(table.ids.length - 1),
      Enter: () => table.select(Math.max(table.selected, 0)),
      '/': () => filter.focus(),
      s: () => detail.searchInput && detail.searchInput.focus(),
      f: () => detail.flame && detail.flame.enter(),
      g: () => setView(view === 'hangs' ? 'groups' : 'hangs'),
      c: () => detail.copy(null),
      '?': () => document.getElementById('help').showModal(),
      Escape: () => detail.flame && detail.flame.focus.parent &&
          detail.flame.zoom(detail.flame.focus.parent),
    };
    if (!keys[e.key]) return;
    e.preventDefault();
    keys[e.key]();
  });

  table.setColumns(hangColumns(m), ...sorts.hangs);
  apply();
  const wanted = /^#hang=(\d+)$/.exec(location.hash);
  if (wanted && +wanted[1] < m.n) table.select(table.ids.indexOf(+wanted[1]));
  else if (m.n === 1) table.select(0);
  document.documentElement.dataset.ready = performance.now().toFixed(1);
}

main();
