#!/usr/bin/env bash
# Runs a `swinfer segment` batch (the command after --) and watches its output folder all along: every file a reader
# can see there (not hidden) must be a whole mask, byte-identical to the reference run's. With a victim, once the
# journal holds a first entry it kills (SIGKILL) a --jobs worker process ("worker"), an MPI rank other than 0
# ("rank") or the whole command ("job"). Prints "exit STATUS" and "killed PID" (or "killed none").
# Usage: watch_batch.sh OUT REFERENCE none|worker|rank|job -- COMMAND...
set -uo pipefail
out=$1 reference=$2 victim=$3
shift 4
"$@" &
pid=$!
killed=none
partial=
deadline=$((SECONDS + 300))
rank_of() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
  for file in "$out"/*; do
    [[ -e $file ]] || continue
    if ! cmp -s "$file" "$reference/$(basename "$file")"; then
      partial="$file"
      break 2
    fi
  done
  if [[ $victim != none && $killed == none ]] && compgen -G "$out/.swinfer-journal/*.json" > /dev/null; then
    target=
    case $victim in
      job) target=$pid ;;
      worker) target=$(pgrep -P "$pid" | head -n 1) ;;
      rank) for child in $(pgrep -P "$pid"); do [[ $(rank_of "$child") =~ ^[1-9] ]] && target=$child && break; done ;;
    esac
    if [[ -n $target ]]; then
      kill -KILL "$target"
      killed=$target
    fi
  fi
  sleep 0.02
done
if [[ -n $partial ]] || ((SECONDS >= deadline)); then
  pkill -KILL -P "$pid" 2> /dev/null
  kill -KILL "$pid" 2> /dev/null
  wait "$pid"
  [[ -n $partial ]] && echo "a reader could see '$partial', which is not a finished mask" >&2
  ((SECONDS >= deadline)) && echo "the batch did not end within 300 s" >&2
  exit 1
fi
wait "$pid"
echo "exit $?"
echo "killed $killed"
