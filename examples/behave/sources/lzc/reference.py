def leading_zeros32(x: int) -> int:
    """Zeros above the highest set bit of a 32-bit word; 32 when the word is zero."""
    x &= 0xFFFFFFFF
    n = 0
    for bit in range(31, -1, -1):
        if (x >> bit) & 1:
            break
        n += 1
    return n
