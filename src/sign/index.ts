/** OpenSSH signatures (SSHSIG) for fspl: keys, signatures, allowed signers, and signing. */
export { agentHasKey, agentSign } from './agent.js';
export { AllowedSigners } from './allowed-signers.js';
export { type LoadedKey, loadPrivateKey, signRaw } from './private-key.js';
export { fingerprintOf, type PublicKey, parsePublicKeyBlob, parsePublicKeyLine } from './public-key.js';
export { type Signed, type SignWith, signMessage, signMessageSync } from './signer.js';
export {
  armor,
  encodeSshSig,
  type HashAlgorithm,
  NAMESPACE,
  parseSshSig,
  type SshSig,
  toSign,
  unarmor,
  verifySshSig,
} from './sshsig.js';
export { WireReader, wireConcat, wireString, wireU32 } from './wire.js';
