"""The page-size division of kernels/common/keys.cuh.j2 (PageDiv): n / d as
(umulhi(n, mul) + n) >> shift with shift = ceil(log2 d) and
mul = floor(2^32 (2^shift - d) / d) + 1, for 0 <= n < 2^31 and 1 <= d < 2^31.
The same arithmetic in numpy (32-bit multiply-high, 32-bit sum) against exact
division: every divisor a page size can take in the tests and benchmarks, the
powers of two and their neighbours up to 2^31 - 1, over every numerator below
2^16, the numerators next to each multiple of d near 2^31, and random ones."""
import numpy as np
import pytest


def page_div(d: int):
    shift = (d - 1).bit_length() if d > 1 else 0       # 32 - __clz(d - 1)
    mul = ((1 << 32) * ((1 << shift) - d)) // d + 1
    assert 0 < mul < 1 << 32
    def div(n: np.ndarray) -> np.ndarray:
        n = n.astype(np.uint64)
        hi = (n * np.uint64(mul)) >> np.uint64(32)      # __umulhi: n < 2^31, mul < 2^32, no overflow
        s = (hi + n) & np.uint64(0xFFFFFFFF)            # the kernel's u32 sum
        return (s >> np.uint64(shift)).astype(np.int64)
    return div


DIVISORS = sorted({1, 2, 3, 5, 7, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 127, 128, 129, 255, 256, 1000,
                   4095, 4096, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1, 1_000_003, (1 << 30) - 1,
                   1 << 30, (1 << 30) + 1, (1 << 31) - 1}
                  | {(1 << k) + o for k in range(1, 31) for o in (-1, 0, 1)})


@pytest.mark.parametrize("d", DIVISORS)
def test_page_div_is_exact_division(d):
    rng = np.random.default_rng(d)
    top = (1 << 31) - 1
    k = np.arange(max(0, top // d - 300), top // d + 1, dtype=np.int64)
    edges = np.concatenate([k * d - 1, k * d, k * d + 1, k * d + d - 1])
    n = np.concatenate([np.arange(1 << 16, dtype=np.int64), edges,
                        rng.integers(0, 1 << 31, size=200_000, dtype=np.int64), [top]])
    n = n[(n >= 0) & (n <= top)]
    np.testing.assert_array_equal(page_div(d)(n), n // d)
