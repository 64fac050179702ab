def priority_encode8(req: int) -> tuple[int, bool]:
    """Index of the highest-numbered request bit set, and whether any request is set."""
    for i in range(7, -1, -1):
        if (req >> i) & 1:
            return i, True
    return 0, False
