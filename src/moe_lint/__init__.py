"""moe-lint: find long-context MoE config problems in Megatron Bridge YAML before launch."""

__version__ = "0.1.0"
