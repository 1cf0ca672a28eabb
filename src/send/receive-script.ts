/**
 * The receiving side of a delivery over ssh: a POSIX shell script run by `ssh HOST sh -c SCRIPT`
 * that needs only sh, head, wc, mv, sync and flock (util-linux); it does not even need fspl. No
 * protocol of our own on the network. The sender is ssh-send.ts; the daemon that empties an
 * outbox with it, outbox-sender.ts. Exactly once (docs/distributed.md): each packet is received
 * under a hidden name, DIR/recvseq (under DIR/recv.lock) drops one numbered below it, and the
 * script's comments say which sync makes what durable. With the host's `fspl:` it also checks seals,
 * after probing that verifier; a verifier that can't refuses everything (VerifierProblem).
 */
import { sealOf } from '../packet/index.js';
import { makeHeader, packetBytes } from '../packet/prepare.js';

/**
 * The packets the receiver tries its verifier on, as printf escapes (octal, so no byte is special
 * to the shell or to printf): a sealed packet, and the same packet with one payload byte changed.
 * The verifier must take the first and refuse the second; a program that takes both (the
 * reference fspl, which ignores seals, or anything that exits 0) would let damaged packets in.
 */
function probePackets(): { good: string; bad: string } {
  const payload = Buffer.from('fspl seal probe\n');
  const header = {
    ...makeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
    seal: sealOf(payload),
  };
  const damaged = Buffer.from(payload);
  damaged[0] ^= 1;
  const octal = (b: Buffer) => [...b].map((x) => `\\${x.toString(8).padStart(3, '0')}`).join('');
  return { good: octal(packetBytes(header, payload)), bad: octal(packetBytes(header, damaged)) };
}

/**
 * The receiving side. $1 is the place's directory, $2 the fspl that checks seals (or empty).
 * Reads frames from stdin; writes `ready R` once it holds the place's receive lock (and, with $2,
 * its verifier passed the probe), then `ok ID` or `dup ID` per packet. Exit status non-zero on
 * any problem (no queue there, a packet cut short, a bad frame, a failed write); when the
 * verifier is missing or unusable, it says so first on stdout (`fspl-unusable KIND DETAIL`) and
 * exits 7.
 * No single quote may appear in it (it travels inside one).
 */
export function receiveScript(): string {
  // Made on first use, not at load: the probe packets are encoded and sealed, a cost at the start
  // of every command that imports this module (`net put` does), for a delivery that most never make.
  script ??= receiverScript(probePackets());
  return script;
}
let script: string | undefined;

function receiverScript({ good: PROBE_GOOD, bad: PROBE_BAD }: { good: string; bad: string }): string {
  return `
d=$1; j="$d/jobs"
[ -d "$j" ] || { echo "fspl receive: no queue at $d on $(hostname) (make it there:" \\
  "fspl queue-init -q DIR, or fspl net init --host for a net)" >&2; exit 3; }
exec 9>>"$d/recv.lock" || exit 3
flock 9 || { echo "fspl receive: cannot lock $d/recv.lock (flock from util-linux is needed)" >&2; exit 3; }
F=$2
unusable() {
  echo "fspl-unusable $1 $2"
  echo "fspl receive: fspl at $F on $(hostname): $3" >&2
  exit 7
}
# With fspl: set, no packet is taken unverified: the verifier must be there, run, and check seals
# (an intact probe packet passes, the same packet with its payload changed fails), or the
# receiver refuses with the verifier's own reason, never calling a packet damaged.
probe() {
  command -v "$F" >/dev/null 2>&1 || unusable not-found "" "not found"
  e=$(printf "${PROBE_GOOD}" | "$F" stdin-payload 2>&1 >/dev/null) || {
    c=$?; e=$(printf "%s\n" "$e" | head -n 1); [ -n "$e" ] || e="exited with status $c"
    unusable cannot-run "$e" "cannot run: $e"
  }
  if printf "${PROBE_BAD}" | "$F" stdin-payload >/dev/null 2>&1; then
    unusable no-seal-check "" "does not check seals (the reference fspl? fspl: must name this implementation)"
  fi
}
[ -z "$F" ] || probe
verify() {
  s=$(wc -c <"$1") && [ "$s" -eq "$2" ] || return 1
  # A sealed packet (the outboxes write them so) is also checked against its CRC-32.
  [ -z "$F" ] || "$F" stdin-payload <"$1" >/dev/null 2>&1 && return 0
  # Refused: damaged on the way, unless the verifier itself stopped working (then probe exits).
  rm -f "$1"; probe; return 1
}
r=1
if [ -s "$d/recvseq" ]; then read -r r <"$d/recvseq"; fi
echo "ready $r"
while read -r id seq n; do
  case "$id:$seq:$n" in *[!A-Za-z0-9:-]*|:*|*::*|*:) echo "fspl receive: bad frame" >&2; exit 4;; esac
  t="$j/.fspl-in-$id.part"; f="$j/fspl-$id.fspl"
  if [ "$seq" -lt "$r" ]; then
    head -c "$n" >/dev/null
    if [ -f "$t" ]; then mv -f "$t" "$f" && sync "$j" || exit 5; fi
    echo "dup $id"
  else
    head -c "$n" >"$t" || exit 5
    verify "$t" "$n" || { rm -f "$t"; echo "fspl receive: packet $id cut short or damaged" >&2; exit 6; }
    # Durable in this order (sync FILE/DIR fsyncs it), so that a power cut here at any instant
    # neither loses an acknowledged packet nor makes one token of it twice: the packet under its
    # hidden name; then recvseq past it (a resend is now a dup, which finishes the rename); then
    # the packet under its job name, before the ok that lets the sender delete its copy.
    sync "$t" "$j" || exit 5
    r=$((seq + 1))
    echo "$r" >"$d/recvseq.tmp" && sync "$d/recvseq.tmp" && mv -f "$d/recvseq.tmp" "$d/recvseq" && sync "$d" || exit 5
    mv -f "$t" "$f" && sync "$j" || exit 5
    echo "ok $id"
  fi
done
`;
}

/** Quote a word for the remote shell (ssh joins its arguments into one command line). */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The remote command line that receives packets into the place at `remoteDir`; `fspl`, when
 * given and found there, checks each packet's seal.
 */
export function receiveCommand(remoteDir: string, fspl = ''): string {
  return `sh -c ${shellQuote(receiveScript())} fspl-receive ${shellQuote(remoteDir)} ${shellQuote(fspl)}`;
}

/**
 * Why the fspl named by a host's `fspl:` can't check seals there. Not a passing problem of the
 * network: sending again does not help until someone fixes the host or the net file.
 */
export type VerifierProblem =
  | { kind: 'not-found' }
  | { kind: 'cannot-run'; detail: string }
  | { kind: 'no-seal-check' };

/** The one line an operator reads: "fspl at PATH on HOST: ...". */
export function describeVerifierProblem(p: VerifierProblem, fspl: string, host: string): string {
  const where = `fspl at ${fspl} on ${host}`;
  switch (p.kind) {
    case 'not-found':
      return `${where}: not found`;
    case 'cannot-run':
      return `${where}: cannot run: ${p.detail}`;
    case 'no-seal-check':
      return `${where}: does not check seals (the reference fspl? fspl: must name this implementation's fspl)`;
  }
}

const VERIFIER_KINDS = ['not-found', 'cannot-run', 'no-seal-check'] as const;

/** The receiver's `fspl-unusable KIND DETAIL` line, if that is what the line is. */
export function parseUnusable(line: string): VerifierProblem | undefined {
  const m = /^fspl-unusable (\S+) ?(.*)$/.exec(line);
  const kind = VERIFIER_KINDS.find((k) => k === m?.[1]);
  if (!m || !kind) return undefined;
  return kind === 'cannot-run' ? { kind, detail: m[2]! } : { kind };
}
