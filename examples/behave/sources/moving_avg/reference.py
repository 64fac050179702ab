class MovingAverage4:
    """Mean of the last four 8-bit samples, rounded down; the window starts full of zeros."""

    def __init__(self) -> None:
        self.window = [0, 0, 0, 0]

    def push(self, sample: int) -> int:
        self.window = [sample & 0xFF, *self.window[:3]]
        return sum(self.window) >> 2
