"""LSH band keys, one implementation for MinHash signatures, pHash bits and hyperplane signs."""

import numpy as np

from mmcurate.filters import lsh, minhash


def test_minhash_band_keys_name_the_band_and_match_only_equal_bands():
    h = minhash.MinHasher(128, 1)
    sig = h.signature(minhash.shingle_hashes(["a", "b", "c"]))
    keys = lsh.band_keys(sig, 9, 13)
    assert len(keys) == 9 and keys[0].startswith("0:") and keys[8].startswith("8:")
    other = sig.copy()
    other[13] ^= 1  # band 1 differs
    k2 = lsh.band_keys(other, 9, 13)
    assert [x == y for x, y in zip(keys, k2)] == [True, False] + [True] * 7
    assert np.array_equal(minhash.from_bytes(minhash.to_bytes(sig)), sig)


def test_bit_bands_are_the_bits_read_as_a_number_in_uneven_bands():
    bits = lsh.hex_bits("f0f0f0f0f0f0f0f0")
    assert bits.dtype == np.bool_ and bits.size == 64 and bits[:8].tolist() == [True] * 4 + [False] * 4
    # 64 bits in 6 bands: four of 11 bits, then two of 10
    assert lsh.band_keys(bits, 6) == ["0:787", "1:43c", "2:1e1", "3:70f", "4:3c", "5:f0"]
    assert lsh.band_keys(bits, 1) == ["0:f0f0f0f0f0f0f0f0"]
    # more bands than bits: the bands past the last bit are empty, value 0
    assert lsh.band_keys(lsh.hex_bits("8"), 6) == ["0:1", "1:0", "2:0", "3:0", "4:0", "5:0"]


def test_rows_take_the_first_bands_times_rows_values():
    values = np.arange(20, dtype=np.uint32)
    assert lsh.band_keys(values, 3, 4) == lsh.band_keys(values[:12], 3)
    assert lsh.band_keys(values, 3, 4) != lsh.band_keys(values, 3)
