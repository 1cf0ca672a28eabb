/**
 * The seal checked as a stream passes (seal.ts has the seal and its SealVerifier). A module of its
 * own so that reading and copying packets, which do not need streams, do not load node:stream.
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { Seal } from '../types.js';
import { SealVerifier } from './seal.js';

export interface SealTransformOptions {
  /**
   * Instead of failing the stream, stop passing bytes on at the first failure and end normally;
   * the failure is then only in `verifier.failure`. For a child's stdin, which must see end of
   * file whatever happens, the job then being judged by the verifier afterwards.
   */
  soft?: boolean;
}

/** A pass-through stream that checks what passes against the seal. */
export class SealTransform extends Transform {
  readonly verifier: SealVerifier;
  private readonly soft: boolean;

  constructor(seal: Seal, options: SealTransformOptions = {}) {
    super();
    this.verifier = new SealVerifier(seal);
    this.soft = options.soft ?? false;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.soft && this.verifier.failure) {
      done(); // drop the rest
      return;
    }
    try {
      this.verifier.update(chunk);
    } catch (err) {
      done(this.soft ? undefined : (err as Error));
      return;
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    try {
      this.verifier.finish();
    } catch (err) {
      done(this.soft ? undefined : (err as Error));
      return;
    }
    done();
  }
}
