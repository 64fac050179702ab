def to_gray(b: int) -> int:
    """Binary to reflected Gray code (8 bits)."""
    return (b ^ (b >> 1)) & 0xFF


def from_gray(g: int) -> int:
    """Reflected Gray code back to binary: each bit is the XOR of all higher Gray bits."""
    b = 0
    for i in range(7, -1, -1):
        higher = (b >> (i + 1)) & 1
        b |= (((g >> i) & 1) ^ higher) << i
    return b
