#!/usr/bin/env bash
# Start or stop CPU-burning processes beside a test run, to find races that only show on a busy machine.
#   scripts/cpu-burners.sh start [N] [SECONDS]
#                                      start N burners (default 2) for at most SECONDS (default 3 hours: longer
#                                      than a full test run under load); their pids go to the pid file
#   scripts/cpu-burners.sh stop        stop the burners this script started (by pid, never by name)
#   scripts/cpu-burners.sh status      how many of them run
set -euo pipefail
pidfile="${STAMINA_BURNERS_PIDFILE:-${TMPDIR:-/tmp}/staminabench-cpu-burners.$(id -u).pids}"
case "${1:-}" in
    start)
        n="${2:-2}"
        life="${3:-10800}"
        [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "cpu-burners: error: N must be a positive integer, not '$n'" >&2; exit 2; }
        [[ "$life" =~ ^[1-9][0-9]*$ ]] || { echo "cpu-burners: error: SECONDS must be a positive integer, not '$life'" >&2; exit 2; }
        for _ in $(seq "$n"); do
            # A bounded life, so that a forgotten burner cannot outlive the session for long.
            nohup timeout "$life" bash -c 'while :; do :; done' >/dev/null 2>&1 &
            echo $! >>"$pidfile"
        done
        echo "cpu-burners: started $n (pids in $pidfile)" >&2
        ;;
    stop)
        [ -f "$pidfile" ] || { echo "cpu-burners: none running" >&2; exit 0; }
        while read -r pid; do
            # Only a process that is still our `timeout` burner: a recycled pid is left alone.
            if [ -n "$pid" ] && grep -qa "while :; do :; done" "/proc/$pid/cmdline" 2>/dev/null; then
                kill -- "$pid" 2>/dev/null || true
            fi
        done <"$pidfile"
        rm -f "$pidfile"
        echo "cpu-burners: stopped" >&2
        ;;
    status)
        count=0
        if [ -f "$pidfile" ]; then
            while read -r pid; do
                [ -n "$pid" ] && grep -qa "while :; do :; done" "/proc/$pid/cmdline" 2>/dev/null && count=$((count + 1))
            done <"$pidfile"
        fi
        echo "$count"
        ;;
    *)
        echo "usage: scripts/cpu-burners.sh start [N] [SECONDS] | stop | status" >&2
        exit 2
        ;;
esac
