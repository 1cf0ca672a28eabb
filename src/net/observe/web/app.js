// The `fspl net serve` page. Everything that comes from the net (names, keys, params, stderr) is
// put on the page with textContent or as text nodes, never as HTML.

const $ = (id) => document.getElementById(id);
let current = null; // the last status report
let selected = null; // { kind: 'place' | 'transition', name }

function age(ms) {
  if (ms === undefined || ms === null) return '–';
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** How long ago `ms` (since the epoch) was, as of the report's time: "3 min ago". */
function ago(ms) {
  const s = Math.max(0, ((current ? current.at : Date.now()) - ms) / 1000);
  if (s < 1) return 'just now';
  if (s < 60) return `${Math.floor(s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86400);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}

/** A moment as "3 min ago", with the exact time on hover. */
function when(ms, before = '') {
  const t = document.createElement('time');
  const date = new Date(ms);
  t.dateTime = date.toISOString();
  t.title = date.toLocaleString();
  t.textContent = `${before}${ago(ms)}`;
  return t;
}

/** A table cell holding text and moments (`when` elements). */
function cell(...parts) {
  const td = document.createElement('td');
  for (const p of parts) td.append(p);
  return td;
}

/** "paused 3 min ago by USER: reason", the moment with its exact time on hover. */
function pausedSince(p) {
  return [when(p.since, 'paused '), ` by ${p.by}${p.reason ? `: ${p.reason}` : ''}`];
}

function rate(x) {
  return x >= 10 ? x.toFixed(0) : x.toFixed(1);
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, alarm) {
  const tr = document.createElement('tr');
  if (alarm) tr.className = 'alarm';
  for (const c of cells) tr.appendChild(typeof c === 'object' && c !== null ? c : el('td', c));
  return tr;
}

function num(v) {
  return el('td', v, 'num');
}

/** The last `n` <text> lines of a node: the placeholders the server drew. */
function lines(g, n) {
  const texts = g.querySelectorAll('text');
  return Array.from(texts).slice(Math.max(0, texts.length - n));
}

function nodeOf(kind, name) {
  return document.getElementById(`${kind}-${name}`);
}

/** The drawing, served inline with the page (or fetched, from a page served without it). */
async function loadDrawing() {
  const box = $('drawing');
  let svg = box.querySelector('svg');
  if (!svg) {
    const res = await fetch('/net.svg');
    const doc = new DOMParser().parseFromString(await res.text(), 'image/svg+xml');
    svg = document.importNode(doc.documentElement, true);
    box.textContent = '';
    box.appendChild(svg);
  }
  for (const g of svg.querySelectorAll('g.node')) {
    const m = /^(place|transition)-(.*)$/.exec(g.id);
    if (!m) continue;
    g.dataset.kind = m[1];
    g.dataset.name = m[2];
    for (const t of lines(g, 2)) t.textContent = '';
    g.addEventListener('click', () => select(m[1], m[2]));
  }
  box.classList.add('ready');
  if (current) update(current);
}

/** The banner: red for stuck only; what waits, and what is paused, said beside. */
function banner(r) {
  const b = $('banner');
  b.className = `banner ${r.state}`;
  const paused = r.transitions.filter((t) => t.paused).length;
  const parts = [r.state, r.live ? `net run pid ${r.pid}` : 'no net run going'];
  if (r.stuck.length) parts.push(`${r.stuck.length} token${r.stuck.length === 1 ? '' : 's'} can't fire`);
  if (r.waiting.length) parts.push(`${r.waiting.length} token${r.waiting.length === 1 ? '' : 's'} waiting`);
  if (paused) parts.push(`${paused} transition${paused === 1 ? '' : 's'} paused`);
  b.textContent = parts.join(' — ');
  for (const n of r.notes || []) b.appendChild(el('div', n.text, 'note'));
  // A place whose disk is full or failing: what needs it waits and tries again (the run goes on).
  for (const f of r.ioFaults || []) {
    const where = f.place === '(state)' ? 'the state directory' : `place ${f.place}`;
    const d = el(
      'div',
      `disk: ${where}: ${f.message} (${f.code}), ${f.count} time${f.count === 1 ? '' : 's'}, `,
      'note io-fault',
    );
    d.append(when(f.since, 'since '), '; what needs it waits and tries again');
    b.appendChild(d);
  }
}

/** A token that can't fire, as a list item; a pause's time as "3 min ago". */
function leftoverItem(r, l) {
  const li = el('li', `${l.place} #${l.seq} key ${l.key}: `);
  const t = l.code === 'paused' && r.transitions.find((x) => x.name === l.transition);
  if (t?.paused) li.append(`held by ${t.name}, `, ...pausedSince(t.paused));
  else li.append(l.reason);
  return li;
}

function leftoverList(r, list, id) {
  const ul = $(id);
  ul.textContent = '';
  $(`${id}-title`).hidden = list.length === 0;
  for (const l of list.slice(0, 100)) ul.appendChild(leftoverItem(r, l));
  if (list.length > 100) ul.appendChild(el('li', `... and ${list.length - 100} more`));
}

function update(r) {
  current = r;
  $('net-name').textContent = r.net;
  banner(r);

  const places = $('places').tBodies[0];
  places.textContent = '';
  for (const p of r.places) {
    // note: what crosses hosts (an outbox and how its deliveries go, or who feeds the place).
    // and, in a place that requires signatures, the tokens refused and set aside.
    const refused = p.refused ? `${p.refused} refused (signature), set aside` : '';
    const note = [p.problem || p.note, refused].filter((x) => x).join('; ');
    const sender = p.outbox?.sender;
    const outboxAlarm = !!sender && (!!sender.stopped || (!!sender.failing && r.live));
    places.appendChild(
      row(
        [p.name, p.role, num(p.tokens), num(age(p.oldestAgeMs)), num(p.capacity ?? '–'), num(p.stuck), note],
        p.stuck > 0 || !!p.problem || outboxAlarm || !!p.refused,
      ),
    );
    const g = nodeOf('place', p.name);
    if (!g) continue;
    const [a, b] = lines(g, 2);
    a.textContent = `${p.tokens}${p.capacity !== undefined ? `/${p.capacity}` : ''} token${p.tokens === 1 ? '' : 's'}`;
    b.textContent = p.problem ? 'missing' : p.tokens ? `oldest ${age(p.oldestAgeMs)}` : '';
    g.classList.toggle('has-tokens', p.tokens > 0);
    g.classList.toggle('stuck', p.stuck > 0 || outboxAlarm);
    g.classList.toggle('missing', !!p.problem);
    g.dataset.tokens = String(p.tokens);
  }

  const transitions = $('transitions').tBodies[0];
  transitions.textContent = '';
  for (const t of r.transitions) {
    const note = t.stopped
      ? cell(`STOPPED: ${t.stopped.reason}`)
      : t.paused
        ? cell(...pausedSince(t.paused))
        : cell(t.lastFailure && t.failing ? `last failure: ${t.lastFailure.reason}` : '');
    const service =
      t.meanServiceMs === undefined
        ? '–'
        : `${(t.meanServiceMs / 1000).toFixed(2)}s / ${(t.p95ServiceMs / 1000).toFixed(2)}s`;
    const fired = t.lastFiredAt === undefined ? num('–') : cell(when(t.lastFiredAt));
    fired.className = 'num';
    transitions.appendChild(
      row(
        [
          t.name,
          num(t.running),
          num(t.fired),
          num(t.failed),
          num(t.retried),
          num(`${rate(t.perMinute1)} / ${rate(t.perMinute15)}`),
          num(service),
          fired,
          note,
        ],
        t.failing,
      ),
    );
    const g = nodeOf('transition', t.name);
    if (!g) continue;
    const [a, b] = lines(g, 2);
    a.textContent = `${t.paused ? 'paused' : `run ${t.running}`}  ok ${t.fired}`;
    b.textContent = `failed ${t.failed}  ${rate(t.perMinute1)}/min`;
    g.classList.toggle('running', t.running > 0);
    g.classList.toggle('failing', !!t.failing);
    g.classList.toggle('paused', !!t.paused);
    // The node's tooltip: its name, and why it is paused or stopped.
    const title = g.querySelector('title');
    if (title)
      title.textContent = t.paused
        ? `${t.name}: ${t.paused.text}`
        : t.stopped
          ? `${t.name}: STOPPED: ${t.stopped.reason}`
          : t.name;
    g.dataset.fired = String(t.fired);
    g.dataset.failed = String(t.failed);
  }

  leftoverList(r, r.stuck, 'stuck');
  leftoverList(r, r.waiting, 'waiting');
  if (selected) void showDetail();
}

function select(kind, name) {
  for (const g of document.querySelectorAll('g.node.selected')) g.classList.remove('selected');
  selected = { kind, name };
  nodeOf(kind, name)?.classList.add('selected');
  $('detail').hidden = false;
  $('detail-title').textContent = `${kind} ${name}`;
  void showDetail();
}

let detailBusy = false;
async function showDetail() {
  if (!selected || detailBusy) return;
  detailBusy = true;
  const { kind, name } = selected;
  try {
    const res = await fetch(`/api/${kind}/${encodeURIComponent(name)}`);
    if (!res.ok) throw new Error(`${res.status}`);
    const d = await res.json();
    if (!selected || selected.kind !== kind || selected.name !== name) return;
    const body = document.createElement('div');
    if (kind === 'place') renderPlace(body, d);
    else renderTransition(body, d);
    $('detail-body').replaceChildren(body);
  } catch (err) {
    $('detail-body').replaceChildren(el('p', `cannot read the ${kind}: ${err.message}`));
  } finally {
    detailBusy = false;
  }
}

function renderPlace(body, d) {
  body.appendChild(
    el(
      'p',
      d.problem
        ? d.problem
        : `${d.total} token${d.total === 1 ? '' : 's'}` +
            `${d.total > d.tokens.length ? ` (the first ${d.tokens.length} listed)` : ''}`,
    ),
  );
  if (!d.tokens.length) return;
  const t = el('table');
  t.id = 'tokens';
  t.appendChild(row(['seq', 'key', 'age', 'params', 'retried', 'failed in'].map((h) => el('th', h))));
  for (const tok of d.tokens) {
    const failed = tok.error ? `${tok.error.transition}: ${tok.error.reason}` : '';
    t.appendChild(
      row([
        num(tok.seq),
        tok.nop ? '(NOP)' : tok.key,
        num(age(tok.ageMs)),
        el('td', tok.params.map((p) => JSON.stringify(p)).join(' '), 'params'),
        num(tok.retried || ''),
        failed,
      ]),
    );
  }
  body.appendChild(t);
}

function renderTransition(body, d) {
  if (d.stopped) body.appendChild(el('p', `STOPPED: ${d.stopped.reason} (log ${d.stopped.log})`, 'alarm'));
  if (d.lastFailure) {
    body.appendChild(el('h3', 'Last failure'));
    const p = el('p');
    p.append(when(d.lastFailure.at), `, key ${d.lastFailure.key}: ${d.lastFailure.reason}`);
    body.appendChild(p);
    if (d.lastFailure.log) body.appendChild(el('p', `log: ${d.lastFailure.log}`));
    const pre = el('pre', d.stderrTail || '(no stderr)');
    pre.id = 'stderr';
    body.appendChild(pre);
  }
  body.appendChild(el('h3', 'Recent firings'));
  if (!d.history.length) {
    body.appendChild(el('p', 'none yet'));
    return;
  }
  const t = el('table');
  t.id = 'firings';
  t.appendChild(row(['when', 'key', 'took', 'result'].map((h) => el('th', h))));
  for (const h of d.history.slice().reverse())
    t.appendChild(
      row(
        [cell(when(h.at)), h.key, num(`${(h.ms / 1000).toFixed(2)}s`), h.ok ? 'ok' : `failed: ${h.reason ?? ''}`],
        !h.ok,
      ),
    );
  body.appendChild(t);
}

function connect() {
  const es = new EventSource('/api/events');
  es.onmessage = (e) => update(JSON.parse(e.data));
  es.onerror = () => {
    const banner = $('banner');
    banner.className = 'banner lost';
    banner.textContent = 'connection to fspl net serve lost; retrying…';
    // A refusal (503: too many streams open) closes an EventSource for good: try again later.
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 10_000);
  };
}

document.addEventListener('DOMContentLoaded', () => {
  $('detail-close').addEventListener('click', () => {
    selected = null;
    $('detail').hidden = true;
    for (const g of document.querySelectorAll('g.node.selected')) g.classList.remove('selected');
  });
  // The drawing first (inline, so at once), then the figures the page was served with: both
  // are shown before the event stream answers.
  loadDrawing().catch((err) => ($('drawing').textContent = `cannot draw the net: ${err.message}`));
  const served = $('state');
  if (served?.textContent.trim().startsWith('{')) update(JSON.parse(served.textContent));
  connect();
});
