#!/usr/bin/env bash
# The terminal and the page of docs/first-hour.md, made again: a user who
# has never run greta (a new HOME) runs the first hour's commands on a real
# pseudo-terminal COLS columns wide (`script`), their bytes become HTML
# (aha) and a PNG (headless Chromium); `greta report`'s page is
# photographed too. Both PNGs are reduced with pngquant when it is there.
#   scripts/first-hour-screens.sh OUTDIR
# Writes OUTDIR/first-hour-terminal.{txt,html,png} (doctor, smoke,
# report; the txt: what the terminal showed, colour codes removed, for the
# page's console blocks), OUTDIR/first-hour-install.txt (the install's
# plan, as text only: it lists every wheel) and
# OUTDIR/first-hour-report.{html,png}.
# GRETA: the greta binary (default: target/debug/greta of this checkout).
# COLS: the terminal's width (default 80). SMOKE: the smoke profile (default
# `default`, as a new user runs it). NEW_HOME: the user's home (see below).
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
greta=${GRETA:-$here/target/debug/greta}
[[ -x "$greta" ]] || { echo "$0: no greta binary at $greta (set GRETA=...)" >&2; exit 2; }
for tool in script aha; do
  command -v "$tool" >/dev/null || { echo "$0: no $tool (apt-get install bsdutils aha)" >&2; exit 2; }
done
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$browser" ]] || { echo "$0: no chromium (apt-get install chromium)" >&2; exit 2; }
cols=${COLS:-80}
smoke=${SMOKE:-default}

work=$(mktemp -d)
profile=$(mktemp -d)
trap 'rm -rf "$work" "$profile"' EXIT
# The user's home: a new one (NEW_HOME, e.g. /home/ada for the page, must
# not exist yet; it is removed after), else a temporary one.
home=${NEW_HOME:-$work/home}
if [[ -n "${NEW_HOME:-}" ]]; then
  [[ ! -e "$home" ]] || { echo "$0: NEW_HOME $home exists: a new user has none" >&2; exit 2; }
  trap 'rm -rf "$work" "$profile" "$home"' EXIT
fi
bin=$work/bin
mkdir -p "$home" "$bin"
# `greta` on PATH as the user types it.
ln -s "$greta" "$bin/greta"

# One command at the prompt, into FILE: the prompt line, then what the
# terminal got. The smoke run's progress bar is cleared when the run ends,
# so the last screen is the one without it (--no-progress: no redraws for
# aha to keep).
step() { # FILE COMMAND...
  local to=$1
  shift
  printf '\033[1;32mada@cpu-box\033[0m:\033[1;34m~\033[0m$ %s\n' "$*" >>"$to"
  (cd "$home" && env -i PATH="$bin:$PATH" HOME="$home" TERM=xterm LANG=C.UTF-8 \
    script -q -e -c "stty rows 60 cols $cols; $*" /dev/null </dev/null) \
    | tr -d '\r' >>"$to" || true
  printf '\n' >>"$to"
}
plain() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1"; }
step "$work/terminal.ans" greta doctor
# The plan lists every wheel: kept out of the picture, given as text.
step "$work/install.ans" greta install --dry-run
step "$work/terminal.ans" greta smoke --no-progress --profile "$smoke"
step "$work/terminal.ans" greta report

plain "$work/terminal.ans" >"$out/first-hour-terminal.txt"
plain "$work/install.ans" >"$out/first-hour-install.txt"
aha --black --title "greta: the first hour" <"$work/terminal.ans" \
  | sed 's|<body[^>]*>|<body style="color:white;background-color:black;margin:10px;font:14px/1.25 DejaVu Sans Mono,monospace">|' \
  >"$out/first-hour-terminal.html"
cp "$home/greta-report.html" "$out/first-hour-report.html"

shot() { # page.html page.png width height
  HOME=$profile "$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --force-device-scale-factor=1 --window-size="$3,$4" --user-data-dir="$profile" \
    --virtual-time-budget=3000 --screenshot="$2" "file://$1" >/dev/null 2>&1
  [[ -s "$2" ]] || { echo "$0: no screenshot of $1" >&2; exit 1; }
  if command -v pngquant >/dev/null; then
    pngquant --force --skip-if-larger --output "$2" -- "$2" || true
  fi
  echo "$2"
}
# 14 px DejaVu Sans Mono is 8.43 px a column, 17.5 px a line.
lines=$(wc -l <"$out/first-hour-terminal.txt")
shot "$out/first-hour-terminal.html" "$out/first-hour-terminal.png" \
  $((cols * 843 / 100 + 24)) $((lines * 35 / 2 + 24))
shot "$out/first-hour-report.html" "$out/first-hour-report.png" 1100 1300
