"""Every question asked of Git (DESIGN §8): one small function per question, through the
``git`` CLI or pygit2 -- the repository's places and config, the index, blobs and trees at a
revision, the conflict stages, the operation in progress. Knows nothing of boards.

May import: ledgit.core.
"""
