// The SQL view: read-only SQL over the live palace through the database
// admin listener (GET|POST|DELETE /api/db for its state, JSON-RPC over a
// WebSocket at its /rpc for the queries). The page connects from its own
// origin (this machine's, which the listener admits), signs in as the
// listener's user with the session's token (the word "loci" when the
// daemon asks for none) and keeps one connection while the view is shown.
import { get, post, del, session } from './api.js';
import { h, fill, when, redraw, said } from './dom.js';

const QUERY = 'loci.sql'; // the query box's text, kept in this tab
const CLIP = 160; // characters of a cell shown before "more"
const SHOWN = 500; // rows drawn before "Show all"
const NUMERIC = /^(tiny|small|medium|big)?int|^(double|float|decimal|numeric|real)/i;

// RpcError is a JSON-RPC error answer: message, the daemon's code and help.
class RpcError extends Error {
  constructor(e) {
    const d = (e && e.data) || {};
    super(d.error || (e && e.message) || 'the listener refused the request');
    this.code = d.code || '';
    this.help = d.help || '';
    this.rpc = e && e.code;
  }
}

// Rpc is one WebSocket connection speaking the listener's JSON-RPC.
class Rpc {
  constructor(url, onClose) {
    this.url = url;
    this.onClose = onClose;
    this.next = 1;
    this.pending = new Map();
    this.closing = false;
  }

  // open resolves once the socket is open; rejects when it closes first.
  open() {
    return new Promise((resolve, reject) => {
      let ws;
      try {
        ws = new WebSocket(this.url, 'json');
      } catch (e) {
        reject(e);
        return;
      }
      this.ws = ws;
      let opened = false;
      ws.onopen = () => { opened = true; resolve(); };
      ws.onmessage = (ev) => {
        let m;
        try { m = JSON.parse(ev.data); } catch { return; }
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        if (m.error) p.reject(new RpcError(m.error));
        else p.resolve(m.result);
      };
      ws.onclose = (ev) => {
        for (const p of this.pending.values()) p.reject(new Error(ev.reason || 'the connection closed'));
        this.pending.clear();
        if (!opened) reject(new Error(ev.reason || 'could not connect'));
        else if (!this.closing) this.onClose(ev);
      };
    });
  }

  call(method, params = []) {
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new Error('not connected'));
        return;
      }
      const id = this.next++;
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close() {
    this.closing = true;
    if (this.ws) this.ws.close(1000, 'the page left the SQL view');
  }
}

// The view's state across draws: the connection, the tables read through
// it, the last results, the reconnect timer.
const st = { rpc: null, url: '', signedIn: false, tables: null, results: null, timer: 0, tries: 0, ui: null, limits: {} };

function drop() {
  clearTimeout(st.timer);
  st.timer = 0;
  if (st.rpc) st.rpc.close();
  st.rpc = null;
  st.signedIn = false;
  st.tables = null;
}

// showing says whether the SQL view is the one asked for.
const showing = () => /^#\/?sql(\/|\?|$)/.test(location.hash);

// Leaving the view ends its connection (the listener counts it).
window.addEventListener('hashchange', () => {
  if (!showing()) drop();
});

// sqlError shows an error with its message, its code and its help.
function sqlError(e, id) {
  return h('div', { class: 'error', role: 'alert', id },
    h('span', { class: 'sql-message' }, e.message || String(e)),
    e.help ? h('span', { class: 'help' }, said(e.help)) : null,
    e.code ? h('span', { class: 'sql-code-line' }, h('code', { class: 'sql-code' }, e.code)) : null);
}

// socketURL is the listener's URL, reached on the page's host when the
// listener says it listens on every address.
function socketURL(state) {
  const u = new URL(state.url);
  if (['0.0.0.0', '[::]', '::'].includes(u.hostname)) u.hostname = location.hostname;
  return u.toString();
}

export const sql = {
  async render(el) {
    let state;
    try {
      state = await get('/api/db');
    } catch (e) {
      if (e.code !== 'loci::db::unavailable') throw e;
      // A shared store: the database is PostgreSQL's, reached with its tools.
      drop();
      fill(el, h('h1', {}, 'SQL'), sqlError(e, 'sql-unavailable'));
      return;
    }
    if (!state.open) return closed(el, state);
    return opened(el, state);
  },
  // Live frames change nothing here; a reconnect of the event stream must
  // not draw the view again (it would drop the results shown).
  frames() {},
};

// closed offers to open the listener, and says how from a shell.
function closed(el, state, why) {
  drop();
  const slot = h('div', { id: 'sql-open-error' });
  const where = state.port === 0 ? [h('code', {}, state.bind), ' (on a port the system chooses)'] : h('code', {}, `${state.bind}:${state.port}`);
  fill(el, h('h1', {}, 'SQL'),
    h('div', { class: 'card', id: 'sql-closed' },
      h('h2', {}, 'The SQL listener is closed'),
      why ? h('p', { class: 'warning', role: 'status' }, why) : null,
      h('p', {}, 'Once open, it answers read-only SQL over the live palace (wings, rooms, drawers, the graph, jobs…) on ',
        where, ', as JSON-RPC over a WebSocket at ', h('code', {}, '/rpc'),
        '. It opens only on request and changes nothing: memory is changed through REST, MCP or the CLI.'),
      h('p', {}, h('button', { type: 'button', id: 'sql-open', onclick: async (ev) => {
        ev.target.disabled = true;
        slot.replaceChildren();
        try {
          await post('/api/db', {});
          redraw('sql');
        } catch (e) {
          slot.replaceChildren(sqlError(e));
          ev.target.disabled = false;
        }
      } }, 'Open the SQL listener')),
      slot,
      h('p', { class: 'muted' }, said('From a shell: `loci db serve` (`loci db status` shows it, `loci db stop` closes it).'))));
}

// opened draws the console and connects to the listener.
function opened(el, state) {
  const url = socketURL(state);
  const box = h('textarea', { id: 'sql-query', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'sql-hint',
    placeholder: 'SELECT name FROM wings;' }, sessionStorage.getItem(QUERY) || '');
  box.addEventListener('input', () => sessionStorage.setItem(QUERY, box.value));
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  const runBtn = h('button', { type: 'submit', id: 'sql-run' }, 'Run');
  const conn = h('p', { class: 'muted', id: 'sql-conn', role: 'status', 'aria-live': 'polite' }, 'Connecting…');
  const trouble = h('div', { id: 'sql-trouble' });
  const tables = h('div', { id: 'sql-tables' }, h('p', { class: 'muted' }, 'Reading the tables…'));
  const out = h('div', { id: 'sql-results' });
  const closeSlot = h('div');
  const ui = { el, conn, trouble, tables, out, runBtn, box, state };
  st.ui = ui;
  const l = state.limits || {};
  st.limits = l;
  const n = (x) => Number(x || 0).toLocaleString();

  async function run() {
    const text = box.value.slice(box.selectionStart, box.selectionEnd).trim() || box.value.trim();
    if (!text) return;
    if (!st.signedIn) {
      out.replaceChildren(sqlError({ message: 'Not connected to the SQL listener yet: the query was not run.', help: 'wait for "signed in" above, or reload the page' }));
      return;
    }
    runBtn.disabled = true;
    out.replaceChildren(h('p', { class: 'muted' }, 'Running…'));
    const started = performance.now();
    try {
      const rs = await st.rpc.call('query', [text]);
      st.results = rs;
      showResults(out, rs, performance.now() - started);
    } catch (e) {
      st.results = null;
      out.replaceChildren(sqlError(e, 'sql-query-error'));
    } finally {
      runBtn.disabled = false;
    }
  }

  fill(el, h('h1', {}, 'SQL'),
    h('div', { class: 'card sql-head' },
      h('div', { class: 'sql-where' }, conn, trouble,
        h('p', { class: 'muted' }, 'Read-only SQL (MySQL dialect) over the live palace. A query reads at most ', n(l.max_scan_rows),
          ' rows, answers at most ', n(l.max_result_rows), ' rows',
          l.max_result_bytes ? [' (and ', mib(l.max_result_bytes), ')'] : '', ' per statement and stops after ', n(l.query_timeout_secs), ' s. ',
          'Other clients connect to ', h('code', {}, state.url), ' as ', h('code', {}, state.user || 'loci'),
          state.auth ? ' with the daemon\'s token as the password.' : ' with the password loci.')),
      h('div', { class: 'sql-close' }, h('button', { type: 'button', class: 'plain', id: 'sql-close', onclick: async () => {
        closeSlot.replaceChildren();
        try {
          const s = await del('/api/db');
          closed(el, s);
        } catch (e) {
          closeSlot.replaceChildren(sqlError(e));
        }
      } }, 'Close the listener'), closeSlot,
      state.opened_at ? h('p', { class: 'muted' }, 'Open since ', when(state.opened_at)) : null)),
    h('div', { class: 'sql' },
      h('aside', { class: 'card sql-side', 'aria-labelledby': 'sql-tables-title' }, h('h2', { id: 'sql-tables-title' }, 'Tables'), tables),
      h('div', { class: 'sql-main' },
        h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); run(); } },
          h('label', { for: 'sql-query' }, 'Query'), box,
          h('div', { class: 'sql-actions' }, runBtn,
            h('span', { class: 'muted', id: 'sql-hint' }, 'Ctrl+Enter (⌘+Enter) runs it; with text selected, only the selection. Several statements separated by ; each answer.'))),
        out)));
  if (st.results) showResults(out, st.results);
  if (st.tables) showTables(st.tables);
  connect(url);
}

// connect opens (or keeps) the connection to url and signs in.
async function connect(url) {
  const ui = st.ui;
  if (st.rpc && st.url === url && st.signedIn) {
    status(`Signed in as ${ui.state.user || 'loci'} on ${url}.`, 'ok');
    if (!st.tables) loadTables();
    return;
  }
  drop();
  st.url = url;
  const rpc = new Rpc(url, (ev) => lost(rpc, ev));
  st.rpc = rpc;
  status(`Connecting to ${url}…`);
  try {
    await rpc.open();
  } catch (e) {
    if (st.rpc !== rpc) return;
    st.rpc = null;
    return retry(url, e.message, true);
  }
  if (st.rpc !== rpc) return;
  try {
    // The listener's user; the password is the session's token, or the
    // word "loci" when the daemon asks for no token.
    await rpc.call('signin', [{ user: ui.state.user || 'loci', pass: ui.state.auth ? session.token() : 'loci' }]);
  } catch (e) {
    if (st.rpc !== rpc) return;
    drop();
    status('Not signed in.', 'bad');
    st.ui.tables.replaceChildren(h('p', { class: 'muted' }, 'Not connected.'));
    st.ui.trouble.replaceChildren(sqlError({ message: 'The SQL listener refused the sign-in: ' + e.message, code: e.code,
      help: e.help || 'sign out of the dashboard and in again with the daemon\'s current token' }, 'sql-signin-error'),
    h('p', {}, h('button', { type: 'button', class: 'plain', id: 'sql-retry', onclick: () => connect(url) }, 'Try again')));
    return;
  }
  if (st.rpc !== rpc) return;
  st.signedIn = true;
  st.tries = 0;
  st.ui.trouble.replaceChildren();
  status(`Signed in as ${ui.state.user || 'loci'} on ${url}.`, 'ok');
  loadTables();
}

// lost follows a connection that closed under the page: the listener was
// closed (the closed state is drawn), or it is reached again.
function lost(rpc, ev) {
  if (st.rpc !== rpc) return;
  st.rpc = null;
  st.signedIn = false;
  retry(st.url, ev.reason || 'the connection closed', false, ev.code);
}

// retry reads the listener's state: closed, the view says so; open, it
// connects again after a pause growing to 15 s, unless the listener closed
// the connection by policy (1008: sign-ins refused too often).
async function retry(url, why, first, code) {
  const ui = st.ui;
  if (!ui || !showing()) return;
  let state;
  try {
    state = await get('/api/db');
  } catch (e) {
    state = null;
  }
  if (st.ui !== ui || !showing()) return;
  if (state && !state.open) {
    closed(ui.el, state, 'The listener was closed (its connections with it).');
    return;
  }
  ui.tables.replaceChildren(h('p', { class: 'muted' }, 'Not connected.'));
  if (code === 1008) {
    status('Disconnected.', 'bad');
    ui.trouble.replaceChildren(sqlError({ message: 'The SQL listener closed the connection: ' + why, help: 'reload the page to connect again' }, 'sql-signin-error'));
    return;
  }
  st.tries++;
  const wait = Math.min(15, 2 ** (st.tries - 1));
  status(`Disconnected from ${url}: ${why}. Connecting again in ${wait} s…`, 'bad');
  if (first && st.tries === 1) {
    ui.trouble.replaceChildren(sqlError({ message: `Could not connect to ${url}.`,
      help: `the listener admits pages served from this machine; a page from elsewhere (this one is ${location.origin}) needs its origin in db.allowed_origins` }, 'sql-connect-error'));
  }
  clearTimeout(st.timer);
  st.timer = setTimeout(() => {
    if (st.ui === ui && showing()) connect(state ? socketURL(state) : url);
  }, wait * 1000);
}

function status(text, kind) {
  const c = st.ui && st.ui.conn;
  if (!c) return;
  c.textContent = text;
  c.className = kind === 'ok' ? 'ok' : kind === 'bad' ? 'error-text' : 'muted';
}

// loadTables lists the tables and their columns, with what each holds
// (the engine's comments), from information_schema through the same
// connection: two statements, one query.
const CATALOG = 'SELECT table_name, table_comment FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name; ' +
  'SELECT table_name, column_name, column_type, column_comment FROM information_schema.columns WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position';

async function loadTables() {
  const rpc = st.rpc;
  try {
    const [ts, cs] = await rpc.call('query', [CATALOG]);
    for (const r of [ts, cs]) {
      if (!r || r.status !== 'OK') throw Object.assign(new Error((r && r.result) || 'the tables could not be listed'), { code: r && r.code, help: r && r.help });
    }
    const by = new Map(ts.rows.map(([name, doc]) => [String(name), { name: String(name), doc: doc || '', cols: [] }]));
    for (const [t, name, type, doc] of cs.rows) {
      const x = by.get(String(t));
      if (x) x.cols.push({ name: String(name), type: String(type), doc: doc || '' });
    }
    if (st.rpc !== rpc) return;
    st.tables = [...by.values()];
    showTables(st.tables);
  } catch (e) {
    if (st.rpc !== rpc || !st.ui) return;
    st.ui.tables.replaceChildren(sqlError(e));
  }
}

function showTables(tables) {
  const ui = st.ui;
  if (!tables.length) return ui.tables.replaceChildren(h('p', { class: 'empty' }, 'No tables.'));
  ui.tables.replaceChildren(h('p', { class: 'muted sql-side-hint' }, 'Click a table to query its first rows; hover over a table or a column for what it holds.'),
    h('ul', { class: 'sql-tables' }, tables.map((t) => {
      const cols = h('ul', { class: 'sql-cols', hidden: true, id: 'sql-cols-' + t.name }, t.cols.map((c) => h('li', { title: c.doc || null },
        h('span', {}, c.name), ' ', h('span', { class: 'muted' }, c.type.toLowerCase()))));
      return h('li', { 'data-table': t.name },
        h('div', { class: 'sql-table-row' },
          h('button', { type: 'button', class: 'plain sql-table', title: (t.doc ? t.doc + '\n' : '') + `A click puts SELECT * FROM ${t.name} LIMIT 50 in the box.`, onclick: () => {
            insert(ui.box, `SELECT * FROM ${t.name} LIMIT 50`);
          } }, t.name),
          t.cols.length ? h('button', { type: 'button', class: 'plain sql-toggle', 'aria-expanded': 'false', 'aria-controls': cols.id,
            title: `the columns of ${t.name}`, onclick: (e) => {
              const b = e.currentTarget;
              const open = b.getAttribute('aria-expanded') !== 'true';
              b.setAttribute('aria-expanded', String(open));
              cols.hidden = !open;
            } }, `${t.cols.length} ${t.cols.length === 1 ? 'column' : 'columns'}`) : null),
        cols);
    })));
}

// insert puts text in the query box in place of what is there, as one
// step the browser's undo takes back.
function insert(box, text) {
  box.focus();
  box.select();
  let done = false;
  try { done = document.execCommand('insertText', false, text); } catch { done = false; }
  if (!done || box.value !== text) box.value = text;
  sessionStorage.setItem(QUERY, box.value);
}

// showResults draws one block per statement run.
function showResults(out, rs, ms) {
  if (!Array.isArray(rs) || !rs.length) {
    out.replaceChildren(h('p', { class: 'empty' }, 'Nothing was run.'));
    return;
  }
  const failed = rs.findIndex((r) => r.status !== 'OK');
  fill(out, rs.map((r, i) => result(r, i, rs.length)),
    failed >= 0 ? h('p', { class: 'muted' }, 'A failed statement stops the query: any statements after it were not run.') : null,
    ms !== undefined ? h('p', { class: 'muted sql-total' }, `${rs.length} ${rs.length === 1 ? 'statement' : 'statements'}, answered in ${Math.round(ms)} ms.`) : null);
}

function result(r, i, count) {
  const title = count > 1 ? `Statement ${i + 1}` : 'Result';
  if (r.status !== 'OK') {
    return h('section', { class: 'card sql-result', 'data-status': 'ERR' },
      h('h2', {}, title, ' ', h('span', { class: 'muted sql-meta' }, `failed after ${r.time}`)),
      sqlError({ message: r.result, code: r.code, help: r.help }));
  }
  const rows = r.rows || [];
  const cols = r.columns || [];
  const body = h('tbody');
  const draw = (limit) => body.replaceChildren(...rows.slice(0, limit).map((row) => h('tr', {}, row.map((v) => cell(v)))));
  draw(SHOWN);
  const more = rows.length > SHOWN ? h('p', {}, h('button', { type: 'button', class: 'plain', onclick: (e) => { draw(rows.length); e.target.parentNode.remove(); } },
    `Show all ${rows.length.toLocaleString()} rows (the first ${SHOWN} are drawn)`)) : null;
  return h('section', { class: 'card sql-result', 'data-status': 'OK' },
    h('h2', {}, title, ' ', h('span', { class: 'muted sql-meta' },
      `${rows.length.toLocaleString()} ${rows.length === 1 ? 'row' : 'rows'} · read ${Number(r.rows_read || 0).toLocaleString()} · ${r.time}`)),
    r.truncated ? h('p', { class: 'warning sql-truncated', role: 'status' },
      r.truncated_by === 'bytes'
        ? `Truncated: only the first ${rows.length.toLocaleString()} rows are answered, at the answer's size limit${st.limits.max_result_bytes ? ` (${mib(st.limits.max_result_bytes)})` : ''}. Select fewer or shorter columns, or add a LIMIT.`
        : `Truncated: only the first ${rows.length.toLocaleString()} rows are answered (db.max_result_rows). Narrow the query or add a LIMIT.`) : null,
    cols.length ? h('div', { class: 'sql-scroll' }, h('table', { class: 'sql-rows' },
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { title: `${c.name}: ${c.type}`, scope: 'col', class: NUMERIC.test(c.type) ? 'sql-num' : null }, c.name, h('span', { class: 'sql-type' }, c.type))))),
      body)) : h('p', { class: 'muted' }, 'No columns.'),
    cols.length && !rows.length ? h('p', { class: 'empty' }, 'No rows.') : null, more);
}

// mib writes a byte count in MiB, as the settings speak of sizes.
function mib(bytes) {
  return `${(Number(bytes) / (1 << 20)).toLocaleString(undefined, { maximumFractionDigits: 1 })} MiB`;
}

// cell writes one value as text: NULL marked as such, JSON values as
// JSON, long text clipped with a button that shows the rest.
function cell(v) {
  if (v === null || v === undefined) return h('td', { class: 'sql-null' }, h('span', {}, 'NULL'));
  const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
  const num = typeof v === 'number';
  // Short values stay on one line (ids, names, times); text wraps.
  if (text.length <= CLIP) return h('td', { class: num ? 'sql-num' : text.length > 40 || text.includes('\n') ? 'sql-text' : null }, text);
  const shown = h('span', {}, text.slice(0, CLIP) + '…');
  const td = h('td', { class: 'sql-text sql-long' }, shown, ' ',
    h('button', { type: 'button', class: 'plain sql-more', 'aria-expanded': 'false', title: `${text.length.toLocaleString()} characters`, onclick: (e) => {
      const open = e.target.getAttribute('aria-expanded') === 'true';
      shown.textContent = open ? text.slice(0, CLIP) + '…' : text;
      e.target.setAttribute('aria-expanded', String(!open));
      e.target.textContent = open ? 'more' : 'less';
    } }, 'more'));
  return td;
}
