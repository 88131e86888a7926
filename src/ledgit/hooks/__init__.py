"""What Git itself runs (githooks(5), gitattributes(5)): the hook entry points and the merge
driver. Git runs these many times per rebase, so they stay import-light: the driver imports
only the core.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations,
ledgit.integration.
"""
