"""Held-out buggy servers: the reference server's logic with one plausible mistake, written by hand.

None of these is a `--bug` flag of the reference server, so the suite is not tuned to them; each
breaks one README rule of the action or analytics paths the way a coding agent might. `SERVERS`
maps a name to (the rule it breaks, the App subclass, a predicate saying when a state can show it).
"""
