def popcount16(x: int) -> int:
    """Number of set bits in a 16-bit word."""
    x &= 0xFFFF
    count = 0
    while x:
        x &= x - 1  # clears the lowest set bit
        count += 1
    return count
