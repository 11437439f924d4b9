"""Every op Kiln supports, compiled with fallback="error" and compared to eager."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
import kiln

from kiln_test_utils import assert_kiln_matches_eager as check
from kiln_test_utils import assert_kiln_ran, compile_kiln

pytestmark = pytest.mark.e2e


# Input makers. Each case builds fresh inputs after the per-test seed is set.
def f32(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def pos(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) + 0.1


def i64(*shape: int, low: int = -5, high: int = 6) -> torch.Tensor:
    return torch.randint(low, high, shape)


def nz64(*shape: int) -> torch.Tensor:
    """Non-zero int64 (divisors)."""
    x = torch.randint(1, 6, shape)
    return torch.where(torch.rand(shape) > 0.5, x, -x)


def b(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) > 0.5


def strided(rows: int, cols: int) -> torch.Tensor:
    """A sliced (every other column), non-contiguous float tensor of shape (rows, cols)."""
    return torch.randn(rows, 2 * cols)[:, ::2]


# ---------------------------------------------------------------------------
# matmul

MATMUL = [
    ("mm", torch.mm, lambda: (f32(4, 8), f32(8, 5))),
    ("mm_transposed", torch.mm, lambda: (f32(8, 4).t(), f32(5, 8).t())),
    ("mm_sliced", torch.mm, lambda: (strided(4, 8), f32(8, 5))),
    ("mm_size1", torch.mm, lambda: (f32(1, 1), f32(1, 7))),
    ("mm_size0_k", torch.mm, lambda: (f32(3, 0), f32(0, 4))),
    ("mm_size0_m", torch.mm, lambda: (f32(0, 3), f32(3, 4))),
    ("mm_int64", torch.mm, lambda: (i64(3, 4), i64(4, 2))),
    ("matmul_operator", lambda a, b: a @ b, lambda: (f32(16, 32), f32(32, 24))),
    ("addmm", torch.addmm, lambda: (f32(5), f32(4, 8), f32(8, 5))),
    ("addmm_full_bias", torch.addmm, lambda: (f32(4, 5), f32(4, 8), f32(8, 5))),
    (
        "addmm_alpha_beta",
        lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
        lambda: (f32(4, 5), f32(4, 8), f32(8, 5)),
    ),
    ("addmm_transposed", torch.addmm, lambda: (f32(5), f32(8, 4).t(), f32(5, 8).t())),
    ("linear", F.linear, lambda: (f32(6, 8), f32(3, 8), f32(3))),
    ("linear_3d", F.linear, lambda: (f32(2, 6, 8), f32(3, 8), f32(3))),
    ("linear_no_bias", F.linear, lambda: (f32(6, 8), f32(3, 8))),
    ("bmm", torch.bmm, lambda: (f32(2, 3, 4), f32(2, 4, 5))),
    ("bmm_transposed", lambda a, b: torch.bmm(a, b.transpose(1, 2)), lambda: (f32(2, 3, 4), f32(2, 5, 4))),
    ("bmm_batch1", torch.bmm, lambda: (f32(1, 3, 4), f32(1, 4, 1))),
    ("matmul_4d", torch.matmul, lambda: (f32(2, 3, 4, 5), f32(2, 3, 5, 6))),
    ("matmul_broadcast", torch.matmul, lambda: (f32(2, 3, 4, 5), f32(5, 6))),
    # K of at least 256: B is packed in blocks of 128 rows of K (the last one
    # shorter), with ragged row and column tiles around the packed ones.
    ("mm_packed", torch.mm, lambda: (f32(50, 300), f32(300, 70))),
    ("bmm_packed", torch.bmm, lambda: (f32(2, 13, 512), f32(2, 512, 40))),
    ("addmm_packed", torch.addmm, lambda: (f32(33), f32(20, 257), f32(257, 33))),
    # x @ w.t() with at least 64 rows and K of at least 256: w is transposed
    # into the panels (vector blocks, then the k past the last block one at a
    # time), with a shorter tile of rows and dot-product columns around them.
    ("linear_packed", F.linear, lambda: (f32(70, 300), f32(50, 300), f32(50))),
    # (scaled so the sum over K = 512 stays within the absolute tolerance)
    ("linear_packed_aligned", F.linear, lambda: (f32(64, 512) / 4, f32(64, 512) / 4)),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in MATMUL])
def test_matmul(fn, make):
    check(fn, *make())


# ---------------------------------------------------------------------------
# elementwise binary: add sub mul div


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}

# (id, inputs, ops it applies to). Divisors are non-zero.
BINARY_INPUTS = [
    ("f32", lambda: (f32(3, 4), pos(3, 4)), "add sub mul div"),
    ("broadcast", lambda: (f32(4, 1, 3), pos(2, 3)), "add sub mul div"),
    ("broadcast_rank1", lambda: (f32(5, 3), pos(3)), "add sub mul div"),
    ("size1_broadcast", lambda: (f32(1), pos(4, 1)), "add sub mul div"),
    ("size0", lambda: (f32(0, 3), pos(1, 3)), "add sub mul div"),
    ("transposed", lambda: (f32(4, 3).t(), pos(3, 4)), "add sub mul div"),
    ("sliced", lambda: (strided(3, 4), pos(3, 4)[:, :]), "add sub mul div"),
    ("scalar_float", lambda: (f32(3, 4), 2.5), "add sub mul div"),
    ("scalar_int", lambda: (f32(3, 4), 3), "add sub mul div"),
    ("scalar_first", lambda: (2.0, pos(3, 4)), "add sub mul div"),
    ("int64", lambda: (i64(3, 4), nz64(3, 4)), "add sub mul div"),
    ("int64_scalar", lambda: (i64(3, 4), 3), "add sub mul div"),
    ("int64_float_promotion", lambda: (i64(3, 4), pos(3, 4)), "add sub mul div"),
    ("int64_float_scalar", lambda: (i64(3, 4), 0.5), "add sub mul div"),
    ("bool", lambda: (b(3, 4), b(3, 4)), "add mul"),
    ("bool_float", lambda: (b(3, 4), pos(3, 4)), "add mul div"),
]


@pytest.mark.parametrize(
    "op, make",
    [
        pytest.param(op, make, id=f"{op}-{name}")
        for name, make, ops in BINARY_INPUTS
        for op in ops.split()
    ],
)
def test_binary(op, make):
    fn = BINARY[op]
    a, b_ = make()
    if not isinstance(a, torch.Tensor):  # scalar first: only the operator form accepts it
        check(lambda y: _reflected(op, a, y), b_)
    elif isinstance(b_, torch.Tensor):
        check(fn, a, b_)
    else:
        check(lambda x: fn(x, b_), a)


def _reflected(op: str, scalar: float, y: torch.Tensor) -> torch.Tensor:
    if op == "add":
        return scalar + y
    if op == "sub":
        return scalar - y
    if op == "mul":
        return scalar * y
    return scalar / y


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda x, y: torch.add(x, y, alpha=2), id="add_alpha"),
        pytest.param(lambda x, y: torch.sub(x, y, alpha=0.5), id="sub_alpha"),
        pytest.param(lambda x, y: (x + y) * (x - y) / (y * y + 1), id="chain"),
    ],
)
def test_binary_variants(fn):
    check(fn, f32(3, 4), f32(3, 4))


# ---------------------------------------------------------------------------
# elementwise unary

UNARY = [
    ("neg", torch.neg, f32),
    ("relu", torch.relu, f32),
    ("gelu", F.gelu, f32),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), f32),
    ("tanh", torch.tanh, f32),
    ("exp", torch.exp, f32),
    ("log", torch.log, pos),
    ("sqrt", torch.sqrt, pos),
    ("rsqrt", torch.rsqrt, pos),
    ("sigmoid", torch.sigmoid, f32),
    ("pow2", lambda x: torch.pow(x, 2), f32),
    ("pow3", lambda x: x**3, f32),
    ("pow_half", lambda x: x**0.5, pos),
    ("pow_neg", lambda x: x**-1.5, pos),
    ("abs", torch.abs, f32),
    ("sin", torch.sin, f32),
    ("cos", torch.cos, f32),
    ("floor", torch.floor, f32),
    ("ceil", torch.ceil, f32),
    ("trunc", torch.trunc, f32),
    ("round", torch.round, f32),
    ("hardtanh", F.hardtanh, f32),
    ("relu6", F.relu6, f32),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.7), f32),
    ("clamp_min", lambda x: x.clamp(min=0.25), f32),
    ("clamp_max", lambda x: x.clamp(max=-0.25), f32),
    ("logical_not", lambda x: torch.logical_not(x.round()), f32),
    ("sign", torch.sign, f32),
    ("frac", torch.frac, f32),
    ("exp2", torch.exp2, f32),
    ("expm1", torch.expm1, f32),
    ("log1p", torch.log1p, pos),
    ("log2", torch.log2, pos),
    ("log10", torch.log10, pos),
    ("erf", torch.erf, f32),
    ("tan", torch.tan, f32),
    ("atan", torch.atan, f32),
    ("sinh", torch.sinh, f32),
    ("cosh", torch.cosh, f32),
]

UNARY_SHAPES = [
    ("2d", lambda make: make(3, 4)),
    ("3d", lambda make: make(2, 3, 5)),
    ("transposed", lambda make: make(4, 3).t()),
    ("size0", lambda make: make(0, 4)),
    ("size1", lambda make: make(1)),
    ("scalar", lambda make: make(())),
]


@pytest.mark.parametrize("shape", [pytest.param(s, id=n) for n, s in UNARY_SHAPES])
@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in UNARY])
def test_unary(fn, make, shape):
    check(fn, shape(make))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(torch.neg, id="neg"),
        pytest.param(torch.relu, id="relu"),
        pytest.param(lambda x: x**2, id="pow2"),
    ],
)
def test_unary_int64(fn):
    check(fn, i64(3, 4))


@pytest.mark.parametrize(
    "fn",
    [pytest.param(f, id=n) for n, f in [
        ("abs", torch.abs), ("floor", torch.floor), ("round", torch.round),
        ("clamp", lambda x: x.clamp(-2, 3)), ("clamp_float_bound", lambda x: x.clamp(min=0.5)),
        ("logical_not", torch.logical_not), ("minimum", lambda x: torch.minimum(x, x.t())),
    ]],
)
def test_integer_rounding_clamps_and_logic(fn):
    check(fn, torch.randint(-5, 5, (4, 4)))


def _spread(low: float, high: float) -> torch.Tensor:
    """Values from tiny to large magnitudes, both signs, plus the specials."""
    mags = torch.logspace(low, high, 2001)
    return torch.cat([-mags, mags, torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf")])])


ACCURACY = [
    ("sin", torch.sin, _spread(-30, 3.5)),
    ("cos", torch.cos, _spread(-30, 3.5)),
    ("tan", torch.tan, _spread(-30, 3.5)),
    ("exp2", torch.exp2, _spread(-30, 2.1)),
    ("expm1", torch.expm1, _spread(-30, 1.9)),
    ("log1p", torch.log1p, _spread(-30, 30)[2001:]),
    ("log2", torch.log2, _spread(-30, 30)[2001:]),
    ("log10", torch.log10, _spread(-30, 30)[2001:]),
    ("erf", torch.erf, _spread(-30, 1)),
    ("atan", torch.atan, _spread(-30, 30)),
    ("sinh", torch.sinh, _spread(-30, 1.9)),
    ("cosh", torch.cosh, _spread(-30, 1.9)),
]


@pytest.mark.parametrize("fn, x", [pytest.param(f, x, id=n) for n, f, x in ACCURACY])
def test_unary_accuracy_against_float64(fn, x):
    """Relative error against float64 over tiny to large arguments, within a
    few float32 ulps (a polynomial that is only absolutely accurate fails
    near zero), and the same NaN and infinities as eager."""
    out = compile_kiln(fn, fallback="error")(x)
    assert_kiln_ran(strict=True)
    expected = fn(x)
    assert torch.equal(out.isnan(), expected.isnan()) and torch.equal(out.isinf(), expected.isinf())
    exact = fn(x.double())
    finite = exact.isfinite() & out.isfinite() & (exact.abs() > 1e-37)
    rel = ((out.double() - exact).abs() / exact.abs())[finite]
    assert rel.max().item() < 4e-7, f"max relative error {rel.max().item():.3g}"


@pytest.mark.parametrize("fn", [torch.sin, torch.cos], ids=["sin", "cos"])
def test_trig_of_large_and_special_arguments(fn):
    """RoPE angles reach thousands of radians: reduced in float64, the result
    stays within float32 rounding of eager's; NaN and infinities give NaN."""
    x = torch.cat([torch.linspace(-3000, 3000, 6001), torch.tensor([0.0, -0.0, 1e5, float("nan"),
                                                                    float("inf"), -float("inf")])])
    out = compile_kiln(fn, fallback="error")(x)
    torch.testing.assert_close(out, fn(x), rtol=1e-5, atol=1e-6, equal_nan=True)
    assert_kiln_ran(strict=True)


def test_round_halves_to_even():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 8388609.0, float("nan"), float("inf")])
    out = compile_kiln(torch.round, fallback="error")(x)
    torch.testing.assert_close(out, torch.round(x), rtol=0, atol=0, equal_nan=True)
    assert_kiln_ran(strict=True)


@pytest.mark.parametrize("op", [torch.logical_and, torch.logical_or, torch.logical_xor])
@pytest.mark.parametrize("make", [
    pytest.param(lambda: (b(3, 4), b(3, 4)), id="bool"),
    pytest.param(lambda: (f32(3, 4).round(), torch.tensor([0.0, 1.0, float("nan"), 0.0])), id="float_nan_broadcast"),
    pytest.param(lambda: (torch.randint(-1, 2, (2, 3)), b(3)), id="int_bool"),
])
def test_logical_binary(op, make):
    check(op, *make())


def test_minimum_and_clamp_propagate_nan():
    x = torch.tensor([1.0, float("nan"), -3.0, 0.5])
    y = torch.tensor([float("nan"), 2.0, -4.0, 0.25])
    fn = lambda a, c: (torch.minimum(a, c), a.clamp(-1, 1), torch.clamp(a, min=c, max=c + 1))  # noqa: E731
    torch.testing.assert_close(compile_kiln(fn, fallback="error")(x, y), fn(x, y), equal_nan=True)
    assert_kiln_ran(strict=True)


def test_unary_extreme_values():
    x = torch.tensor([-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0])
    check(lambda t: (torch.sigmoid(t), torch.tanh(t), F.gelu(t), F.gelu(t, approximate="tanh")), x)


# ---------------------------------------------------------------------------
# where and comparisons

WHERE = [
    ("same_shape", lambda c, x, y: torch.where(c, x, y), lambda: (b(3, 4), f32(3, 4), f32(3, 4))),
    ("broadcast", lambda c, x, y: torch.where(c, x, y), lambda: (b(4, 1), f32(4, 3), f32(3))),
    ("int64", lambda c, x, y: torch.where(c, x, y), lambda: (b(3, 4), i64(3, 4), i64(3, 4))),
    ("bool", lambda c, x, y: torch.where(c, x, y), lambda: (b(3, 4), b(3, 4), b(3, 4))),
    ("size0", lambda c, x, y: torch.where(c, x, y), lambda: (b(0, 4), f32(0, 4), f32(4))),
    ("transposed", lambda c, x, y: torch.where(c, x, y), lambda: (b(4, 3).t(), f32(4, 3).t(), f32(3, 4))),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in WHERE])
def test_where(fn, make):
    check(fn, *make())


def test_where_scalar():
    check(lambda x: torch.where(x > 0, x, 0.0), f32(3, 4))


def test_where_scalar_inf():
    check(lambda x: torch.where(x > 0, x, float("-inf")), f32(3, 4))


COMPARE = {
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}

COMPARE_INPUTS = [
    ("f32", lambda: (f32(3, 4), f32(3, 4))),
    ("f32_ties", lambda: (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 3.0, 2.0]))),
    ("broadcast", lambda: (f32(4, 1), f32(3))),
    ("scalar", lambda: (f32(3, 4), 0.25)),
    ("int64", lambda: (i64(3, 4, low=-2, high=3), i64(3, 4, low=-2, high=3))),
    ("int64_scalar", lambda: (i64(3, 4), 1)),
    ("int64_float", lambda: (i64(3, 4), f32(3, 4))),
    ("bool", lambda: (b(3, 4), b(3, 4))),
    ("transposed", lambda: (f32(4, 3).t(), f32(3, 4))),
    ("size0", lambda: (f32(0, 3), f32(3))),
]


@pytest.mark.parametrize(
    "op, make",
    [pytest.param(op, m, id=f"{op}-{n}") for n, m in COMPARE_INPUTS for op in COMPARE],
)
def test_compare(op, make):
    fn = COMPARE[op]
    x, y = make()
    if isinstance(y, torch.Tensor):
        check(fn, x, y)
    else:
        check(lambda t: fn(t, y), x)


# ---------------------------------------------------------------------------
# softmax, log_softmax, layer_norm


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "shape, dim",
    [((4, 16), -1), ((4, 16), 0), ((2, 3, 8), 1), ((2, 3, 8), -1), ((1, 1), -1), ((5, 1), -1), ((0, 4), -1)],
    ids=["2d_last", "2d_first", "3d_mid", "3d_last", "size1", "size1_dim", "size0"],
)
def test_softmax(name, shape, dim):
    fn = getattr(torch, name)
    check(lambda x: fn(x, dim), f32(*shape) * 10)


def test_softmax_transposed():
    check(lambda x: torch.softmax(x, -1), f32(16, 4).t())


def test_softmax_masked():
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    check(lambda x, m: torch.softmax(x.masked_fill(m, float("-inf")), -1), f32(6, 6), future)


LAYER_NORM = [
    ("affine", lambda: (f32(4, 8), (8,), f32(8), f32(8), 1e-5)),
    ("no_affine", lambda: (f32(4, 8), (8,), None, None, 1e-5)),
    ("two_dims", lambda: (f32(2, 3, 8), (3, 8), f32(3, 8), f32(3, 8), 1e-5)),
    ("eps", lambda: (f32(2, 3, 8), (8,), f32(8), f32(8), 1e-3)),
    ("size1", lambda: (f32(1, 1), (1,), f32(1), f32(1), 1e-5)),
    ("transposed", lambda: (f32(8, 4).t(), (8,), f32(8), f32(8), 1e-5)),
    ("wide", lambda: (f32(3, 1000) * 5 + 3, (1000,), f32(1000), f32(1000), 1e-5)),
]


@pytest.mark.parametrize("make", [pytest.param(m, id=n) for n, m in LAYER_NORM])
def test_layer_norm(make):
    x, shape, weight, bias, eps = make()
    tensors = [t for t in (weight, bias) if t is not None]

    def fn(x, *wb):
        w, b_ = wb if wb else (None, None)
        return F.layer_norm(x, shape, w, b_, eps)

    check(fn, x, *tensors)


@pytest.mark.parametrize("row", [5, 333])
def test_layer_norm_of_constant_rows_is_the_bias(row):
    """Zero variance: any rounding of the mean is amplified by rsqrt(eps) ~ 316,
    so the mean must come out exactly the rows' value (eager's does)."""
    x = torch.randn(6, 1).expand(6, row) * 7.3
    w, b = torch.randn(row), torch.randn(row)
    fn = lambda x, w, b: F.layer_norm(x, (row,), w, b)  # noqa: E731
    out = compile_kiln(fn, fallback="error")(x, w, b)
    torch.testing.assert_close(out, fn(x, w, b), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out, b.expand(6, row), rtol=1e-6, atol=1e-6)
    assert_kiln_ran(strict=True)


# ---------------------------------------------------------------------------
# reductions

REDUCE_ARGS = [
    ("all", {}),
    ("dim1", {"dim": 1}),
    ("dim_neg", {"dim": -1}),
    ("dims", {"dim": (0, 2)}),
    ("keepdim", {"dim": 1, "keepdim": True}),
    ("dims_keepdim", {"dim": (0, 2), "keepdim": True}),
]


@pytest.mark.parametrize("kwargs", [pytest.param(k, id=n) for n, k in REDUCE_ARGS])
@pytest.mark.parametrize("name", ["sum", "mean", "amax"])
def test_reduction(name, kwargs):
    fn = getattr(torch, name)
    if name == "amax" and "dim" not in kwargs:
        kwargs = {"dim": (0, 1, 2)}
    check(lambda x: fn(x, **kwargs), f32(3, 4, 5))


@pytest.mark.parametrize("kwargs", [{"dim": 0, "keepdim": True}, {"dim": -1}, {"dim": (0,)}])
@pytest.mark.parametrize("name", ["sum", "mean", "amax"])
def test_reduction_of_0d_tensor_over_dim_0(name, kwargs):
    """A 0-d tensor's dim 0 (or -1) is the scalar itself; this used to crash the compiler."""
    fn = getattr(torch, name)
    check(lambda x: fn(x, **kwargs) * 2, torch.tensor(3.5))


@pytest.mark.parametrize(
    "fn, make",
    [
        pytest.param(lambda x: x.sum(1), lambda: i64(3, 4), id="sum_int64"),
        pytest.param(lambda x: x.sum(), lambda: i64(3, 4), id="sum_int64_all"),
        pytest.param(lambda x: x.sum(0), lambda: b(3, 4), id="sum_bool"),
        pytest.param(lambda x: x.amax(1), lambda: i64(3, 4), id="amax_int64"),
        pytest.param(lambda x: x.sum(1), lambda: f32(4, 3).t(), id="sum_transposed"),
        pytest.param(lambda x: x.mean(0), lambda: strided(5, 3), id="mean_sliced"),
        pytest.param(lambda x: x.sum(1), lambda: f32(3, 0), id="sum_size0_dim"),
        pytest.param(lambda x: x.sum(), lambda: f32(0, 3), id="sum_size0_all"),
        pytest.param(lambda x: x.amax(0), lambda: f32(1, 3), id="amax_size1"),
        pytest.param(lambda x: x.mean(-1, keepdim=True), lambda: f32(2, 1000), id="mean_wide"),
        pytest.param(lambda x: x.sum(-1), lambda: f32(4, 4096), id="sum_long_row"),
        # Two reductions of one shape in one kernel: they once shared an
        # output buffer (the second overwrote the first).
        pytest.param(lambda x, y: (x.sum(0), y.sum(0, keepdim=True)),
                     lambda: (f32(1, 3), f32(1, 3)), id="two_sums_one_kernel"),
        pytest.param(lambda x: (x.sum(0), (x * 2).amax(0, keepdim=True)),
                     lambda: f32(1, 5), id="sum_and_amax_one_kernel"),
    ],
)
def test_reduction_cases(fn, make):
    args = make()
    check(fn, *args) if isinstance(args, tuple) else check(fn, args)


@pytest.mark.parametrize("name", ["amin", "prod", "any", "all"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}])
def test_more_reductions(name, dtype, kwargs):
    if name == "amin" and not kwargs:
        kwargs = {"dim": (0, 1)}
    x = {torch.float32: f32(3, 4), torch.int64: i64(3, 4, low=-3, high=4),
         torch.bool: b(3, 4)}[dtype]
    if name == "amin" and dtype == torch.bool:
        pytest.skip("ATen has no amin for bool")
    fn = getattr(torch, name)
    check(lambda x: fn(x, **kwargs), x)


def test_reductions_of_special_values():
    """NaN is true for any/all and propagates through amin and prod."""
    x = torch.tensor([[0.0, float("nan")], [0.0, -0.0], [float("inf"), 1.0]])
    fn = lambda x: (x.any(1), x.all(1), x.amin(1), x.prod(1))  # noqa: E731
    torch.testing.assert_close(compile_kiln(fn, fallback="error")(x), fn(x), equal_nan=True)
    assert_kiln_ran(strict=True)


# ---------------------------------------------------------------------------
# views, copies and data movement

VIEWS = [
    ("view", lambda x: x.view(4, 6) + 1, lambda: f32(2, 3, 4)),
    ("view_flatten", lambda x: x.flatten(1) * 2, lambda: f32(2, 3, 4)),
    ("reshape_transposed", lambda x: x.t().reshape(-1) + 1, lambda: f32(3, 4)),
    ("reshape_int64", lambda x: x.reshape(2, 6) * 3, lambda: i64(3, 4)),
    ("view_only", lambda x: x.view(12), lambda: f32(3, 4)),
    ("permute", lambda x: x.permute(2, 0, 1) * 2, lambda: f32(2, 3, 4)),
    ("permute_only", lambda x: x.permute(1, 0), lambda: f32(3, 4)),
    ("transpose", lambda x: x.transpose(0, 1).contiguous() + 1, lambda: f32(3, 4)),
    ("expand", lambda x, y: x.expand(3, 4) + y, lambda: (f32(3, 1), f32(3, 4))),
    ("expand_new_dim", lambda x: x.expand(2, 3, 4) * 1.5, lambda: f32(3, 4)),
    ("clone", lambda x: x.clone(), lambda: f32(3, 4)),
    ("clone_transposed", lambda x: x.t().clone() + 0.5, lambda: f32(3, 4)),
    ("contiguous_sliced", lambda x: x.contiguous() * 2, lambda: strided(3, 4)),
    ("to_int64", lambda x: (x * 3).to(torch.int64), lambda: f32(3, 4)),
    ("to_float", lambda x: x.to(torch.float32) / 2, lambda: i64(3, 4)),
    ("to_bool", lambda x: x.to(torch.bool), lambda: torch.randint(-1, 2, (3, 4)).float()),
    ("bool_to_float", lambda x: x.to(torch.float32) + 1, lambda: b(3, 4)),
    ("bool_to_int64", lambda x: x.to(torch.int64) * 2, lambda: b(3, 4)),
    ("unsqueeze", lambda x: x.unsqueeze(1) * 2, lambda: f32(3, 4)),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1) + 1, lambda: f32(3, 4)),
    ("squeeze_dim", lambda x: x.squeeze(1) * 2, lambda: f32(3, 1, 4)),
    ("squeeze_all", lambda x: x.squeeze() * 2, lambda: f32(1, 3, 1, 4)),
    ("slice", lambda x: x[:, 1:3] * 2, lambda: f32(3, 5)),
    ("slice_step", lambda x: x[1:, ::2] + 1, lambda: f32(4, 6)),
    ("slice_negative", lambda x: x[-2:] * 2, lambda: f32(5, 3)),
    ("slice_empty", lambda x: x[:, 2:2] + 1, lambda: f32(3, 4)),
    ("slice_int64", lambda x: x[1:3] + 1, lambda: i64(4, 3)),
    ("select", lambda x: x[1] * 2, lambda: f32(3, 4)),
    ("select_last_dim", lambda x: x[:, -1] + 1, lambda: f32(3, 4)),
    ("select_bool", lambda x: x[0] == x[1], lambda: b(3, 4)),
    ("cat_dim0", lambda x, y: torch.cat([x, y]) * 2, lambda: (f32(2, 3), f32(4, 3))),
    ("cat_dim1", lambda x, y: torch.cat([x, y], 1) + 1, lambda: (f32(3, 2), f32(3, 5))),
    ("cat_three", lambda x, y, z: torch.cat([x, y, z], -1), lambda: (f32(2, 1), f32(2, 3), f32(2, 2))),
    ("cat_empty", lambda x, y: torch.cat([x, y]), lambda: (f32(0, 3), f32(2, 3))),
    ("cat_int64", lambda x, y: torch.cat([x, y], 1), lambda: (i64(2, 2), i64(2, 3))),
    ("cat_bool", lambda x, y: torch.cat([x, y]), lambda: (b(1, 3), b(2, 3))),
    ("cat_transposed", lambda x, y: torch.cat([x, y]), lambda: (f32(3, 2).t(), f32(1, 3))),
    ("embedding", F.embedding, lambda: (torch.randint(0, 10, (2, 3)), f32(10, 4))),
    ("embedding_1d", F.embedding, lambda: (torch.randint(0, 7, (5,)), f32(7, 3))),
    ("embedding_repeated", F.embedding, lambda: (torch.tensor([[0, 0], [6, 6]]), f32(7, 3))),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in VIEWS])
def test_views_and_copies(fn, make):
    inputs = make()
    check(fn, *(inputs if isinstance(inputs, tuple) else (inputs,)))


# ---------------------------------------------------------------------------
# constants

CONSTANTS = [
    ("full", lambda x: torch.full((3, 4), 2.5) + x, f32),
    ("full_int64", lambda x: torch.full((3, 4), 7, dtype=torch.int64) * x, lambda *s: i64(*s)),
    ("full_bool", lambda x: torch.full((3, 4), True) == (x > 0), f32),
    ("zeros", lambda x: torch.zeros(3, 4) + x, f32),
    ("ones_like", lambda x: torch.ones_like(x) - x, f32),
    ("scalar_tensor", lambda x: x + torch.tensor(3.0), f32),
    ("scalar_tensor_int64", lambda x: x * torch.tensor(2), lambda *s: i64(*s)),
    ("tensor_constant", lambda x: x * torch.tensor([1.0, 2.0, 3.0, 4.0]), f32),
    ("where_constant", lambda x: torch.where(x > 0, x, torch.tensor(0.5)), f32),
    ("add_inf", lambda x: x + math.inf, f32),
    ("masked_fill", lambda x: x.masked_fill(x < 0, float("-inf")), f32),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in CONSTANTS])
def test_constants(fn, make):
    check(fn, make(3, 4))


# ---------------------------------------------------------------------------
# graph structure


def test_multiple_outputs():
    check(lambda x: (x + 1, x * 2, x.sum()), f32(3, 4))


def test_output_aliases_input():
    check(lambda x: (x.t(), x + 1, x[1:]), f32(3, 4))


def test_repeated_output():
    def fn(x):
        y = x * 2
        return y, y

    check(fn, f32(3, 4))


def test_unused_input():
    check(lambda x, y: x + 1, f32(3, 4), f32(2))


def test_outputs_do_not_alias_inputs():
    """Results that are fresh tensors in eager (clone, contiguous copies) stay fresh."""
    fn = lambda x: (x.clone(), x.reshape(12) * 1, x.t().contiguous())  # noqa: E731
    x = f32(3, 4)
    before = x.clone()
    outs = compile_kiln(fn, fallback="error")(x)
    assert_kiln_ran(strict=True)
    for out in outs:
        out.add_(1)
    torch.testing.assert_close(x, before)


def test_called_twice_with_new_values():
    fn = lambda x, y: torch.relu(x @ y) + 1  # noqa: E731
    compiled = compile_kiln(fn, fallback="error")
    for _ in range(3):
        x, y = f32(4, 8), f32(8, 5)
        torch.testing.assert_close(compiled(x, y), fn(x, y), rtol=1e-4, atol=1e-5)
    assert_kiln_ran(strict=True)


# ---------------------------------------------------------------------------
# errors raised inside kernels


@pytest.mark.parametrize("bad", [10, -1, 2**40])
def test_embedding_index_out_of_range_raises_index_error(bad):
    """ATen raises IndexError for an out-of-range index; Kiln's kernels check
    and raise it too (a kiln_plan.check), naming the op and the source line,
    rather than clamping or reading out of bounds."""
    weight = f32(10, 4)
    fn = compile_kiln(lambda idx: F.embedding(idx, weight) * 2, fallback="error")
    good = torch.tensor([[1, 9, 0]])
    torch.testing.assert_close(fn(good), F.embedding(good, weight) * 2)
    with pytest.raises(IndexError, match=r"index out of range in aten\.embedding.*test_ops\.py:\d+"):
        fn(torch.tensor([[1, bad, 3]]))
    with pytest.raises(IndexError):
        F.embedding(torch.tensor([[1, bad, 3]]), weight)
    torch.testing.assert_close(fn(good), F.embedding(good, weight) * 2)  # still usable
    assert_kiln_ran(strict=True)


# ---------------------------------------------------------------------------
# creation, padding, bitwise logic and advanced indexing

_IDX = torch.tensor([[0, -1], [2, 3]])
_COL = torch.tensor([1, 4])

NEW_OPS = [
    ("arange_f32", lambda x: torch.arange(5, dtype=torch.float32) * x[0, :, 0], lambda: f32(4, 5, 6)),
    ("arange_fractional", lambda x: torch.arange(0.5, 2.0, 0.1) + x.sum(), lambda: f32(2, 2)),
    ("arange_int64_step", lambda x: torch.arange(2, 11, 3) + x.sum(), lambda: i64(2, 2)),
    ("arange_descending", lambda x: torch.arange(10, 0, -3) * x.sum(), lambda: i64(2, 2)),
    ("bitwise_bool", lambda a, b: (a > 0) & (b > 0) | ~(a < b) ^ (a == b), lambda: (f32(3, 4), f32(3, 4))),
    ("bitwise_int64", lambda a: (a & 6) ^ (a | -3) ^ ~a, lambda: i64(3, 4, low=-100, high=100)),
    ("bitwise_scalar_bool", lambda a: a & True, lambda: b(3, 4)),
    ("pad", lambda a: F.pad(a, (1, 2, 0, 1)), lambda: f32(4, 5, 6)),
    ("pad_negative_value", lambda a: F.pad(a, (-1, 2, 3, -1), value=2.5), lambda: f32(4, 5, 6)),
    ("pad_int64", lambda a: F.pad(a, (2, 0), value=7), lambda: i64(3, 4)),
    ("pad_bool", lambda a: F.pad(a, (1, 1)), lambda: b(3, 4)),
    # A bool pad value is nonzero-is-true (2.0 and 0.5 once padded False).
    ("pad_bool_value_2", lambda a: F.pad(a, (1, 2), value=2.0), lambda: b(1, 3)),
    ("pad_bool_value_half", lambda a: F.pad(a, (1, 2), value=0.5), lambda: b(1, 3)),
    # Tensor bounds that broadcast x (the maximum step once got the final shape).
    ("clamp_broadcasting_bounds", lambda a, lo, hi: torch.clamp(a, lo, hi),
     lambda: (f32(4, 4), f32(1, 4, 4), f32(4, 1, 4))),
    ("group_norm_empty_batch", lambda a, w, c: F.group_norm(a, 1, w, c),
     lambda: (f32(0, 2), f32(2), f32(2))),
    ("index_dim0", lambda a: a[_IDX], lambda: f32(4, 5, 6)),
    ("index_adjacent", lambda a: a[:, _IDX, _COL], lambda: f32(4, 5, 6)),
    ("index_not_adjacent", lambda a: a[_IDX, :, _COL], lambda: f32(4, 5, 6)),
    ("index_last", lambda a: a[..., _COL] * 2, lambda: f32(4, 5, 6)),
    ("index_broadcast_grid", lambda a: a[torch.arange(4)[:, None], torch.arange(5)[None, :]], lambda: f32(4, 5, 6)),
    ("index_int64_source", lambda a: a[_COL], lambda: i64(6, 3)),
    ("index_bool_source", lambda a: a[:, _COL], lambda: b(3, 6)),
    ("index_computed", lambda a, i: a[i.abs() % 4], lambda: (f32(4, 3), i64(5))),
    ("gather_dim1", lambda a, i: torch.gather(a, 1, i), lambda: (f32(4, 5, 6), torch.randint(0, 5, (4, 3, 6)))),
    ("gather_smaller_index", lambda a, i: torch.gather(a, 2, i) * 2, lambda: (f32(4, 5, 6), torch.randint(0, 6, (2, 2, 3)))),
    ("gather_dim0_int64", lambda a, i: torch.gather(a, 0, i), lambda: (i64(4, 3), torch.randint(0, 4, (6, 3)))),
    ("index_select", lambda a, i: torch.index_select(a, 1, i), lambda: (f32(4, 5, 6), torch.tensor([4, 0, 0, 2]))),
    ("index_select_0d", lambda a, i: torch.index_select(a, 0, i) + 1, lambda: (f32(4, 5), torch.tensor(3))),
    ("cumsum_inner", lambda a: torch.cumsum(a, -1), lambda: f32(3, 4, 7)),
    ("cumsum_middle", lambda a: torch.cumsum(a, 1) * 2, lambda: f32(3, 4, 7)),
    ("cumsum_dim0", lambda a: torch.cumsum(a, 0), lambda: f32(5, 3)),
    ("cumsum_bool_to_int64", lambda a: torch.cumsum(a, -1), lambda: b(2, 9)),
    ("cumsum_int64", lambda a: torch.cumsum(a, 0), lambda: i64(6)),
    ("cumsum_0d", lambda a: torch.cumsum(a, 0) + 1, lambda: torch.tensor(2.5)),
    ("vector_norm", lambda a: torch.linalg.vector_norm(a, dim=-1), lambda: f32(3, 5)),
    ("pow_int64", torch.pow, lambda: (i64(3, 4, low=-3, high=4), torch.randint(0, 5, (3, 4)))),
    ("gather_0d", lambda a, i: torch.gather(a, 0, i), lambda: (torch.tensor(2.5), torch.tensor([0]))),
    ("index_select_of_0d", lambda a, i: torch.index_select(a, 0, i), lambda: (torch.tensor(2.5), torch.tensor([0]))),
    ("arange_bool_bounds", lambda a: torch.arange(False, True, True, dtype=torch.int64) + a, lambda: i64(1)),
    ("fmod_f32", torch.fmod, lambda: (f32(3, 4) * 10, f32(3, 4))),
    ("remainder_f32", torch.remainder, lambda: (f32(3, 4) * 10, f32(3, 4))),
    ("fmod_int64", torch.fmod, lambda: (i64(3, 4, low=-50, high=50), nz64(3, 4))),
    ("remainder_int64", torch.remainder, lambda: (i64(3, 4, low=-50, high=50), nz64(3, 4))),
    ("remainder_int64_scalar", lambda a: a % -3, lambda: i64(3, 4, low=-50, high=50)),
    ("fmod_int64_min_by_minus_one", torch.fmod,
     lambda: (torch.tensor([-(2**63), 7]), torch.tensor([-1, -1]))),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in NEW_OPS])
def test_creation_padding_bitwise_indexing(fn, make):
    args = make()
    check(fn, *args) if isinstance(args, tuple) else check(fn, args)


@pytest.mark.parametrize("bad", [5, -6])
def test_index_out_of_range_raises_index_error(bad):
    fn = compile_kiln(lambda a, i: a[:, i] + 1, fallback="error")
    x = f32(3, 5)
    with pytest.raises(IndexError, match=r"index out of range in aten\.index\.Tensor.*every index must be in \[-5, 5\)"):
        fn(x, torch.tensor([0, bad]))
    with pytest.raises(IndexError):
        x[:, torch.tensor([0, bad])]
    torch.testing.assert_close(fn(x, torch.tensor([0, -5, 4])), x[:, torch.tensor([0, -5, 4])] + 1)
    assert_kiln_ran(strict=True)


@pytest.mark.parametrize("op", [torch.fmod, torch.remainder])
def test_integer_remainder_by_zero_raises(op):
    """ATen raises for an integer divisor of 0 (srem would trap the process)."""
    fn = compile_kiln(lambda a, b: op(a, b) + 1, fallback="error")
    a, good = i64(3, 4), nz64(3, 4)
    torch.testing.assert_close(fn(a, good), op(a, good) + 1)
    bad = good.clone()
    bad[1, 2] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(a, bad)
    with pytest.raises(RuntimeError, match=r"ZeroDivisionError in aten\.(fmod|remainder)\.Tensor"):
        fn(a, bad)
    assert_kiln_ran(strict=True)


@pytest.mark.parametrize(
    "fn, index",
    [
        pytest.param(lambda a, i: torch.gather(a, 1, i), torch.tensor([[0], [5], [1]]), id="gather_high"),
        pytest.param(lambda a, i: torch.gather(a, 1, i), torch.tensor([[0], [-1], [1]]), id="gather_negative"),
        pytest.param(lambda a, i: torch.index_select(a, 1, i), torch.tensor([5]), id="index_select_high"),
        pytest.param(lambda a, i: torch.index_select(a, 1, i), torch.tensor([-1]), id="index_select_negative"),
    ],
)
def test_gather_and_index_select_out_of_range_raise(fn, index):
    """Neither op accepts negative indices in ATen; Kiln raises as eager does."""
    x = f32(3, 5)
    with pytest.raises((IndexError, RuntimeError)):
        fn(x, index)
    with pytest.raises(IndexError, match=r"index out of range in aten\.(gather|index_select)"):
        compile_kiln(fn, fallback="error")(x, index)


@pytest.mark.parametrize(
    "fn, index",
    [
        pytest.param(lambda a, i: a.scatter(1, i, 2.0), torch.tensor([[0], [5], [1]]), id="scatter_high"),
        pytest.param(lambda a, i: a.scatter_add(1, i, torch.ones(3, 1)), torch.tensor([[0], [-1], [1]]),
                     id="scatter_add_negative"),
        pytest.param(lambda a, i: a.scatter_reduce(1, i, torch.ones(3, 1), "amax"),
                     torch.tensor([[0], [7], [1]]), id="scatter_reduce_high"),
        pytest.param(lambda a, i: torch.index_put(a, (i.flatten(),), torch.tensor(1.0)),
                     torch.tensor([[0], [3], [1]]), id="index_put_high"),
        pytest.param(lambda a, i: torch.index_put(a, (i.flatten(),), torch.tensor(1.0), accumulate=True),
                     torch.tensor([[0], [-4], [1]]), id="index_put_negative"),
    ],
)
def test_scatters_out_of_range_raise(fn, index):
    """Scatters never write out of bounds: an index outside the dim raises
    IndexError naming the op (index_put, like ATen, takes -size..size-1)."""
    x = f32(3, 5)
    with pytest.raises((IndexError, RuntimeError)):
        fn(x, index)
    with pytest.raises(IndexError, match=r"index out of range in aten\.(scatter|index_put)"):
        compile_kiln(fn, fallback="error")(x, index)


SCATTERS = [
    ("scatter_duplicates_sum", lambda x, i, s: x.scatter_add(0, i, s)),
    ("scatter_reduce_prod_no_self", lambda x, i, s: x.scatter_reduce(0, i, s, "prod", include_self=False)),
    ("scatter_reduce_mean", lambda x, i, s: x.scatter_reduce(0, i, s, "mean")),
    ("scatter_reduce_amin_no_self", lambda x, i, s: x.scatter_reduce(0, i, s, "amin", include_self=False)),
    ("index_put_accumulate", lambda x, i, s: torch.index_put(x, (i[:, 0],), s[:, 0:1], accumulate=True)),
    ("index_put_two_dims", lambda x, i, s: torch.index_put(x, (i[:, 0], i[:, 1] % 3), s[:, 2], accumulate=True)),
    ("masked_fill_like", lambda x, i, s: torch.index_put(x, (x > 0.5,), torch.tensor(0.0))),
    ("index_add", lambda x, i, s: x.index_add(0, i[:, 0], s)),
]


@pytest.mark.parametrize("name, fn", SCATTERS, ids=[n for n, _ in SCATTERS])
@pytest.mark.parametrize("rows", [4, 9])
def test_scatters_match_eager(name, fn, rows):
    """Duplicate indices accumulate in order (sum, prod, amin, mean) as in ATen."""
    torch.manual_seed(rows)
    x = f32(rows, 3)
    index = torch.randint(0, rows, (2 * rows, 3))
    src = f32(2 * rows, 3)
    check(fn, x, index, src)


def test_sort_and_topk_match_eager():
    """Stable ranks: ties keep their order, NaN sorts last (first descending)."""
    x = torch.tensor([[3.0, float("nan"), 1.0, 3.0, -2.0, 1.0], [0.0, -0.0, 5.0, 5.0, 2.0, float("nan")]])
    for descending in (False, True):
        fn = lambda t: torch.sort(t, dim=1, descending=descending, stable=True)  # noqa: E731
        torch.testing.assert_close(compile_kiln(fn, fallback="error")(x), fn(x), equal_nan=True)
    assert_kiln_ran(strict=True)
    check(lambda t: torch.sort(t, dim=0, stable=True), f32(7, 3))
    check(lambda t: torch.topk(t, 3, dim=1), f32(5, 40))


@pytest.mark.parametrize("shape, dim", [((3, 1), 1), ((2, 1000), 1), ((4, 1025), -1),
                                        ((5000,), 0), ((3, 70, 5), 1), ((33, 6), 0), ((), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_by_bitonic_network(shape, dim, descending):
    """Rows of any length (not only powers of two, and past the 1024 the
    pairwise ranks stopped at), every dim, with ties and NaN: the stable
    order, values and indices both."""
    torch.manual_seed(len(shape) * 7 + dim)
    x = torch.randint(-20, 20, shape).float() / 4  # many ties
    if x.numel() > 4:
        x.view(-1)[::7] = float("nan")

    def fn(t):
        return torch.sort(t, dim=dim, descending=descending, stable=True)

    since = len(kiln.compile_records())
    values, indices = compile_kiln(fn, fallback="error")(x)
    expected = fn(x)
    torch.testing.assert_close(values, expected.values, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(indices, expected.indices, rtol=0, atol=0)
    assert_kiln_ran(since, strict=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_sort_integers(dtype):
    """Integers sort signed, uint8 and bool unsigned (200 after 100, True after False)."""
    torch.manual_seed(1)
    if dtype == torch.bool:
        x = torch.rand(4, 37) > 0.5
    else:
        low, high = (0, 256) if dtype == torch.uint8 else (-1000, 1000)
        x = torch.randint(low, high, (4, 37), dtype=dtype)

    def fn(t):
        ascending = torch.sort(t, dim=1, stable=True)
        descending = torch.sort(t, dim=1, descending=True, stable=True)
        return ascending.values, ascending.indices, descending.values, descending.indices

    since = len(kiln.compile_records())
    for actual, expected in zip(compile_kiln(fn, fallback="error")(x), fn(x)):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    assert_kiln_ran(since, strict=True)


@pytest.mark.parametrize("k, largest, dim", [(1, True, 1), (5, False, 1), (64, True, 1),
                                             (65, True, 1), (300, False, 1), (3, True, 0)])
def test_topk_selects_the_first_k(k, largest, dim):
    """k up to 64 by selection in one pass, more by a sort (the first k of
    it): with ties and NaN, the first k of the stable sort, whose values are
    topk's; an ascending row (every element enters the selection) too."""
    torch.manual_seed(k)
    x = torch.randint(-30, 30, (4, 300)).float() / 4
    x.view(-1)[::11] = float("nan")
    x[3] = torch.arange(300.0) * (1 if largest else -1)

    def fn(t):
        return torch.topk(t, k, dim=dim, largest=largest)

    since = len(kiln.compile_records())
    values, indices = compile_kiln(fn, fallback="error")(x)
    stable = torch.sort(x, dim=dim, descending=largest, stable=True)
    torch.testing.assert_close(values, stable.values.narrow(dim, 0, k), equal_nan=True,
                               rtol=0, atol=0)
    torch.testing.assert_close(indices, stable.indices.narrow(dim, 0, k), rtol=0, atol=0)
    torch.testing.assert_close(values, fn(x).values, equal_nan=True, rtol=0, atol=0)
    assert_kiln_ran(since, strict=True)


def test_topk_of_integers():
    torch.manual_seed(3)
    x = torch.randint(0, 256, (5, 200), dtype=torch.uint8)
    y = torch.randint(-10**6, 10**6, (5, 200))
    fn = lambda a, b: (torch.topk(a, 7).values, torch.topk(b, 7, largest=False))  # noqa: E731
    check(fn, x, y)


def test_topk_and_argsort():
    """topk's largest and smallest k (distinct values: ATen leaves ties' order
    open), argsort, and a top-k routing as mixture-of-experts models write it."""
    torch.manual_seed(2)
    x = torch.randperm(3 * 2000).float().reshape(3, 2000) / 7
    check(lambda t: torch.topk(t, 5, dim=1), x)
    check(lambda t: torch.topk(t, 2, dim=0, largest=False), x)
    check(lambda t: torch.argsort(t, dim=1, descending=True), x)
    logits = torch.randn(64, 8)

    def route(t):
        weights, experts = torch.topk(torch.softmax(t, -1), 2, dim=-1)
        return weights / weights.sum(-1, keepdim=True), experts

    check(route, logits)


def test_uint8_arithmetic_matches_eager():
    """uint8 compares, divides, reduces and casts unsigned (200 > 100, not -56)."""
    torch.manual_seed(0)
    a = torch.randint(0, 256, (6, 7), dtype=torch.uint8)
    b = torch.randint(1, 256, (6, 7), dtype=torch.uint8)
    check(lambda a, b: (a > b, torch.maximum(a, b), a // b, a % b, a.amax(1), a.argmin(0),
                        a.float() / 3, (a.float() * 1.7).to(torch.uint8), a.sum(1), a - b, a * b),
          a, b)


def test_argmax_first_nan_and_first_tie():
    x = torch.tensor([[1.0, 5.0, 5.0, float("nan"), float("nan")], [2.0, 2.0, 0.0, 1.0, 2.0]])
    fn = lambda t: (t.argmax(1), t.argmin(1), t.max(1), t.argmax())  # noqa: E731
    torch.testing.assert_close(compile_kiln(fn, fallback="error")(x), fn(x), equal_nan=True)
    assert_kiln_ran(strict=True)


# ---------------------------------------------------------------------------
# convolution (im2col through kiln_graph.index, then Kiln's matmul)

CONVS = [
    ("2d_bias", lambda x, w, b: F.conv2d(x, w, b), lambda: (f32(2, 4, 9, 9), f32(6, 4, 3, 3), f32(6))),
    ("2d_stride_pad", lambda x, w: F.conv2d(x, w, stride=2, padding=1), lambda: (f32(2, 4, 9, 9), f32(6, 4, 3, 3))),
    ("2d_dilation", lambda x, w: F.conv2d(x, w, padding=2, dilation=2), lambda: (f32(2, 4, 9, 9), f32(6, 4, 3, 3))),
    ("2d_1x1", lambda x, w: F.conv2d(x, w).relu(), lambda: (f32(2, 4, 5, 7), f32(6, 4, 1, 1))),
    ("2d_depthwise", lambda x, w: F.conv2d(x, w, groups=4, padding=1), lambda: (f32(2, 4, 9, 9), f32(4, 1, 3, 3))),
    ("2d_groups", lambda x, w: F.conv2d(x, w, groups=2, padding=1), lambda: (f32(2, 4, 9, 9), f32(6, 2, 3, 3))),
    ("2d_patchify", lambda x, w: F.conv2d(x, w, stride=4), lambda: (f32(2, 3, 16, 16), f32(8, 3, 4, 4))),
    ("2d_rectangular", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(0, 2)), lambda: (f32(1, 2, 7, 6), f32(3, 2, 2, 5))),
    ("1d_stride", lambda x, w, b: F.conv1d(x, w, b, stride=5), lambda: (f32(2, 3, 40), f32(8, 3, 10), f32(8))),
    ("1d_groups_pad", lambda x, w: F.conv1d(x, w, groups=2, padding=8), lambda: (f32(1, 4, 30), f32(4, 2, 16))),
    ("3d", lambda x, w: F.conv3d(x, w, padding=1), lambda: (f32(1, 2, 5, 5, 5), f32(3, 2, 3, 3, 3))),
    ("transposed_2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
     lambda: (f32(2, 4, 5, 6), f32(4, 3, 3, 3), f32(3))),
    ("transposed_1d_groups_crop", lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, groups=2),
     lambda: (f32(2, 4, 7), f32(4, 2, 2))),
    ("transposed_3d_dilation", lambda x, w: F.conv_transpose3d(x, w, stride=2, dilation=2),
     lambda: (f32(1, 2, 3, 4, 3), f32(2, 3, 2, 2, 2))),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in CONVS])
def test_convolution(fn, make):
    check(fn, *make(), rtol=1e-4, atol=1e-4)


# Convolutions Kiln computes directly (kiln_graph.conv2d: one group, output
# rows of at least 8), at two widths each: ragged and several vectors wide.
DIRECT_CONVS = [
    ("3x3_bias", lambda x, w, b: F.conv2d(x, w, b, padding=1), (3, 3), 8, True),
    ("stride2", lambda x, w: F.conv2d(x, w, stride=2, padding=1), (3, 3), 13, False),
    ("dilation2", lambda x, w: F.conv2d(x, w, padding=2, dilation=2), (3, 3), 6, False),
    ("1x1_relu", lambda x, w, b: F.conv2d(x, w, b).relu(), (1, 1), 16, True),
    ("7x7_stem", lambda x, w: F.conv2d(x, w, stride=2, padding=3), (7, 7), 8, False),
    ("rectangular", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(0, 2)), (2, 5), 7, False),
    ("residual", lambda x, w, b: (F.conv2d(x, w, b, padding=1) + x).relu(), (3, 3), 4, True),
]


@pytest.mark.parametrize("width", [19, 70])
@pytest.mark.parametrize("fn, kernel, out_channels, with_bias",
                         [pytest.param(f, k, o, wb, id=n) for n, f, k, o, wb in DIRECT_CONVS])
def test_direct_convolution(fn, kernel, out_channels, with_bias, width):
    """Matches eager, and runs as one kiln_graph.conv2d kernel (no im2col gather)
    whose epilogue holds the ops after it (ReLU, the residual add): only the
    input's padding is another kernel."""
    torch.manual_seed(width)
    x = f32(2, 4, 11, width)
    inputs = [x, f32(out_channels, 4, *kernel)] + ([f32(out_channels)] if with_bias else [])
    torch._dynamo.reset()
    before = len(kiln.compile_records())
    check(fn, *inputs, rtol=1e-4, atol=1e-4)
    kernels = [list(k["ops"]) for r in kiln.compile_records()[before:] for k in r.kernels]
    assert [ops[0] for ops in kernels if ops != ["pad"]] == ["conv2d"], kernels


# Grouped convolutions: depthwise ones and those with long kernels run
# directly (each group's tiles reduce over that group's input channels);
# other groups are a batched matmul over the groups. (in channels, out
# channels, groups, kernel, conv kwargs, direct): groups whose output
# channels are a tile (6) and more, fewer, and one (depthwise), strided,
# dilated.
GROUPED_CONVS = [
    ("groups2_tile_and_rest_5x5", 8, 16, 2, (5, 5), {"padding": 2}, True),
    ("groups4_narrow_1x17", 8, 8, 4, (1, 17), {"padding": (0, 8), "bias": True}, True),
    ("depthwise", 12, 12, 12, (3, 3), {"padding": 1}, True),
    ("depthwise_stride2", 12, 24, 12, (3, 3), {"padding": 1, "stride": 2}, True),
    ("groups2_dilation2_5x5", 6, 12, 2, (5, 5), {"padding": 4, "dilation": 2}, True),
    ("groups2_3x3_matmul", 8, 16, 2, (3, 3), {"padding": 1}, False),
]


@pytest.mark.parametrize("width", [19, 37])  # outputs of at least 8 columns
@pytest.mark.parametrize("in_ch, out_ch, groups, kernel, kwargs, direct",
                         [pytest.param(*c[1:], id=c[0]) for c in GROUPED_CONVS])
def test_grouped_convolution(in_ch, out_ch, groups, kernel, kwargs, direct, width):
    torch.manual_seed(width)
    kwargs = dict(kwargs)
    bias = f32(out_ch) if kwargs.pop("bias", False) else None
    x, w = f32(2, in_ch, 9, width), f32(out_ch, in_ch // groups, *kernel)
    fn = lambda x, w, b: F.conv2d(x, w, b, groups=groups, **kwargs).relu()  # noqa: E731
    torch._dynamo.reset()
    before = len(kiln.compile_records())
    check(fn, x, w, bias, rtol=1e-4, atol=1e-4)
    kernels = [list(k["ops"]) for r in kiln.compile_records()[before:] for k in r.kernels]
    firsts = [ops[0] for ops in kernels if ops != ["pad"]]
    assert (firsts == ["conv2d"]) == direct, kernels


@pytest.mark.parametrize("batch", [1, 3])
def test_grouped_conv1d_positional_embedding(batch):
    # wav2vec2's positional convolution: 1-D, 16 groups, kernel 128, padding 64.
    conv = torch.nn.Conv1d(32, 32, 128, padding=64, groups=16)
    x = f32(batch, 32, 79)
    check(lambda t: F.gelu(conv(t)), x, rtol=1e-4, atol=1e-4)


class _ConvBlock(torch.nn.Module):
    """conv, eval-mode batch norm, residual add, activation: the epilogue."""

    def __init__(self, channels: int, activation: torch.nn.Module):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(channels)
        self.activation = activation
        self.bn.running_mean.normal_()
        self.bn.running_var.uniform_(0.5, 2.0)
        self.bn.weight.data.normal_()
        self.bn.bias.data.normal_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.bn(self.conv(x)) + x)


@pytest.mark.parametrize("width", [12, 45])
@pytest.mark.parametrize("activation", [torch.nn.ReLU(), torch.nn.SiLU(), torch.nn.GELU(),
                                        torch.nn.Hardtanh()], ids=["relu", "silu", "gelu", "hardtanh"])
def test_convolution_epilogue_is_in_the_convolution_kernel(activation, width):
    """Batch norm, the residual add and the activation run in the
    convolution's kernel, on its accumulators, and match eager."""
    torch.manual_seed(width)
    block = _ConvBlock(6, activation).eval()
    x = f32(2, 6, 7, width)
    torch._dynamo.reset()
    before = len(kiln.compile_records())
    with torch.no_grad():
        check(block, x, rtol=1e-4, atol=1e-4)
    kernels = [list(k["ops"]) for r in kiln.compile_records()[before:] for k in r.kernels]
    conv = [ops for ops in kernels if ops[0] == "conv2d"]
    assert len(conv) == 1 and len(conv[0]) > 3, kernels
    # Besides it: the input's padding and batch norm's per-channel scale and shift.
    assert all(ops == ["pad"] or "conv2d" in ops or "rsqrt" in ops for ops in kernels), kernels


def test_direct_convolution_1d_and_float64():
    torch.manual_seed(0)
    check(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), f32(2, 3, 50), f32(6, 3, 3), f32(6))
    # Kernels wider than 8 loop over their columns instead of unrolling them.
    check(lambda x, w: F.conv1d(x, w, stride=5, padding=4), f32(1, 2, 400), f32(5, 2, 10))
    x64, w64 = torch.randn(1, 3, 10, 20, dtype=torch.float64), torch.randn(5, 3, 3, 3, dtype=torch.float64)
    check(lambda x, w: F.conv2d(x, w, padding=1), x64, w64, rtol=1e-10, atol=1e-10)


def test_convolution_and_group_norm_gradients():
    """The decompositions return what the ops return (contiguous results, the
    group norm's mean and rstd), so the ops' backward formulas, run by
    aot_autograd in eager for now, get the right gradients."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GroupNorm(2, 8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 3, stride=2, groups=4),
    )
    x = torch.randn(2, 3, 8, 8)
    model(x).square().sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compile_kiln(model)(x).square().sum().backward()
    for param, grad in zip(model.parameters(), expected):
        torch.testing.assert_close(param.grad, grad, rtol=1e-4, atol=1e-4)
    forward = [r for r in kiln.compile_records() if r.kind == "forward"]
    assert forward and forward[0].status == "compiled" and not forward[0].fallbacks


# ---------------------------------------------------------------------------
# pooling (windows gathered by kiln_graph.index, then reduced)


def _with_nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[0, 0, 1, 1] = float("nan")
    return x


POOLS = [
    ("max_3s2p1", lambda x: F.max_pool2d(x, 3, 2, 1), lambda: f32(2, 3, 9, 9)),
    ("max_2", lambda x: F.max_pool2d(x, 2), lambda: f32(2, 3, 8, 7)),
    ("max_ceil", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), lambda: f32(2, 3, 8, 8)),
    ("max_dilation", lambda x: F.max_pool2d(x, 2, 1, 0, dilation=2), lambda: f32(1, 2, 7, 7)),
    ("max_indices", lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), lambda: f32(2, 3, 9, 9)),
    ("max_indices_ceil", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
     lambda: f32(2, 3, 8, 8)),
    ("max_ties", lambda x: F.max_pool2d(x, 2, 1, return_indices=True), lambda: torch.ones(1, 1, 4, 4)),
    ("avg_2", lambda x: F.avg_pool2d(x, 2), lambda: f32(2, 3, 8, 8)),
    ("avg_3s2p1", lambda x: F.avg_pool2d(x, 3, 2, 1), lambda: f32(2, 3, 9, 9)),
    ("avg_no_pad_count", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), lambda: f32(2, 3, 9, 9)),
    ("avg_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), lambda: f32(2, 3, 8, 8)),
    ("avg_ceil_no_pad_count", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     lambda: f32(2, 3, 8, 8)),
    ("avg_divisor", lambda x: F.avg_pool2d(x, 3, 2, divisor_override=4), lambda: f32(2, 3, 9, 9)),
    ("avg_kernel_larger_than_input", lambda x: F.avg_pool2d(x, 320, ceil_mode=True), lambda: f32(2, 3, 4, 4)),
    ("avg_rectangular", lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 1)), lambda: f32(2, 3, 9, 9)),
]


@pytest.mark.parametrize("fn, make", [pytest.param(f, m, id=n) for n, f, m in POOLS])
def test_pooling(fn, make):
    check(fn, make())


def test_max_pool_propagates_nan_and_its_index():
    fn = lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)  # noqa: E731
    x = _with_nan(f32(2, 3, 9, 9))
    torch.testing.assert_close(compile_kiln(fn, fallback="error")(x), fn(x), equal_nan=True)
    assert_kiln_ran(strict=True)


def test_max_pool_gradient_uses_the_right_indices():
    x = f32(2, 3, 8, 8).requires_grad_()
    fn = lambda x: F.max_pool2d(x, 3, 2, 1).square().sum()  # noqa: E731
    (expected,) = torch.autograd.grad(fn(x), x)
    (actual,) = torch.autograd.grad(compile_kiln(fn)(x), x)
    torch.testing.assert_close(actual, expected)
    assert_kiln_ran()


def test_as_strided_restating_a_row_major_layout_is_a_reshape():
    """Adaptive pooling's decomposition ends in such an as_strided."""
    pool = torch.nn.AdaptiveAvgPool1d(1)
    check(lambda x: pool(x.transpose(1, 2)).flatten(1) * 2, f32(2, 6, 4))


def test_as_strided_of_an_input_runs_in_eager():
    fn = lambda x: torch.as_strided(x, (2, 2), (1, 2)) + 1  # noqa: E731
    x = f32(3, 4)
    torch.testing.assert_close(compile_kiln(fn)(x), fn(x))
    (record,) = kiln.compile_records()
    assert [f["op"] for f in record.fallbacks] == ["aten.as_strided.default"]
    assert "graph input" in record.fallbacks[0]["reason"]


# ---------------------------------------------------------------------------
# other dtypes: float64, int32, int8

_FLOAT64_OPS = [
    ("unary", lambda a: (a.sin(), a.cos(), a.tan(), a.atan(), a.tanh(), a.exp(), a.expm1(),
                         a.erf(), a.sigmoid(), a.abs().log1p(), a.abs().sqrt(), a.round(), a.frac())),
    ("binary", lambda a: (a + a * 2, a / (a.abs() + 1), torch.fmod(a, 0.7), torch.remainder(a, -0.7),
                          torch.maximum(a, -a), a.abs().pow(1.5))),
    ("reductions", lambda a: (a.sum(1), a.mean(0), a.amax(1), a.amin(0), a.prod(1), a.cumsum(1))),
    ("rows", lambda a: (a.softmax(-1), a.log_softmax(0), F.layer_norm(a, (6,)), F.gelu(a))),
    ("matmul", lambda a: a @ a.t()),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in _FLOAT64_OPS])
def test_float64(fn):
    """float64 stays float64 end to end (no float32 shortcut loses digits)."""
    x = torch.randn(4, 6, dtype=torch.float64) * 3
    expected = fn(x)
    actual = compile_kiln(fn, fallback="error")(x)
    torch.testing.assert_close(actual, expected)  # float64 tolerances (1e-7)
    assert_kiln_ran(strict=True)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int8])
def test_narrow_integers(dtype):
    """int32 and int8 wrap as ATen's do and promote where ATen promotes."""
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (4, 6), dtype=dtype)
    b = torch.randint(1, 7, (4, 6), dtype=dtype)
    fn = lambda a, b: (a + b, a * b, a - b, torch.fmod(a, b), torch.remainder(a, b),  # noqa: E731
                       a & b, ~a, a.abs(), -a, torch.maximum(a, b), a < b, a / b,
                       a.sum(1), a.prod(1), a.amax(0), a.cumsum(1), a.float(), a.long(),
                       (a.float() * 0.7).to(dtype), a[torch.tensor([2, 0])], torch.cat([a, b]))
    check(fn, a, b)


@pytest.mark.parametrize("constant", [2**53 + 1, 2**62 + 3, -(2**63) + 7])
def test_integer_scalars_stay_exact(constant):
    """Python integers beyond a double's 53 bits reach int64 kernels exactly."""
    def f(x):
        return x + constant, torch.full_like(x, constant), x * 0 + constant

    x = torch.randint(-5, 6, (4, 3))
    expected = f(x)
    actual = compile_kiln(f, fallback="error")(x)
    for a, e in zip(actual, expected):
        assert torch.equal(a, e), (a, e)
    assert kiln.compile_records()[0].status == "compiled"
