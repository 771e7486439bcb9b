#!/usr/bin/env bash
# Runs a `swinfer segment` batch (the command after --) and watches its output folder all along: every file a reader
# can see there (not hidden) must be a whole mask, byte-identical to the reference run's. With a victim it kills
# (SIGKILL) a --jobs worker process ("worker"), an MPI rank other than 0 ("rank") or the whole command ("job") once
# the journal holds a first entry. Prints "exit STATUS" and "killed PID" (or "killed none").
#
# The kill does not depend on timing: a worker or rank victim is stopped (SIGSTOP) as soon as it has read a volume
# (its /proc/PID/io rchar reaches MIN_READ bytes: the caller's inputs dealt first must all be good ones), while the
# journal is still empty, so it holds that volume unfinished however slowly anything runs; the others go on until
# the journal holds an entry, and only then is the stopped victim killed. The batch runs at a lower priority than
# this watcher (nice), so a loaded machine slows the batch rather than the watching. Every wait is bounded.
# Usage: watch_batch.sh OUT REFERENCE none|worker|rank|job MIN_READ -- COMMAND...
set -uo pipefail
out=$1 reference=$2 victim=$3 min_read=$4
shift 5
nice -n 5 "$@" &
pid=$!
killed=none
stopped=
partial=
problem=
deadline=$((SECONDS + 300))
rank_of() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
bytes_read() { sed -n 's/^rchar: //p' "/proc/$1/io" 2>/dev/null; }
journal_started() { compgen -G "$out/.swinfer-journal/*.json" > /dev/null; }
# The processes that may be the victim: the --jobs workers (children of the dealer), or the ranks other than 0.
candidates() {
  local child
  for child in $(pgrep -P "$pid"); do
    case $victim in
      worker) echo "$child" ;;
      rank) [[ $(rank_of "$child") =~ ^[1-9] ]] && echo "$child" ;;
    esac
  done
}
while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
  for file in "$out"/*; do
    [[ -e $file ]] || continue
    if ! cmp -s "$file" "$reference/$(basename "$file")"; then
      partial="$file"
      break 2
    fi
  done
  if [[ $victim == job && $killed == none ]] && journal_started; then
    kill -KILL "$pid"
    killed=$pid
  elif [[ $victim != none && $victim != job && $killed == none ]]; then
    if [[ -z $stopped ]]; then
      for child in $(candidates); do
        read=$(bytes_read "$child")
        if [[ -n $read ]] && ((read >= min_read)); then
          kill -STOP "$child"
          stopped=$child
          break
        fi
      done
      # Stopped before any volume was finished: it holds one it has not finished. Otherwise this watcher fell a
      # whole volume behind (it cannot tell what the victim holds), which it says instead of guessing.
      if [[ -n $stopped ]] && journal_started; then
        problem="the journal already held an entry when worker process $stopped was stopped"
        break
      fi
    elif journal_started; then
      kill -KILL "$stopped"
      killed=$stopped
    fi
  fi
  sleep 0.02
done
if [[ -n $partial || -n $problem ]] || ((SECONDS >= deadline)); then
  [[ -n $stopped ]] && kill -CONT "$stopped" 2> /dev/null
  pkill -KILL -P "$pid" 2> /dev/null
  kill -KILL "$pid" 2> /dev/null
  wait "$pid"
  [[ -n $partial ]] && echo "a reader could see '$partial', which is not a finished mask" >&2
  [[ -n $problem ]] && echo "$problem" >&2
  ((SECONDS >= deadline)) && echo "the batch did not end within 300 s (stopped: ${stopped:-none}, killed: $killed)" >&2
  exit 1
fi
wait "$pid"
echo "exit $?"
echo "killed $killed"
