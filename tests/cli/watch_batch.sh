#!/usr/bin/env bash
# Runs a `swinfer segment` batch (the command after --) and watches its output folder all along: every file a reader
# can see there (not hidden) must be a whole mask, byte-identical to the reference run's. With a victim it kills
# (SIGKILL) a --jobs worker process ("worker"), an MPI rank other than 0 ("rank") or the whole command ("job") once
# the journal holds a first entry. Prints "exit STATUS" and "killed PID" (or "killed none").
#
# The kill does not depend on timing. A --jobs worker victim is stopped (SIGSTOP) as soon as it has read a volume
# (its /proc/PID/io rchar reaches MIN_READ bytes; a forked worker reads little else, and the caller's inputs dealt
# first must all be good ones) while the journal is still empty, so it holds that volume unfinished however slowly
# anything runs; the other goes on until the journal holds an entry, and only then is the stopped victim killed (its
# volume is then the one the report names). For a rank victim every rank is stopped as soon as the journal holds an
# entry, one other than rank 0 is killed and the rest continued, so mpirun ends the job with about as many volumes
# finished as when the first was seen. The batch runs at a lower priority than this watcher (nice), so a loaded
# machine slows the batch rather than the watching. Every wait is bounded.
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
  elif [[ $victim == rank && $killed == none ]] && journal_started; then
    ranks=$(pgrep -P "$pid")
    kill -STOP $ranks
    for child in $ranks; do [[ $(rank_of "$child") =~ ^[1-9] ]] && killed=$child && break; done
    if [[ $killed == none ]]; then
      kill -CONT $ranks 2> /dev/null
      problem="no rank other than 0 among mpirun's children ($ranks)"
      break
    fi
    kill -KILL "$killed"
    kill -CONT $ranks 2> /dev/null
  elif [[ $victim == worker && $killed == none ]]; then
    if [[ -z $stopped ]]; then
      for child in $(pgrep -P "$pid"); do
        got=$(bytes_read "$child")
        if [[ -n $got ]] && ((got >= min_read)); then
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
