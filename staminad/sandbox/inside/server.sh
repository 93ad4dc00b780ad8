#!/bin/sh
# Server launcher: sh server.sh CONTROL PORT [UID:GID [LOG_LIMIT]]
# Records its pid (the server's process group) and, when the server ends, its exit status in CONTROL;
# the agent's `bash run_server.sh PORT` runs as UID:GID (setpriv), so it can forge neither. In a container
# the server's output reaches CONTROL/server.log through logcap.py, which keeps the log within LOG_LIMIT
# (twice it at most): the output is the agent's, and the log is on the host's disk.
control="$1"
port="$2"
as="${3:-}"
limit="${4:-0}"
echo $$ > "$control/server.pid"
if [ -n "$as" ] && [ "$limit" -gt 0 ]; then
    { setpriv --reuid="${as%%:*}" --regid="${as##*:}" --clear-groups bash run_server.sh "$port" < /dev/null 2>&1
      echo $? > "$control/server.exit"; } | python3 -I -S "$(dirname "$0")/logcap.py" "$control/server.log" "$limit"
elif [ -n "$as" ]; then
    setpriv --reuid="${as%%:*}" --regid="${as##*:}" --clear-groups bash run_server.sh "$port" \
        < /dev/null > "$control/server.log" 2>&1
    echo $? > "$control/server.exit"
else
    bash run_server.sh "$port" < /dev/null > "$control/server.log" 2>&1
    echo $? > "$control/server.exit"
fi
