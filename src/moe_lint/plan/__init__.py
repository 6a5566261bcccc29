"""``moe-lint plan``: search the layouts of a long-context MoE run and rank the ones that fit.

- :mod:`.perf`: the analytical step-time model (FLOPs, achievable throughput, communication,
  pipeline bubble); every constant is in ``data/planner.yaml`` with its source.
- :mod:`.space`: one candidate plan (layout + knobs), read from a config or built by the search.
- :mod:`.search`: enumeration with the linter's feasibility rules first, then memory, then rank.
- :mod:`.emit`: a plan as a Bridge override YAML; :mod:`.report`: the table and JSON.

docs/planner.md states every formula.
"""
