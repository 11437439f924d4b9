"""Kiln/eager partition boundaries, differentially against aot_eager.

Each seed is one random program (kiln.testing.boundaries) run forward and
backward with a random subset of its ops forced to eager. The gating tier
runs GATING_SEEDS, the nightly one (slow) the rest of NIGHTLY_SEEDS;
`python -m kiln.testing.boundaries --seeds 0:5000` is the long run.
"""

from __future__ import annotations

import pytest
import torch

from kiln.testing import boundaries

pytestmark = pytest.mark.e2e

CI_SEEDS = range(0, 80)  # the generator's variety is checked over these
NIGHTLY_SEEDS = range(0, 240)
FEATURES = ("transpose", "permute", "expand", "::2", "select", "@", "softmax",
            "layer_norm", "scaled_dot_product_attention", "cat", "fill_", "mul_")


def _gating_seeds(count: int = 16) -> list[int]:
    """The first `count` seeds, and the first seed with each feature they lack."""
    seeds = list(range(count))
    text = "\n".join(boundaries.generate(s).source for s in seeds)
    for feature in FEATURES:
        if feature not in text:
            seeds.append(next(s for s in CI_SEEDS if feature in boundaries.generate(s).source))
    return sorted(set(seeds))


GATING_SEEDS = _gating_seeds()


@pytest.mark.parametrize("seed", [pytest.param(s, marks=[] if s in GATING_SEEDS else [pytest.mark.slow])
                                  for s in NIGHTLY_SEEDS])
def test_boundary_case_matches_aot_eager(seed):
    case = boundaries.generate(seed)
    outcome = boundaries.check(case)
    assert outcome.ok, f"{case.describe()}\n{outcome.message}"
    assert outcome.graphs > 0, "Kiln compiled nothing"
    # Kiln kernels ran, unless the case forced every op it computes to eager
    # (seed 41 does): then each op that ran in eager was forced there.
    assert outcome.kernels > 0 or 0 < outcome.forced == outcome.eager_ops, outcome


def test_generator_is_deterministic_and_varied():
    assert boundaries.generate(7) == boundaries.generate(7)
    sources = {boundaries.generate(s).source for s in CI_SEEDS}
    assert len(sources) == len(CI_SEEDS)
    text = "\n".join(sources)
    gating = "\n".join(boundaries.generate(s).source for s in GATING_SEEDS)
    for feature in FEATURES:
        assert feature in text and feature in gating, feature
    forced = {boundaries.generate(s).force_fraction for s in CI_SEEDS}
    assert {0.0, 0.5} <= forced


def test_forced_ops_create_boundaries_in_forward_and_backward():
    case = next(c for c in map(boundaries.generate, CI_SEEDS) if c.force_fraction >= 0.5)
    outcome = boundaries.check(case)
    assert outcome.ok, outcome.message
    assert outcome.forced > 0 and {"forward", "backward"} <= outcome.kinds
    assert outcome.kernels > 0, outcome


def _first_failing_seed(cases) -> int | None:
    for case in cases:
        if not boundaries.check(case).ok:
            return case.seed
    return None


def test_catches_row_major_outputs(monkeypatch):
    """The check fails when Kiln's outputs lose eager's layout (the old bridge)."""
    import kiln.runner

    monkeypatch.setattr(kiln.runner, "executable_layouts",
                        lambda exe, serialized: [None] * exe.num_outputs)
    cases = [boundaries.generate(s) for s in list(CI_SEEDS)[:20]]
    assert _first_failing_seed(cases) is not None


def test_catches_inference_only_decomposition(monkeypatch):
    """...and when the decompositions break SDPA's backward (the NaN gradients)."""
    import kiln.decompositions

    monkeypatch.setattr(kiln.decompositions, "KILN_NATIVE_OPS",
                        (torch.ops.aten.floor_divide.default,))
    kiln.decompositions.decomposition_table.cache_clear()
    cases = [c for c in map(boundaries.generate, range(1000))
             if "scaled_dot_product_attention" in c.source][:8]
    try:
        assert _first_failing_seed(cases) is not None
    finally:
        kiln.decompositions.decomposition_table.cache_clear()
