#!/usr/bin/env bash
# bench/proxy/build_baseline.sh REV CACHE_DIR - builds weft-proxy as it was at git revision REV
# of the repository this script lives in, for bench/run_proxy.sh's BENCH_BASELINE mode.
#
# REV is anything `git rev-parse` accepts (872295f, HEAD~3, a tag, a branch). The sources of
# that commit are exported with `git archive` into a temporary directory (no git worktree is
# made, so nothing is left in the repository's metadata), configured RelWithDebInfo exactly as
# `make` configures ./build and only the weft-proxy target is built, into
# CACHE_DIR/<full sha>/build. The message table is generated from this checkout's ../shared
# (WEFT_SHARED_DIR), as the sources of REV do not carry it. A finished build is marked by
# CACHE_DIR/<full sha>/weft-proxy (moved into place last, the build tree is then removed); when
# it exists the build is reused and nothing is compiled. The temporary sources are removed on
# every exit, failure included.
#
# Output: the absolute path of the baseline weft-proxy on stdout (one line); progress on
# stderr; the configure/build log in CACHE_DIR/<full sha>/build.log.
# Exit status: 0 built or reused, 2 usage or REV is not a commit of this repository, 1 the
# export, configure or build failed (the log's tail is printed).
set -euo pipefail
export LC_ALL=C

case ${1:-} in
-h | --help)
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
esac
[ $# = 2 ] || { echo "usage: bench/proxy/build_baseline.sh REV CACHE_DIR" >&2; exit 2; }
REV=$1 CACHE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null) || {
  echo "build_baseline.sh: $HERE is not inside a git repository" >&2
  exit 2
}
SHA=$(git -C "$REPO" rev-parse --verify --quiet "$REV^{commit}") || {
  echo "build_baseline.sh: BENCH_BASELINE=$REV is not a commit of $REPO" \
    "(git rev-parse --verify '$REV^{commit}' failed)" >&2
  exit 2
}
SHORT=${SHA:0:9}
DEST=$CACHE/$SHA
if [ -x "$DEST/weft-proxy" ]; then
  echo "baseline $REV ($SHORT): reusing $DEST/weft-proxy" >&2
  echo "$(cd "$DEST" && pwd)/weft-proxy"
  exit 0
fi

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
SHARED=$(cd "$REPO/.." && pwd)/shared
SRC=$(mktemp -d "${TMPDIR:-/tmp}/weft-baseline-src.XXXXXX")
LOG=$DEST/build.log
trap 'rm -rf "$SRC"' EXIT
trap 'exit 130' INT TERM

fail() {
  echo "build_baseline.sh: $1 failed for $REV ($SHA); the end of $LOG:" >&2
  tail -n 30 "$LOG" >&2 || true
  exit 1
}

START=$SECONDS
echo "baseline $REV ($SHORT): exporting the sources (git archive)" >&2
: >"$LOG"
git -C "$REPO" archive --format=tar "$SHA" | tar -x -C "$SRC" 2>>"$LOG" || fail "git archive"
echo "baseline $REV ($SHORT): configuring RelWithDebInfo in $DEST/build" >&2
# A previous attempt that was interrupted may have left a build tree for other sources.
rm -rf "$DEST/build"
cmake -S "$SRC" -B "$DEST/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWEFT_SHARED_DIR="$SHARED" >>"$LOG" 2>&1 || fail "configure"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
echo "baseline $REV ($SHORT): building weft-proxy (-j $JOBS; about a minute)" >&2
cmake --build "$DEST/build" --target weft-proxy -j "$JOBS" >>"$LOG" 2>&1 || fail "build"
cp "$DEST/build/weft-proxy" "$DEST/weft-proxy.tmp.$$" || fail "copy"
mv -f "$DEST/weft-proxy.tmp.$$" "$DEST/weft-proxy"
rm -rf "$DEST/build" # the objects (~35 MB) are not needed again
echo "baseline $REV ($SHORT): built $DEST/weft-proxy in $((SECONDS - START)) s" >&2
echo "$DEST/weft-proxy"
