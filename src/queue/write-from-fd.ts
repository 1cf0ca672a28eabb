/**
 * Queue.writeFromFd, declared on Queue by module augmentation and installed when this module
 * loads (the public entries load it, and `fspl queue-write`): copying a packet in checks it with
 * the packet codec, the seal and the signature checks, and a process that only runs a queue's
 * jobs (`queue-process` of an empty queue, from cron) then loads none of them.
 */
import { copyPacketSync } from '../packet/seal/sealed-copy.js';
import { copySignedPacketSync } from '../sign/copy-signed.js';
import { writeJobSync } from './job-write.js';
import { Queue } from './queue.js';

declare module './queue.js' {
  interface Queue {
    /**
     * Copy a packet from a file descriptor into the queue. Nothing is validated, except that the
     * input is not empty and that a sealed packet's payload matches its seal (see
     * packet/seal/sealed-copy.ts), and with allowedSigners that its signature lets it in
     * (SignatureError): otherwise no job is stored. Returns the new job's file name.
     */
    writeFromFd(inFd: number): string;
  }
}

Queue.prototype.writeFromFd = function writeFromFd(this: Queue, inFd: number): string {
  const signers = this.allowedSigners;
  if (signers) return writeJobSync(this.jobsDir, (fd) => copySignedPacketSync(inFd, fd, signers));
  return writeJobSync(this.jobsDir, (fd) => copyPacketSync(inFd, fd));
};
