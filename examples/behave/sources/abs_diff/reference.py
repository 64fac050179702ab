def abs_diff_u8(a: int, b: int) -> tuple[int, bool]:
    """|a - b| for unsigned bytes, and which operand was larger (True: b > a)."""
    if b > a:
        return b - a, True
    return a - b, False
