#!/usr/bin/env bash
# Screenshots of the report page for docs/smoke.md: draws each greta.smoke/v1
# result given with `greta report`, and (with two or more) their history,
# then has headless Chromium take a PNG of each page.
#   scripts/report-screens.sh OUTDIR RESULT.json...
# Writes OUTDIR/<result name>.html and .png, and OUTDIR/history.html/.png.
# GRETA: the greta binary (default: greta on PATH, else target/release/greta).
# WIDTH, HEIGHT: the browser window in CSS pixels (default 1280 x 2000; the
# screenshot is the window, so a taller page is cut at HEIGHT).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUTDIR RESULT.json..." >&2
  exit 2
fi
out=$1
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
greta=${GRETA:-}
if [[ -z "$greta" ]]; then
  greta=$(command -v greta || true)
  [[ -n "$greta" ]] || greta="$(dirname "$0")/../target/release/greta"
fi
[[ -x "$greta" ]] || { echo "$0: no greta binary (set GRETA=...)" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$browser" ]] || { echo "$0: no chromium (apt-get install chromium)" >&2; exit 2; }
width=${WIDTH:-1280}
height=${HEIGHT:-2000}
profile=$(mktemp -d)
hist=$(mktemp -d)
trap 'rm -rf "$profile" "$hist"' EXIT

shot() { # page.html page.png
  HOME=$profile "$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --force-device-scale-factor=1 --window-size="$width,$height" --user-data-dir="$profile" \
    --virtual-time-budget=3000 --screenshot="$2" "file://$1" >/dev/null 2>&1
  [[ -s "$2" ]] || { echo "$0: no screenshot of $1" >&2; exit 1; }
  echo "$2"
}

for f in "$@"; do
  name=$(basename "$f" .json)
  "$greta" report "$f" --out "$out/$name.html"
  shot "$out/$name.html" "$out/$name.png"
  cp "$f" "$hist/"
done
if [[ $# -ge 2 ]]; then
  "$greta" report --history "$hist" --out "$out/history.html"
  shot "$out/history.html" "$out/history.png"
fi
