#!/bin/sh
# Harness wrapper: sh wrapper.sh JOBDIR MARKER
# Runs JOBDIR/cmd detached from the daemon, then writes MARKER (JSON: exit, signal, started, ended)
# atomically. The harness command lives in a file, not in this script's argv, so a broad
# `pkill -f <harness words>` by the agent cannot match (and kill) the wrapper itself.
job="$1"
marker="$2"
echo $$ > "$job/pid"
start=$(date +%s.%N)
sh "$job/cmd" < /dev/null > "$job/log" 2>&1
code=$?
end=$(date +%s.%N)
sig=null
if [ "$code" -gt 128 ]; then sig=$((code - 128)); fi
printf '{"exit": %s, "signal": %s, "started": %s, "ended": %s}\n' "$code" "$sig" "$start" "$end" > "$marker.tmp"
mv "$marker.tmp" "$marker"
# Whatever the harness left running in its process group (say, a server it started to try its code)
# goes with it, the wrapper included, so the engine need not reach into the sandbox to clean up.
kill -KILL 0
