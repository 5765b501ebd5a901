"""Publish reports/wiki/ to a git-backed wiki: clone (or reuse) the wiki repository, replace the pages this tool
owns, commit only when something changed, push.

Credentials come from the user's git setup (SSH keys, credential helpers), never from config.yaml; git is run with
GIT_TERMINAL_PROMPT=0 so that a missing credential fails at once instead of waiting for a password. The pages this
tool wrote last time are listed in OWNED inside the wiki repository: those (and only those) are replaced, so pages
written by people stay, and pages of models no longer configured go. Any failure raises PublishError with one line
that says why; the local bundle is never touched.

The wiki repository is not trusted: every page goes into a folder that, symlinks followed, lies inside the clone and
outside its .git (else nothing is written and one line says which page and where it would have gone), a symlink at a
page's own name is replaced rather than followed, and OWNED entries outside the clone are not deleted. URLs and
branch names from config.yaml reach git after `--` or checked, never as options, and ext:: URLs are refused. The
remote changes only at the push; a run killed anywhere leaves the clone in some state the next run repairs (stale
git locks removed, a damaged clone cloned again).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..engine.errors import clip
from .wiki import bundle_files

#: the list of files this tool owns in the wiki repository (one path per line)
OWNED = ".roofline-wiki"
#: author of the commit when the user's git setup has none (an identity, not a credential)
FALLBACK_IDENTITY = ("-c", "user.name=llm-roofline", "-c", "user.email=llm-roofline@localhost")


class PublishError(RuntimeError):
    """Publishing failed; the message is one line."""


def _git(*args: str, cwd: Path, what: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    # ext:: URLs run a command of the URL's choosing: never from a config value
    done = subprocess.run(["git", "-c", "protocol.ext.allow=never", *args], cwd=cwd, capture_output=True, text=True,
                          env=env)
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


def check_branch(branch: str, clone: Path) -> str:
    """`branch` if git accepts it as a branch name and it cannot be read as an option."""
    if branch.startswith("-"):
        raise PublishError(f"branch '{branch}' is not allowed: a branch name cannot start with '-'")
    _git("check-ref-format", f"refs/heads/{branch}", cwd=clone, what=f"checking the branch name '{branch}'")
    return branch


def checkout(remote: str, branch: str, clone: Path) -> None:
    """`clone` holds `remote` at the tip of `branch`: the previous clone fetched and reset, or, when there is none,
    it has another remote or anything in it fails (a run killed mid-way leaves a stale lock or half a clone), a
    fresh clone. A branch the remote does not have yet starts empty."""
    if clone.is_symlink():
        raise PublishError(f"the working clone {clone} is a symlink; remove it (publish clones there itself)")
    if (clone / ".git").is_dir():
        try:
            if _git("remote", "get-url", "origin", cwd=clone, what="reading the clone's remote").strip() == remote:
                _git("fetch", "--quiet", "origin", cwd=clone, what=f"fetching {remote}")
                return _reset(remote, branch, clone)
        except PublishError:
            pass  # a damaged clone: start again from the remote
    shutil.rmtree(clone, ignore_errors=True)
    clone.parent.mkdir(parents=True, exist_ok=True)
    _git("clone", "--quiet", "--", remote, str(clone), cwd=clone.parent, what=f"cloning {remote}")
    _reset(remote, branch, clone)


def _reset(remote: str, branch: str, clone: Path) -> None:
    """Check out the remote's `branch` (or start it empty) and drop anything else in the working tree."""
    git_dir = clone / ".git"
    for lock in [*git_dir.glob("*.lock"), *git_dir.glob("refs/**/*.lock")]:  # left by a killed run's git command
        lock.unlink()  # (publish runs alone: Snakemake's lock on the rule)
    remote_branch = _git("ls-remote", "--heads", "--", "origin", branch, cwd=clone, what=f"reading {remote}").strip()
    if remote_branch:
        _git("checkout", "--quiet", "--force", "-B", branch, f"origin/{branch}", "--", cwd=clone,
             what=f"checking out {branch}")
        _git("reset", "--quiet", "--hard", f"origin/{branch}", "--", cwd=clone, what=f"resetting to {branch}")
    else:  # a new branch (or an empty repository): start from nothing
        _git("checkout", "--quiet", "--orphan", branch, cwd=clone, what=f"creating {branch}")
        _git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ".", cwd=clone, what="emptying the new branch")
    _git("clean", "-q", "-f", "-d", cwd=clone, what="cleaning the clone")


def inside(clone: Path, name: str) -> Path:
    """The folder `name` goes in, every symlink on the way followed, if it stays inside the clone and outside its
    .git; else PublishError (one line; the caller has written nothing yet)."""
    root = clone.resolve()
    folder = (root / name).parent.resolve()
    if not folder.is_relative_to(root) or folder.is_relative_to(root / ".git"):
        raise PublishError(f"'{name}' would be written to {folder}, outside the wiki repository (through a symlink "
                           "or '..' committed in it); nothing was written: remove that link from the wiki")
    return folder


def replace_pages(bundle: Path, clone: Path) -> list[str]:
    """Delete the files listed in OWNED, copy the bundle in, list its files in OWNED; returns them. Every
    destination's folder is checked (`inside`) before anything is written; a symlink at a destination is replaced
    by the file, never followed; an OWNED entry outside the clone is not deleted."""
    # hidden files are not pages (Snakemake's .snakemake_timestamp of the bundle's directory output)
    files = sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file() and not p.name.startswith("."))
    targets = {name: inside(clone, name) / Path(name).name for name in [*files, OWNED]}
    owned = targets[OWNED]
    if owned.is_file() and not owned.is_symlink():
        for name in owned.read_text(errors="replace").splitlines():
            try:
                path = inside(clone, name) / Path(name).name
            except (PublishError, OSError, ValueError):
                continue  # not ours to delete
            if name and (path.is_symlink() or path.is_file()):
                path.unlink()
    files = bundle_files(bundle)
    for name in files:
        _replace(targets[name], lambda temp, name=name: shutil.copyfile(bundle / name, temp))
    _replace(owned, lambda temp: temp.write_text("".join(f"{name}\n" for name in files)))
    return files


def _replace(path: Path, write) -> None:
    """Write `path` through a temporary file beside it, renamed over it (a symlink there is replaced, not
    followed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.publish.tmp")
    try:
        write(temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


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
    bundle, clone = Path(bundle), Path(clone).absolute()
    check_branch(branch, bundle)
    try:
        checkout(remote, branch, clone)
        files = replace_pages(bundle, clone)
    except OSError as error:  # a file where a folder belongs, a full disk: the remote is untouched
        raise PublishError(f"preparing the pages in {clone} failed: {error.strerror or error} "
                           f"({clip(error.filename or '', 200)})") from None
    changed = commit(clone, message)
    ahead = _git("rev-list", "--count", f"origin/{branch}..HEAD", cwd=clone, what="comparing with the remote") \
        if _git("branch", "-r", "--list", f"origin/{branch}", cwd=clone, what="listing branches").strip() else "1"
    if changed or int(ahead or 0):
        _git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=clone, what=f"pushing to {remote}")
        return f"published {len(files)} files to {remote} ({branch})"
    return f"nothing changed: {remote} ({branch}) already holds these {len(files)} files"
