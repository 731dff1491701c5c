// The views, one per route: render(el, route) draws it; frames(batch,
// route), when present, updates it from live events.
import { get, post, del, q, esc, status, download } from './api.js';
import { h, fill, errorBox, when, ago, duration, redraw, said } from './dom.js';
import { sql } from './sql.js';

// act runs a write and shows its error (with the daemon's help) in place.
async function act(slot, fn, after) {
  slot.replaceChildren();
  try {
    await fn();
    if (after) await after();
  } catch (e) {
    slot.replaceChildren(errorBox(e));
  }
}

const drawerLink = (d, wing, room) => '#/drawer/' + esc(wing) + '/' + esc(room) + '/' + esc(d.id);

// ---- overview
const overview = {
  async render(el) {
    // The job list is read from the store: unknown (not a failed page)
    // while a shared store is unreachable.
    const [st, jobs] = await Promise.all([status(), get('/api/jobs' + q({ status: 'running', limit: 20 })).catch(() => null)]);
    // counts is null while a shared store is unreachable: unknown, not empty.
    const unknown = st.counts === null;
    const c = st.counts || {};
    const n = (v) => (unknown ? 'unknown' : v);
    const ix = st.indexes || {};
    const vectors = Object.entries(ix.vectors || {}).map(([n, v]) => h('li', {}, `vectors ${n}: ${v.drawers} drawers, ${v.behind ? v.behind + ' changes behind' : 'caught up'}`));
    const dk = st.disk;
    fill(el, 
      h('h1', {}, 'Overview'),
      dk && dk.full ? errorBox({ message: 'The palace\'s disk is full: writes are refused (loci::store::disk_full) and jobs wait until space is freed; reads and search go on.',
        help: `${bytes(dk.free_bytes)} free at ${dk.path}, under the reserve of ${bytes(dk.min_free_bytes)} (store.min_free_bytes)${dk.read_only ? '; started read-only' : ''}. Free space there: writes resume by themselves.` }) : null,
      unknown ? errorBox({ message: `The store ${st.datastore ? 'at ' + st.datastore.location + ' ' : ''}is unreachable: counts are unknown; writes are refused until it is back, searches answer from this daemon's own index.`,
        help: (st.datastore && st.datastore.error) || 'the daemon reconnects on its own' }) : null,
      h('div', { class: 'grid' },
        stat('Drawers', n(c.drawers), unknown ? '' : `${c.drawers_stored} stored`),
        stat('Wings', n(c.wings)), stat('Rooms', n(c.rooms)), stat('Similar links', n(c.similar_links)),
        stat('Version', st.version, 'up ' + duration(st.uptime_secs || 0)),
        stat('Mode', st.mode, 'authentication ' + (st.auth_enabled ? 'on' : 'off')),
        dk ? stat('Disk free', dk.free_bytes < 0 ? 'unknown' : bytes(dk.free_bytes), (dk.full ? 'FULL: ' : '') + 'reserve ' + bytes(dk.min_free_bytes)) : null),
      h('div', { class: 'card' }, h('h2', {}, 'Palace'), h('p', {}, st.palace, ' ', h('span', { class: 'muted' }, `(${st.datastore && st.datastore.backend})`)),
        h('ul', {}, h('li', {}, `lexical: ${ix.lexical ? ix.lexical.drawers + ' drawers, ' + (ix.lexical.behind ? ix.lexical.behind + ' changes behind' : 'caught up') : 'n/a'}`), vectors),
        ix.switch ? h('p', {}, `Switching the default embedding profile from ${ix.switch.from} to ${ix.switch.to}: `, h('progress', { max: ix.switch.total, value: ix.switch.embedded }), ` ${ix.switch.embedded} of ${ix.switch.total}`) : null),
      backupCard(st.backup, st.datastore),
      h('div', { class: 'card' }, h('h2', {}, 'Running jobs'),
        !jobs ? h('p', { class: 'muted' }, 'Unknown: the job list could not be read.') : jobs.jobs.length ? jobTable(jobs.jobs) : h('p', { class: 'empty' }, 'No job is running.')),
      h('div', { class: 'card', id: 'chart' }, h('h2', {}, 'Drawers filed, last 14 days'), h('p', { class: 'muted' }, 'Counting…')));
    if (unknown) {
      el.querySelector('#chart').replaceChildren(h('h2', {}, 'Drawers filed'), h('p', { class: 'muted' }, 'Unknown while the store is unreachable.'));
      return;
    }
    if (!c.drawers) {
      el.querySelector('#chart').replaceChildren(h('h2', {}, 'Drawers filed'), h('p', { class: 'empty' }, said('No drawers yet: run `loci mine /path` or file a note in the palace view.')));
      return;
    }
    chart(el.querySelector('#chart'));
  },
  frames(fs, r) {
    if (fs.some((f) => f.kind === 'job' || f.kind === 'drawer' || f.kind === 'resync')) throttle('overview', () => redraw('overview'), 1000);
  },
};

// backupCard shows the last successful backup in backup.dir and the
// warning when none is recent (status' backup section), with a button
// that queues one now (POST /api/backups: the daemon's folder, never a
// path of the page's).
function backupCard(b, ds) {
  if (!b) return null;
  if (ds && ds.backend === 'postgres') {
    // loci does not back up a shared store: the database's own tools do.
    return h('div', { class: 'card', id: 'backup' }, h('h2', {}, 'Backup'),
      h('p', { id: 'backup-shared' }, 'The palace is in PostgreSQL at ', h('code', {}, ds.location),
        ': back it up with ', h('code', {}, 'pg_dump -Fc'), ' and restore it with ', h('code', {}, 'pg_restore'), '.'));
  }
  const slot = h('div');
  const last = b.last;
  const plan = b.schedule ? `scheduled ${b.schedule}${b.next_due ? ', next ' + when(b.next_due) : ''}` : 'no schedule (backup.schedule)';
  return h('div', { class: 'card', id: 'backup' }, h('h2', {}, 'Backup'),
    b.warning ? h('div', { class: 'warning', role: 'status', id: 'backup-warning' }, said(b.warning)) : null,
    last ? h('p', { id: 'backup-last' }, 'Last backup ', h('span', { title: when(last.created_at) }, ago(last.created_at)), ': ', h('code', {}, last.name),
      ` (${bytes(last.size)}, ${last.drawers} drawers, store version ${last.store_version})`)
      : h('p', { class: 'empty', id: 'backup-last' }, 'No backup yet.'),
    h('p', { class: 'muted' }, `In ${b.dir}; ${plan}; keeping ${b.keep}.`),
    h('p', {}, h('button', { type: 'button', id: 'backup-now', onclick: () => act(slot, async () => {
      const j = await post('/api/backups');
      slot.replaceChildren(h('p', {}, 'Queued a ', h('a', { href: '#/jobs' + q({ job: j.id }) }, 'backup job'), '.'));
    }) }, 'Back up now')), slot);
}

// jobTable lists jobs briefly (the overview's running jobs): kind, a
// link to the job, status and progress, whose message says when a job
// waits for disk space.
function jobTable(list) {
  return h('table', { id: 'running-jobs' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Kind'), h('th', {}, 'Status'), h('th', {}, 'Progress'))),
    h('tbody', {}, list.map((j) => {
      const p = j.progress || {};
      return h('tr', { 'data-job': j.id }, h('td', {}, h('a', { href: '#/jobs' + q({ job: j.id }) }, j.kind)), h('td', {}, j.status),
        h('td', {}, `${p.current || 0}${p.total ? ' / ' + p.total : ''} ${p.message || ''}`));
    })));
}

// bytes writes a size for people: 1.5 GiB, 300.0 MiB, 5 B.
function bytes(n) {
  if (n < 1024) return `${n} B`;
  let v = n / 1024, i = 0;
  while (v >= 1024 && i < 4) { v /= 1024; i++; }
  return `${v.toFixed(1)} ${'KMGTP'[i]}iB`;
}

function stat(label, value, sub) {
  return h('div', { class: 'card stat' }, h('span', { class: 'muted' }, label), h('b', {}, value ?? '–'), sub ? h('span', { class: 'muted' }, sub) : null);
}

const timers = {};
function throttle(key, fn, ms) {
  if (timers[key]) return;
  timers[key] = setTimeout(() => { delete timers[key]; fn(); }, ms);
}

// chart draws the drawers filed on each of the last 14 local days, every
// room (GET /api/stats/filed).
async function chart(box) {
  const start = new Date(); start.setHours(0, 0, 0, 0); start.setDate(start.getDate() - 13);
  const f = await get('/api/stats/filed' + q({ since: start.toISOString(), buckets: 14, step_secs: 86400 }));
  const days = f.counts;
  const max = Math.max(1, ...days);
  const day = (i) => new Date(start.getTime() + i * 86400000).toLocaleDateString();
  const svg = h('svg', { class: 'chart', viewBox: '0 0 280 80', preserveAspectRatio: 'none', width: '100%', height: '90', role: 'img', 'aria-label': 'drawers filed per day: ' + days.join(', ') },
    days.map((n, i) => h('rect', { x: i * 20 + 2, y: 80 - (n / max) * 78, width: 16, height: Math.max(0.5, (n / max) * 78) }, h('title', {}, `${day(i)}: ${n}`))));
  box.replaceChildren(h('h2', {}, 'Drawers filed, last 14 days'), svg,
    h('div', { class: 'axis muted' }, h('span', {}, day(0)), h('span', {}, `most in a day: ${Math.max(...days)}`), h('span', {}, 'today')),
    h('p', { class: 'muted' }, `${f.total} filed since ${day(0)}, every room`));
  performance.mark('loci:chart');
}

// ---- palace: wings > rooms > drawers
const palace = {
  async render(el, r) {
    const [wing, room] = r.args;
    if (!wing) return wingsView(el);
    if (!room) return roomsView(el, wing);
    return drawersView(el, wing, room);
  },
  frames(fs, r) {
    if (fs.some((f) => ['drawer', 'wing', 'room', 'resync'].includes(f.kind))) throttle('palace', () => redraw('palace'), 300);
  },
};

async function wingsView(el) {
  const ws = (await get('/api/wings')).wings || [];
  const slot = h('div');
  const name = h('input', { id: 'new-wing', required: true, autocomplete: 'off' });
  fill(el, h('h1', {}, 'Palace'),
    ws.length ? h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Wing'), h('th', {}, 'Rooms'), h('th', {}, 'Drawers'))),
      h('tbody', {}, ws.map((w) => h('tr', {}, h('td', {}, h('a', { href: '#/palace/' + esc(w.name) }, w.name)), h('td', {}, w.rooms_count), h('td', {}, w.drawers)))))
      : h('p', { class: 'empty' }, said('No drawers yet: run `loci mine /path` or file a note.')),
    h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); act(slot, () => post('/api/wings', { name: name.value }), () => wingsView(el)); } },
      h('h2', {}, 'New wing'), h('label', { for: 'new-wing' }, 'Name'), name, h('p', {}, h('button', { type: 'submit' }, 'Create wing')), slot));
}

async function roomsView(el, wing) {
  const rs = (await get('/api/wings/' + esc(wing) + '/rooms')).rooms || [];
  const slot = h('div');
  const name = h('input', { id: 'new-room', required: true, autocomplete: 'off' });
  fill(el, h('div', { class: 'crumbs' }, h('a', { href: '#/palace' }, 'Palace'), ' › ', wing), h('h1', {}, wing),
    rs.length ? h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Room'), h('th', {}, 'Drawers'), h('th', {}, 'Stored'))),
      h('tbody', {}, rs.map((r) => h('tr', {}, h('td', {}, h('a', { href: '#/palace/' + esc(wing) + '/' + esc(r.name) }, r.name)), h('td', {}, r.drawers), h('td', {}, r.drawers_stored)))))
      : h('p', { class: 'empty' }, 'No rooms yet.'),
    h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); act(slot, () => post('/api/wings/' + esc(wing) + '/rooms', { name: name.value }), () => roomsView(el, wing)); } },
      h('h2', {}, 'New room'), h('label', { for: 'new-room' }, 'Name'), name, h('p', {}, h('button', { type: 'submit' }, 'Create room')), slot),
    exportCard(wing));
}

// exportCard offers the wing's export (GET /api/export?wing=), saved as
// a file by the browser.
function exportCard(wing) {
  const slot = h('div');
  return h('div', { class: 'card', id: 'export' }, h('h2', {}, 'Export'),
    h('p', { class: 'muted' }, `Download the wing ${wing} in loci's export format (JSON Lines), to import it into another palace with loci import.`),
    h('p', {}, h('button', { type: 'button', id: 'export-wing', onclick: () => act(slot, async () => {
      const n = await download('/api/export' + q({ wing }), `loci-export-${wing.replace(/[^\w.-]+/g, '_')}-${new Date().toISOString().replace(/[-:]|\.\d+/g, '')}.jsonl`);
      slot.replaceChildren(h('p', { class: 'ok' }, `Exported ${bytes(n)}.`));
    }) }, 'Export this wing')), slot);
}

async function drawersView(el, wing, room) {
  const ds = (await get('/api/wings/' + esc(wing) + '/rooms/' + esc(room) + '/drawers?limit=100')).drawers || [];
  const slot = h('div');
  const text = h('textarea', { id: 'note', required: true });
  fill(el, h('div', { class: 'crumbs' }, h('a', { href: '#/palace' }, 'Palace'), ' › ', h('a', { href: '#/palace/' + esc(wing) }, wing), ' › ', room),
    h('h1', {}, room),
    h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); act(slot, () => post('/api/notes', { wing, room, content: text.value }), () => { text.value = ''; }); } },
      h('label', { for: 'note' }, 'File a note'), text, h('p', {}, h('button', { type: 'submit' }, 'File note')), slot),
    ds.length ? h('div', { id: 'drawers' }, ds.map((d) => h('div', { class: 'hit' },
      h('a', { href: drawerLink(d, wing, room) }, d.name || d.id.slice(-8)), ' ', h('span', { class: 'muted' }, ago(d.created_at), d.valid_to ? ' · superseded' : ''),
      h('div', { class: 'content' }, d.preview), tags(d.tags))))
      : h('p', { class: 'empty' }, said('No drawers yet: run `loci mine /path` or file a note above.')),
    ds.length >= 100 ? h('p', { class: 'muted' }, 'The newest 100 drawers are shown: search the room to find older ones.') : null);
}

function tags(ts) {
  return ts && ts.length ? h('div', { class: 'tags' }, ts.map((t) => h('span', {}, t))) : null;
}

// ---- one drawer
const drawer = {
  // Reached as #/drawer/<wing>/<room>/<name or id> from the palace, or as
  // #/drawer/<id> from a search hit, a similar drawer or a history.
  async render(el, r) {
    let [wing, room, id] = r.args;
    if (r.args.length === 1) {
      const x = (await get('/api/drawers/' + esc(r.args[0]) + '/history')).drawer;
      [wing, room, id] = [x.wing_id, x.room_id, x.id];
    }
    const [d, w] = await Promise.all([get('/api/wings/' + esc(wing) + '/rooms/' + esc(room) + '/drawers/' + esc(id)), get('/api/wings/' + esc(wing))]);
    // The crumbs and the links after a change name the wing and room.
    wing = w.name;
    room = ((w.rooms || []).find((x) => x.id === d.room_id) || { name: room }).name;
    const [hist, dup] = await Promise.all([get('/api/drawers/' + esc(d.id) + '/history'), get('/api/drawers/' + esc(d.id) + '/duplicates').catch(() => ({ similar: [] }))]);
    const slot = h('div');
    const text = h('textarea', { id: 'replacement' }, d.content);
    fill(el, h('div', { class: 'crumbs' }, h('a', { href: '#/palace' }, 'Palace'), ' › ', h('a', { href: '#/palace/' + esc(wing) }, wing), ' › ', h('a', { href: '#/palace/' + esc(wing) + '/' + esc(room) }, room)),
      h('h1', {}, d.name || 'Drawer ' + d.id.slice(-8)),
      h('div', { class: 'card' }, h('div', { class: 'content', id: 'drawer-content' }, d.content), tags(d.tags),
        h('table', {}, h('tbody', {},
          row('id', d.id), row('source', [d.source && d.source.kind, d.source && d.source.uri].filter(Boolean).join(' ')),
          row('provenance', `requested by ${(d.provenance || {}).requested_by || 'unknown'}` + ((d.provenance || {}).job_id ? `, job ${d.provenance.job_id}` : '')),
          row('valid', when(d.valid_from) + ' → ' + (d.valid_to ? when(d.valid_to) : 'now')),
          d.supersedes ? row('supersedes', h('a', { href: '#/drawer/' + esc(d.supersedes) }, d.supersedes)) : null,
          d.superseded_by ? row('superseded by', h('a', { href: '#/drawer/' + esc(d.superseded_by) }, d.superseded_by)) : null,
          row('recorded', when(d.created_at))))),
      h('div', { class: 'card' }, h('h2', {}, 'History'), h('ol', { id: 'history' }, (hist.versions || []).map((v) => h('li', {}, h('span', { class: 'muted' }, when(v.valid_from), v.valid_to ? ' → ' + when(v.valid_to) : ' → now', ' '),
        v.id === d.id ? h('span', { class: 'muted' }, '(this one) ') : h('a', { href: '#/drawer/' + esc(v.id) }, v.id.slice(-8)), ' ', h('span', { class: 'content' }, v.content))))),
      h('div', { class: 'card' }, h('h2', {}, 'Similar'), (dup.similar || []).length
        ? h('ul', { id: 'similar' }, dup.similar.map((x) => h('li', {}, h('a', { href: '#/drawer/' + esc(x.drawer) }, x.drawer.slice(-8)),
          h('span', { class: 'muted' }, ` ${x.kind.replaceAll('_', ' ')}, similarity ${Number(x.similarity).toFixed(2)}${x.side ? ' (' + x.side + ')' : ''}`))))
        : h('p', { class: 'empty' }, 'No similar drawers.')),
      d.valid_to ? null : h('form', { class: 'card', onsubmit: (e) => {
        e.preventDefault();
        if (!confirm('Supersede this drawer with the new text? The old one stays in its history.')) return;
        // The page moves to the replacement (its history lists both).
        let res;
        act(slot, async () => { res = await post('/api/drawers/' + esc(d.id) + '/supersede', { content: text.value }); }, () => {
          const to = '#/drawer/' + esc(res.replacement ? res.replacement.id : d.id);
          if (location.hash === to) drawer.render(el, r);
          else location.hash = to;
        });
      } }, h('h2', {}, 'Supersede'), h('label', { for: 'replacement' }, 'New content'), text,
        h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Supersede'),
          h('button', { type: 'button', class: 'danger', onclick: () => {
            if (!confirm('Delete this drawer for good?')) return;
            act(slot, () => del('/api/wings/' + esc(wing) + '/rooms/' + esc(room) + '/drawers/' + esc(d.id)), () => { location.hash = '#/palace/' + esc(wing) + '/' + esc(room); });
          } }, 'Delete')), slot));
  },
};

function row(k, v) {
  return h('tr', {}, h('th', {}, k), h('td', {}, v));
}

// ---- search
const search = {
  async render(el, r) {
    const p = r.params;
    const f = {};
    const field = (name, label, attrs = {}) => {
      f[name] = h('input', { id: 's-' + name, name, value: p.get(name) || '', ...attrs });
      return h('div', {}, h('label', { for: 's-' + name }, label), f[name]);
    };
    const ranking = h('select', { id: 's-ranking' }, ['auto', 'lexical', 'semantic', 'hybrid'].map((m) => h('option', { value: m, selected: p.get('ranking') === m }, m)));
    const kind = h('select', { id: 's-kind' }, ['', 'file', 'manual', 'transcript', 'note', 'other'].map((m) => h('option', { value: m, selected: p.get('source_kind') === m }, m || 'any')));
    // The form shows what the URL asks (a link may carry any limit, and
    // 1 for true), so searching again from it asks the same.
    const on = (v) => v === 'true' || v === '1';
    const askedLimit = p.get('limit') || '10';
    const limits = ['10', '20', '50', '100'].includes(askedLimit) ? ['10', '20', '50', '100'] : [askedLimit, '10', '20', '50', '100'];
    const limit = h('select', { id: 's-limit' }, limits.map((n) => h('option', { value: n, selected: askedLimit === n }, n)));
    const hist = h('input', { type: 'checkbox', id: 's-hist', checked: on(p.get('include_historical')) });
    const expand = h('input', { type: 'checkbox', id: 's-expand', checked: on(p.get('expand')) });
    const results = h('div', { id: 'results' });
    const form = h('form', { class: 'card', role: 'search', onsubmit: (e) => {
      e.preventDefault();
      location.hash = '#/search' + q({ q: f.q.value, ranking: ranking.value, wing: f.wing.value, room: f.room.value, tags: f.tags.value, source_kind: kind.value, limit: limit.value === '10' ? '' : limit.value,
        as_of: f.as_of.value, from: f.from.value, until: f.until.value, include_historical: hist.checked, expand: expand.checked });
    } },
    field('q', 'Search', { type: 'search', required: true }),
    h('div', { class: 'row' }, h('div', {}, h('label', { for: 's-ranking' }, 'Ranking'), ranking), field('wing', 'Wing'), field('room', 'Room'), field('tags', 'Tags (comma-separated)'),
      h('div', {}, h('label', { for: 's-kind' }, 'Source kind'), kind), h('div', {}, h('label', { for: 's-limit' }, 'Hits'), limit)),
    h('div', { class: 'row' }, field('as_of', 'Valid at (RFC 3339 or date)'), field('from', 'Valid from'), field('until', 'until')),
    h('div', { class: 'row' }, h('span', { class: 'check' }, hist, h('label', { for: 's-hist' }, 'include historical')), h('span', { class: 'check' }, expand, h('label', { for: 's-expand' }, 'expand through the graph')), h('button', { type: 'submit' }, 'Search')));
    fill(el, h('h1', {}, 'Search'), form, results);
    if (!p.get('q')) return;
    try {
      const res = await get('/api/search' + q(Object.fromEntries(p.entries())));
      const asked = p.get('ranking') || 'auto';
      results.replaceChildren(h('p', { class: 'muted' }, `${res.hits.length} ${res.hits.length === 1 ? 'hit' : 'hits'}, ranking ${res.ranking}` + (asked === res.ranking ? '' : ` (${asked} chose it)`)),
        ...(res.hits.length ? res.hits.map(hit) : [h('p', { class: 'empty' }, 'Nothing found.')]));
    } catch (e) {
      results.replaceChildren(errorBox(e));
    }
  },
};

function hit(x) {
  const s = x.signals || {};
  const legs = [];
  if (s.lexical) legs.push(`lexical #${s.lexical.rank} (${s.lexical.score.toFixed(2)}${s.lexical.all_words ? ', every word' : ''})`);
  if (s.semantic) legs.push(`semantic #${s.semantic.rank} (similarity ${s.semantic.similarity.toFixed(2)})`);
  if (s.context) legs.push(`context from ${s.context.neighbour.slice(-8)} (+${s.context.added.toFixed(2)})`);
  if (s.graph) {
    const n = s.graph.entities;
    const through = x.via ? ` (${x.via.join(', ')})` : '';
    legs.push(s.graph.hops ? `graph: ${s.graph.hops} ${s.graph.hops === 1 ? 'fact' : 'facts'} away${through}`
      : `graph: shares ${n} ${n === 1 ? 'entity' : 'entities'}${through}`);
  }
  // The title line: where the hit lives (wing / room / name; a later
  // chunk of a mined document by its path and number; else its source
  // file) and the day it is valid from (to, when it no longer is).
  const place = x.name || (x.document ? `${x.document} #${x.chunk}` : x.source && x.source.uri);
  const where = [x.wing, x.room, place].filter(Boolean).join(' / ') || x.id.slice(-8);
  return h('div', { class: 'hit' },
    h('div', { class: 'hit-title' }, h('a', { href: '#/drawer/' + esc(x.id) }, h('b', {}, where)), ' · ', day(x.valid_from),
      x.valid_to ? [' → ', day(x.valid_to)] : null),
    x.turn ? turn(x.turn) : null,
    h('div', { class: 'muted' }, `score ${Number(x.score).toFixed(3)}` + legs.map((l) => ' · ' + l).join('')),
    long(x.content), tags(x.tags));
}

// turn says who said what a transcript hit matched, and when (local time).
function turn(t) {
  const who = (t.sub_agent ? 'sub-agent ' : '') + t.role;
  return h('div', { class: 'hit-turn' }, 'said by ', h('b', {}, who),
    t.at ? [' · ', h('time', { datetime: t.at, title: when(t.at) }, new Date(t.at).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }))] : null);
}

// day shows an instant as its local date, the whole instant on hover.
function day(iso) {
  return h('time', { datetime: iso, title: when(iso) }, new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }));
}

// long shows text verbatim, folded to a few lines when it is long, with a
// button that unfolds it (the whole text is on the page either way).
function long(text) {
  const box = h('div', { class: 'content' }, text);
  if (text.length < 700 && text.split('\n').length < 12) return box;
  box.classList.add('folded');
  const more = h('button', { type: 'button', class: 'plain', 'aria-expanded': 'false', onclick: () => {
    const open = box.classList.toggle('folded') === false;
    more.setAttribute('aria-expanded', String(open));
    more.textContent = open ? 'Fold' : `Show all ${text.length.toLocaleString()} characters`;
  } }, `Show all ${text.length.toLocaleString()} characters`);
  return [box, more];
}

// ---- jobs: the newest 100 (of a status and kind, when chosen). Job
// frames mark the list stale; it is read again once per animation frame
// at most and never twice at once, so a thousand frames a second cost one
// read per round trip, and a row is drawn again only when it changed.
const JOB_PAGE = 100;
const jobs = {
  async render(el, r) {
    const p = (r && r.params) || new URLSearchParams();
    this.filter = { status: p.get('status') || '', kind: p.get('kind') || '' };
    this.selected = p.get('job') || '';
    const list = await this.list();
    this.rows = new Map();
    const st = h('select', { id: 'j-status' }, ['', 'queued', 'running', 'paused', 'completed', 'failed', 'cancelled'].map((x) => h('option', { value: x, selected: x === this.filter.status }, x || 'any')));
    const kind = h('input', { id: 'j-kind', type: 'search', value: this.filter.kind, list: 'j-kinds', placeholder: 'any' });
    const form = h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); location.hash = '#/jobs' + q({ status: st.value, kind: kind.value.trim() }); } },
      h('div', { class: 'row' }, h('div', {}, h('label', { for: 'j-status' }, 'Status'), st), h('div', {}, h('label', { for: 'j-kind' }, 'Kind'), kind,
        h('datalist', { id: 'j-kinds' }, [...new Set(['mine', 'extract', 'embed', 'checkpoint', 'audit', 'repair', ...list.map((j) => j.kind)])].map((k) => h('option', { value: k })))),
        h('button', { type: 'submit' }, 'Show')));
    this.body = h('tbody', {}, list.map((j) => this.row(j)));
    this.more = h('p', { class: 'muted', id: 'jobs-more' });
    fill(el, h('h1', {}, 'Jobs'), form, list.length ? h('table', { id: 'jobs' }, h('thead', {}, h('tr', {}, h('th', {}, 'Kind'), h('th', {}, 'Status'), h('th', {}, 'Progress'), h('th', {}, 'Created'), h('th', {}, 'Actions'))), this.body)
      : h('p', { class: 'empty' }, this.filter.status || this.filter.kind ? 'No job matches.' : said('No jobs yet: run `loci mine /path` to start one.')), this.more, this.detailBox = h('div', { id: 'job-detail' }));
    this.counted(list);
    if (!list.length) this.body = null; // an empty page is drawn again when a job appears
    if (this.selected) {
      const j = list.find((x) => x.id === this.selected) || await get('/api/jobs/' + esc(this.selected)).catch((e) => ({ id: this.selected, kind: 'job', error: e.message }));
      this.detail(j);
    }
  },
  list() {
    return get('/api/jobs' + q({ limit: JOB_PAGE, status: this.filter.status, kind: this.filter.kind })).then((x) => x.jobs || []);
  },
  counted(list) {
    if (this.more) this.more.textContent = list.length >= JOB_PAGE ? `The newest ${JOB_PAGE} are shown: choose a status or kind to find older ones.` : '';
  },
  row(j) {
    const p = j.progress || {};
    const slot = h('span');
    const button = (label, path) => h('button', { type: 'button', class: 'plain', onclick: () => act(slot, () => post('/api/jobs/' + esc(j.id) + '/' + path), () => this.refresh()) }, label);
    const actions = [];
    if (j.status === 'running' || j.status === 'queued') actions.push(button('Pause', 'pause'), button('Cancel', 'cancel'));
    if (j.status === 'paused') actions.push(button('Resume', 'resume'), button('Cancel', 'cancel'));
    if (j.status === 'failed' || j.status === 'cancelled') actions.push(button('Retry', 'retry'));
    const tr = h('tr', { 'data-job': j.id, 'data-status': j.status },
      h('td', {}, h('a', { href: '#/jobs' + q({ ...this.filter, job: j.id }) }, j.kind)),
      h('td', {}, j.status),
      h('td', {}, p.total ? h('progress', { max: p.total, value: p.current || 0, 'aria-label': `${j.kind} progress` }) : null, ' ' + (/\d/.test(p.message || '') ? p.message : `${p.current || 0}${p.total ? ' / ' + p.total : ''} ${p.message || ''}`)),
      h('td', {}, ago(j.created_at)), h('td', {}, actions, slot));
    tr.dataset.shown = JSON.stringify([j.status, j.progress]);
    this.rows.set(j.id, tr);
    return tr;
  },
  // detail shows the chosen job (#/jobs?job=<id>): status, times, its
  // result and error; drawn again when a read finds it changed.
  detail(j) {
    const p = j.progress || {};
    if (this.detailBox) this.detailBox.replaceChildren(h('div', { class: 'card', id: 'job-card' }, h('h2', {}, `${j.kind} ${j.id}`),
      h('table', {}, h('tbody', {}, row('status', j.status || ''), row('progress', `${p.current || 0}${p.total ? ' / ' + p.total : ''} ${p.message || ''}`),
        row('requested by', j.requested_by || ''), row('created', when(j.created_at)), j.started_at ? row('started', when(j.started_at)) : null,
        j.finished_at ? row('finished', when(j.finished_at)) : null, row('attempt', String(j.attempt ?? '')))),
      j.error ? errorBox({ message: j.error }) : null,
      j.result ? [h('h2', {}, 'Result'), h('div', { class: 'content', id: 'job-result' }, JSON.stringify(j.result, null, 2))] : null));
  },
  // refresh marks the list stale and reads it unless a read is under way;
  // that read is followed by one more on the next animation frame.
  refresh() {
    this.stale = true;
    if (this.reading) return;
    this.reading = true;
    requestAnimationFrame(() => this.read());
  },
  async read() {
    while (this.stale) {
      this.stale = false;
      try {
        this.apply(await this.list());
      } catch { /* the next frame or a resync reads again */ }
      if (this.stale) await new Promise((res) => requestAnimationFrame(res));
    }
    this.reading = false;
  },
  apply(list) {
    if (!this.body) {
      if (list.length) redraw('jobs');
      return;
    }
    const rows = list.map((j) => {
      const old = this.rows.get(j.id);
      if (old && old.dataset.shown === JSON.stringify([j.status, j.progress])) return old;
      const tr = this.row(j);
      if (old) old.replaceWith(tr);
      if (j.id === this.selected) this.detail(j);
      return tr;
    });
    const ids = new Set(list.map((j) => j.id));
    for (const id of this.rows.keys()) if (!ids.has(id)) this.rows.delete(id);
    // The rows are put in order only when a job came or went.
    const order = [...this.body.children];
    if (order.length !== rows.length || rows.some((tr, i) => order[i] !== tr)) this.body.replaceChildren(...rows);
    this.counted(list);
  },
  frames(fs, r) {
    if (fs.some((f) => f.kind === 'resync')) return redraw('jobs');
    if (fs.some((f) => f.kind === 'job')) this.refresh();
  },
};

// ---- mining: miners, triggers and the sources they read
const mining = {
  async render(el) {
    const [m, t, s] = await Promise.all([get('/api/miners'), get('/api/triggers'), get('/api/source-packages')]);
    const slot = h('div');
    const btn = (label, path, act2) => h('button', { type: 'button', class: 'plain', 'data-act': act2, onclick: () => act(slot, () => post(path), () => mining.render(el)) }, label);
    const wh = t.webhook || {};
    const miner = (x) => h('tr', { 'data-miner': x.name },
      h('td', {}, x.name), h('td', {}, `${x.source || ''} ${x.locator || ''}`, x.wing ? h('span', { class: 'muted' }, ` → wing ${x.wing}`) : null),
      h('td', { class: 'state' }, x.state || (x.enabled ? 'enabled' : 'disabled'), x.reason ? h('span', { class: 'muted' }, ' · ' + x.reason) : null),
      h('td', {}, x.schedule ? `every ${x.schedule.every}${x.schedule.at ? ' at ' + x.schedule.at + ' UTC' : ''}${x.schedule.enabled ? '' : ' (not opted in)'}` : ''),
      h('td', {}, btn('Run', '/api/miners/' + esc(x.name) + '/run', 'run'), x.enabled ? btn('Disable', '/api/miners/' + esc(x.name) + '/disable', 'disable') : btn('Enable', '/api/miners/' + esc(x.name) + '/enable', 'enable')));
    const trigger = (x) => {
      const c = x.counters || {};
      return h('tr', { 'data-trigger': x.name },
        h('td', {}, x.name), h('td', {}, x.type, h('span', { class: 'muted' }, ` of miner ${x.miner}`)),
        h('td', { class: 'state' }, x.status, x.reason ? h('span', { class: 'muted' }, ' · ' + x.reason) : null,
          (x.setup || []).length ? h('div', { class: 'muted' }, 'setup: ' + x.setup.join('; ')) : null,
          x.last_error ? h('div', { class: 'error-text' }, x.last_error) : null,
          x.endpoint ? h('div', {}, h('code', {}, x.endpoint)) : null),
        h('td', {}, x.next_due ? when(x.next_due) : ''),
        h('td', { class: 'counters' }, `fired ${c.fired || 0}, coalesced ${c.coalesced || 0}, failed ${c.failed || 0}` + (x.type === 'webhook' ? `, deliveries ${c.deliveries || 0}` : ''),
          x.last_job ? h('div', {}, h('a', { href: '#/jobs' + q({ job: x.last_job }) }, 'last job ' + x.last_job.slice(0, 8))) : null),
        h('td', {}, btn('Fire', '/api/triggers/' + esc(x.name) + '/fire', 'fire'), x.enabled ? btn('Disable', '/api/triggers/' + esc(x.name) + '/disable', 'disable') : btn('Enable', '/api/triggers/' + esc(x.name) + '/enable', 'enable')));
    };
    // A source: its name and what it reads (a package's description), its
    // origin, its state and why it cannot run, and the permissions it was
    // given, in words (none for a built-in one).
    const source = (x) => h('tr', { 'data-source': x.name },
      h('td', { class: 'name' }, h('span', { class: 'source-name' }, x.name, x.version ? h('span', { class: 'muted' }, ' ' + x.version) : null),
        x.description ? h('div', { class: 'description muted' }, x.description) : null),
      h('td', { class: 'origin' }, x.origin),
      h('td', { class: 'state' }, x.state, x.reason ? h('div', { class: 'error-text reason' }, x.reason) : null),
      h('td', { class: 'permissions' }, x.permission_words
        ? h('ul', {}, x.permission_words.map((w) => h('li', {}, w)))
        : h('span', { class: 'muted' }, 'part of loci')));
    const hook = `http://${wh.bind}:${wh.port}/hooks/<trigger name>`;
    fill(el, h('h1', {}, 'Mining'), slot,
      h('div', { class: 'card' }, h('h2', {}, 'Miners'), (m.miners || []).length
        ? h('table', { id: 'miners' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Source'), h('th', {}, 'State'), h('th', {}, 'Schedule'), h('th', {}, 'Actions'))), h('tbody', {}, m.miners.map(miner)))
        : h('p', { class: 'empty' }, said('No miners: `loci miner set` adds one, to mine a source again by hand, on a schedule or on a trigger. A one-off `loci mine /path` needs no miner and adds none.'))),
      h('div', { class: 'card' }, h('h2', {}, 'Triggers'), (t.triggers || []).length
        ? h('table', { id: 'triggers' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', {}, 'Status'), h('th', {}, 'Next due'), h('th', {}, 'Counters'), h('th', {}, 'Actions'))), h('tbody', {}, t.triggers.map(trigger)))
        : h('p', { class: 'empty' }, said('No triggers: file watches, schedules and webhooks are set with `loci trigger set`.')),
        h('p', {}, 'Webhook endpoint: ', wh.enabled
          ? [h('code', { id: 'webhook-url' }, hook), ' ', h('button', { type: 'button', class: 'plain', onclick: (e) => copy(hook, e.target) }, 'Copy')]
          : h('span', { class: 'muted' }, 'off (set webhook.enable to receive deliveries)'))),
      h('div', { class: 'card' }, h('h2', {}, 'Sources'),
        h('table', { id: 'sources' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Origin'), h('th', {}, 'State'), h('th', {}, 'Permissions'))),
          h('tbody', {}, (s.sources || []).map(source))),
        h('p', { class: 'muted' }, said('Install a source package with `loci source install FILE`: it shows the permissions it asks for and asks before installing.'))),
      m.config_file ? h('p', { class: 'muted' }, 'Miners and triggers live in ' + m.config_file + '.')
        : m.config_file_to_create ? h('p', { class: 'muted' }, 'No configuration file yet: the first miner or trigger saved (loci miner set, loci trigger set) creates ' + m.config_file_to_create + '.') : null);
  },
  frames(fs, r) {
    if (fs.some((f) => ['trigger', 'job', 'resync'].includes(f.kind))) throttle('mining', () => redraw('mining'), 500);
  },
};

// copy puts text on the clipboard and says so on the button.
async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Select and copy it';
  }
}

// ---- graph: an entity's neighbourhood drawn, its facts with validity,
// and a fact's history on request.
const graph = {
  async render(el, r) {
    const p = r.params;
    const field = h('input', { id: 'g-name', type: 'search', value: p.get('name') || '' });
    const depth = h('select', { id: 'g-depth' }, [1, 2, 3].map((d) => h('option', { value: d, selected: String(d) === (p.get('depth') || '1') }, d)));
    const expired = h('input', { id: 'g-expired', type: 'checkbox', checked: p.get('expired') === '1' });
    const out = h('div');
    fill(el, h('h1', {}, 'Graph'), h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); location.hash = '#/graph' + q({ name: field.value, depth: depth.value, expired: expired.checked ? '1' : '' }); } },
      h('div', { class: 'row' }, h('div', {}, h('label', { for: 'g-name' }, 'Entity name'), field), h('div', {}, h('label', { for: 'g-depth' }, 'Depth'), depth),
        h('div', {}, h('label', { for: 'g-expired' }, expired, ' facts no longer valid too')), h('button', { type: 'submit' }, 'Find'))), out);
    // The start: an entity picked from the list (its id), else the name
    // typed (resolved by the daemon: the exact name first, else the one
    // name containing it), else the entities with the most facts.
    const name = (p.get('name') || '').trim();
    const ref = p.get('entity') || name;
    let g;
    try {
      g = await get('/api/graph' + q({ entity: ref, depth: depth.value }));
    } catch (e) {
      if (!name || p.get('entity') || (e.code !== 'loci::input::invalid' && e.code !== 'loci::graph::entity_not_found')) throw e;
      g = null;
    }
    const es = name ? (await get('/api/entities' + q({ name, limit: 20 }))).entities || [] : g.nodes || [];
    if (!es.length) return out.replaceChildren(h('p', { class: 'empty' }, name ? 'No entity matches.' : 'No entities yet: they come from checkpoints with facts and from the extract job.'));
    const pick = g ? (g.entity ? g.entity.id : g.nodes[0].id) : null;
    const link = (e) => '#/graph' + q({ name: p.get('name'), depth: depth.value, expired: p.get('expired'), entity: e.id });
    out.replaceChildren(h('p', { class: 'muted', id: 'graph-start' }, g && !g.entity ? 'The entities with the most facts:' : name ? 'Entities whose name contains it:' : ''),
      h('ul', { class: 'entities' }, es.map((e) => h('li', {}, h('a', { href: link(e), 'aria-current': e.id === pick ? 'true' : null }, e.name), ` (${e.kind})`))));
    if (!g) return out.append(h('p', { class: 'empty' }, 'Several entities match: pick one.'));
    const rels = await get('/api/entities/' + esc(pick) + '/relationships' + q({ include_expired: p.get('expired') === '1' ? 'true' : '' }));
    const history = h('div', { id: 'fact-history' });
    const facts = rels.relationships || [];
    out.append(drawGraph(g, pick, link), h('div', { class: 'card' }, h('h2', {}, `Facts of ${rels.entity ? rels.entity.name : 'the entity'}`),
      facts.length ? h('ul', { id: 'facts' }, facts.map((f) => h('li', { 'data-fact': f.id }, factLine(f), ' ',
        h('button', { type: 'button', class: 'plain', onclick: () => showHistory(history, f.id) }, 'History'))))
        : h('p', { class: 'empty' }, 'No open facts.')), history);
  },
};

function factLine(f) {
  return [h('b', {}, f.subject.name), ` ${f.predicate.replaceAll('_', ' ')} `, h('b', {}, f.object.name),
    h('span', { class: 'muted' }, ` · valid ${when(f.valid_from)} → ${f.valid_to ? when(f.valid_to) : 'now'}` +
      (f.current ? '' : ' · not current') + (f.retracted_at ? ` · retracted ${when(f.retracted_at)}` : '') + ` · recorded ${when(f.recorded_at)}` +
      ((f.evidence || []).length > 1 ? ` · asserted ${f.evidence.length} times` : ''))];
}

async function showHistory(box, id) {
  try {
    const x = await get('/api/relationships/' + esc(id) + '/history');
    box.replaceChildren(h('div', { class: 'card' }, h('h2', {}, 'History of the fact'), h('p', {}, factLine(x.relationship)),
      (x.related || []).length ? h('ul', {}, x.related.map((r) => h('li', {}, h('span', { class: 'muted' }, r.relation + (r.reason ? ` (${r.reason})` : '') + ': '), factLine(r.relationship))))
        : h('p', { class: 'empty' }, 'No other fact supersedes, confirms or contradicts it.')));
    box.scrollIntoView({ block: 'nearest' });
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

// drawGraph places the entity in the middle and the others on rings by
// how many facts away they are (1 to 3; those no fact joins to it
// outside), each a link to its own neighbourhood.
function drawGraph(g, center, link) {
  const nodes = g.nodes || [];
  const edges = g.edges || [];
  const hops = new Map([[center, 0]]);
  for (let d = 1, grew = true; grew && d <= 3; d++) {
    grew = false;
    for (const e of edges) {
      for (const [a, b] of [[e.subject.id, e.object.id], [e.object.id, e.subject.id]]) {
        if (hops.get(a) === d - 1 && !hops.has(b)) { hops.set(b, d); grew = true; }
      }
    }
  }
  // The entities no fact joins to the centre (the overview's) go on a
  // ring of their own, outside.
  const far = Math.max(...hops.values(), 0) + 1;
  for (const n of nodes) if (!hops.has(n.id)) hops.set(n.id, far);
  const W = 800, H = 460, cx = W / 2, cy = H / 2;
  const pos = new Map([[center, [cx, cy]]]);
  for (let d = 1; d <= far; d++) {
    const ring = nodes.filter((n) => hops.get(n.id) === d);
    const rx = (W / 2 - 90) * d / Math.max(...hops.values(), 1), ry = (H / 2 - 30) * d / Math.max(...hops.values(), 1);
    ring.forEach((n, i) => {
      const a = (2 * Math.PI * i) / ring.length - Math.PI / 2 + d * 0.4;
      pos.set(n.id, [cx + rx * Math.cos(a), cy + ry * Math.sin(a)]);
    });
  }
  const shown = edges.filter((e) => pos.has(e.subject.id) && pos.has(e.object.id));
  return h('div', { class: 'card' }, h('svg', { class: 'graph', id: 'graph', viewBox: `0 0 ${W} ${H}`, width: '100%', height: H, role: 'img', 'aria-label': `${nodes.length} entities, ${shown.length} facts${g.truncated ? ' (truncated)' : ''}` },
    shown.map((e) => { const a = pos.get(e.subject.id), b = pos.get(e.object.id); return h('line', { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, h('title', {}, `${e.subject.name} ${e.predicate.replaceAll('_', ' ')} ${e.object.name}`)); }),
    // The predicates are written on the lines while they stay legible.
    shown.length <= 20 ? shown.map((e) => { const a = pos.get(e.subject.id), b = pos.get(e.object.id); return h('text', { class: 'predicate', x: (a[0] + b[0]) / 2, y: (a[1] + b[1]) / 2 - 3, 'text-anchor': 'middle' }, e.predicate.replaceAll('_', ' ')); }) : null,
    nodes.filter((node) => pos.has(node.id)).map((node) => { const [x, y] = pos.get(node.id); return h('svg:a', { href: link(node) }, h('g', { 'data-entity': node.id }, h('circle', { cx: x, cy: y, r: node.id === center ? 9 : 6, class: node.id === center ? 'center' : '' }), h('text', { x: x + 11, y: y + 4 }, node.name), h('title', {}, `${node.name} (${node.kind})`))); })),
    shown.length ? null : h('p', { class: 'empty' }, 'No open facts around this entity.'),
    g.truncated ? h('p', { class: 'muted' }, 'The neighbourhood is larger than shown (truncated at the limit).') : null);
}

// ---- events: the frames are kept raw (a ring of 500) and written out
// only while the view is shown.
const events = {
  log: [],
  kind: '',
  paused: false,
  async render(el) {
    const kind = h('select', { id: 'e-kind' }, ['', 'drawer', 'job', 'wing', 'room', 'entity', 'trigger', 'resync', 'open'].map((k) => h('option', { value: k, selected: k === this.kind }, k || 'every kind')));
    kind.addEventListener('change', () => { this.kind = kind.value; this.fill(); });
    const pause = h('button', { type: 'button', class: 'plain', id: 'e-pause', 'aria-pressed': String(this.paused), onclick: () => {
      this.paused = !this.paused;
      pause.setAttribute('aria-pressed', String(this.paused));
      pause.textContent = this.paused ? 'Go on' : 'Pause';
      if (!this.paused) this.fill();
    } }, this.paused ? 'Go on' : 'Pause');
    const clear = h('button', { type: 'button', class: 'plain', onclick: () => { this.log = []; this.fill(); } }, 'Clear');
    this.list = h('ol', { class: 'frames', reversed: true, id: 'frames' });
    fill(el, h('h1', {}, 'Events'), h('p', { class: 'muted' }, 'The live stream of /api/events frames, newest first (the last 500 kept).'),
      h('div', { class: 'row' }, h('div', {}, h('label', { for: 'e-kind' }, 'Kind'), kind), pause, clear), this.list);
    this.fill();
  },
  // fill writes the kept frames of the chosen kind out again.
  fill() {
    if (this.list) this.list.replaceChildren(...this.log.filter(([, f]) => !this.kind || f.kind === this.kind).reverse().map(line));
  },
  frames(fs, r) {
    const at = Date.now();
    for (const f of fs) this.log.push([at, f]);
    if (this.log.length > 500) this.log.splice(0, this.log.length - 500);
    if (!r || r.name !== 'events' || !this.list || this.paused) return;
    for (const x of fs.slice(-500)) if (!this.kind || x.kind === this.kind) this.list.prepend(line([at, x]));
    while (this.list.children.length > 500) this.list.lastChild.remove();
  },
};

function line([at, f]) {
  return h('li', {}, new Date(at).toLocaleTimeString() + ' ' + JSON.stringify(f));
}

export const views = { overview, palace, drawer, search, jobs, mining, graph, events, sql };
