// The REST client: the token from sessionStorage as a bearer header, the
// memory mode as X-Loci-Mode, errors as ApiError with the daemon's
// {error, code, help}.
const TOKEN = 'loci.token';
const MODE = 'loci.mode';

export const session = {
  token: () => sessionStorage.getItem(TOKEN) || '',
  setToken: (t) => sessionStorage.setItem(TOKEN, t),
  clear: () => sessionStorage.removeItem(TOKEN),
  mode: () => sessionStorage.getItem(MODE) || 'full',
  setMode: (m) => sessionStorage.setItem(MODE, m),
};

export class ApiError extends Error {
  constructor(status, body) {
    super(body.error || `HTTP ${status}`);
    this.status = status;
    this.code = body.code || '';
    this.help = body.help || '';
  }
}

export function headers(extra = {}) {
  const h = { Accept: 'application/json', 'X-Loci-Mode': session.mode(), ...extra };
  const t = session.token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

export async function api(method, path, body) {
  const init = { method, headers: headers(), cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch { data = { error: text }; }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const get = (p) => api('GET', p);
export const post = (p, b) => api('POST', p, b === undefined ? {} : b);
export const del = (p) => api('DELETE', p);

// q builds a query string from the non-empty values of an object.
export function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) s.set(k, String(v));
  }
  const out = s.toString();
  return out ? '?' + out : '';
}

export const esc = (s) => encodeURIComponent(s);

// status is GET /api/status, shared by callers within half a second (the
// sign-in check and the overview of the same start read it once).
let last = null;
export function status() {
  if (last && performance.now() - last.at < 500) return last.p;
  const p = get('/api/status');
  last = { at: performance.now(), p };
  p.catch(() => { last = null; });
  return p;
}

// download fetches path with the session's headers (the token, the
// mode) and saves the answer as a file: name when the caller gives one
// (a wing's export says its wing), else the name the daemon gives in
// Content-Disposition. A refusal is an ApiError as any call's.
export async function download(path, name) {
  const r = await fetch(path, { method: 'GET', headers: headers({ Accept: '*/*' }), cache: 'no-store', credentials: 'omit' });
  if (!r.ok) {
    const text = await r.text();
    let data = {};
    try { data = text ? JSON.parse(text) : {}; } catch { data = { error: text }; }
    throw new ApiError(r.status, data);
  }
  const m = /filename="?([^";]+)"?/.exec(r.headers.get('Content-Disposition') || '');
  const blob = await r.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name || (m ? m[1] : 'download');
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return blob.size;
}
