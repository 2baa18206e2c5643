// A sortable table that only creates the rows in view, so 10k hangs cost 30 rows of DOM.

class VirtualTable {
  // onSelect(id) is called with the id of the row that became selected.
  constructor(root, onSelect) {
    this.root = root;
    this.onSelect = onSelect;
    this.rowH = 24;
    this.columns = [];
    this.ids = [];  // the rows, in display order
    this.selected = -1;  // position in ids
    this.sortKey = null;
    this.sortDir = 1;
    this.head = el('div', {class: 'head', role: 'row'});
    this.body = el('div', {class: 'rows', role: 'rowgroup'});
    root.append(this.head, this.body);
    this.pending = false;
    this.version = 0;  // changes whenever the rows or their order do
    this.shown = '';  // what the rows in the DOM show: rendering the same again is skipped
    root.addEventListener('scroll', () => this.schedule());
    this.body.addEventListener('click', e => {
      const row = e.target.closest('.row');
      if (row) this.select(+row.dataset.pos);
    });
    new ResizeObserver(() => this.schedule()).observe(root);
  }

  // columns: [{key, title, width (px; 0: takes the rest), num, text(id), value(id), hover(id)}]
  setColumns(columns, sortKey, sortDir) {
    this.columns = columns;
    this.version++;
    this.sortKey = sortKey;
    this.sortDir = sortDir;
    this.head.replaceChildren(...columns.map(c => el('button', {
      type: 'button', role: 'columnheader', 'data-key': c.key,
      class: (c.num ? 'num' : '') + (c.width ? '' : ' grow'),
      style: c.width ? 'width:' + c.width + 'px' : null,
      title: 'Sort by ' + c.title.toLowerCase(), text: c.title,
      onclick: () => this.sortBy(c.key),
    })));
  }

  // Shows `ids` (sorted by the current column); keeps the selected row if it is still there.
  setRows(ids) {
    const keep = this.selectedId();
    this.ids = ids;
    this.version++;
    this.sort();
    this.selected = keep === undefined ? -1 : this.ids.indexOf(keep);
    this.body.style.height = this.ids.length * this.rowH + 'px';
    this.render();
  }

  selectedId() { return this.selected >= 0 ? this.ids[this.selected] : undefined; }

  sortBy(key) {
    if (this.sortKey === key) {
      this.sortDir = -this.sortDir;
    } else {
      this.sortKey = key;
      this.sortDir = this.columns.find(c => c.key === key).num ? -1 : 1;
    }
    const keep = this.selectedId();
    this.version++;
    this.sort();
    if (keep !== undefined) this.selected = this.ids.indexOf(keep);
    this.render();
  }

  sort() {
    const col = this.columns.find(c => c.key === this.sortKey);
    for (const b of this.head.children) {
      b.setAttribute('aria-sort', b.dataset.key !== this.sortKey ? 'none' :
                     this.sortDir > 0 ? 'ascending' : 'descending');
    }
    if (!col) return;
    const values = new Map(this.ids.map(id => [id, col.value(id)]));
    const dir = this.sortDir;
    this.ids.sort((a, b) => {
      const x = values.get(a), y = values.get(b);
      if (x < y) return -dir;
      if (x > y) return dir;
      return a - b;
    });
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  }

  render() {
    const top = this.root.scrollTop, height = this.root.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / this.rowH) - 5);
    const last = Math.min(this.ids.length, Math.ceil((top + height) / this.rowH) + 5);
    const key = [first, last, this.selected, this.version, this.columns.length].join(':');
    if (key === this.shown) return;
    this.shown = key;
    const rows = [];
    for (let pos = first; pos < last; pos++) {
      const id = this.ids[pos];
      rows.push(el('div', {
        class: 'row', role: 'row', 'data-pos': pos, 'data-id': id,
        'aria-selected': pos === this.selected ? 'true' : 'false',
        style: 'top:' + pos * this.rowH + 'px',
      }, ...this.columns.map(c => el('div', {
        class: 'cell' + (c.num ? ' num' : '') + (c.width ? '' : ' grow'), role: 'gridcell',
        style: c.width ? 'width:' + c.width + 'px' : null,
        title: c.hover ? c.hover(id) : null, text: c.text(id),
      }))));
    }
    if (this.ids.length === 0) rows.push(el('div', {class: 'empty muted', text: 'No match.'}));
    this.body.replaceChildren(...rows);
  }

  // Selects the row at `pos` (clamped), scrolls it into view and reports it.
  select(pos) {
    if (this.ids.length === 0) return;
    pos = Math.max(0, Math.min(this.ids.length - 1, pos));
    this.selected = pos;
    const y = pos * this.rowH, headH = this.head.offsetHeight;
    if (y < this.root.scrollTop) this.root.scrollTop = y;
    else if (y + this.rowH + headH > this.root.scrollTop + this.root.clientHeight) {
      this.root.scrollTop = y + this.rowH + headH - this.root.clientHeight;
    }
    this.render();
    this.onSelect(this.ids[pos]);
  }

  move(delta) { this.select(this.selected < 0 ? 0 : this.selected + delta); }
  page() { return Math.max(1, Math.floor(this.root.clientHeight / this.rowH) - 2); }
}
