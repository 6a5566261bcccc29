"""Every error rule names the real raise site and the stage at which it raises.

The convention (docs/error-rules.md shows it to users, tools/error_rules.py writes that page):

* ``source:`` is a ``; ``-separated list of sites. The first one is the primary raise site: the
  framework code that raises for every configuration the rule flags, on the default versions
  (Megatron-Core 0.19.2, Megatron Bridge 0.6.2, Transformer Engine 2.18) unless its note names
  another. Sites that can raise earlier under extra conditions follow it.
* A site is ``<path>::<qualname>``, optionally followed by `` (note)``. The path is the file's
  path inside the installed package, from the package root: ``megatron/core/...``,
  ``megatron/training/...`` (the Megatron-Core wheel), ``megatron/bridge/...`` (the Bridge wheel;
  ``src/megatron/bridge/...`` in its repository), ``transformer_engine/...``, ``omegaconf/...``,
  ``hydra/...`` (hydra-core, which applies Bridge's command-line overrides) or ``torch/...``.
  The qualname is a function or ``Class.method``.
* Non-Python sites are listed in NATIVE_SITES, each with its reason: an out-of-memory error is
  raised by PyTorch's CUDA caching allocator in C++, and TE's fused router checks top-k in CUDA.
* ``stage:`` says when the primary site raises, one of catalogue.STAGES: ``startup`` (applying
  the command-line overrides, before any config is validated), ``config`` (loading and
  validating the config: OmegaConf.load, Bridge ConfigContainer.validate, Megatron-Core
  ``__post_init__``), ``process-groups`` (Bridge initialize_megatron: the microbatch calculator,
  torch.distributed and parallel_state.initialize_model_parallel), ``model-build`` (module
  constructors, GPTModelProvider.provide) or ``first-step`` (the first forward, backward or
  optimizer step, an out-of-memory error included); ``silent`` for a config the framework runs
  without raising, training wrongly: its sites are the code that does the wrong thing.

Quoted framework messages are checked by hand against the sources (they are not available when
the tests run); a quote is always a verbatim substring of the cited source.
"""

from __future__ import annotations

import re

import pytest

from moe_lint.engine.catalogue import STAGES, Rule, load_catalogue
from moe_lint.engine.findings import primary_source, split_sources

RULES = load_catalogue(plugins=False).rules
ERROR_RULES = [rule for rule in RULES if rule.severity == "error"]

#: ``<package path>.py::<qualname>`` with an optional parenthesised note.
SITE = re.compile(
    r"^(?:megatron/(?:core|training|bridge)|transformer_engine|omegaconf|hydra|torch)/"
    r"[A-Za-z0-9_/]+\.py::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?: \(.+\))?$"
)
#: Raise sites outside Python, each with the reason no Python site exists.
NATIVE_SITES = {
    "c10/cuda/CUDACachingAllocator.cpp::DeviceCachingAllocator::malloc": (
        "PyTorch's CUDA caching allocator raises torch.OutOfMemoryError from C++"
    ),
    "transformer_engine/common/fused_router/fused_topk_with_score_function.cu::"
    "fused_topk_with_score_function_forward_kernel_launcher": (
        "TE's fused router (moe_router_fusion) checks top-k in its CUDA launcher, TE >= 2.17"
    ),
    "transformer_engine/pytorch/csrc/quantizer.cpp::MXFP8Quantizer::create_tensor": (
        "TE's MXFP8 quantizer checks the tensor dims in C++ (NVTE_CHECK) when it allocates the"
        " quantized tensor, for tex.quantize and the fused norm kernels alike"
    ),
    "transformer_engine/pytorch/csrc/quantizer.cpp::NVFP4Quantizer::create_tensor": (
        "TE's NVFP4 quantizer checks the tensor dims in C++ (NVTE_CHECK) when it allocates the"
        " quantized tensor"
    ),
}


def site_ok(site: str) -> bool:
    native = next((key for key in NATIVE_SITES if site.startswith(key)), None)
    if native is not None:
        rest = site[len(native) :]
        return rest == "" or re.fullmatch(r" \(.+\)", rest) is not None
    return SITE.match(site) is not None


@pytest.mark.parametrize("rule", ERROR_RULES, ids=lambda r: r.code)
def test_error_rule_names_stage_and_raise_site(rule: Rule) -> None:
    assert rule.stage in STAGES, f"{rule.code}: stage {rule.stage!r} must be one of {STAGES}"
    sites = split_sources(rule.source)
    assert sites and sites[0] == primary_source(rule.source)
    bad = [site for site in sites if not site_ok(site)]
    assert not bad, f"{rule.code}: not a <package path>.py::<qualname> raise site: {bad}"


def test_only_error_rules_have_a_stage() -> None:
    staged = [rule.code for rule in RULES if rule.severity != "error" and rule.stage is not None]
    assert staged == []


@pytest.mark.parametrize(
    "site",
    [
        "megatron/core/parallel_state.py::initialize_model_parallel",
        "megatron/bridge/training/config.py::ConfigContainer.validate",
        "megatron/core/transformer/transformer_config.py::TransformerConfig.__post_init__"
        " (core_v0.14.0)",
        "transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py"
        "::attn_forward_func_with_cp",
        "c10/cuda/CUDACachingAllocator.cpp::DeviceCachingAllocator::malloc (PyTorch)",
    ],
)
def test_raise_site_pattern_accepts(site: str) -> None:
    assert site_ok(site)


@pytest.mark.parametrize(
    "site",
    [
        "Bridge training/config.py::ConfigContainer.validate",  # not a package path
        "TE attention/dot_product_attention/utils.py::get_attention_backend",
        "transformer_config.py::TransformerConfig.__post_init__",  # no package prefix
        "megatron/core/transformer/cuda_graphs.py",  # no function
        "megatron/core/parallel_state.py::initialize_model_parallel / other",
        "moe-lint memory model (docs/memory-model.md)",
        "c10/cuda/CUDACachingAllocator.cpp::malloc",  # not the listed native site
    ],
)
def test_raise_site_pattern_rejects(site: str) -> None:
    assert not site_ok(site)


def test_sources_split_outside_parentheses_only() -> None:
    source = "a.py::f (x; y); b.py::g"
    assert split_sources(source) == ["a.py::f (x; y)", "b.py::g"]
    assert primary_source(source) == "a.py::f (x; y)"


def test_error_rules_page_is_current() -> None:
    from conftest import assert_tool_current

    assert_tool_current("error_rules.py")
