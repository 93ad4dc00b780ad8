#!/bin/sh
# Harness wrapper: sh wrapper.sh JOBDIR MARKER [UID:GID QUOTA_KB WORKSPACE [LOG_LIMIT]]
# Runs JOBDIR/cmd detached from the daemon, then writes MARKER (JSON: exit, signal, started, ended,
# over_quota) atomically. The harness command lives in a file, not in this script's argv, so a broad
# `pkill -f <harness words>` by the agent cannot match (and kill) the wrapper itself.
# In a container the wrapper runs as root and the harness as UID:GID (setpriv): the agent can neither
# read JOBDIR, write MARKER nor signal the wrapper. With QUOTA_KB, a watchdog kills the harness once
# WORKSPACE holds more than that (the marker then says how much it held). With LOG_LIMIT, the harness's output
# reaches JOBDIR/log through logcap.py (beside this script), which keeps the log within twice that many bytes.
# With STAMINAD_CHILD_NICE=N in its environment (the local runtime; not passed on to the harness), the harness runs
# N niceness levels down, and this session's autogroup too while it runs: the wrapper itself, which notices its end
# and writes the marker, runs at the daemon's priority (suite/niceness.py).
# With STAMINAD_RAISED=R, the daemon (whose priority the wrapper inherits) runs R levels above the box's default:
# the harness is put back at the default (less N), and the marker is written at the daemon's raised priority.
lower="${STAMINAD_CHILD_NICE:-0}"
raised="${STAMINAD_RAISED:-0}"
unset STAMINAD_CHILD_NICE STAMINAD_RAISED
job="$1"
marker="$2"
as="${3:-}"
quota="${4:-0}"
ws="${5:-}"
limit="${6:-0}"
# end_agent UID: stop, then kill, every process of the agent's user that the harness left (a detached pid filler
# would leave this wrapper no process to fork for its marker), forking nothing: globbing, read, case and kill
# are the shell's own. Bounded passes; a zombie (state Z) is left to init.
end_agent() {
    pass=0
    while [ "$pass" -lt 20 ]; do
        pass=$((pass + 1))
        pids=
        for d in /proc/[0-9]*; do
            uid=
            state=
            { while read -r key a rest; do
                case "$key" in
                    State:) state="$a" ;;
                    Uid:) uid="$a"; break ;;
                esac
            done < "$d/status"; } 2>/dev/null
            if [ "$uid" = "$1" ] && [ "$state" != "Z" ]; then
                kill -STOP "${d#/proc/}" 2>/dev/null  # stopped first: a stopped process forks no more
                pids="$pids ${d#/proc/}"
            fi
        done
        [ -z "$pids" ] && return 0
        kill -KILL $pids 2>/dev/null  # all at once, after every one is stopped: no slot is freed for a fork loop
    done
}
echo $$ > "$job/pid"
start=$(date +%s.%N)
out="$job/log"
if [ "$limit" -gt 0 ]; then
    rm -f "$job/log.pipe"
    mkfifo -m 600 "$job/log.pipe"
    python3 -I -S "$(dirname "$0")/logcap.py" "$job/log" "$limit" < "$job/log.pipe" &
    capper=$!
    out="$job/log.pipe"
fi
if [ -n "$as" ]; then
    setpriv --reuid="${as%%:*}" --regid="${as##*:}" --clear-groups sh -c "$(cat "$job/cmd")" \
        < /dev/null > "$out" 2>&1 &
elif [ "$lower" -gt 0 ] || [ "$raised" -gt 0 ]; then
    echo "$lower" > /proc/self/autogroup 2>/dev/null  # the session's group, while the harness runs
    nice -n "$((lower + raised))" sh "$job/cmd" < /dev/null > "$job/log" 2>&1 &
else
    sh "$job/cmd" < /dev/null > "$job/log" 2>&1 &
fi
harness=$!
if [ "$quota" -gt 0 ]; then
    # A watchdog that forks nothing once started: one the agent starves of pids cannot die and leave no bound.
    python3 -I -S "$(dirname "$0")/quota.py" "$ws" "$quota" "$harness" "$job/over_quota" &
fi
wait "$harness"
code=$?
if [ "$lower" -gt 0 ] || [ "$raised" -gt 0 ]; then
    echo "$((0 - raised))" > /proc/self/autogroup 2>/dev/null  # the marker at the daemon's priority, then the end
fi
if [ -n "$as" ]; then
    end_agent "${as%%:*}"
fi
end=$(date +%s.%N 2>/dev/null)
if [ -n "${capper:-}" ]; then
    # The log's last lines are still in the pipe: let the copy drain it (bounded: a process the harness detached
    # may hold the pipe open, and it goes with the phase anyway).
    i=0
    while kill -0 "$capper" 2>/dev/null && [ "$i" -lt 20 ]; do sleep 0.05; i=$((i + 1)); done
fi
sig=null
if [ "$code" -gt 128 ]; then sig=$((code - 128)); fi
over=null  # read by the shell itself: between `ended` and the marker, every fork is marker latency
[ -f "$job/over_quota" ] && { read -r over < "$job/over_quota"; } 2>/dev/null
printf '{"exit": %s, "signal": %s, "started": %s, "ended": %s, "over_quota": %s}\n' \
    "$code" "$sig" "$start" "$end" "$over" > "$marker.tmp"
mv "$marker.tmp" "$marker"
# Whatever the harness left running in its process group (say, a server it started to try its code)
# goes with it, the wrapper and its watchdog included, so the engine need not reach in to clean up.
kill -KILL 0
