"""Issue 20, H9: publishing never writes outside the wiki clone. A symlink or '..' committed in the wiki repository
that would lead a page outside is refused in one line with nothing written; a symlink at a page's own name is
replaced, not followed; user-given URLs and branches cannot be read by git as options; and a publish killed at any
git command leaves the remote and the bundle as they were, the next run finishing the job."""
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.report.publish import OWNED, PublishError, publish

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT = shutil.which("git")
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(*args, cwd):
    return subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **IDENTITY}).stdout


@pytest.fixture(autouse=True)
def identity(monkeypatch):
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def bundle(tmp_path):
    """A small bundle shaped like reports/wiki/ (pages, files/ with PDFs and a figure folder)."""
    root = tmp_path / "bundle"
    (root / "files" / "m").mkdir(parents=True)
    (root / "Home.md").write_text("# Home\n")
    (root / "m.md").write_text("# m\n")
    (root / "files" / "m.pdf").write_bytes(b"%PDF m")
    (root / "files" / "m" / "fig.png").write_bytes(b"\x89PNG m")
    return root


def _digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _remote(tmp_path, build=None) -> Path:
    """A bare wiki repository with one commit, its work tree shaped by build(work)."""
    bare, work = tmp_path / "wiki.git", tmp_path / "seed"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    git("init", "--quiet", "-b", "master", str(work), cwd=tmp_path)
    (work / "Notes.md").write_text("ours\n")
    if build:
        build(work)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "seed", cwd=work)
    git("push", "--quiet", str(bare), "HEAD:master", cwd=work)
    return bare


def _head(bare: Path) -> str:
    return git("rev-parse", "master", cwd=bare).strip()


@pytest.mark.parametrize("link", ["files", "files/m"])
def test_a_committed_symlink_leading_outside_is_refused_with_nothing_written(tmp_path, bundle, link):
    outside = tmp_path / "outside"
    outside.mkdir()

    def build(work):
        (work / link).parent.mkdir(parents=True, exist_ok=True)
        (work / link).symlink_to(outside)
    bare = _remote(tmp_path, build)
    before, head = _digest(bundle), _head(bare)
    with pytest.raises(PublishError) as error:
        publish(bundle, str(bare), "master", "Update", tmp_path / "clone")
    message = str(error.value)
    assert "\n" not in message and "outside the wiki repository" in message and "nothing was written" in message
    assert list(outside.iterdir()) == [] and _digest(bundle) == before and _head(bare) == head


def test_a_symlink_into_the_clones_git_folder_is_refused(tmp_path, bundle):
    bare = _remote(tmp_path, lambda work: (work / "files").symlink_to(".git"))
    with pytest.raises(PublishError, match="outside the wiki repository"):
        publish(bundle, str(bare), "master", "Update", tmp_path / "clone")
    assert not (tmp_path / "clone" / ".git" / "m.pdf").exists()


def test_a_symlink_at_a_pages_name_is_replaced_not_followed(tmp_path, bundle):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")

    def build(work):
        (work / "Home.md").symlink_to(victim)
        (work / OWNED).symlink_to(victim)
    bare = _remote(tmp_path, build)
    (bundle / ".snakemake_timestamp").write_text("")  # Snakemake's mark on a directory output: not a page
    assert publish(bundle, str(bare), "master", "Update", tmp_path / "clone").startswith("published 4 files")
    assert victim.read_text() == "keep me\n"
    check = tmp_path / "check"
    git("clone", "--quiet", str(bare), str(check), cwd=tmp_path)
    assert not (check / "Home.md").is_symlink() and (check / "Home.md").read_text() == "# Home\n"
    assert (check / OWNED).read_text().splitlines() == sorted(k for k in _digest(bundle) if k[0] != ".")
    assert not (check / ".snakemake_timestamp").exists()


def test_owned_entries_outside_the_clone_are_not_deleted(tmp_path, bundle):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    entries = ["../victim.txt", "../../victim.txt", str(victim), "", "Notes-link", ".git/HEAD", "files/../../x"]

    def build(work):
        (work / "Notes-link").symlink_to("Notes.md")
        (work / OWNED).write_text("\n".join(entries) + "\n")
    bare = _remote(tmp_path, build)
    publish(bundle, str(bare), "master", "Update", tmp_path / "clone")
    check = tmp_path / "check"
    git("clone", "--quiet", str(bare), str(check), cwd=tmp_path)
    assert victim.read_text() == "keep me\n" and (check / "Notes.md").read_text() == "ours\n"
    assert not (check / "Notes-link").exists()  # ours to delete: the link goes, its target stays


def test_urls_and_branches_are_never_options(tmp_path, bundle):
    marker = tmp_path / "pwned"
    for remote in (f"--upload-pack=touch {marker}", f"ext::sh -c touch% {marker}"):
        with pytest.raises(PublishError) as error:
            publish(bundle, remote, "master", "Update", tmp_path / "clone")
        assert "\n" not in str(error.value) and str(error.value).startswith("cloning ")
    assert not marker.exists()
    bare = _remote(tmp_path)
    for branch in ("--orphan", "-B", "a..b", "x y"):
        with pytest.raises(PublishError, match="branch|check"):
            publish(bundle, str(bare), branch, "Update", tmp_path / "clone")


def test_a_stale_lock_in_the_clone_does_not_stop_the_next_publish(tmp_path, bundle):
    bare, clone = _remote(tmp_path), tmp_path / "clone"
    publish(bundle, str(bare), "master", "Update", clone)
    (clone / ".git" / "index.lock").write_text("")  # what a git add killed mid-way leaves
    (bundle / "m.md").write_text("# m, again\n")
    assert publish(bundle, str(bare), "master", "Update", clone).startswith("published")
    shutil.rmtree(clone / ".git" / "objects")  # a clone damaged beyond repair is cloned again
    assert publish(bundle, str(bare), "master", "Update", clone).startswith("nothing changed")


KILLER = """#!/bin/sh
n=$(cat "$KILL_COUNTER" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$KILL_COUNTER"
if [ "$n" -eq "$KILL_AT" ] && [ "$KILL_AFTER" = 0 ]; then kill -9 $PPID; exit 137; fi
"$REAL_GIT" "$@"; status=$?
if [ "$n" -eq "$KILL_AT" ]; then kill -9 $PPID; fi
exit $status
"""


def _publish_killed(tmp_path, bundle, bare, clone, kill_at: int, after: bool) -> subprocess.CompletedProcess:
    """Run publish in a child process whose kill_at-th git command kills it (before or after git ran)."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "git").write_text(KILLER)
    (tools / "git").chmod(0o755)
    counter = tmp_path / "count"
    counter.unlink(missing_ok=True)
    env = {**os.environ, **IDENTITY, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "REAL_GIT": GIT,
           "KILL_AT": str(kill_at), "KILL_AFTER": "1" if after else "0", "KILL_COUNTER": str(counter)}
    code = ("import sys; from roofline.report.publish import publish; "
            "print(publish(sys.argv[1], sys.argv[2], 'master', 'Update', sys.argv[3]))")
    return subprocess.run([sys.executable, "-c", code, str(bundle), str(bare), str(clone)], env=env,
                          capture_output=True, text=True, timeout=120)


def _remote_files(tmp_path, bare) -> str:
    """The remote's master as (mode, blob, path) lines: what a clone of it would hold."""
    return git("ls-tree", "-r", "master", cwd=bare)


def test_a_publish_killed_at_any_git_command_leaves_remote_and_bundle_as_they_were(tmp_path, bundle):
    bare, clone = _remote(tmp_path), tmp_path / "clone"
    publish(bundle, str(bare), "master", "Update", clone)  # the clone exists: later runs reuse it
    old_head, old_remote = _head(bare), _remote_files(tmp_path, bare)
    (bundle / "m.md").write_text("# m, new\n")
    (bundle / "files" / "m" / "new.png").write_bytes(b"\x89PNG new")
    before = _digest(bundle)
    reference = tmp_path / "reference.git"  # what a publish that is not interrupted leaves
    shutil.copytree(bare, reference)
    publish(bundle, str(reference), "master", "Update", tmp_path / "reference-clone")
    new_remote = _remote_files(tmp_path, reference)
    assert new_remote != old_remote
    kills = 0
    for kill_at in range(1, 60):  # each git command interrupted once: before it runs (odd), after it ran (even)
        git("update-ref", "refs/heads/master", old_head, cwd=bare)  # the remote as it was
        run = _publish_killed(tmp_path, bundle, bare, clone, kill_at, after=kill_at % 2 == 0)
        if run.returncode == 0:  # fewer git commands than kill_at: it ran to the end
            assert _remote_files(tmp_path, bare) == new_remote
            break
        assert run.returncode == -9, run.stderr
        kills += 1
        assert _digest(bundle) == before
        assert _remote_files(tmp_path, bare) in (old_remote, new_remote), kill_at
    assert kills >= 12  # check-ref-format, get-url, fetch, ls-remote, checkout, reset, clean, add, ..., push
    git("update-ref", "refs/heads/master", old_head, cwd=bare)
    assert publish(bundle, str(bare), "master", "Update", clone).startswith("published")
    assert _remote_files(tmp_path, bare) == new_remote and _digest(bundle) == before
