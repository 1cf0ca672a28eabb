#!/usr/bin/env bash
# An end-to-end tour of fspl: make a queue, queue two jobs, look at them, run them; then (the
# extensions of this fspl) diagnose the queue, list it as JSON, and watch it run two more jobs.
# Run it with `npm run example` (after `npm ci`), or directly: bash docs/example.sh
# Everything happens in a fresh temporary directory, removed at the end.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# By default, this checkout's fspl (dist/ is built by `npm ci` or `npm run build`). Set FSPL to
# try another one, e.g. FSPL=/usr/bin/fspl for the reference implementation.
if [ -n "${FSPL:-}" ]; then
  fspl() { "$FSPL" "$@"; }
  fspl_exec() { exec "$FSPL" "$@"; }
elif node "$here/../bin/fspl" -V >/dev/null 2>&1; then
  fspl() { node "$here/../bin/fspl" "$@"; }
  fspl_exec() { exec node "$here/../bin/fspl" "$@"; }
else
  echo "error: $here/../bin/fspl does not run: build it first with npm ci (or npm run build)" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/fspl-example.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

step() { printf '\n== %s\n' "$*"; }

step "fspl -V"
fspl -V

step "create a queue: fspl queue-init -q queue"
fspl queue-init -q queue
ls queue
echo "nextseq holds: $(cat queue/nextseq)"

# The sending side keeps its own sequence file ("seq" here); prepare takes the next number from
# it and writes a packet to stdout. queue-write stores a packet from stdin in the queue.
step "queue job 1: a payload on stdin and one parameter"
printf 'hello world\n' | fspl prepare -s seq -i - -- greet | fspl queue-write -q queue

step "queue job 2: a payload, two parameters and an FSPL_SET_ variable"
printf 'second payload\n' | FSPL_SET_COLOUR=blue fspl prepare -s seq -i - -- second 'with space' |
  fspl queue-write -q queue

echo "the sender's next sequence number: $(fspl prepare-get-next -s seq)"

step "fspl queue-ls -q queue"
fspl queue-ls -q queue

step "fspl queue-info -q queue -j 2   (the variables job 2's command will get)"
fspl queue-info -q queue -j 2

step "fspl queue-payload -q queue -j 1"
fspl queue-payload -q queue -j 1

# The extensions of this fspl (the reference has none of them).
extensions=no
if fspl queue-status --help >/dev/null 2>&1; then extensions=yes; fi

if [ "$extensions" = yes ]; then
  step "fspl queue-status -q queue   (an extension: can the queue make progress?)"
  fspl queue-status -q queue

  step "fspl queue-ls -q queue --json   (an extension: one JSON object per job)"
  fspl queue-ls -q queue --json
fi

# COMMAND is run directly, not through a shell: to use shell syntax, run sh yourself.
# Arguments after `--` go to the command; with --allow-job-params the job's own parameters
# follow them (here they become $1, $2... of the script, after $0="job").
step "process the queue"
fspl queue-process -q queue --allow-job-params \
  sh -- -c 'printf "job %s [%s] colour=%s: %s\n" "$FSPL_SEQ" "$*" "${FSPL_SET_COLOUR:-none}" "$(cat)"' job |
  tee output.txt

step "check"
expected='job 1 [greet] colour=none: hello world
job 2 [second with space] colour=blue: second payload'
if [ "$(cat output.txt)" != "$expected" ]; then
  echo "unexpected output; wanted:" >&2
  echo "$expected" >&2
  exit 1
fi
if [ -n "$(ls queue/jobs)" ]; then
  echo "jobs left in the queue: $(ls queue/jobs)" >&2
  exit 1
fi
nextseq="$(fspl queue-get-next -q queue)"
[ "$nextseq" = 3 ] || { echo "nextseq is $nextseq, expected 3" >&2; exit 1; }
echo "queue nextseq: $nextseq"

if [ "$extensions" = yes ]; then
  step "queue-process --watch   (an extension: jobs run as they arrive; SIGTERM stops it)"
  # A subshell that becomes fspl itself, so that $! is fspl's own process id.
  (fspl_exec queue-process -q queue --watch sh -- -c 'echo "watched job $FSPL_SEQ: $(cat)"' > watched.txt) &
  watcher=$!
  for word in third fourth; do
    printf '%s payload\n' "$word" | fspl prepare -s seq -i - | fspl queue-write -q queue
  done
  # Wait (up to 10 s) until both have run. queue-get-next would need the lock the watcher holds.
  for _ in $(seq 100); do [ "$(wc -l < watched.txt)" -ge 2 ] && break; sleep 0.1; done
  kill -TERM "$watcher"
  wait "$watcher"
  cat watched.txt
  [ "$(cat watched.txt)" = "watched job 3: third payload
watched job 4: fourth payload" ] || { echo "unexpected output from the watcher" >&2; exit 1; }
fi
if [ -z "${FSPL:-}" ]; then
  echo "== a Petri net of queues: the video pipeline of docs/nets/video on 10 clips"
  FSPL="$here/../bin/fspl" bash "$here/nets/video/try.sh" 10
fi
echo "example OK"
