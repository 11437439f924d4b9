"""Regenerates the .npy/.npz fixtures NpyTest.cpp reads, with real numpy.

Run from anywhere: python unittests/runtime/data/make_fixtures.py
The values are simple formulas, which NpyTest.cpp repeats, so no randomness.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def arrays():
    return dict(
        f32=(np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5),
        f64=np.array([1.5, -2.25, 1e300], dtype=np.float64),
        i64=np.array([[-(2**40)], [7]], dtype=np.int64),
        i32=np.array(-3, dtype=np.int32),  # rank 0
        b=np.array([True, False, True, True], dtype=np.bool_),
        empty=np.zeros((0, 5), dtype=np.float32),
    )


def main():
    a = arrays()
    np.savez(path("all_dtypes.npz"), **a)
    np.savez(path("positional.npz"), a["f32"], a["i64"])
    np.savez_compressed(path("compressed.npz"), x=a["f32"])
    np.save(path("f32_2x3.npy"), a["f32"])
    np.save(path("scalar_i32.npy"), a["i32"])
    for version in [(2, 0), (3, 0)]:
        with open(path("f64_v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, a["f64"], version=version)
    np.save(path("fortran.npy"), np.asfortranarray(a["f32"]))
    np.save(path("big_endian.npy"), a["f32"].astype(">f4"))


if __name__ == "__main__":
    main()
