"""OpInfo conformance, the CI subset: kiln.testing.conformance.CI_OPS in
float32, int64 and bool, up to 3 samples each, checked against
python/tests/conformance/known_failures.json both ways (a new failure fails,
and so does a listed pair that now compiles).

The full run and its report (python/tests/conformance/report.md):

    python -m kiln.testing.conformance --max-samples 200 \\
        --report python/tests/conformance/report.md --update-known-failures
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from kiln.testing import conformance
from kiln.testing.conformance import PairResult

pytestmark = pytest.mark.e2e

CI_SELECTED, _ = conformance.select(conformance.CI_OPS, conformance.CI_DTYPES)
CI_PAIRS = [(op, dtype) for op in CI_SELECTED for dtype in op.dtypes]

HOW_TO_UPDATE = (
    "\nIf this is intended, update the list: python -m kiln.testing.conformance "
    "--ops {op} --max-samples 200 --update-known-failures (or regenerate the full report: "
    "the command at the top of python/tests/conformance/report.md)"
)


@pytest.fixture(scope="module")
def worker():
    """One worker process for the module: it imports torch, op_db and kiln._C once."""
    w = conformance.Worker()
    yield w
    w.close()


@pytest.fixture(scope="module")
def known():
    return conformance.load_known()


# float32, int64 and bool gate; the half-precision and uint8 pairs run nightly.
GATING_DTYPES = ("float32", "int64", "bool")


@pytest.mark.parametrize(
    "op, dtype", [pytest.param(op, dtype, id=f"{op.name}-{dtype}",
                               marks=[] if dtype in GATING_DTYPES else [pytest.mark.slow])
                  for op, dtype in CI_PAIRS]
)
def test_opinfo(worker, known, op, dtype):
    result = worker.run(op.name, dtype, conformance.CI_MAX_SAMPLES, op.compare, op.core)
    problems = conformance.check_known([result], known)
    detail = f"\nwithout Kiln's compiler: {result.without_kiln}" if result.without_kiln else ""
    if result.detail:
        detail += "\n" + result.detail
    assert not problems, "\n".join(problems) + detail + HOW_TO_UPDATE.format(op=op.name)


def test_ci_subset_spans_the_op_kinds():
    names = {op.name for op in CI_SELECTED}
    assert len(CI_PAIRS) >= 60
    for name in ("add", "sum", "view", "mm", "softmax", "nn.functional.layer_norm", "gather"):
        assert name in names, name
    assert {"float32", "int64", "bool"} <= {dtype for _, dtype in CI_PAIRS}


def test_known_failures_file_is_well_formed():
    path = conformance.KNOWN_FAILURES
    known = json.loads(path.read_text())
    assert list(known) == sorted(known), "keys must be sorted (save_known writes them so)"
    names = set(conformance.opinfos())
    for key, entry in known.items():
        op, _, dtype = key.rpartition("|")
        assert op in names, f"{key}: no OpInfo named {op}"
        assert dtype in conformance.DTYPES, key
        assert entry["category"] in ("fallback", "mismatch", "crash"), key
        assert entry["reason"].strip(), f"{key}: every entry needs a reason"
        assert isinstance(entry.get("sample", 0), int), key


def test_the_report_is_committed_with_its_totals():
    report = conformance.REPORT.read_text()
    assert "python -m kiln.testing.conformance" in report
    assert "of (Core ATen op, float32) pairs are compiled entirely by Kiln" in report


# ---------------------------------------------------------------------------
# The runner itself


def _result(op: str, dtype: str, category: str, sample: int = 0, samples: int = 8) -> PairResult:
    r = PairResult(op, dtype)
    for i in range(samples):
        r.add(i, {"category": category if i == sample else "compiled", "reason": f"{category}!"})
    return r


def test_check_known_both_ways():
    known = {"a|float32": {"category": "fallback", "reason": "x", "sample": 0}}
    assert conformance.check_known([_result("a", "float32", "fallback")], known) == []
    [stale] = conformance.check_known([_result("a", "float32", "compiled")], known)
    assert "stale: now passes, remove it" in stale
    [new] = conformance.check_known([_result("b", "float32", "mismatch", sample=2)], known)
    assert "new mismatch" in new and "sample 2" in new
    [other] = conformance.check_known([_result("a", "float32", "crash")], known)
    assert "now crash" in other and "lists fallback" in other


def test_a_run_with_fewer_samples_does_not_judge_entries_beyond_them():
    known = {"a|int64": {"category": "mismatch", "reason": "x", "sample": 5}}
    short = _result("a", "int64", "compiled", samples=3)
    assert conformance.check_known([short], known) == []
    assert conformance.updated_known(known, [short]) == known
    full = _result("a", "int64", "compiled", samples=8)
    assert conformance.check_known([full], known)
    assert conformance.updated_known(known, [full]) == {}


def test_update_keeps_pairs_the_run_did_not_cover():
    known = {"a|int8": {"category": "fallback", "reason": "x", "sample": 0}}
    updated = conformance.updated_known(known, [_result("b", "float32", "crash", sample=1)])
    assert updated == {
        "a|int8": known["a|int8"],
        "b|float32": {"category": "crash", "reason": "crash!", "sample": 1},
    }


def test_worst_sample_wins():
    r = PairResult("a", "float32")
    r.add(0, {"category": "compiled"})
    r.add(1, {"category": "fallback", "reason": "f"})
    r.add(2, {"category": "mismatch", "reason": "m"})
    r.add(3, {"category": "fallback", "reason": "g"})
    r.add(4, {"skip": "eager raises"})
    assert (r.category, r.reason, r.sample, r.samples) == ("mismatch", "m", 2, 5)
    assert r.counts == {"compiled": 1, "fallback": 2, "mismatch": 1}


def test_compare_is_exact_about_dtype_and_nan_aware():
    import torch

    x = torch.tensor([1.0, float("nan")])
    assert conformance.compare(x.clone(), x) is None
    assert "dtype" in conformance.compare(x.double(), x)
    assert conformance.compare(x + 1e-3, x) is not None
    assert conformance.compare(torch.tensor([1, 2]), torch.tensor([1, 3])) is not None
    assert conformance.compare((x, 3), (x, 4)) is not None
    # An int sample of sin gives float32: float32 tolerances, not int64's exactness.
    assert conformance.compare(torch.tensor([0.5 + 6e-8]), torch.tensor([0.5])) is None


def test_random_outputs_are_compared_by_statistics():
    import torch

    a = torch.randn(4000, generator=torch.Generator().manual_seed(1))
    b = torch.randn(4000, generator=torch.Generator().manual_seed(2))
    assert conformance.compare(a, b, mode="random") is None
    assert "mean" in conformance.compare(a + 1, b, mode="random")
    assert "std" in conformance.compare(a * 3, b, mode="random")
    assert conformance.compare(a[:10], b, mode="random") is not None  # shapes still must match


def test_selection_is_core_aten():
    selected, skipped = conformance.select()
    names = {op.name for op in selected if op.core}
    assert {"add", "mm", "native_layer_norm", "cumsum"} <= names
    assert "softmax" not in names  # aten.softmax is composite; its CI entry is not core
    assert skipped["__radd__"] == "Python operator variant"
    assert "resize_" in skipped
    assert "has no Core ATen overload" in skipped["linalg.det"]


# A stand-in worker that speaks the protocol and then misbehaves.
_FAKE_WORKER = textwrap.dedent("""
    import json, os, signal, sys, time
    out = sys.stdout
    print(json.dumps({"event": "ready"}), file=out, flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        print(json.dumps({"event": "begin", "index": 0, "desc": "input f32[2]"}), file=out, flush=True)
        if job["op"] == "segfault":
            print("kiln: something went badly wrong", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        if job["op"] == "hang":
            time.sleep(60)
        print(json.dumps({"event": "sample", "index": 0, "desc": "input f32[2]",
                          "category": "compiled", "kernels": 1}), file=out, flush=True)
        print(json.dumps({"event": "end", "seconds": 0}), file=out, flush=True)
""")


class _FakeWorker(conformance.Worker):
    def __init__(self, case_timeout: float = conformance.CASE_TIMEOUT_S):
        super().__init__(case_timeout, conformance.Build(path="unused", stamp="fake"))

    def _command(self) -> list[str]:
        return [sys.executable, "-c", _FAKE_WORKER]


def test_a_dying_worker_is_a_crash_and_is_replaced():
    worker = _FakeWorker()
    try:
        crashed = worker.run("segfault", "float32", 3)
        assert crashed.category == "crash" and crashed.sample == 0
        assert "SIGSEGV" in crashed.reason and "something went badly wrong" in crashed.reason
        assert crashed.desc == "input f32[2]"
        fine = worker.run("fine", "float32", 3)
        assert fine.category == "compiled" and fine.kernels == 1
    finally:
        worker.close()


def test_a_hanging_sample_is_a_crash():
    worker = _FakeWorker(case_timeout=1.0)
    try:
        hung = worker.run("hang", "float32", 3)
        assert hung.category == "crash" and "timeout" in hung.reason
        assert worker.run("fine", "float32", 3).category == "compiled"
    finally:
        worker.close()


@pytest.fixture(scope="module")
def dynamic_worker():
    """A worker that compiles every sample with dynamic=True."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(conformance.DYNAMIC_ENV, "1")
        w = conformance.Worker()
        yield w
        w.close()


DYNAMIC_PAIRS = [(op, "float32") for op in CI_SELECTED if "float32" in op.dtypes]


@pytest.mark.slow
@pytest.mark.parametrize(
    "op", [pytest.param(op, id=op.name) for op, _ in DYNAMIC_PAIRS]
)
def test_opinfo_with_symbolic_sizes(dynamic_worker, op):
    """The CI subset with dynamic=True: an op either compiles with symbolic
    sizes and matches eager, or falls back with its reason; never a wrong
    answer or a crash."""
    result = dynamic_worker.run(op.name, "float32", 2, op.compare, op.core)
    detail = f"\nwithout Kiln's compiler: {result.without_kiln}" if result.without_kiln else ""
    if result.category == "crash" and "fails too" in result.without_kiln:
        pytest.skip(f"PyTorch fails this sample with symbolic sizes too: {result.reason[:200]}")
    assert result.category not in ("mismatch", "crash"), (
        f"{result.key} sample {result.sample} ({result.desc}): {result.category}: "
        f"{result.reason}{detail}\n{result.detail}")
