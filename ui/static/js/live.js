// The event stream: GET /api/events read with fetch streaming (an
// EventSource cannot send the bearer header), reconnecting with backoff.
// Frames reach onFrames once per animation frame, coalesced; a reconnect
// is announced as a resync frame, so views re-read what they show. The
// daemon sends a keep-alive every 15 s: a connection silent for longer
// than silenceMs (default 40 s: a sleeping laptop, a dropped network, a
// stopped daemon) is reported 'stale' and opened again.
import { headers } from './api.js';

export class Live {
  // options: silenceMs; fetch (the browser's unless given: a test's stream).
  constructor(onFrames, onState, { silenceMs = 40000, fetch = globalThis.fetch.bind(globalThis) } = {}) {
    this.onFrames = onFrames;
    this.onState = onState;
    this.silenceMs = silenceMs;
    this.fetch = fetch;
    this.queue = [];
    this.scheduled = false;
    this.stopped = false;
    this.connectedOnce = false;
  }

  // start opens the stream, or opens it again (after a change of memory
  // mode): a loop started before ends at its next turn.
  start() {
    if (this.ctrl) this.ctrl.abort();
    this.gen = (this.gen || 0) + 1;
    this.stopped = false;
    this.seen = Date.now();
    clearInterval(this.watch);
    this.watch = setInterval(() => {
      if (this.ctrl && Date.now() - this.seen > this.silenceMs) {
        this.onState('stale');
        this.ctrl.abort();
      }
    }, Math.min(5000, this.silenceMs / 2));
    this.loop(this.gen);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.watch);
    if (this.ctrl) this.ctrl.abort();
  }

  push(frame) {
    this.queue.push(frame);
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => {
        this.scheduled = false;
        const batch = this.queue;
        this.queue = [];
        this.onFrames(batch);
      });
    }
  }

  async loop(gen) {
    let backoff = 1000;
    const mine = () => !this.stopped && this.gen === gen;
    let refused = false;
    while (mine()) {
      refused = false;
      this.ctrl = new AbortController();
      this.seen = Date.now();
      try {
        const r = await this.fetch('/api/events', { headers: headers({ Accept: 'text/event-stream' }), signal: this.ctrl.signal, cache: 'no-store', credentials: 'omit' });
        // 403: the memory mode chosen (disabled) may not read the stream.
        if (!r.ok) throw Object.assign(new Error('HTTP ' + r.status), { status: r.status });
        this.onState('live');
        if (this.connectedOnce) this.push({ kind: 'resync', action: 'updated', reconnect: true });
        this.connectedOnce = true;
        backoff = 1000;
        await this.read(r.body.getReader());
      } catch (e) {
        if (!mine()) return;
        refused = e.status === 403;
      }
      if (!mine()) return;
      this.ctrl = null;
      this.onState(refused ? 'refused' : 'retry');
      await new Promise((res) => setTimeout(res, backoff));
      backoff = Math.min(backoff * 2, 15000);
    }
  }

  async read(reader) {
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      this.seen = Date.now();
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) this.onState('live', true); // keep-alive
          else if (line.startsWith('data:')) data += line.slice(5).trim();
        }
        if (data) {
          try { this.push(JSON.parse(data)); } catch { /* not a frame */ }
        }
      }
    }
  }
}
