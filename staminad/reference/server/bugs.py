"""The reference server's bug names: each switches on one mutant's mistake (config `bugs`, `--bug` of the oracle).

Each is a bug of the mutant catalogue (`staminad.reference.mutants`) that the server, not the agent, makes;
the modules of this package test for it by name where the mistake is made.
"""

from __future__ import annotations

SERVER_BUGS = (
    frozenset(
        {
            "accept-null",
            "default-required",
            "no-cascade",
            "old-endpoint-alive",
            "rounded-avg",
            "zero-for-empty",
            "wrong-state-422",
            "swap-400-409",
            "no-ref-effects",
            "500-on-wrong-type",
            "case-insensitive-enums",
            "exclusive-bounds",
            "invalid-calendar",
            "patch-rejects-id",
        }
    )
    | frozenset(
        {  # crud, validation, types, removals
            "drop-null-keys",
            "optional-required",
            "required-not-enforced",
            "null-means-default",
            "create-echoes-body",
            "malformed-json-500",
            "non-object-body-500",
            "integral-float-rejected",
            "bool-is-number",
            "numeric-strings",
            "integer-accepts-fraction",
            "length-bytes",
            "leap-day-always",
            "hour-24",
            "iso-format-accepted",
            "zero-bound-ignored",
            "enum-any-string",
            "patch-no-validation",
            "patch-not-atomic",
            "patch-upserts",
            "duplicate-overwrites",
            "missing-id-generated",
            "numeric-id-accepted",
            "loose-ids",
            "list-envelope",
            "read-missing-null",
            "delete-unknown-ok",
            "soft-delete-listed",
            "reset-noop",
            "no-cascade-single",
            "no-cascade-list",
            "cascade-deletes-referrers",
            "unchecked-reference",
            "unchecked-reference-list",
            "ref-list-null-accepted",
            "snake-endpoints",
            "stores-unknown-keys",
        }
    )
    | frozenset(
        {  # actions and analytics: guards, effects, computations
            "null-guard-skipped",
            "all-skips-null-items",
            "set-skips-null",
            "compute-null-as-zero",
            "for-each-empty-500",
            "all-null-crash",
            "count-empty-null",
            "removed-field-validated",
            "null-ne-holds",
            "null-as-zero-order",
            "null-check-falsy",
            "any-empty-holds",
            "all-empty-fails",
            "first-guard-only",
            "guard-sum-empty-null",
            "increase-null-as-zero",
            "compute-null-writes-null",
            "effects-clamped",
            "on-ref-null-crash",
            "for-each-first-only",
            "effects-reversed",
            "unknown-id-400",
            "guards-before-state",
            "stale-action-body",
            "null-as-zero",
            "int-as-float",
            "sum-empty-null",
            "avg-floor",
        }
    )
    | frozenset(
        {  # lenient parsers and set-minded stores (`inputmutants`)
            "non-finite-accepted",
            "strptime-dates",
            "ref-list-deduped",
            "cascade-drops-one",
            "empty-patch-rejected",
            "guard-at-literal-fails",
            "guard-at-literal-holds",
            "count-distinct",
            "for-each-distinct",
            "patch-stale-bounds",
        }
    )
)
