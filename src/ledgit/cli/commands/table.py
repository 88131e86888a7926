"""The command table (DESIGN §9): every task command as one :class:`ledgit.cli.argspec.Spec` row
-- its words, its function (``"module:function"``), its help and its parameters, declared once
and read by both parsers (click in :mod:`ledgit.cli.main`, :func:`ledgit.cli.argspec.parse` on the
fast path; tests/test_argspec.py checks that they agree).

The table imports no command module: a command's module is imported when it runs
(:func:`ledgit.cli.commands.running.run_spec`), so ``ledgit get`` pays only for a read.
"""

from __future__ import annotations

from ledgit.cli.argspec import ARG, FLAG, MULTI, VALUE, Param, Spec

# Copies of ledgit.core.record's enumerations, so that parsing a command line does not import YAML
# (tests/test_cli.py checks that they agree).
STATUSES = ("open", "in_progress", "waiting", "monitoring", "parked", "done", "dropped",
            "archived")
OUTCOME_KINDS = ("drop", "watch", "park", "no_publish", "no_change", "blocked", "done")
# A kind that names another ended status contradicts it (ledgit.core.lifecycle): complete takes
# neither drop nor park, drop neither done nor park; help lists only what is taken.
COMPLETE_OUTCOMES = tuple(k for k in OUTCOME_KINDS if k not in ("drop", "park"))
DROP_KINDS = tuple(k for k in OUTCOME_KINDS if k not in ("done", "park"))
ITEM_KINDS = ("fact", "decision", "question", "blocker", "rejected", "artifact", "next_step")
SEARCH_FIELDS = ("title", "body", "response", "items")
TRUSTS = ("candidate", "locked", "deprecated")

# --------------------------------------------------------------------------- shared params

JSON = Param(FLAG, "--json", "as_json", help="Print JSON (shapes: ledgit help json).")
BY = Param(VALUE, "--by", metavar="WHO",
           help="Actor (default: $LEDGIT_ACTOR, else git user.name).")
EXPECT = Param(VALUE, "--expect", metavar="REV",
               help="Refuse (exit 3) unless the task is at this revision "
                    "(full or >= 12 hex prefix).")
MUTATION = (BY, EXPECT, JSON)  # a command that writes one task
TASK = Param(ARG, "task")
OWNER = Param(VALUE, "--owner", help="Business owner (accepts writebacks).")
WORKER = Param(VALUE, "--worker", help="Default executor.")
NOTE = Param(VALUE, "--note", help="Note for the event.")
PRIORITY = Param(VALUE, "--priority", int_range=(0, 4), help="0 (most urgent) to 4.")
ALLOW_UNKNOWN_DEPS = Param(FLAG, "--allow-unknown-deps",
                           help="Keep a dependency no board holds as written (it may be on "
                                "another branch; verify warns of it).")
TRUSTED = Param(FLAG, "--trusted", help="Act as a trusted workflow (not the owner).")
EVIDENCE = Param(VALUE, "--evidence", help="Verification evidence.")
LIMIT = Param(VALUE, "--limit", int_range=(1, None), help="At most N tasks.")
CURSOR = Param(VALUE, "--cursor", metavar="CURSOR",
               help="Go on after the page whose JSON gave this next_cursor (same filters).")
LABEL_FILTER = Param(MULTI, "--label", help="Only tasks with this label (repeatable).")
OWNER_FILTER = Param(VALUE, "--owner", help="Only tasks with this owner.")
WORKER_FILTER = Param(VALUE, "--worker", help="Only tasks with this worker.")
LIST_FILTERS = (  # list, search
    Param(MULTI, "--status", choices=STATUSES, help="Only this status (repeatable)."),
    OWNER_FILTER, WORKER_FILTER, LABEL_FILTER,
    Param(VALUE, "--outcome", choices=OUTCOME_KINDS,
          help="Only tasks whose outcome has this kind."),
    Param(FLAG, "--all", "include_all", help="Include archived tasks."),
    Param(VALUE, "--sort", choices=("asc", "desc"), default="desc", show_default=True,
          help="Order by last_modified."),
    LIMIT, CURSOR,
)
PROJECT = Param(VALUE, "--project", metavar="ALIAS",
                help="Act on the registered board ALIAS (see: ledgit project list).")
PROJECTS = Param(FLAG, "--projects", help="This board and every registered one; each row "
                                          "names its board.")
_NO_PROJECT = ("init", "project", "forge", "sync")  # commands that do not take --project


def _spec(name: str, run: str, help: str, *params: Param) -> Spec:
    """The row of the command ``name`` (its words, space-separated), run by ``run``
    (``"module:function"`` in this package); every task command also takes ``--project
    ALIAS`` (taken by :func:`ledgit.cli.commands.running.run_spec`, not by the function)."""
    if name.split()[0] not in _NO_PROJECT:
        params = (*params, PROJECT)
    return Spec(tuple(name.split()), f"ledgit.cli.commands.{run}", help, params)


def _specs() -> dict[tuple[str, ...], Spec]:
    specs = [
        _spec("init", "init:init_cmd",
              "Create a board (.ledgit/) in PATH (default: the top of the Git work tree, "
              "else the current directory). Idempotent.",
              Param(ARG, "path", required=False, path="dir"),
              Param(VALUE, "--prefix", "id_prefix", default="T", show_default=True,
                    help="Task id prefix (ids look like T-k3v9q2mz7a)."),
              JSON),
        _spec("create", "writes:create_cmd", "Create a task titled TITLE; prints its id.",
              Param(ARG, "title"),
              Param(VALUE, "--body", help="Markdown body text."),
              Param(VALUE, "--body-file", path="file",
                    help="Read the body from a file ('-' = stdin)."),
              Param(VALUE, "--goal", help="The goal (becomes the '## Goal' section)."),
              Param(MULTI, "--accept", metavar="TEXT",
                    help="One acceptance criterion (repeatable; the '## Acceptance' "
                         "section)."),
              PRIORITY,
              Param(MULTI, "--depends", metavar="ID", help="Dependency (repeatable)."),
              ALLOW_UNKNOWN_DEPS,
              Param(MULTI, "--label", "labels", help="Label (repeatable)."),
              OWNER, WORKER,
              Param(VALUE, "--note", help="Note for the create event."),
              BY, JSON),
        _spec("get", "get:get_cmd",
              "The readout of one task: record, path, revision, claim freshness, UNKNOWNs.",
              TASK,
              Param(FLAG, "--no-body", help="Leave the Markdown body out of the text."),
              JSON),
        _spec("list", "reads:list_cmd",
              "List tasks: the work in play first, then done and dropped (archived only "
              "with --all); newest change first within each.",
              *LIST_FILTERS,
              Param(FLAG, "--ready", help="Only ready tasks (see: ledgit ready)."),
              JSON, PROJECTS),
        _spec("search", "search:search_cmd",
              "Exact, case-insensitive substring search over title, body, response and "
              "items.",
              Param(ARG, "text"),
              Param(MULTI, "--field", "fields", choices=SEARCH_FIELDS,
                    help="Search only this field (repeatable; default: all)."),
              *LIST_FILTERS, JSON),
        _spec("ready", "reads:ready_cmd",
              "Tasks ready to claim: open, every dependency done, no drop/no_change "
              "outcome. Most urgent first (priority, then oldest).",
              OWNER_FILTER, WORKER_FILTER, LABEL_FILTER, LIMIT, CURSOR, JSON, PROJECTS),
        _spec("claim", "lifecycle:claim_cmd",
              "Claim TASK (status in_progress, a lease renewed by heartbeat). Exit 6 if "
              "held.",
              TASK,
              Param(VALUE, "--note",
                    help="What you are about to do (kept verbatim in the claim)."),
              Param(FLAG, "--take-over",
                    help="Take a stale claim, or an expired remote lease, from its holder."),
              Param(FLAG, "--force", help="Claim even though dependencies are not done."),
              Param(FLAG, "--offline",
                    help="Claim locally without the remote lease (unconfirmed until a "
                         "heartbeat takes it)."),
              *MUTATION),
        _spec("heartbeat", "lifecycle:heartbeat_cmd",
              "Renew your claim on TASK. Exit 6 if it is held by someone else or was lost.",
              TASK,
              Param(FLAG, "--offline", help="Renew the local claim only, not the remote "
                                            "lease."),
              *MUTATION),
        _spec("release", "lifecycle:release_cmd",
              "Give up your claim on TASK (in_progress goes back to open).",
              TASK, Param(VALUE, "--note", help="Why (kept in the event)."), *MUTATION),
        _spec("update", "writes:update_cmd",
              "Edit fields of TASK (lifecycle changes have their own commands).",
              TASK,
              Param(VALUE, "--title", help="New title."),
              PRIORITY,
              Param(VALUE, "--response", help="Your account of the work so far."),
              Param(MULTI, "--set", "sets", metavar="FIELD=VALUE",
                    help="Set a field (empty VALUE unsets; x.KEY for extensions; "
                         "repeatable)."),
              Param(MULTI, "--add-commit", "commits", metavar="SHA",
                    help="Add a commit pointer (repeatable)."),
              Param(MULTI, "--depends", metavar="ID", help="Add a dependency (repeatable)."),
              Param(MULTI, "--no-depends", metavar="ID",
                    help="Remove a dependency (repeatable)."),
              ALLOW_UNKNOWN_DEPS,
              Param(MULTI, "--label", help="Add a label (repeatable)."),
              Param(MULTI, "--no-label", help="Remove a label (repeatable)."),
              Param(VALUE, "--next-action", help="The next step."),
              Param(VALUE, "--gate", help="The decision that blocks the next step."),
              OWNER, WORKER, NOTE, *MUTATION),
        _spec("note", "notes:note_cmd",
              "Append a line to TASK's notes (time, actor, text; any status). Notes only "
              "grow, and notes added on two branches merge without a conflict.",
              TASK, Param(ARG, "text"), *MUTATION),
        _spec("complete", "lifecycle:complete_cmd",
              "Mark TASK done with an account of the work (--response, required).",
              TASK,
              Param(VALUE, "--response", help="Your account of the work (required)."),
              Param(VALUE, "--outcome", choices=COMPLETE_OUTCOMES,
                    help="Record a terminal outcome too (e.g. no_change)."),
              Param(VALUE, "--reason", help="Reason for the outcome."),
              *MUTATION),
        _spec("wait", "lifecycle:wait_cmd",
              "Put TASK in waiting (--on required); its claim is released.",
              TASK,
              Param(VALUE, "--on", help="The person, condition or date it waits on "
                                        "(required)."),
              *MUTATION),
        _spec("monitor", "lifecycle:monitor_cmd",
              "Put TASK in monitoring (observe --signal; manufactures no work).",
              TASK,
              Param(VALUE, "--signal", help="The signal to observe (required)."), *MUTATION),
        _spec("park", "lifecycle:park_cmd", "Park TASK with a reason (outcome park).",
              TASK,
              Param(VALUE, "--reason", help="Why it is parked (required)."),
              Param(VALUE, "--reuse", help="What is worth reusing later."), *MUTATION),
        _spec("drop", "lifecycle:drop_cmd",
              "Drop TASK with a reason: a first-class negative result.",
              TASK,
              Param(VALUE, "--reason", help="Why it is dropped (required)."),
              Param(VALUE, "--reuse",
                    help="What is worth reusing (a negative result is knowledge)."),
              Param(VALUE, "--kind", choices=DROP_KINDS, default="drop", show_default=True,
                    help="Outcome kind (e.g. no_change, no_publish)."),
              *MUTATION),
        _spec("archive", "lifecycle:archive_cmd",
              "Archive TASK (clears claim, waiting_on, next_action; hidden from list).",
              TASK, NOTE, *MUTATION),
        _spec("reopen", "lifecycle:reopen_cmd",
              "Reopen TASK (its earlier outcome is kept as a candidate item).",
              TASK, NOTE, *MUTATION),
        _spec("item add", "items:item_add_cmd",
              "Add a state item to TASK (candidate unless --lock); prints the item id.",
              TASK,
              Param(VALUE, "--kind", choices=ITEM_KINDS, required=True, help="Item kind."),
              Param(VALUE, "--text", required=True, help="What the item says."),
              Param(VALUE, "--why",
                    help="Why (for a rejected option: why it was rejected)."),
              EVIDENCE,
              Param(FLAG, "--lock", help="Add it locked (owner or --trusted only)."),
              Param(FLAG, "--trusted", help="Act as a trusted workflow."),
              *MUTATION),
        _spec("item list", "file_reads:item_list_cmd",
              "List TASK's state items (all trust levels unless --trust).",
              TASK,
              Param(MULTI, "--trust", "trusts", choices=TRUSTS,
                    help="Only items with this trust (repeatable)."),
              JSON),
        _spec("accept", "items:accept_cmd",
              "Lock candidate ITEMS of TASK (the owner, or --trusted).",
              TASK,
              Param(ARG, "items", nargs=-1, required=True),
              TRUSTED, *MUTATION),
        _spec("revise", "items:revise_cmd",
              "A state revision: a new item superseding ITEMs (they become deprecated).",
              TASK,
              Param(MULTI, "--supersedes", required=True, metavar="ITEM",
                    help="Item the revision supersedes (repeatable)."),
              Param(VALUE, "--text", required=True, help="The revised statement."),
              Param(VALUE, "--kind", choices=ITEM_KINDS,
                    help="Kind of the new item (default: the superseded item's)."),
              Param(VALUE, "--why", help="Why it changed."),
              EVIDENCE,
              Param(FLAG, "--trusted",
                    help="Act as a trusted workflow (locks the new item)."),
              *MUTATION),
        _spec("writeback", "items:writeback_cmd",
              "A worker's writeback: lands as candidate items until the owner accepts it.",
              TASK,
              Param(MULTI, "--set", "sets", metavar="FIELD=VALUE",
                    help="A field change to propose (repeatable)."),
              Param(MULTI, "--artifact", "artifacts", help="An artifact (repeatable)."),
              Param(VALUE, "--evidence", help="Verification evidence (required)."),
              Param(VALUE, "--gate", help="The remaining gate."),
              Param(FLAG, "--trusted",
                    help="Act as a trusted workflow (applies at once)."),
              *MUTATION),
        _spec("handoff", "reads:handoff_cmd",
              "A compact handoff packet: goal, acceptance, status, next action, gate, "
              "locked items.",
              TASK, JSON),
        _spec("history", "file_reads:history_cmd", "TASK's events, oldest first.", TASK,
              Param(VALUE, "--limit", int_range=(1, None), help="At most N events."), CURSOR,
              JSON),
        _spec("record", "audit:record_cmd",
              "Record a hand edit of TASK's file as an 'edit' event (refused, exit 2, when "
              "the file holds what ledgit will not keep: YAML comments, custom quoting or "
              "layout).",
              TASK,
              Param(FLAG, "--normalize",
                    help="Accept the canonical form: record, and rewrite the file without "
                         "its YAML comments, custom quoting or layout."),
              BY, JSON),
        _spec("revert", "revert:revert_cmd",
              "Undo EVENT of TASK with a new 'revert' event (like git revert; EVENT: an id "
              "or a unique prefix of >= 4 hex digits, as ledgit history shows).",
              TASK, Param(ARG, "event"), *MUTATION),
        _spec("verify", "audit:verify_cmd",
              "Check records and history continuity; exit 1 with one line per problem.",
              Param(ARG, "tasks", nargs=-1),
              Param(FLAG, "--all", "check_all", help="Every task (the default without IDs)."),
              JSON),
        _spec("project add", "project:project_add_cmd",
              "Register another board as ALIAS (team: .ledgit/projects.yaml; --user: "
              "yours).",
              Param(ARG, "alias"), Param(ARG, "path"),
              Param(VALUE, "--ref", help="Read the other board at this Git ref (as a "
                                         "submodule pins a commit); read-only then."),
              Param(FLAG, "--user", help="Register it for you only (your user config), "
                                         "not in the board's versioned projects.yaml."),
              JSON),
        _spec("project list", "project:project_list_cmd",
              "The boards this board may reach, by alias, and whether each can be read now.",
              JSON),
        _spec("project remove", "project:project_remove_cmd",
              "Remove the registration ALIAS (team, or --user: yours).",
              Param(ARG, "alias"),
              Param(FLAG, "--user", help="Remove it from your user config."), JSON),
        _spec("lease list", "leases:lease_list_cmd",
              "The claim leases on the board's remote (docs/leases.md): holder, expiry, "
              "end markers; fetched now.",
              Param(FLAG, "--expired", help="Only leases that ran out."),
              Param(FLAG, "--mine", help="Only the leases this clone took; those no claim "
                                         "here guards name the command that ends them."),
              Param(VALUE, "--limit", int_range=(1, None), help="At most N leases."), CURSOR,
              JSON),
        _spec("lease prune", "leases:lease_prune_cmd",
              "Delete the leases that ran out from the remote, each by compare-and-swap on "
              "its expired value.",
              JSON),
        _spec("sync", "sync:sync_cmd",
              "Commit the board's changes, fetch, merge task files and histories field by "
              "field in this one process (other files as Git merges them), check, and push "
              "with a lease on the remote branch's old tip; a lost push race fetches and "
              "merges again. Exit 1 on a conflict Git stopped on (files named), 5 after "
              "--tries lost races, 69 when the remote cannot be reached.",
              Param(VALUE, "--remote", metavar="NAME",
                    help="The remote (default: the branch's upstream's, else origin)."),
              Param(VALUE, "--branch", metavar="B",
                    help="Also bring in this branch of the remote (a branch per agent: "
                         "--branch main); the push goes to the branch's own upstream."),
              Param(FLAG, "--rebase", help="Rebase the local commits onto the upstream."),
              Param(FLAG, "--merge", help="Merge the upstream (default: pull.rebase, else "
                                          "rebase)."),
              Param(VALUE, "--message", metavar="TEXT",
                    help="The message of the commit of the board's changes."),
              Param(FLAG, "--no-push", help="Commit, fetch and integrate; push nothing."),
              Param(VALUE, "--tries", int_range=(1, 100), default=10, show_default=True,
                    help="Lost push races before giving up (exit 5)."),
              JSON),
        _spec("forge update", "forge:forge_update_cmd",
              "Bring pull request BRANCHes up to date with --base by ledgit's merge driver, "
              "in a temporary worktree, and push each with a lease on its old tip (a forge "
              "never runs the driver). Exit 1 when something besides task files conflicts "
              "(left untouched, files named).",
              Param(ARG, "branches", nargs=-1),
              Param(VALUE, "--base", required=True, metavar="BRANCH",
                    help="The branch they merge into, as named on the remote."),
              Param(VALUE, "--remote", default="origin", show_default=True, metavar="NAME",
                    help="The forge's remote."),
              Param(FLAG, "--rebase", help="Rebase onto the base instead of merging it."),
              Param(FLAG, "--all", "update_every",
                    help="Every branch of the remote that is behind the base."),
              Param(FLAG, "--conflicting",
                    help="Only branches whose plain line merge with the base would "
                         "conflict (what a forge cannot merge)."),
              JSON),
        _spec("forge install-workflow", "forge:forge_install_workflow_cmd",
              "Write the GitHub workflows: the gate (.github/workflows/ledgit.yml) and forge "
              "update on pull requests (ledgit-forge.yml), installing ledgit from where this "
              "one came from, pinned to its revision.",
              Param(VALUE, "--base", default="main", show_default=True, metavar="BRANCH",
                    help="The base branch whose pushes start forge update."),
              Param(VALUE, "--ledgit-spec", "ledgit_spec", metavar="REQUIREMENT",
                    help="Install ledgit from this pip requirement (default: this ledgit's "
                         "origin: a VCS URL at its commit, a wheel's URL, or NAME==VERSION; "
                         "needed when it was installed from a local path)."),
              Param(VALUE, "--only", choices=("gate", "update"), metavar="gate|update",
                    help="Write one of the two workflows."),
              Param(FLAG, "--print-spec", "print_spec",
                    help="Print the requirement the workflows would install and write "
                         "nothing."),
              Param(FLAG, "--force", help="Overwrite different files there."),
              JSON),
        _spec("cache rebuild", "cache:cache_rebuild_cmd",
              "Rebuild the index from the task files.", JSON),
        _spec("cache status", "cache:cache_status_cmd",
              "Where the index is and what it holds.", JSON),
    ]
    return {s.name: s for s in specs}


SPECS = _specs()
# Groups: name -> help. Their subcommands are the specs named (group, word).
GROUPS = {
    "item": "State items: facts, decisions, questions, blockers, rejected options, artifacts.",
    "cache": "The per-worktree index (derived; safe to delete).",
    "lease": "Claim leases on the board's remote (docs/leases.md).",
    "project": "Other boards this board reaches: --project ALIAS on task commands, ALIAS:ID deps.",
    "forge": "Pull requests on a forge: merged with ledgit's driver by a bot (docs/git.md).",
}
# What ``python -m ledgit`` runs without click: every spec except ``verify``, whose command
# line belongs to ledgit.cli.gitcli (it adds the CI gate's --rev/--range/--format).
FAST = {name: spec for name, spec in SPECS.items() if name != ("verify",)}
