"""Audits of the catalogue on the worlds, run through the evaluation core: a world proven by the oracle and the static
baseline under every perturbation (``check_domain``, ``openagent check-domain``), how hard each perturbation bites the
static baseline (``strength``), and the generated pages in ``docs/``: the catalogue (``catalogue``) and the
perturbation × domain matrix (``domain_matrix``)."""
