"""Run a composite GitHub Action (``action.yml``) here, step by step, as GitHub's runner does,
so the tests exercise the action itself and not a copy of its commands.

What it does as the runner does: inputs with their defaults (always strings); ``${{ }}``
expressions in ``env:``, ``with:``, ``if:`` and the outputs, over the ``inputs``, ``github`` and
``steps`` contexts; ``if:`` with the status functions (a failed step skips the later steps that
do not say ``always()`` / ``!cancelled()``); ``shell: bash`` run as ``bash --noprofile --norc
-eo pipefail FILE``; a fresh ``$GITHUB_OUTPUT`` per step, read back in both of its forms;
``$GITHUB_ACTION_PATH``; no ``INPUT_*`` variables (composite actions get none). A ``uses:``
step goes to the handler the test gives for it (a fake of setup-python or upload-sarif).

Stricter than the runner: an expression naming an undeclared input, a step id that is not an
earlier step, or an output the step did not write is an error, so a typo in action.yml fails
the test instead of reading as an empty string.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_*][A-Za-z0-9_-]*)*))"
)


class ExpressionError(Exception):
    """An expression this runner (and so, probably, GitHub) cannot evaluate."""


@dataclass
class Step:
    """What one step did: ``outcome`` is success, failure or skipped."""

    index: int
    id: str | None
    name: str
    outcome: str
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    with_: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    """A run of the action: its steps, its outputs and whether it failed."""

    steps: list[Step]
    outputs: dict[str, str]
    failed: bool

    def step(self, key: str) -> Step:
        """The step with this id, or else this name."""
        for step in self.steps:
            if key in (step.id, step.name):
                return step
        raise KeyError(key)

    @property
    def stdout(self) -> str:
        return "".join(step.stdout for step in self.steps)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value == value  # NaN is falsy


def _number(value: Any) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip() or 0)
        except ValueError:
            return float("nan")
    return float("nan")


def _equal(left: Any, right: Any) -> bool:
    """GitHub's ``==``: strings compare ignoring case; other types meet as numbers."""
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    if type(left) is type(right) and not isinstance(left, int | float | bool):
        return bool(left == right)
    return _number(left) == _number(right)


class _Parser:
    """Recursive descent over GitHub's expression grammar (the part actions use)."""

    def __init__(self, text: str, lookup: Callable[[str], Any], status: Mapping[str, bool]):
        self.tokens: list[tuple[str, str]] = []
        at, text = 0, text.strip()
        while at < len(text):
            match = _TOKEN.match(text, at)
            if match is None or match.end() == at:
                raise ExpressionError(f"cannot read {text[at:]!r} in {text!r}")
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            at = match.end()
            while at < len(text) and text[at].isspace():
                at += 1
        self.at = 0
        self.lookup = lookup
        self.status = status
        self.text = text

    def parse(self) -> Any:
        value = self._or()
        if self.at != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.at][1]!r} in {self.text!r}")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise ExpressionError(f"unexpected end of {self.text!r}")
        self.at += 1
        return self.tokens[self.at - 1]

    def _or(self) -> Any:
        value = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            value = value if _truthy(value) else right
        return value

    def _and(self) -> Any:
        value = self._not()
        while self._peek() == "&&":
            self._take()
            right = self._not()
            value = right if _truthy(value) else value
        return value

    def _not(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not _truthy(self._not())
        return self._compare()

    def _compare(self) -> Any:
        left = self._primary()
        if self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._primary()
            return _equal(left, right) == (op == "==")
        return left

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            value = self._or()
            if self._take()[1] != ")":
                raise ExpressionError(f"missing ) in {self.text!r}")
            return value
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text)
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self._peek() == "(":
            self._take()
            if self._take()[1] != ")":
                raise ExpressionError(f"{text}() takes no arguments here: {self.text!r}")
            if text not in self.status:
                raise ExpressionError(f"unknown function {text}() in {self.text!r}")
            return self.status[text]
        return self.lookup(text)


def _read_outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT``: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while lines[at] != delimiter:
                value.append(lines[at])
                at += 1
            at += 1
            outputs[name] = "\n".join(value)
        else:
            name, _, value_text = line.partition("=")
            outputs[name] = value_text
    return outputs


UsesHandler = Callable[[str, dict[str, str], dict[str, str]], int]


class CompositeAction:
    """``action.yml`` of ``path``, loaded once; :meth:`run` runs it in a workspace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spec: dict[str, Any] = yaml.safe_load((path / "action.yml").read_text("utf-8"))
        if self.spec["runs"]["using"] != "composite":
            raise ValueError("not a composite action")
        self.inputs: dict[str, Any] = self.spec.get("inputs") or {}
        self.steps: list[dict[str, Any]] = self.spec["runs"]["steps"]

    def run(
        self,
        inputs: Mapping[str, str],
        workspace: Path,
        env: Mapping[str, str],
        github: Mapping[str, Any],
        uses: Mapping[str, UsesHandler],
    ) -> ActionRun:
        """Run every step. ``env`` is the runner's environment (``PATH``, ``RUNNER_TEMP``,
        ``GITHUB_STEP_SUMMARY``, ...); ``github`` the github context (``event``,
        ``event_name``, ``token``, ...); ``uses`` maps an action (``owner/name@ref``, or
        the part before ``@``) to a fake that gets (uses, with, env) and returns its exit code."""
        unknown = set(inputs) - set(self.inputs)
        if unknown:
            raise ExpressionError(f"inputs the action does not declare: {sorted(unknown)}")
        steps_ctx: dict[str, dict[str, Any]] = {}
        done: list[Step] = []
        failed = False
        base = {"github": dict(github), "steps": steps_ctx}
        values: dict[str, str] = {}
        for name, spec in self.inputs.items():
            given = inputs.get(name)
            if given is None:
                given = self.template(str(spec.get("default", "")), {**base, "inputs": {}})
            values[name] = given
        context = {**base, "inputs": values}

        for index, spec in enumerate(self.steps):
            status = {"success": not failed, "failure": failed, "always": True, "cancelled": False}
            step = Step(index, spec.get("id"), spec.get("name", f"step {index}"), "skipped")
            done.append(step)
            condition = str(spec.get("if", "success()"))
            wrapped = EXPRESSION.fullmatch(condition.strip())
            condition = wrapped.group(1) if wrapped else condition
            uses_functions = re.search(r"\b(success|failure|always|cancelled)\(", condition)
            if not uses_functions:
                condition = f"success() && ({condition})"
            if not _truthy(self.evaluate(condition, context, status)):
                if step.id:
                    steps_ctx[step.id] = {
                        "outcome": "skipped",
                        "conclusion": "skipped",
                        "outputs": None,
                    }
                continue
            step.env = {
                k: self.template(str(v), context, status)
                for k, v in (spec.get("env") or {}).items()
            }
            if "uses" in spec:
                step.with_ = {
                    k: self.template(str(v), context, status)
                    for k, v in (spec.get("with") or {}).items()
                }
                handler = uses.get(spec["uses"]) or uses.get(spec["uses"].split("@")[0])
                if handler is None:
                    raise ExpressionError(f"no fake for uses: {spec['uses']}")
                step.returncode = handler(spec["uses"], step.with_, {**env, **step.env})
            else:
                step.returncode = self._run_shell(spec, step, workspace, env)
            step.outcome = "success" if step.returncode == 0 else "failure"
            failed = failed or step.returncode != 0
            if step.id:
                steps_ctx[step.id] = {
                    "outcome": step.outcome,
                    "conclusion": step.outcome,
                    "outputs": step.outputs,
                }
        outputs = {
            name: self.template(str(spec["value"]), context)
            for name, spec in (self.spec.get("outputs") or {}).items()
        }
        return ActionRun(done, outputs, failed)

    def _run_shell(
        self, spec: dict[str, Any], step: Step, workspace: Path, env: Mapping[str, str]
    ) -> int:
        if spec.get("shell") != "bash":
            raise ExpressionError(f"step {step.name!r}: composite run steps need shell: bash")
        with tempfile.TemporaryDirectory() as scratch:
            script = Path(scratch) / "step.sh"
            script.write_text(spec["run"], encoding="utf-8")
            outputs = Path(scratch) / "output"
            outputs.touch()
            full_env = {
                **env,
                **step.env,
                "GITHUB_OUTPUT": str(outputs),
                "GITHUB_ACTION_PATH": str(self.path),
            }
            for name in list(full_env):
                if name.startswith("INPUT_"):
                    del full_env[name]
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=workspace,
                env=full_env,
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            step.stdout, step.stderr = proc.stdout, proc.stderr
            step.outputs = _read_outputs(outputs)
        return proc.returncode

    def evaluate(
        self, text: str, context: Mapping[str, Any], status: Mapping[str, bool] | None = None
    ) -> Any:
        """One expression's value (without the ``${{ }}``)."""

        def lookup(name: str) -> Any:
            root, *rest = name.split(".")
            if root not in context:
                raise ExpressionError(f"unknown context {root!r} in {text!r}")
            if root == "inputs" and (not rest or rest[0] not in self.inputs):
                raise ExpressionError(f"undeclared input in {text!r}")
            if root == "steps":
                ids = [s.get("id") for s in self.steps]
                if not rest or rest[0] not in ids:
                    raise ExpressionError(f"no step with id {rest[:1]} in {text!r}")
                ran = context["steps"].get(rest[0])
                if ran is None:
                    raise ExpressionError(f"step {rest[0]!r} is read before it runs: {text!r}")
                outputs = ran["outputs"]
                if (
                    len(rest) > 2
                    and rest[1] == "outputs"
                    and outputs is not None
                    and (rest[2] not in outputs)
                ):
                    raise ExpressionError(f"step {rest[0]!r} wrote no output {rest[2]!r}")
            value: Any = context[root]
            for part in rest:
                value = value.get(part) if isinstance(value, Mapping) else None
            return value

        return _Parser(
            text,
            lookup,
            status or {"success": True, "failure": False, "always": True, "cancelled": False},
        ).parse()

    def template(
        self, text: str, context: Mapping[str, Any], status: Mapping[str, bool] | None = None
    ) -> str:
        """A string with each ``${{ }}`` replaced by its value, as the runner writes it."""

        def show(match: re.Match[str]) -> str:
            value = self.evaluate(match.group(1), context, status)
            if value is None:
                return ""
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, float) and value.is_integer():
                return str(int(value))
            return str(value)

        return EXPRESSION.sub(show, text)


def expressions(node: Any) -> list[str]:
    """Every ``${{ }}`` expression in a YAML tree, and every bare ``if:`` condition."""
    found: list[str] = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "if" and isinstance(value, str) and not EXPRESSION.search(value):
                found.append(value)
            found += expressions(value)
    elif isinstance(node, list):
        for item in node:
            found += expressions(item)
    elif isinstance(node, str):
        found += [m.group(1) for m in EXPRESSION.finditer(node)]
    return found


def runner_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A runner's environment from this process's, without its GitHub and moe-lint settings."""
    env = {
        k: v
        for k, v in (base or os.environ).items()
        if not k.startswith(("GITHUB_", "INPUT_", "MOE_LINT", "RUNNER_"))
    }
    env.update(extra)
    return env


# ------------------------------------------------------------------------------ the fakes

_FAKE_PYTHON = """#!{python}
# `python -m pip ...` is recorded in $FAKE_PIP_LOG, not run (no network); else the real python.
import json, os, sys
if sys.argv[1:3] == ["-m", "pip"]:
    with open(os.environ["FAKE_PIP_LOG"], "a") as log:
        log.write(json.dumps(sys.argv[3:]) + "\\n")
    sys.exit(0)
os.execv({python!r}, [{python!r}, *sys.argv[1:]])
"""

_FAKE_GH = """#!{python}
# `gh api` for a pull request's comments, kept in the JSON file $FAKE_GH_STATE; every call is
# logged in $FAKE_GH_LOG with the token it had.
import json, os, re, sys
args = sys.argv[1:]
with open(os.environ["FAKE_GH_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "token": os.environ.get("GH_TOKEN")}}) + "\\n")
if not os.environ.get("GH_TOKEN"):
    sys.exit("gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN variable.")
state = os.environ["FAKE_GH_STATE"]
comments = json.load(open(state)) if os.path.exists(state) else []
repo = r"repos/[\\w.-]+/[\\w.-]+"
if args[:2] == ["api", "--paginate"]:
    if not re.fullmatch(repo + r"/issues/\\d+/comments\\?per_page=100", args[2]):
        sys.exit("gh: Not Found (HTTP 404)")
    half = len(comments) // 2  # two pages, printed back to back as gh --paginate does
    sys.stdout.write(json.dumps(comments[:half]) + json.dumps(comments[half:]))
    sys.exit(0)
assert args[0] == "api" and args[1] == "--method" and args[4] == "--input", args
method, path, body = args[2], args[3], json.load(open(args[5]))["body"]
if method == "POST" and re.fullmatch(repo + r"/issues/\\d+/comments", path):
    comment = {{"id": 9000 + len(comments), "body": body, "html_url": "https://x/c"}}
    comments.append(comment)
elif method == "PATCH" and (m := re.fullmatch(repo + r"/issues/comments/(\\d+)", path)):
    (comment,) = [c for c in comments if c["id"] == int(m.group(1))]
    comment["body"] = body
else:
    sys.exit(f"gh: {{method}} {{path}}: Not Found (HTTP 404)")
json.dump(comments, open(state, "w"))
print(json.dumps(comment))
"""


def write_fakes(folder: Path, pip: bool = True, moe_lint: bool = True) -> Path:
    """A folder to put first on PATH: a fake ``gh``; with ``pip``, a ``python`` whose ``-m pip``
    only records; with ``moe_lint``, a ``moe-lint`` that is this interpreter's moe_lint."""
    folder.mkdir(parents=True)
    fakes = {"gh": _FAKE_GH, **({"python": _FAKE_PYTHON} if pip else {})}
    for name, text in fakes.items():
        (folder / name).write_text(text.format(python=sys.executable), encoding="utf-8")
    if moe_lint:
        (folder / "moe-lint").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m moe_lint "$@"\n')
    for path in folder.iterdir():
        path.chmod(0o755)
    return folder


def gitlab_variables(variables: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """A GitLab job's ``variables:``, each value's ``$VAR`` / ``${VAR}`` expanded from ``env``
    (the CI/CD variables) as GitLab expands them."""

    def expand(text: str) -> str:
        return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), text)

    return {name: expand(str(value)) for name, value in variables.items()}
