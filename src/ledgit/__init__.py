"""ledgit: task state for coding agents, kept in Git, merged by Git."""

__version__ = "0.1.0"
