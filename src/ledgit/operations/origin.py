"""Where the running ledgit was installed from, and the pip requirement that installs that
same ledgit elsewhere (issue 34): what ``ledgit forge install-workflow`` writes into a CI
workflow, so that CI runs the ledgit its authors run -- never a bare ``pip install ledgit``,
which installs whatever an index holds under that name, or nothing.

The source is the distribution's recorded origin, ``direct_url.json`` (PEP 610, "Recording
the Direct URL Origin of installed distributions"), read with :mod:`importlib.metadata`:

- ``vcs_info``: a VCS URL and the commit installed -> ``ledgit @ git+URL@COMMIT``;
- ``archive_info``: a wheel or sdist from a URL -> ``ledgit @ URL#sha256=HASH``;
- ``dir_info``, or any ``file:`` URL: a path on this machine, which CI cannot reach -> no
  requirement (:attr:`Origin.spec` None; the workflow needs one named by hand);
- no ``direct_url.json``: from an index -> ``ledgit==VERSION``.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any, NamedTuple

from ledgit.core.errors import USAGE, LedgitError

DIST = "ledgit"

VCS, ARCHIVE, LOCAL, INDEX = "vcs", "archive", "local", "index"


class Origin(NamedTuple):
    """Where an installation came from: ``kind`` (:data:`VCS`, :data:`ARCHIVE`,
    :data:`LOCAL`, :data:`INDEX`), the pip requirement installing the same revision
    (``spec``; None for a local path) and ``where``, for a person (a URL, a path, an index)."""

    kind: str
    spec: str | None
    where: str


def origin_of(direct_url: str | None, version: str, name: str = DIST) -> Origin:
    """The :class:`Origin` of distribution ``name`` at ``version`` whose ``direct_url.json``
    text is ``direct_url`` (None: there is none, an index install). Raises LedgitError exit 2
    for a file that is not PEP 610's JSON."""
    if direct_url is None:
        return Origin(INDEX, f"{name}=={version}", "a package index")
    try:
        data: Any = json.loads(direct_url)
        url = data["url"]
        if not isinstance(url, str) or not url:
            raise ValueError("url")
    except (ValueError, KeyError, TypeError):
        raise LedgitError(f"{name}'s direct_url.json (PEP 610) is not readable: "
                          f"{direct_url[:80]!r}", USAGE) from None
    local = url.startswith("file:")
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("commit_id") and not local:
        subdirectory = data.get("subdirectory")
        tail = f"#subdirectory={subdirectory}" if subdirectory else ""
        return Origin(VCS, f"{name} @ {vcs.get('vcs', 'git')}+{url}@{vcs['commit_id']}{tail}",
                      url)
    archive = data.get("archive_info")
    if isinstance(archive, dict) and not local:
        digest = (archive.get("hashes") or {}).get("sha256")
        if not digest and str(archive.get("hash", "")).startswith("sha256="):
            digest = archive["hash"].removeprefix("sha256=")
        return Origin(ARCHIVE, f"{name} @ {url}" + (f"#sha256={digest}" if digest else ""),
                      url)
    how = "editable" if (data.get("dir_info") or {}).get("editable") else "not editable"
    return Origin(LOCAL, None, f"{url.removeprefix('file://')} ({how})")


def installed_origin(name: str = DIST) -> Origin:
    """The :class:`Origin` of the installed distribution ``name`` (this ledgit by default).
    Raises LedgitError exit 2 when it is not installed (a source tree on ``sys.path``)."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise LedgitError(f"{name} is not installed as a distribution here (run from a "
                          f"source tree?): give its source by hand", USAGE) from None
    return origin_of(dist.read_text("direct_url.json"), dist.version, name)


def with_extra(spec: str, extra: str, name: str = DIST) -> str:
    """``spec`` (as :func:`origin_of` writes it) asking for ``extra`` too: ``NAME[EXTRA] @
    URL`` or ``NAME[EXTRA]==VERSION``; another form is returned as it is."""
    for sep in (" @ ", "=="):
        if spec.startswith(name + sep):
            return f"{name}[{extra}]{spec[len(name):]}"
    return spec


def checked_spec(spec: str) -> str:
    """A requirement named by hand (``--ledgit-spec``), stripped. Raises LedgitError exit 2
    for one that is empty, more than one line, holds ``${{`` (a GitHub expression, which
    the workflow would evaluate) or a quote, or names no version or source (a bare name
    installs whatever an index holds under it)."""
    text = spec.strip()
    if not text or "\n" in text or "\r" in text:
        raise LedgitError("--ledgit-spec: one pip requirement on one line, e.g. "
                          "'ledgit @ git+https://github.com/OWNER/ledgit@COMMIT'", USAGE)
    if "${{" in text or '"' in text or "\\" in text:
        raise LedgitError(f"--ledgit-spec {text!r}: no '${{{{', quote or backslash in it",
                          USAGE)
    if text.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise LedgitError(f"--ledgit-spec {text!r}: names no version or source; pin it "
                          f"({text}==VERSION, or NAME @ URL)", USAGE)
    return text
