#!/bin/sh
# bench/soak/run.sh BUILD_DIR [soak.py flags]: the soak harness (make soak, make soak-asan).
# soak.py re-executes itself in a private network namespace (unshare -n, lo up) because the
# local mesh binds the fixed ports 15010/15014/30000 and pod addresses 127.10.x.y; without
# root it prints "soak skipped: ..." and exits 0. SOAK_MINUTES (default 10), SOAK_SEED
# (default 1), SOAK_RATE (requests per second per target, default 100) and SOAK_ARGS (more
# flags, e.g. --keep) are read from the environment. Exit: 0 every check passed, 1 a check
# failed, 2 setup or usage error. See bench/README.md.
set -eu
case ${1:-} in
-h | --help)
  echo "usage: bench/soak/run.sh BUILD_DIR [soak.py flags]"
  exec /usr/bin/python3 "$(dirname "$0")/soak.py" --help
  ;;
esac
if [ $# -lt 1 ]; then
  echo "usage: bench/soak/run.sh BUILD_DIR [soak.py flags]" >&2
  exit 2
fi
bin=$1
shift
# SOAK_ARGS is split into words on purpose
# shellcheck disable=SC2086
exec /usr/bin/python3 "$(dirname "$0")/soak.py" --bin "$bin" ${SOAK_ARGS:-} "$@"
