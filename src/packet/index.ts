export { claimedSeq } from './claim.js';
export {
  crc32,
  decodeHeader,
  decodeMetadata,
  decodePrefix,
  encodeHeader,
  encodeMetadata,
  PREFIX_LENGTH,
} from './codec.js';
export { readExactFromStream, readHeaderAndLengthSync, readHeaderFromStream, readHeaderSync } from './read.js';
export { crc32Update, SEAL_CRC_KEY, SEAL_LENGTH_KEY, SealVerifier, sealOf } from './seal/seal.js';
export { SealTransform, type SealTransformOptions } from './seal/seal-transform.js';
export {
  fdStream,
  metadataOf,
  type PacketMetadata,
  type PacketSource,
  packetStream,
  type ReadPacket,
  readPacket,
  withSealCheck,
} from './stream.js';
export * from './types.js';
