/** queue-process scenarios on queues built by us, processed by both implementations. */
import { defineProcessSuite } from './process-scenarios.js';

defineProcessSuite('ours');
