/**
 * Moved to ./model/model.ts (issue 18). This re-export keeps the old path for the files another branch is
 * changing (outbox, hosts, status, leftovers, distributed, cli/net), so that their merge does not
 * conflict; it goes once they import ./model/model.js themselves.
 */
export * from './model/model.js';
