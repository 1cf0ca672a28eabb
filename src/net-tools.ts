/**
 * `filespooler/net`: the operator's tooling for nets, beside the `Net` facade of the main entry.
 * Watching a net (`serveNet`, the Prometheus text, the JSON status, live drawings, the progress
 * rates), planning one (`simulate`, `allocateWorkers`) and the host views of a net that spans
 * hosts. `fspl net` is built on these; docs/api.md ("Operator tooling") lists them.
 */
export type { NetModel, NetStatusReport, NetEvent } from './net/index.js';
export { loadNetFile } from './net/index.js';
// Planning: the scheduler in virtual time, and the worker allocation `net run` makes.
export { allocateWorkers, simulate, parseService, lowerBound, type SimulateOptions, type SimulationReport, type ServiceTime } from './net/index.js';
// Watching: the web page and /metrics, the status as JSON, the drawing and its live colouring.
export { serveNet, type ServeOptions, type NetServer } from './net/index.js';
export { netMetricFamilies, netMetricsText, netStatusJson, TransitionMonitor, type TransitionRates, type LastFailure } from './net/index.js';
export { placeTokens, transitionDetail, type TokenInfo } from './net/index.js';
export { dotToSvg, liveDotState, type DotState } from './net/index.js';
export { RateWindow } from './net/run/stats.js';
export type { LiveState, LiveTransition } from './net/run/live.js';
// Nets that span hosts: which host an item belongs to, one host's part, tokens left on others.
export { hostOf, hostView } from './net/model/hosts.js';
export { describeRemoteLeftover } from './net/hosts/drain.js';
export type { RemoteLeftover } from './net/run/leftovers.js';
// Operating: how a pause is said (status, leftovers, the web page).
export { pauseText } from './net/index.js';
