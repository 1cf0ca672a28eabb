/**
 * A token's payload: read after its header, copied out, and sealed (its length and CRC-32) for
 * tokens bound for another host.
 */
import fs from 'node:fs';
import { copy } from '../../copy.js';
import { closeQuietly } from '../../io.js';
import type { Seal } from '../../packet/index.js';
import { sealRestOfFileSync } from '../../packet/sealed-copy.js';
import { openPayloadSync } from '../../job-headers.js';
import type { TokenContent } from './token.js';

/** The seal (length and CRC-32) of a token's payload, read once from its sources. */
export function sealOfPayload(p: TokenContent['payload']): Seal {
  if (!p) return { length: 0n, crc32: 0 };
  const fds: number[] = [];
  try {
    if ('tokens' in p) for (const file of p.tokens) fds.push(openPayloadSync(file));
    else if ('path' in p) fds.push(fs.openSync(p.path, 'r'));
    else throw new TypeError('a sealed token needs its payload as a file or tokens, not a descriptor');
    // Positional reads: the descriptors' own offsets stay where the copy will start.
    let seal: Seal = { length: 0n, crc32: 0 };
    for (const fd of fds) seal = sealRestOfFileSync(fd, seal);
    return seal;
  } finally {
    for (const fd of fds) closeQuietly(fd);
  }
}

/** Copy a token's payload into a file of its own (for commands that read inputs by name). */
export function extractPayload(file: string, dest: string): void {
  const out = fs.openSync(dest, 'w', 0o644);
  try {
    copyPayloads([file], out);
  } finally {
    closeQuietly(out);
  }
}

/** Copy the payloads of these token files, one after the other, to a descriptor; their lengths. */
export function copyPayloads(files: readonly string[], out: number): number[] {
  return files.map((file) => {
    const inFd = openPayloadSync(file);
    try {
      return copy(inFd, out);
    } finally {
      closeQuietly(inFd);
    }
  });
}
