"""Write a YYLO Ledger board directly with yylo-ledger's own library (run by ITS interpreter).

Usage: ``<yylo venv>/bin/python bench/yylo_board.py ROOT TASKS.json``

``ROOT`` must already hold ``.juno_task/tasks/config.json`` (any ``yylo-ledger`` command creates
it). ``TASKS.json`` is a list of ``{id, status, body, response, tags, priority, created,
modified}``. Each task is written the way ``TaskStorage.write_task`` writes it -- ``Task`` model,
``_metadata_record``, ``MarkdownTaskCodec.dumps`` -- plus its genesis ledger event built by
``TaskLedger.prepare`` (a create snapshot, hash-chained), but without the per-task board lock,
fsyncs, git creation-context capture and cache upsert that make 10,000 CLI creates take hours.
The first CLI command afterwards builds yylo's query cache (the harness does that untimed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    from yylo_ledger.codec import plain_value
    from yylo_ledger.config import Config
    from yylo_ledger.ledger import _canonical
    from yylo_ledger.models import Task
    from yylo_ledger.storage import TaskStorage

    root = Path(argv[1]).resolve()
    tasks: list[dict[str, Any]] = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
    config = Config(str(root / ".juno_task" / "tasks" / "config.json"))
    storage = TaskStorage(config)
    cfg = config.to_dict()
    for t in tasks:
        kwargs: dict[str, Any] = dict(
            id=t["id"], status=t["status"], body=t["body"], agent_response=t["response"],
            created_date=t["created"], last_modified=t["modified"], feature_tags=t["tags"],
            fields={"priority": t["priority"]})
        try:
            task = Task(config=cfg, **kwargs)
        except Exception:  # noqa: BLE001 - a real body the validator dislikes: keep it verbatim
            task = Task(config=cfg, validate=False, **kwargs)
        record = storage._metadata_record(task.to_dict())
        path = storage.task_path(record["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(storage.codec.dumps(record), encoding="utf-8")
        current = storage._read_path(path)
        digest = storage.normalized_hash(current)
        event = storage.ledger.prepare(record["id"], "create", "cli", None, digest, {},
                                       plain_value(current), True)
        directory = storage.ledger.directory(record["id"])
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "000001.ndjson").write_bytes(_canonical(event) + b"\n")
    print(len(tasks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
