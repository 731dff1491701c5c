// The dashboard: a hash router over the views, the sign-in, the mode
// selector and the one live connection to /api/events.
import { get, status, session, ApiError } from './api.js';
import { Live } from './live.js';
import { h, errorBox } from './dom.js';
import { views } from './views.js';

const main = document.getElementById('view');
const conn = document.getElementById('conn');
let current = null; // { name, view }
let live = null;

function route() {
  const raw = location.hash.replace(/^#\/?/, '') || 'overview';
  const [path, query] = raw.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  return { name: parts[0], args: parts.slice(1), params: new URLSearchParams(query || '') };
}

// render draws the route's view into a fresh container that replaces the
// page's only when it is done and still wanted: a slow view finishing
// after the person moved on draws nothing. A soft render (a live update of
// the view shown) keeps the "Loading…" away, the focus where it was and
// whatever was typed into the controls.
let seq = 0;
async function render(soft = false) {
  const r = route();
  const view = views[r.name] || views.overview;
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === r.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const my = ++seq;
  current = { name: r.name, view, r };
  if (!soft) main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  const box = h('div', { class: 'view' });
  try {
    await view.render(box, r);
  } catch (e) {
    if (my !== seq) return;
    if (e instanceof ApiError && e.status === 401) return signIn('The token was refused.');
    box.replaceChildren(errorBox(e));
  }
  if (my !== seq) return;
  if (soft) {
    const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement : null;
    carry(main, box);
    main.replaceChildren(box);
    if (focused && focused.id) {
      const again = box.querySelector('#' + CSS.escape(focused.id));
      if (again) {
        again.focus({ preventScroll: true });
        try { again.setSelectionRange(focused.selectionStart, focused.selectionEnd); } catch { /* not text */ }
      }
    }
    return;
  }
  main.replaceChildren(box);
  main.focus({ preventScroll: true });
  // A mark per drawn view: the benchmarks read the time to first render.
  performance.mark('loci:view:' + r.name);
}

// carry copies what was typed or chosen in the old view's controls (by id)
// into the new one's.
function carry(from, to) {
  for (const old of from.querySelectorAll('input[id], textarea[id], select[id]')) {
    const now = to.querySelector('#' + CSS.escape(old.id));
    if (!now || now.tagName !== old.tagName) continue;
    if (old.type === 'checkbox' || old.type === 'radio') now.checked = old.checked;
    else now.value = old.value;
  }
}

window.addEventListener('loci:redraw', (e) => {
  if (current && current.name === e.detail) render(true);
});

function onFrames(frames) {
  if (!current || current.view !== views.events) views.events.frames(frames, null); // the log keeps every frame
  if (current && current.view.frames) current.view.frames(frames, current.r);
  if (frames.some((f) => f.kind === 'resync') && current && !current.view.frames) render(true);
}

function setState(s) {
  conn.textContent = { live: 'live', retry: 'reconnecting', stale: 'no sign of life', refused: 'refused in this mode' }[s] || s;
  conn.className = 'conn ' + s;
  conn.title = s === 'live' ? 'connected to /api/events; last sign of life ' + new Date().toLocaleTimeString() : '';
}

function signIn(message) {
  if (live) live.stop();
  const box = document.getElementById('login');
  const err = document.getElementById('login-error');
  box.hidden = false;
  err.hidden = !message;
  err.textContent = message || '';
  document.getElementById('login-token').focus();
}

async function start() {
  try {
    await status();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return signIn(session.token() ? 'The token was refused.' : '');
  }
  document.getElementById('login').hidden = true;
  document.getElementById('logout').hidden = !session.token();
  if (!live) live = new Live(onFrames, setState);
  window.lociLive = live; // the jobs-view benchmark pushes frames through it
  live.start();
  render();
}

document.getElementById('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = document.getElementById('login-token');
  session.setToken(input.value.trim());
  input.value = '';
  try {
    await get('/api/status');
  } catch (e) {
    session.clear();
    return signIn(e instanceof ApiError && e.status === 401 ? 'The token was refused.' : e.message);
  }
  start();
});

document.getElementById('logout').addEventListener('click', () => {
  session.clear();
  signIn('');
});

const mode = document.getElementById('mode');
mode.value = session.mode();
mode.addEventListener('change', () => {
  session.setMode(mode.value);
  if (live && !live.stopped) live.start(); // the stream is read in the new mode too (not while signed out)
  render();
});

window.addEventListener('hashchange', () => render());
start();
