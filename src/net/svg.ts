/**
 * Moved to ./observe/svg.ts (issue 18). This re-export keeps the old path for the files another branch is
 * changing (outbox, hosts, status, leftovers, distributed, cli/net), so that their merge does not
 * conflict; it goes once they import ./observe/svg.js themselves.
 */
export * from './observe/svg.js';
