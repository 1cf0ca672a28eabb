// The page of `fspl queue-process --watch --listen`. Everything that comes from the queues (their
// names, why a job failed, its output) is put on the page as text, never as HTML.

const $ = (id) => document.getElementById(id);
let current = null; // the last figures

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function duration(s) {
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A moment as "3 min ago", with the exact time on hover. */
function when(ms) {
  const t = document.createElement('time');
  const date = new Date(ms);
  t.dateTime = date.toISOString();
  t.title = date.toLocaleString();
  const s = Math.max(0, ((current ? current.at : Date.now()) - ms) / 1000);
  t.textContent =
    s < 1
      ? 'just now'
      : s < 60
        ? `${Math.floor(s)} s ago`
        : s < 3600
          ? `${Math.floor(s / 60)} min ago`
          : `${Math.floor(s / 3600)} h ago`;
  return t;
}

/** What a queue is doing, in words. */
function stateText(q) {
  const s = q.state;
  if (s.kind === 'running') return `running job ${s.seq} (${duration(q.runningSeconds)})`;
  if (s.kind === 'stopped') return `stopped${s.seq === undefined ? '' : ` on job ${s.seq}`}: ${s.why}`;
  if (s.kind === 'skipped') return `skipped: ${s.why}`;
  if (s.until !== undefined) return `waiting until ${new Date(s.until).toLocaleString()}`;
  return s.seq === undefined ? 'waiting for a job' : `waiting for job ${s.seq}`;
}

function num(v) {
  return el('td', v, 'num');
}

function queueRow(q) {
  const tr = document.createElement('tr');
  tr.className = q.state.kind;
  tr.setAttribute('data-queue', q.queue);
  tr.setAttribute('data-state', q.state.kind);
  tr.append(el('td', q.queue), el('td', stateText(q), 'state'));
  const oldest = q.waiting > 0 ? duration(q.oldestAgeSeconds) : '–';
  tr.append(num(q.waiting), num(q.next ?? '–'), el('td', oldest, 'num'));
  tr.append(
    num(q.jobs.success),
    num(q.jobs.failure + q.jobs.retry + q.jobs.moved),
    num(q.jobs.timeout),
    num(q.retriesDue),
    num(q.refused),
  );
  const last = el('td');
  if (q.lastSuccessAt !== undefined) last.append(when(q.lastSuccessAt));
  else last.textContent = '–';
  tr.append(last);
  return tr;
}

function failureList(q) {
  const div = el('div', undefined, 'failures');
  div.setAttribute('data-queue', q.queue);
  div.append(el('h3', q.queue));
  for (const f of q.failures) {
    const p = el('p');
    p.append(`job ${f.seq} (${f.outcome}) `, when(f.at), `: ${f.why}`);
    div.append(p);
    if (f.output !== undefined) div.append(el('pre', f.output, 'output'));
  }
  return div;
}

function render(page) {
  current = page;
  const body = $('queues').tBodies[0];
  body.replaceChildren(...page.queues.map(queueRow));
  const failing = page.queues.filter((q) => q.failures.length > 0);
  $('failures-title').hidden = failing.length === 0;
  $('failures').replaceChildren(...failing.map(failureList));
  const stopped = page.queues.filter((q) => q.state.kind === 'stopped').length;
  const running = page.queues.filter((q) => q.state.kind === 'running').length;
  const banner = $('banner');
  banner.className = `banner ${stopped > 0 ? 'stopped' : running > 0 ? 'running' : 'idle'}`;
  const n = page.queues.length;
  banner.textContent = `${n} queue${n === 1 ? '' : 's'}: ${running} running, ${stopped} stopped`;
}

function start() {
  const first = $('state').textContent;
  if (first?.trim().startsWith('{')) render(JSON.parse(first));
  const events = new EventSource('/api/events');
  events.onmessage = (e) => render(JSON.parse(e.data));
  events.onerror = () => {
    const banner = $('banner');
    banner.className = 'banner lost';
    banner.textContent = 'the run is not answering (stopped?); trying again…';
  };
}

start();
