#!/usr/bin/env bash
# A tmux session with the whole system: staminad in one window, a sweep submitted to it, stamina-tui in another.
#
#   scripts/tmux-session.sh [SWEEP.toml] [STATE_DIR]     (defaults: examples/quickstart.toml, a fresh temp dir)
#
# Attach with `tmux attach -t "$STAMINA_TMUX"` (default session name: stamina). Stop it all with
# `staminad stop --state-dir STATE_DIR; tmux kill-session -t stamina`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sweep="$(realpath "${1:-$here/examples/quickstart.toml}")"
state="${2:-$(mktemp -d /tmp/stamina-tmux.XXXXXX)}"
session="${STAMINA_TMUX:-stamina}"
venv="$here/.venv/bin"
command -v tmux >/dev/null || { echo "tmux-session: error: tmux is not installed" >&2; exit 2; }
[ -x "$venv/staminad" ] || "$here/sb" --help >/dev/null  # bootstraps .venv on first use
[ -f "$sweep" ] || { echo "tmux-session: error: no sweep file $sweep" >&2; exit 2; }
if tmux has-session -t "$session" 2>/dev/null; then
    echo "tmux-session: error: a tmux session named $session exists; set STAMINA_TMUX to another name" >&2
    exit 2
fi

tmux new-session -d -s "$session" -n daemon -x 160 -y 48 \
    "$venv/staminad start --state-dir $(printf %q "$state"); echo 'staminad exited'; sleep 3600"
for _ in $(seq 1 300); do  # the daemon binds its socket within a few seconds
    [ -S "$state/staminad.sock" ] && break
    sleep 0.1
done
[ -S "$state/staminad.sock" ] || { echo "tmux-session: error: staminad did not start" >&2; exit 1; }
"$venv/staminad" submit "$sweep" --state-dir "$state"
tmux new-window -t "$session" -n tui "$venv/stamina-tui --state-dir $(printf %q "$state")"
echo "state dir: $state"
echo "attach with: tmux attach -t $session"
