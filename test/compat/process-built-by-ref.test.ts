/** queue-process scenarios on queues built by the reference, processed by both implementations. */
import { defineProcessSuite } from './process-scenarios.js';

defineProcessSuite('ref');
