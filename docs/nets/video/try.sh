#!/usr/bin/env bash
# Run the video net on 10 clips in a temporary copy: init, put, run until drained, show results.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fspl=${FSPL:-$here/../../../bin/fspl}
n=${1:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/video.yaml" "$here/bin" "$work/"
cd "$work"
"$fspl" net check video.yaml
"$fspl" net init video.yaml >/dev/null
for i in $(seq 1 "$n"); do
  shake=""; [ $((i % 3)) -eq 0 ] && shake=" shake"
  printf 'frame 1 of clip%s%s\nframe 2 of clip%s%s\naudio track of clip%s\n' "$i" "$shake" "$i" "$shake" "$i" |
    "$fspl" net put video.yaml inbox --key "clip$i" >/dev/null
done
"$fspl" net run --drain video.yaml
"$fspl" net status video.yaml
count=$(ls places/done/jobs | wc -l)
echo "== $count clips in done; the first:"
"$fspl" stdin-payload < "places/done/jobs/$(ls places/done/jobs | head -1)"
[ "$count" -eq "$n" ] && echo "video net OK"
