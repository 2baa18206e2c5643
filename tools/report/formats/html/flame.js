// The flame graph (drawn as an icicle: callers on top) of one hang or of a group of hangs.
// Frames of one function under the same caller are one box; each class of hang gets a root of
// its own, so busy and blocked hangs are never merged under one root.

function newNode(parent, name, frame) {
  const n = {name, frame, parent, children: [], byKey: new Map(), total: 0, self: 0,
             lines: new Map(), depth: parent ? parent.depth + 1 : -1};
  if (parent) parent.children.push(n);
  return n;
}

// The call tree of the hangs `ids` (hang indices).
function buildTree(model, ids) {
  const top = newNode(null, '', -1);
  const roots = new Map();
  for (const i of ids) {
    const c = model.h.class[i];
    let root = roots.get(c);
    if (!root) {
      root = newNode(top, '', -1);
      root.cls = c;
      root.hangs = 0;
      roots.set(c, root);
    }
    root.hangs++;
    for (const {stack, count} of model.hangStacks(i)) {
      const frames = model.stacks[stack];
      let node = root;
      node.total += count;
      for (let k = frames.length - 1; k >= 0; k--) {
        const f = frames[k];
        const key = model.frameName(f) + '\0' + model.frameModule(f);
        let child = node.byKey.get(key);
        if (!child) {
          child = newNode(node, model.frameName(f), f);
          node.byKey.set(key, child);
        }
        child.total += count;
        child.lines.set(f, (child.lines.get(f) || 0) + count);
        node = child;
      }
      node.self += count;
    }
  }
  const sort = n => {
    n.children.sort((a, b) => b.total - a.total || (a.name < b.name ? -1 : 1));
    n.children.forEach(sort);
  };
  for (const root of roots.values()) {
    const what = ids.length === 1 ? 'hang' : root.hangs + ' hang' + (root.hangs === 1 ? '' : 's');
    root.name = CLASSES[root.cls] + ' ' + what + ' (' + root.total + ' samples)';
    top.total += root.total;
  }
  sort(top);
  return top;
}

class FlameGraph {
  // onSearch(text) receives the summary of a search ("3 frames match, 75% of the samples").
  constructor(container, tooltip, model, culprits, onSearch) {
    this.box = container;
    this.tip = tooltip;
    this.model = model;
    this.culprits = culprits;  // frame ids outlined as culprits
    this.onSearch = onSearch;
    this.rowH = 18;
    this.term = '';
    this.drawn = [];
    this.keyNode = null;
    container.addEventListener('click', e => {
      const n = this.nodeAt(e.target);
      if (n) this.zoom(n === this.focus && n.parent ? n.parent : n);
    });
    container.addEventListener('mousemove', e => this.hover(e));
    container.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    container.addEventListener('keydown', e => this.key(e));
    this.resize = new ResizeObserver(() => {
      if (this.box.clientWidth !== this.width) this.render();
    });
    this.resize.observe(container);
  }

  setTree(top) {
    this.top = top;
    this.focus = top;
    this.keyNode = null;
    this.render();
    this.search(this.term);
  }

  nodeAt(target) {
    const e = target.closest && target.closest('.fr');
    return e ? this.drawn[+e.dataset.i] : null;
  }

  zoom(node) {
    this.focus = node;
    this.render();
    this.search(this.term);
  }

  color(n) {
    const kind = this.model.frameKind(n.frame);
    if (kind === 1) return 'hsl(' + hashHue(n.name, 195, 40) + ',30%,72%)';
    if (kind === 2) return 'hsl(' + hashHue(n.name, 80, 60) + ',40%,64%)';
    return 'hsl(' + hashHue(n.name, 8, 42) + ',82%,62%)';
  }

  render() {
    const hadFocus = this.box.contains(document.activeElement);
    for (const n of this.drawn) n.el = null;
    this.width = this.box.clientWidth;
    const minFrac = 2 / Math.max(this.width, 1);  // boxes under 2 px are not drawn
    const drawn = [], parts = [];
    let maxDepth = 0;
    const add = (n, left, width, cls) => {
      const e = el('div', {
        class: 'fr' + cls + (n.frame >= 0 && this.culprits.has(n.frame) ? ' culprit' : ''),
        'data-i': drawn.length, tabindex: '-1', role: 'button',
        style: 'left:' + (100 * left) + '%;width:' + (100 * width) + '%;top:' +
            n.depth * this.rowH + 'px' + (n.frame >= 0 ? ';background:' + this.color(n) : ''),
        text: n.name,
      });
      drawn.push(n);
      parts.push(e);
      n.el = e;
      maxDepth = Math.max(maxDepth, n.depth);
    };
    for (let a = this.focus; a && a.depth >= 0; a = a.parent) {
      add(a, 0, 1, (a === this.focus ? '' : ' anc') + (a.frame < 0 ? ' cls-root c' + a.cls : ''));
    }
    const total = this.focus.total || 1;
    const walk = (n, left) => {
      for (const c of n.children) {
        const w = c.total / total;
        if (w >= minFrac) {
          add(c, left, w, c.frame < 0 ? ' cls-root c' + c.cls : '');
          walk(c, left);
        }
        left += w;
      }
    };
    walk(this.focus, 0);
    this.drawn = drawn;
    this.box.style.height = (maxDepth + 1) * this.rowH + 2 + 'px';
    this.box.replaceChildren(...parts);
    if (hadFocus) {
      const k = this.keyNode && this.keyNode.el ? this.keyNode : this.drawn[0];
      if (k) k.el.focus();
    }
  }

  // Highlights the frames whose name contains `term` (case-insensitive) and reports how many
  // samples went through them.
  search(term) {
    this.term = term.trim().toLowerCase();
    this.box.classList.toggle('searching', this.term !== '');
    for (const n of this.drawn) {
      n.el.classList.toggle('match', this.term !== '' && n.name.toLowerCase().includes(this.term));
    }
    if (!this.term) {
      this.onSearch('');
      return;
    }
    const names = new Set();
    let samples = 0;
    const visit = (n, inside) => {
      const hit = n.frame >= 0 && n.name.toLowerCase().includes(this.term);
      if (hit) names.add(n.name);
      if (hit && !inside) samples += n.total;
      for (const c of n.children) visit(c, inside || hit);
    };
    visit(this.top, false);
    const pct = this.top.total ? Math.round(100 * samples / this.top.total) : 0;
    this.onSearch(names.size === 0 ? 'no frame matches' :
        names.size + ' function' + (names.size === 1 ? '' : 's') + ' match, in ' + pct +
        '% of the samples');
  }

  hover(e) {
    const n = this.nodeAt(e.target);
    if (!n) {
      this.tip.hidden = true;
      return;
    }
    const m = this.model, total = this.top.total || 1;
    const lines = [...n.lines.entries()].sort((a, b) => b[1] - a[1]);
    const rows = [el('div', {class: 'name mono', text: n.name})];
    for (const [f, count] of lines.slice(0, 6)) {
      const loc = m.frameLocation(f);
      if (loc) rows.push(el('div', {class: 'mono', text: loc + (lines.length > 1 ? '  (' + count + ')' : '')}));
    }
    if (lines.length > 6) rows.push(el('div', {class: 'muted', text: '... ' + (lines.length - 6) + ' more lines'}));
    if (n.frame >= 0) {
      const mod = m.frameModule(n.frame);
      rows.push(el('div', {class: 'mono muted', text: (mod || 'no module') + ' · ' + KINDS[m.frameKind(n.frame)]}));
    }
    rows.push(el('div', {text: n.total + ' sample' + (n.total === 1 ? '' : 's') + ' (' +
        (100 * n.total / total).toFixed(1) + '%)' + (n.self ? ', ' + n.self + ' on top' : '') +
        (n.frame >= 0 && this.culprits.has(n.frame) ? ' · culprit' : '')}));
    this.tip.replaceChildren(...rows);
    this.tip.hidden = false;
    const x = Math.min(e.clientX + 14, window.innerWidth - this.tip.offsetWidth - 4);
    const y = e.clientY + 18 + this.tip.offsetHeight > window.innerHeight ?
        e.clientY - this.tip.offsetHeight - 8 : e.clientY + 18;
    this.tip.style.left = Math.max(0, x) + 'px';
    this.tip.style.top = Math.max(0, y) + 'px';
  }

  // Arrow keys move between boxes, Enter zooms, Escape zooms out.
  key(e) {
    const focused = this.nodeAt(document.activeElement);
    let n = focused || this.focus;
    if (n.depth < 0) n = this.drawn[0];
    if (!n) return;
    const drawnKids = p => p.children.filter(c => c.el);
    let next = null;
    if (e.key === 'ArrowUp') next = n.parent && n.parent.el ? n.parent : null;
    else if (e.key === 'ArrowDown') next = drawnKids(n)[0] || null;
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      const sib = n.parent ? drawnKids(n.parent) : [];
      next = sib[sib.indexOf(n) + (e.key === 'ArrowLeft' ? -1 : 1)] || null;
    } else if (e.key === 'Enter' || e.key === ' ') {
      this.keyNode = n;
      this.zoom(n === this.focus && n.parent ? n.parent : n);
    } else if (e.key === 'Escape' && this.focus.parent) {
      this.keyNode = this.focus;
      this.zoom(this.focus.parent);
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
    if (!focused && !next) next = n;
    if (next) {
      this.keyNode = next;
      next.el.focus();
    }
  }

  // Focuses the graph for the keyboard: the zoomed-in box, or the first root.
  enter() {
    const n = this.focus.el ? this.focus : this.drawn[0];
    if (n) {
      this.keyNode = n;
      n.el.focus();
    }
  }

  destroy() { this.resize.disconnect(); }
}
