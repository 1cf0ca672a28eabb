export * from './types.js';
export {
  PREFIX_LENGTH,
  MAX_METADATA_LENGTH,
  encodeHeader,
  encodeMetadata,
  decodeHeader,
  decodePrefix,
  decodeMetadata,
  crc32,
} from './codec.js';
export { readHeaderSync, readHeaderFromStream, readExactFromStream } from './read.js';
export { readHeaderAndLengthSync } from './read.js';
export { readPacket, metadataOf, packetStream, fdStream, type PacketMetadata, type ReadPacket, type PacketSource } from './stream.js';
export { SEAL_LENGTH_KEY, SEAL_CRC_KEY, SealVerifier, crc32Update, sealOf } from './seal.js';
export { SealTransform, type SealTransformOptions } from './seal-transform.js';
export { withSealCheck } from './stream.js';
