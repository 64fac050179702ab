def sat_add_u8(a: int, b: int) -> tuple[int, bool]:
    """Unsigned 8-bit add that clamps at 255; the flag says the clamp happened."""
    total = a + b
    if total > 255:
        return 255, True
    return total, False


def sat_add_s8(a: int, b: int) -> tuple[int, bool]:
    """Signed 8-bit add that clamps to [-128, 127]."""
    total = a + b
    if total > 127:
        return 127, True
    if total < -128:
        return -128, True
    return total, False
