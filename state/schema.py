"""SQL migrations, applied in order; `PRAGMA user_version` records how many have run."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sweeps (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE configurations (
        id INTEGER PRIMARY KEY,
        sweep_id TEXT NOT NULL REFERENCES sweeps(id),
        name TEXT NOT NULL,
        agent TEXT NOT NULL,
        retries INTEGER NOT NULL,
        feedback TEXT NOT NULL,
        UNIQUE (sweep_id, name)
    );
    CREATE TABLE scenarios (
        id INTEGER PRIMARY KEY,
        config_id INTEGER NOT NULL REFERENCES configurations(id),
        seed INTEGER NOT NULL,
        status TEXT NOT NULL,
        turns_passed INTEGER NOT NULL DEFAULT 0,
        reason TEXT NOT NULL DEFAULT '',
        sandbox TEXT NOT NULL DEFAULT '{}',
        updated_at REAL NOT NULL,
        UNIQUE (config_id, seed)
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        scenario_id INTEGER NOT NULL REFERENCES scenarios(id),
        turn INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        infra_try INTEGER NOT NULL,
        phase TEXT NOT NULL,
        prompt_kind TEXT NOT NULL,
        prompt TEXT NOT NULL,
        launched_at REAL NOT NULL,
        harness_exit INTEGER,
        harness_signal INTEGER,
        harness_seconds REAL,
        marker_latency REAL,
        server_seconds REAL,
        suite_seconds REAL,
        teardown_seconds REAL,
        outcome TEXT,
        infra_kind TEXT,
        categories TEXT,
        passed_tests INTEGER,
        total_tests INTEGER,
        results BLOB,
        feedback TEXT,
        UNIQUE (scenario_id, turn, attempt, infra_try)
    );
    CREATE TABLE infra_events (
        id INTEGER PRIMARY KEY,
        scenario_id INTEGER NOT NULL REFERENCES scenarios(id),
        turn INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX attempts_by_scenario ON attempts(scenario_id, turn, attempt, infra_try);
    """,
    # 2: when an attempt's outcome was recorded, so per-turn engine overhead can be measured.
    "ALTER TABLE attempts ADD COLUMN finished_at REAL;",
    # 3: lines of code in the workspace after the harness ran (dependencies excluded).
    "ALTER TABLE attempts ADD COLUMN loc INTEGER;",
    # 4: the horizon N of the sweep's scenarios (a pack fixes it, so the config alone may not say).
    "ALTER TABLE sweeps ADD COLUMN turns INTEGER;",
    # 5: extra infra retries an operator granted to a scenario that had used up its own.
    "ALTER TABLE scenarios ADD COLUMN infra_grant INTEGER NOT NULL DEFAULT 0;",
    # 6: every model call that went through the gateway, attributed to its attempt.
    """
    CREATE TABLE llm_calls (
        id INTEGER PRIMARY KEY,
        scenario_id INTEGER NOT NULL REFERENCES scenarios(id),
        attempt_id INTEGER REFERENCES attempts(id),
        turn INTEGER NOT NULL,
        api TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        status INTEGER NOT NULL,
        seconds REAL NOT NULL,
        waited REAL NOT NULL,
        streamed INTEGER NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX llm_calls_by_scenario ON llm_calls(scenario_id);
    """,
    # 7: the turns a scenario passed, countable from the index alone (the engine asks at every step).
    "CREATE INDEX attempts_passed ON attempts(scenario_id, turn) WHERE outcome = 'pass';",
    # 8: the time a sweep spent paused (the pause under way counted from paused_at), left out of its ETA.
    """
    ALTER TABLE sweeps ADD COLUMN paused_seconds REAL NOT NULL DEFAULT 0;
    ALTER TABLE sweeps ADD COLUMN paused_at REAL;
    """,
    # 9: the tail of the server log of the start that tested the attempt (the log file holds only the latest).
    "ALTER TABLE attempts ADD COLUMN server_log TEXT;",
    # 10: the workspace snapshot taken after a tested attempt (a sandbox off the daemon's disk): its size in
    # bytes, or why it was skipped.
    """
    ALTER TABLE attempts ADD COLUMN snapshot_bytes INTEGER;
    ALTER TABLE attempts ADD COLUMN snapshot_skipped TEXT;
    """,
    # 11: why a sweep ended in `error`, in one line ('' otherwise), so `status` can say it without the log.
    "ALTER TABLE sweeps ADD COLUMN reason TEXT NOT NULL DEFAULT '';",
    # 12: when an engine last took up the attempt again after a restart: its turn watchdog runs from then, since
    # the time no engine ran is not the agent's (no gateway to its model, nobody to read its marker).
    "ALTER TABLE attempts ADD COLUMN resumed_at REAL;",
    # 13: a model call whose provider reported no usage: its tokens (and cost) were estimated from its bytes.
    "ALTER TABLE llm_calls ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;",
    # 14: the model a configuration runs on (models are a matrix axis); '' for one stored before, or none.
    "ALTER TABLE configurations ADD COLUMN model TEXT NOT NULL DEFAULT '';",
    # 15: a model call's money that is not exact: no price for its model (its cost is unknown, not $0); abandoned
    # (the endpoint got it, nobody saw it through: estimated); the harness's compaction of its context. And the
    # scenarios per configuration a sweep lays out (lazily): every view's totals count those not yet recorded.
    """
    ALTER TABLE sweeps ADD COLUMN planned INTEGER;
    ALTER TABLE llm_calls ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE llm_calls ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE llm_calls ADD COLUMN compaction INTEGER NOT NULL DEFAULT 0;
    """,
)
