"""``moe-lint plan``: search and rank the layouts of a run that fit (the planner is
:mod:`moe_lint.plan`); ``--emit N`` writes one as Bridge YAML, a Hydra command or a
Megatron-LM launch script."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from moe_lint.bounds import MAX_GPUS, MAX_PLANS
from moe_lint.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from moe_lint.cli.options import _Parser, _use_color
from moe_lint.config.forms import NotBridgeConfig
from moe_lint.errors import InputError, UsageError


def plan_options(argv: list[str]) -> tuple[argparse.Namespace, Any]:
    """``moe-lint plan``'s command line as its namespace and plan.run.Options, every value
    checked (plan/args.py): UsageError for one that cannot be planned."""
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan import args as plan_args
    from moe_lint.plan.run import DISPATCHERS, PRECISIONS, Options

    parser = _Parser(prog="moe-lint plan", description=(
        "Search TP, CP, PP, VPP, EP, ETP, MBS, recompute, offload and dispatcher for a model "
        "on a GPU count; rank the layouts that pass the rules and fit by predicted "
        "tokens/s/GPU (docs/planner.md)."))  # fmt: skip
    parser.add_argument(
        "--model",
        required=True,
        help="model preset, HF config.json (or its folder) or a Bridge YAML",
    )
    parser.add_argument("--seq", type=int, help="sequence length (default: the YAML's)")
    parser.add_argument("--gpu", help="GPU type (h100, b200, gb200, ...)")
    parser.add_argument("--gpus", help="GPU count: N, a list N,M or a range LO-HI (powers of 2)")
    parser.add_argument("--nodes", type=int, help="nodes (with --gpus-per-node)")
    parser.add_argument("--gpus-per-node", type=int)
    parser.add_argument("--gbs", type=int, help="global batch size (sequences per step)")
    parser.add_argument("--tokens-per-step", type=int, help="instead of --gbs")
    parser.add_argument("--precision", choices=sorted(PRECISIONS))
    parser.add_argument("--dispatcher", choices=DISPATCHERS)
    parser.add_argument("--max-ep", type=int)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix tp, pp, vpp, cp, ep, etp, mbs, recompute or offload; or override any "
        "base field (section.field=value)",
    )
    parser.add_argument(
        "--compare",
        metavar="LAYOUT",
        help="place a layout among the plans, e.g. tp=1,cp=32,ep=32,pp=8,vpp=4 (gpus=N too)",
    )
    parser.add_argument("--objective", choices=("throughput", "gpus"), default="throughput")
    parser.add_argument(
        "--safe",
        action="store_true",
        help="only plans whose central memory estimate fits (no 'may not fit')",
    )
    parser.add_argument("--top", type=int, default=10, help="plans to show (default 10)")
    parser.add_argument("--format", choices=("text", "json", "html"), default="text",
                        help="html: one offline page, throughput against memory headroom "
                        "(with -o FILE)")  # fmt: skip
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="a rich table on a terminal (auto)")  # fmt: skip
    parser.add_argument("--emit", type=int, metavar="N", help="write plan N as Bridge YAML")
    parser.add_argument(
        "--emit-format",
        choices=("yaml", "hydra", "megatron-lm"),
        default="yaml",
        help="--emit as a Bridge YAML (default); for --model RECIPE_NAME, the "
        "run_recipe.py --recipe command with Hydra overrides; or a Megatron-LM launch script "
        "(torchrun pretrain_gpt.py with the architecture and the plan as flags)",
    )
    parser.add_argument("-o", "--output",
                        help="file for --emit or --format html (default: stdout)")  # fmt: skip
    ns = parser.parse_args(argv)
    if ns.gpus and ns.nodes is not None:
        raise UsageError("plan takes --gpus or --nodes with --gpus-per-node, not both")
    if ns.gpus:
        gpus = plan_args.gpu_counts(ns.gpus)
    elif ns.nodes is not None and ns.gpus_per_node is not None:
        nodes = plan_args.number("--nodes", ns.nodes, MAX_GPUS, "bounds.MAX_GPUS")
        per = plan_args.number("--gpus-per-node", ns.gpus_per_node, MAX_GPUS, "bounds.MAX_GPUS")
        gpus = (plan_args.number("--nodes x --gpus-per-node", nodes * per, MAX_GPUS,
                                 "bounds.MAX_GPUS"),)  # fmt: skip
    else:
        raise UsageError("plan needs --gpus (or --nodes with --gpus-per-node)")
    plan_args.number("--top", ns.top, MAX_PLANS, "bounds.MAX_PLANS")
    if ns.emit is not None:
        plan_args.number("--emit", ns.emit, MAX_PLANS, "bounds.MAX_PLANS")
    if ns.emit_format != "yaml" and ns.emit is None:
        raise UsageError("--emit-format is the form of --emit N")
    if ns.output is not None:
        if ns.emit is None and ns.format != "html":
            raise UsageError("-o names the file for --emit N or --format html")
        # Lazy: only a command that writes a file checks one.
        from moe_lint.output.target import output_target

        output_target(ns.output)
    fixed, others = plan_args.fixed(ns.set)
    opts = Options(
        model=ns.model,
        gpu=ns.gpu,
        gpus=gpus,
        seq=ns.seq,
        gbs=ns.gbs,
        tokens_per_step=ns.tokens_per_step,
        precision=ns.precision,
        dispatcher=ns.dispatcher,
        max_ep=ns.max_ep,
        fixed=fixed,
        overrides=others,
        safe=ns.safe,
        objective=ns.objective,
        top=max(ns.top, ns.emit or 0),
        gpus_per_node=ns.gpus_per_node,
        compare=plan_args.layout(ns.compare),
    )
    plan_args.check(opts)
    return ns, opts


def _cmd_plan(argv: list[str]) -> int:
    """``moe-lint plan``: ranked layouts for a run, pruned values with the rule that pruned them."""
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan.run import run

    ns, opts = plan_options(argv)
    try:
        result = run(opts)
    except (InputError, NotBridgeConfig) as exc:
        print(f"moe-lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if ns.emit is not None:
        # Lazy: the planner loads only for `moe-lint plan`.
        from moe_lint.plan.emit import emit_text

        if ns.emit > len(result.shown):
            print(f"moe-lint: error: --emit {ns.emit}: only {len(result.shown)} plans",
                  file=sys.stderr)  # fmt: skip
            return EXIT_FINDINGS
        cand = result.shown[ns.emit - 1]
        if ns.emit_format == "hydra":
            # Lazy: the planner loads only for `moe-lint plan`.
            from moe_lint.plan.emit import emit_hydra

            text = emit_hydra(result.request, cand, ns.model, result.settings,
                              result.mixed_recipe, ns.emit)  # fmt: skip
        else:
            text = emit_text(result.request, cand, ns.model, result.settings,
                             result.base_is_yaml, result.mixed_recipe, result.base_text,
                             ns.emit)  # fmt: skip
            if ns.emit_format == "megatron-lm":
                # Lazy: the planner loads only for `moe-lint plan`.
                from moe_lint.plan.emit import emit_megatron_lm

                text = emit_megatron_lm(result.request, cand, ns.model, result.settings,
                                        result.mixed_recipe, ns.emit, text)  # fmt: skip
        if ns.output:
            # Lazy: only a command that writes a file checks one.
            from moe_lint.output.target import write_output

            write_output(ns.output, text)
        else:
            sys.stdout.write(text)
        return EXIT_OK
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan import report as plan_report

    shown = result.shown[: ns.top]
    result.shown = shown
    if ns.format == "html":
        # Lazy: the HTML report loads only when asked for.
        from moe_lint.plan import html as plan_html

        page = plan_html.page(result)
        if ns.output:
            # Lazy: only a command that writes a file checks one.
            from moe_lint.output.target import write_output

            write_output(ns.output, page)
        else:
            sys.stdout.write(page)
    elif ns.format == "json":
        sys.stdout.write(plan_report.to_json(result))
    elif _use_color(sys.stdout, ns.color):
        plan_report.to_rich(result, sys.stdout)
    else:
        sys.stdout.write(plan_report.to_text(result))
    return EXIT_OK if shown else EXIT_FINDINGS
