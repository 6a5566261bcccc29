"""``moe-lint server``: moe-lint in an editor, over the Language Server Protocol (stdio).

Two modules, so that what the editor is told is moe-lint's own answer and not a second
implementation of it:

- ``linter``: plain moe-lint, no LSP types. One open file's lint with the CLI's settings (the
  closest pyproject.toml per file, its directives, the editor's ``--gpus``-like options), its
  fixes judged as ``--fix`` judges them, the hover text of a finding or a field, and the memory
  estimate per pipeline stage. Every failure is one problem record, never an exception.
- ``protocol``: the pygls server that turns those into diagnostics, code actions, hovers and
  code lenses, debounced per file.

pygls is an optional dependency (``moe-lint[server]``): nothing here is imported by
``moe-lint check``, and ``moe-lint server`` says what to install when it is missing.
"""
