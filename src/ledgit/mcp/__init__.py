"""``ledgit mcp``: the Model Context Protocol face for agents (docs/mcp.md), on the official
SDK: tools with structured output over stdio or streamable HTTP on loopback.

``server`` builds and serves it (stdio, HTTP, the bearer token); ``tools`` holds the tools;
``boards`` the board each call acts on; ``results`` the result shapes and the error mapping.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations,
ledgit.integration.
"""
