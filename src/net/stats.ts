/**
 * Moved to ./observe/stats.ts (issue 18). This re-export keeps the old path for the files another branch is
 * changing (outbox, hosts, status, leftovers, distributed, cli/net), so that their merge does not
 * conflict; it goes once they import ./observe/stats.js themselves.
 */
export * from './observe/stats.js';
