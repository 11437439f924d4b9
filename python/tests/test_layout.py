"""Output layouts (kiln.layout): Kiln's outputs have eager's sizes, strides,
storage offsets and aliasing, in the Python reference and in the C++ bridge."""

from __future__ import annotations

import pytest
import torch

import kiln
from kiln.layout import OutputLayout, apply_layout, output_layouts, physical_order
from kiln_test_utils import capture_aten, compile_kiln

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "size, stride, order",
    [
        ((2, 3), (3, 1), (0, 1)),
        ((2, 3), (1, 2), (1, 0)),
        ((2, 3, 4), (4, 8, 1), (1, 0, 2)),
        ((2, 1, 3), (3, 99, 1), (0, 1, 2)),  # a size-1 dim may have any stride
        ((3, 1, 2), (1, 5, 3), (2, 1, 0)),
        ((0, 3), (7, 2), (0, 1)),  # empty: nothing in memory
        ((2, 3), (6, 1), None),  # gaps between rows
        ((2, 3), (0, 1), None),  # broadcast
        ((), (), ()),
    ],
)
def test_physical_order(size, stride, order):
    assert physical_order(size, stride) == order


def _layout_of(t: torch.Tensor, alias: int | None = None, base: torch.Tensor | None = None) -> OutputLayout:
    return OutputLayout(
        tuple(t.shape), tuple(t.stride()), t.storage_offset(),
        physical_order(t.shape, t.stride()), alias,
        tuple(base.stride()) if base is not None else (), base.storage_offset() if base is not None else 0,
    )


def _views():
    base = torch.arange(60.0).reshape(3, 4, 5)
    return {
        "transposed": base.transpose(0, 2),
        "permuted": base.permute(1, 2, 0),
        "sliced rows": base[1:],
        "strided": base[:, ::2],
        "broadcast": base[:, :1].expand(3, 4, 5),
        "selected": base[:, 2],
    }


@pytest.mark.parametrize("name", list(_views()))
def test_apply_layout_reproduces_eager(name):
    """Python reference: a row-major result (in storage order when dense) comes
    back with the view's exact sizes, strides and offset."""
    view = _views()[name]
    layout = _layout_of(view)
    result = view.permute(layout.physical_order).contiguous() if layout.physical_order else view.contiguous()
    out = apply_layout(result, layout, [])
    assert (out.shape, out.stride(), out.storage_offset()) == (view.shape, view.stride(), view.storage_offset())
    assert torch.equal(out, view)


def test_apply_layout_aliases_inputs_laid_out_as_traced():
    base = torch.randn(4, 6)
    view = base.t()[1:]
    layout = _layout_of(view, alias=0, base=base)
    out = apply_layout(view.contiguous(), layout, [base])
    assert out.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert out.stride() == view.stride() and torch.equal(out, view)
    # An input laid out differently at run time: a copy with eager's layout, not a bad view.
    other = base.t().contiguous().t()
    out = apply_layout(view.contiguous(), layout, [other])
    assert out.untyped_storage().data_ptr() != other.untyped_storage().data_ptr()
    assert out.stride() == view.stride() and torch.equal(out, view)


def test_output_layouts_from_meta():
    def f(x):
        y = x * 2
        return y.t(), y[1:], x.t(), y[:, ::2]

    (gm,) = capture_aten(f, torch.randn(4, 6))
    t, rows, xt, strided = output_layouts(gm)
    assert t.physical_order == (1, 0) and t.alias_input is None
    assert rows.storage_offset == 6 and rows.is_row_major
    assert xt.alias_input == 0 and xt.alias_input_stride == (6, 1)
    assert strided.physical_order is None and strided.stride == (6, 2)


def _as_eager(fn, *inputs):
    expected = fn(*inputs)
    actual = compile_kiln(fn, fallback="error")(*inputs)
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" for r in records)
    for a, e in zip(actual, expected):
        assert torch.equal(a, e) or torch.allclose(a, e, rtol=1e-5, atol=1e-6)
        assert (a.shape, a.stride(), a.storage_offset()) == (e.shape, e.stride(), e.storage_offset())
    return actual


@pytest.mark.parametrize("shape", [(4, 6), (3, 5)])
def test_compiled_outputs_have_eager_layouts(shape):
    """The C++ bridge: transposed, sliced, strided and broadcast outputs of
    computed values, and views of an input, come back laid out as eager's."""

    def f(x):
        y = torch.tanh(x)
        return y.t(), y[1:], y[:, ::2], y[:1].expand(3, -1), x.t()[1:], y

    x = torch.randn(*shape)
    actual = _as_eager(f, x)
    assert actual[4].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    # Views of one computed value share its storage, as in eager.
    assert actual[0].untyped_storage().data_ptr() == actual[5].untyped_storage().data_ptr()


def test_permuted_output_is_written_in_storage_order():
    """A permuted output of a computed value costs no copy: the kernel writes
    it in storage order (the serializer's permute) and the bridge views it."""

    def f(x, w):
        return (x @ w).view(2, 4, 2, 8).transpose(1, 2)

    x, w = torch.randn(8, 16), torch.randn(16, 16)
    expected = f(x, w)
    compiled = compile_kiln(f, fallback="error")
    compiled(x, w)
    # The compiler folds the serializer's permute into the matmul's view: one
    # kernel, and no transposing copy kernel after it...
    (record,) = kiln.compile_records()
    assert record.status == "compiled", record
    assert record.kernel_count == 1 and "matmul" in record.kernels[0]["name"], record.kernels
    # ...and the bridge returns the buffer that kernel wrote, viewed with
    # eager's strides: a call copies nothing (a bridge that copied Kiln's
    # row-major result into eager's layout would call aten::copy_).
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = compiled(x, w)
    copies = [e.name for e in prof.events() if e.name in ("aten::copy_", "aten::clone", "aten::contiguous")]
    assert not copies, copies
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert (out.shape, out.stride(), out.storage_offset()) == (expected.shape, expected.stride(), 0)
    assert out.untyped_storage().nbytes() == out.numel() * out.element_size()


def test_stride_sensitive_eager_consumer_reads_the_right_elements():
    """as_strided (eager) after Kiln ops reads storage the way eager laid it out."""

    def f(a, b):
        y = (a @ b).t()
        return torch.as_strided(y, (3, 3), (1, 4)) * 2

    a, b = torch.randn(4, 5), torch.randn(5, 4)
    torch.testing.assert_close(compile_kiln(f)(a, b), f(a, b), rtol=1e-5, atol=1e-6)
    assert any(r.status == "partitioned" for r in kiln.compile_records())
