#!/bin/sh
# Server launcher: sh server.sh CONTROL PORT [UID:GID]
# Records its pid (the server's process group) and, when the server ends, its exit status in CONTROL;
# the agent's `bash run_server.sh PORT` runs as UID:GID (setpriv), so it can forge neither.
control="$1"
port="$2"
as="${3:-}"
echo $$ > "$control/server.pid"
if [ -n "$as" ]; then
    setpriv --reuid="${as%%:*}" --regid="${as##*:}" --clear-groups bash run_server.sh "$port" \
        < /dev/null > "$control/server.log" 2>&1
else
    bash run_server.sh "$port" < /dev/null > "$control/server.log" 2>&1
fi
echo $? > "$control/server.exit"
