"""The domains: the built-in worlds (``poi``, ``medical``, ``bfcl``, ``mcp``) as subpackages, and the registry
that names them (:mod:`sandbox.domains.registry`), re-exported here."""

from sandbox.domains.registry import (
    BUILT_IN,
    DOMAINS,
    EAGER,
    ENTRY_POINTS,
    LAZY,
    domain_names,
    domain_of,
    get_domain,
    make_env,
    register_domain,
)

__all__ = [
    "BUILT_IN",
    "DOMAINS",
    "EAGER",
    "ENTRY_POINTS",
    "LAZY",
    "domain_names",
    "domain_of",
    "get_domain",
    "make_env",
    "register_domain",
]
