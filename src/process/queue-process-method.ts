/**
 * Queue.process, declared on Queue by module augmentation and installed when this module loads (the
 * public entries load it), so that the queue never imports its consumer (docs/architecture.md).
 */
import { type Executor, Queue } from '../queue/queue.js';
import { type ProcessSummary, processQueue, type QueueProcessOptions } from './process.js';

declare module '../queue/queue.js' {
  interface Queue {
    /**
     * Run the queue's jobs with a command or an async function; see processQueue for the options.
     * A function executor receives each job's metadata and payload stream; its throwing or
     * rejecting is a failure, handled as options.onError says.
     */
    process(executor: Executor, options?: QueueProcessOptions): Promise<ProcessSummary>;
  }
}

Queue.prototype.process = function process(
  this: Queue,
  executor: Executor,
  given: QueueProcessOptions = {},
): Promise<ProcessSummary> {
  // allowedSigners here is the queue's own (QueueOptions), for this run.
  const { allowedSigners, ...options } = given;
  const queue = allowedSigners ? this.withAllowedSigners(allowedSigners) : this;
  return processWith(queue, executor, options);
};

function processWith(queue: Queue, executor: Executor, options: QueueProcessOptions): Promise<ProcessSummary> {
  if (typeof executor === 'function') {
    // A command's options say nothing to a function: left out, as they always were ignored.
    const { params: _params, allowJobParams: _allow, ignorePayload: _ignore, ...settings } = options;
    return processQueue(queue, { ...settings, run: executor });
  }
  if (typeof executor === 'string') return processQueue(queue, { ...options, command: executor });
  const [command, ...params] = executor;
  if (command === undefined) throw new TypeError('Queue.process: empty command');
  return processQueue(queue, { ...options, command, params: [...params, ...(options.params ?? [])] });
}
