"""The wiki bundle (reports/wiki/) and its publication to a git repository: self-contained pages whose every link
resolves inside the bundle, names escaped, timings of setups that do not fit marked; publishing to a local bare
repository commits once, adds no commit when nothing changed, removes the pages it no longer owns, and a failing
push says why in one line and leaves the bundle intact."""
import shutil
import subprocess

import pytest

from grids import grid
from roofline.report import model_context, summary_context, units, wiki
from roofline.report.publish import OWNED, PublishError, publish

HOSTILE = "Llama | <script>x</script> [link](http://evil)"
MODELS = ("llama-2-7b", "llama-3.1-70b")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The bundle of two models on the A6000 (llama-3.1-70b at fp16 does not fit its 48 GB) with stand-in PDFs and
    PNGs (their bytes do not matter here; the pipeline's are checked end to end in test_workflow)."""
    tables, specs = grid({"models": {MODELS[0]: {"name": HOSTILE}, MODELS[1]: {}},
                          "gpus": {"rtx-a6000": {}, "h100-sxm": {}},
                          "scenario": {"parallel": {"tp": 1}}})  # one device each: the 70B misfits stay misfits
    root = tmp_path_factory.mktemp("wiki")
    contexts, pdfs, figure_dirs = {}, {}, {}
    for model in MODELS:
        figures = root / "figures" / model
        figures.mkdir(parents=True)
        manifest = [{"kind": "time_breakdown", "gpu": None, "stage": None, "label": "time breakdown",
                     "place": "figures", "rank": 0, "caption": "Where the time goes.", "note": "",
                     "svg": "time_breakdown.svg", "png": "time_breakdown.png"}]
        (figures / "time_breakdown.png").write_bytes(b"\x89PNG " + model.encode())
        contexts[model] = model_context(model, tables, specs, manifest, str(figures))
        pdfs[model] = root / f"{model}.pdf"
        pdfs[model].write_bytes(b"%PDF " + model.encode())
        figure_dirs[model] = figures
    (root / "summary.pdf").write_bytes(b"%PDF summary")
    target = root / "wiki"
    files = wiki.write_bundle(target, summary_context(tables, specs), contexts, pdfs, figure_dirs,
                              root / "summary.pdf")
    return target, files, tables


def test_bundle_holds_every_page_and_every_link_resolves_inside_it(bundle):
    target, files, _ = bundle
    assert files == sorted(["Home.md", "_Sidebar.md", "llama-2-7b.md", "llama-3.1-70b.md", "files/summary.pdf",
                            "files/llama-2-7b.pdf", "files/llama-3.1-70b.pdf",
                            "files/llama-2-7b/time_breakdown.png", "files/llama-3.1-70b/time_breakdown.png"])
    for page in ("Home.md", "_Sidebar.md", "llama-2-7b.md", "llama-3.1-70b.md"):
        links = wiki.relative_links((target / page).read_text())
        assert links, page
        for link in links:
            assert "://" not in link and not link.startswith("/"), (page, link)
            resolved = (target / link).resolve()
            assert resolved.is_relative_to(target.resolve()) and resolved.is_file(), (page, link)


def test_pages_escape_names_and_mark_setups_that_do_not_fit(bundle):
    target, _, tables = bundle
    home, page = (target / "Home.md").read_text(), (target / "llama-2-7b.md").read_text()
    for text in (home, page):
        assert "<script>" not in text and "http://evil" not in text
    assert r"Llama \| &lt;script&gt;x&lt;/script&gt; \[link\](http:&#47;&#47;evil)" in page  # no link, no autolink
    # llama-3.1-70b at fp16 needs ~141 GB: on the A6000 (48 GB) its time is struck through and says why
    totals = tables["totals"].set_index(["model", "gpu", "stage"])
    misfit = totals.loc[("llama-3.1-70b", "rtx-a6000", "decode")]
    assert not misfit["fits"]
    seventy = (target / "llama-3.1-70b.md").read_text()
    time = units.seconds(misfit["tpot_s"])
    needs, has = units.nbytes(misfit["footprint_bytes"]), units.usable(misfit["usable_memory_bytes"],
                                                                       misfit["memory_bytes"])
    why = f"does not fit: needs {needs}, has {has}"
    assert f"| {why} | ✗ ~~{time}~~ |" in seventy  # the Fits column says why, the time is struck through
    # the summary has no Fits column: the first marked cell of the row (here prefill's, the same footprint) says why
    assert f"✗ ~~{time}~~" in home and f"~~ ({why}) |" in home
    assert f"| {time} |" not in seventy and f"| {time} |" not in home
    assert "## Decision" in seventy and "### Decode" in seventy and "![" in seventy


@pytest.fixture
def remote(tmp_path):
    bare = tmp_path / "wiki.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    return bare


def commits(bare) -> int:
    return int(git("rev-list", "--count", "master", cwd=bare).strip())


def test_publish_commits_once_and_then_nothing(bundle, remote, tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")  # an identity for the commit, as a user's git setup gives
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")
    target, files, _ = bundle
    clone = tmp_path / "clone"
    assert publish(target, str(remote), "master", "Update", clone).startswith(f"published {len(files)} files")
    assert commits(remote) == 1
    check = tmp_path / "check"
    git("clone", "--quiet", str(remote), str(check), cwd=tmp_path)
    for name in files:
        assert (check / name).read_bytes() == (target / name).read_bytes(), name
    for page in ("Home.md", "llama-2-7b.md", "llama-3.1-70b.md", "_Sidebar.md"):
        for link in wiki.relative_links((check / page).read_text()):
            assert (check / link).is_file(), (page, link)
    assert publish(target, str(remote), "master", "Update", clone).startswith("nothing changed")
    assert commits(remote) == 1
    # a page written by a person stays; the page of a model no longer in the bundle goes
    (check / "Notes.md").write_text("ours\n")
    git("add", "Notes.md", cwd=check)
    git("commit", "--quiet", "-m", "notes", cwd=check)
    git("push", "--quiet", "origin", "HEAD:master", cwd=check)
    smaller = tmp_path / "smaller"
    shutil.copytree(target, smaller)
    (smaller / "llama-3.1-70b.md").unlink()
    publish(smaller, str(remote), "master", "Update", clone)
    git("pull", "--quiet", cwd=check)
    assert (check / "Notes.md").is_file() and not (check / "llama-3.1-70b.md").exists()
    assert "llama-3.1-70b.md" not in (check / OWNED).read_text()


def test_failing_push_says_why_in_one_line_and_keeps_the_bundle(bundle, remote, tmp_path):
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'wiki is read-only today' >&2\nexit 1\n")
    hook.chmod(0o755)
    target, files, _ = bundle
    before = {name: (target / name).read_bytes() for name in files}
    with pytest.raises(PublishError) as error:
        publish(target, str(remote), "master", "Update", tmp_path / "clone")
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"pushing to {remote} failed:"), message
    assert "pre-receive hook declined" in message and "wiki is read-only today" in message, message
    assert {name: (target / name).read_bytes() for name in files} == before
    with pytest.raises(PublishError, match=r"^cloning .*missing.git failed: .*"):
        publish(target, str(tmp_path / "missing.git"), "master", "Update", tmp_path / "clone2")
