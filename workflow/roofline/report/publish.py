"""Publish reports/wiki/ to a git-backed wiki: clone (or reuse) the wiki repository, replace the pages this tool
owns, commit only when something changed, push.

Credentials come from the user's git setup (SSH keys, credential helpers), never from config.yaml; git is run with
GIT_TERMINAL_PROMPT=0 so that a missing credential fails at once instead of waiting for a password. The pages this
tool wrote last time are listed in OWNED inside the wiki repository: those (and only those) are replaced, so pages
written by people stay, and pages of models no longer configured go. Any failure raises PublishError with one line
that says why; the local bundle is never touched.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .wiki import bundle_files

#: the list of files this tool owns in the wiki repository (one path per line)
OWNED = ".roofline-wiki"
#: author of the commit when the user's git setup has none (an identity, not a credential)
FALLBACK_IDENTITY = ("-c", "user.name=llm-roofline", "-c", "user.email=llm-roofline@localhost")


class PublishError(RuntimeError):
    """Publishing failed; the message is one line."""


def _git(*args: str, cwd: Path, what: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode:
        raise PublishError(f"{what} failed: {_reason(done)}")
    return done.stdout


def _reason(done: subprocess.CompletedProcess) -> str:
    """The line of git's output that says why: a fatal error (no such repository, authentication), a rejected
    ref with what the remote said, else the last error."""
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith("fatal:")]
    rejected = [line.lstrip("! ") for line in lines if line.startswith("! [")]
    remote = [line.removeprefix("remote:").strip() for line in lines if line.startswith("remote:")]
    remote = [line for line in remote if line]
    if fatal:
        return fatal[-1]
    if rejected:
        return rejected[-1] + (f"; the remote says: {remote[-1]}" if remote else "")
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [f"git exited with status {done.returncode}"])[-1]


def checkout(remote: str, branch: str, clone: Path) -> None:
    """`clone` holds `remote` at the tip of `branch` (a fresh clone, or the previous one fetched and reset); a
    branch the remote does not have yet starts empty."""
    origin = ""
    if (clone / ".git").is_dir():
        try:
            origin = _git("remote", "get-url", "origin", cwd=clone, what="reading the clone's remote").strip()
        except PublishError:
            origin = ""
    if origin != remote:
        shutil.rmtree(clone, ignore_errors=True)
        clone.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--quiet", remote, str(clone), cwd=clone.parent, what=f"cloning {remote}")
    else:
        _git("fetch", "--quiet", "origin", cwd=clone, what=f"fetching {remote}")
    remote_branch = _git("ls-remote", "--heads", "origin", branch, cwd=clone, what=f"reading {remote}").strip()
    if remote_branch:
        _git("checkout", "--quiet", "-B", branch, f"origin/{branch}", cwd=clone, what=f"checking out {branch}")
        _git("reset", "--quiet", "--hard", f"origin/{branch}", cwd=clone, what=f"resetting to {branch}")
    else:  # a new branch (or an empty repository): start from nothing
        _git("checkout", "--quiet", "--orphan", branch, cwd=clone, what=f"creating {branch}")
        _git("rm", "-r", "-q", "--cached", "--ignore-unmatch", ".", cwd=clone, what="emptying the new branch")
    _git("clean", "-q", "-f", "-d", cwd=clone, what="cleaning the clone")


def replace_pages(bundle: Path, clone: Path) -> list[str]:
    """Delete the files listed in OWNED, copy the bundle in, list its files in OWNED; returns them."""
    owned = clone / OWNED
    if owned.is_file():
        for name in owned.read_text().splitlines():
            path = (clone / name).resolve()
            if name and path.is_relative_to(clone.resolve()) and path.is_file():
                path.unlink()
    files = bundle_files(bundle)
    for name in files:
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(bundle / name, clone / name)
    owned.write_text("".join(f"{name}\n" for name in files))
    return files


def commit(clone: Path, message: str) -> bool:
    """Commit everything when something changed; False when nothing did."""
    _git("add", "-A", cwd=clone, what="staging the pages")
    if not _git("status", "--porcelain", cwd=clone, what="reading the clone's status").strip():
        return False
    identity = () if _has_identity(clone) else FALLBACK_IDENTITY
    _git(*identity, "commit", "--quiet", "-m", message, cwd=clone, what="committing")
    return True


def _has_identity(clone: Path) -> bool:
    try:
        return bool(_git("config", "user.email", cwd=clone, what="reading user.email").strip())
    except PublishError:
        return False


def publish(bundle: str | Path, remote: str, branch: str, message: str, clone: str | Path) -> str:
    """Publish `bundle` to `branch` of `remote` through the working clone `clone`; returns a one-line report."""
    bundle, clone = Path(bundle), Path(clone).resolve()
    checkout(remote, branch, clone)
    files = replace_pages(bundle, clone)
    changed = commit(clone, message)
    ahead = _git("rev-list", "--count", f"origin/{branch}..HEAD", cwd=clone, what="comparing with the remote") \
        if _git("branch", "-r", "--list", f"origin/{branch}", cwd=clone, what="listing branches").strip() else "1"
    if changed or int(ahead or 0):
        _git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=clone, what=f"pushing to {remote}")
        return f"published {len(files)} files to {remote} ({branch})"
    return f"nothing changed: {remote} ({branch}) already holds these {len(files)} files"
