"""The pure core: the task record, its history, the merge policy (DESIGN §3-§7).

Holds the record type and its text form (record, schema, canonread, frontmatter, render,
layoutloss), the hash-linked history (history, patch, revision, canonjson), the merge policy
(merge), the lifecycle rules and the readout (lifecycle, readout, timestamps), and the value
an operation returns (change). No I/O: nothing here opens a file, runs a process or asks Git.

May import: nothing of ledgit above the core.
"""
