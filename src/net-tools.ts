/**
 * `filespooler/net`: the operator's tooling for nets, beside the `Net` facade of the main entry.
 * Watching a net (`serveNet`, the Prometheus text, the JSON status, live drawings, the progress
 * rates), planning one (`simulate`, `allocateWorkers`) and the host views of a net that spans
 * hosts. `fspl net` is built on these; docs/api.md ("Operator tooling") lists them.
 */

export { describeRemoteLeftover } from './net/hosts/drain.js';
export type { NetEvent, NetModel, NetStatusReport } from './net/index.js';
// Planning: the scheduler in virtual time, and the worker allocation `net run` makes.
// Watching: the web page and /metrics, the status as JSON, the drawing and its live colouring.
// Operating: how a pause is said (status, leftovers, the web page).
export {
  allocateWorkers,
  type DotState,
  dotToSvg,
  type LastFailure,
  liveDotState,
  loadNetFile,
  lowerBound,
  netMetricFamilies,
  netMetricsText,
  netStatusJson,
  parseService,
  pauseText,
  placeTokens,
  type ServiceTime,
  type SimulateOptions,
  type SimulationReport,
  simulate,
  type TokenInfo,
  TransitionMonitor,
  type TransitionRates,
  transitionDetail,
} from './net/index.js';
// Nets that span hosts: which host an item belongs to, one host's part, tokens left on others.
export { hostOf, hostView } from './net/model/hosts.js';
export type { NetServer, ServeOptions } from './net/observe/serve.js';
export type { RemoteLeftover } from './net/run/leftovers.js';
export type { LiveState, LiveTransition } from './net/run/live.js';
export { RateWindow } from './net/run/stats.js';

/**
 * Serve a net's live page and /metrics (net/observe/serve.ts). Its module, and node:http with it,
 * is loaded on the first call: every `fspl net` command imports this entry, and `net put` must not
 * pay for a web server at each start.
 */
export async function serveNet(
  ...args: Parameters<typeof import('./net/observe/serve.js').serveNet>
): ReturnType<typeof import('./net/observe/serve.js').serveNet> {
  return (await import('./net/observe/serve.js')).serveNet(...args);
}
