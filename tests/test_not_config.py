"""YAML that is not a Bridge config never fails the hook; a broken Bridge config still does.

Inputs in tests/data/not-config/ are shaped like the files that sit next to configs in real
repositories (see its README). Each is skipped with a notice and exit 0, also with --fix;
``-q`` silences the notices. "Is a Bridge config" is normalize.detect_root's test on the
top-level keys (load.parse_text); a file that passes it and that Bridge's loader cannot read
(several documents, a syntax error, an unknown tag) is still an input error, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DATA, REPO, run_main

NOT_CONFIG = DATA / "not-config"
GOOD = REPO / "examples" / "dsv3_128k_h100.yaml"

NOTICES = {
    "k8s-deployment.yaml": "2 YAML documents, not a Megatron Bridge config",
    "github-workflow.yml": "not a Megatron Bridge config (no ConfigContainer sections",
    "rl-envs.yaml": "top level is a list, not a Megatron Bridge config",
    "empty.yaml": "empty file",
    "comments-only.yaml": "no config keys (the file holds only comments)",
    "cloudformation.yaml": "not a Megatron Bridge config (line 7: unsupported YAML tag '!Sub')",
    "mkdocs.yml": "not a Megatron Bridge config (line 6: unsupported YAML tag",
    "helm-values-template.yaml": "not a Megatron Bridge config (and not valid YAML: line 4",
}


def test_every_sample_is_named() -> None:
    assert sorted(p.name for p in NOT_CONFIG.glob("*.y*ml")) == sorted(NOTICES)


def test_not_config_is_skipped_with_a_notice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    paths = []
    for name in sorted(NOTICES):
        paths.append(tmp_path / name)
        paths[-1].write_bytes((NOT_CONFIG / name).read_bytes())
    code, out, err = run_main(capsys, *map(str, paths), "--color", "never")
    assert (code, err) == (0, "")
    for path in paths:
        assert f"{path}: skipped: {NOTICES[path.name]}" in out, path.name
    assert out.rstrip().endswith("All checks passed (0 files).")
    before = [p.read_bytes() for p in paths]
    code, out, err = run_main(capsys, *map(str, paths), "--fix", "-q")
    assert (code, out, err) == (0, "", "")  # -q: no notices; nothing fixed, nothing said
    assert [p.read_bytes() for p in paths] == before


def test_mixed_commit_lints_the_config_and_skips_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [str(GOOD), *(str(NOT_CONFIG / name) for name in sorted(NOTICES))]
    code, out, err = run_main(capsys, *files, "--color", "never")
    assert code == 0 and err == ""
    assert out.count(": skipped: ") == len(NOTICES)
    assert out.rstrip().endswith(" in 1 file.")  # the one config, with its warnings
    code, out, _ = run_main(capsys, *files, "--format", "json")
    assert code == 0 and {f["file"] for f in json.loads(out)} <= {str(GOOD)}


BROKEN = {
    # Bridge's loader (OmegaConf.load) reads one document: a stray `---` breaks the run.
    "config-plus-document.yaml": (
        GOOD.read_text() + "---\ntrain: {}\n",
        "more than one YAML document in the file (2)",
    ),
    "syntax.yaml": ("model:\n  tensor_model_parallel_size: [1,\n", "YAML syntax error"),
    "quoted-key.yaml": ('"model":\n  seq_length: 131072\n train: {}\n', "YAML syntax error"),
    "tag.yaml": (
        "train: {micro_batch_size: 1}\nmodel: !include base.yaml\n",
        "unsupported YAML tag",
    ),
    "wrapped.yaml": ("ConfigContainer:\n  model: {a: [}\n", "YAML syntax error"),
}


def test_broken_bridge_config_is_still_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name, (text, _) in BROKEN.items():
        (tmp_path / name).write_text(text)
    code, out, err = run_main(capsys, *(str(tmp_path / n) for n in BROKEN), "-q")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == len(BROKEN)
    for line, (name, (_, needle)) in zip(lines, BROKEN.items(), strict=True):
        assert line.startswith(f"{tmp_path / name}: error: ") and needle in line, line
