"""The board on disk (DESIGN §2, §6): finding it, its files and names, its config, the
per-task locks, the write path (history first, then the record), checking and repairing it,
and the per-worktree SQLite index with its freshness check and watcher.

May import: ledgit.core, ledgit.git.
"""
