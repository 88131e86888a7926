"""``ledgit mcp``: the Model Context Protocol face for agents (docs/mcp.md), on the official
SDK: tools with structured output over stdio or streamable HTTP on loopback.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations.
"""
