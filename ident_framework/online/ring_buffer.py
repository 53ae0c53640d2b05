"""Fixed-capacity ring buffers of numpy rows: memory bounded whatever the run's length."""

from __future__ import annotations

import numpy as np


class RingBuffer:
    """The last `capacity` rows of width `width` (float64). `append` is O(width); `latest`,
    `since` and `to_array` return copies in time order (oldest first)."""

    def __init__(self, capacity: int, width: int):
        if capacity < 1 or width < 1:
            raise ValueError(f"capacity and width must be >= 1, got {capacity}, {width}")
        self.capacity, self.width = int(capacity), int(width)
        self._rows = np.zeros((self.capacity, self.width))
        self._head = 0  # next row to write
        self._count = 0
        self.total = 0  # rows ever appended

    def __len__(self) -> int:
        return self._count

    def append(self, row: np.ndarray) -> None:
        self._rows[self._head] = row
        self._head = (self._head + 1) % self.capacity
        self._count = min(self._count + 1, self.capacity)
        self.total += 1

    def extend(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=float).reshape(-1, self.width)
        if len(rows) >= self.capacity:
            rows = rows[-self.capacity :]
        m = len(rows)
        first = min(m, self.capacity - self._head)
        self._rows[self._head : self._head + first] = rows[:first]
        self._rows[: m - first] = rows[first:]
        self._head = (self._head + m) % self.capacity
        self._count = min(self._count + m, self.capacity)
        self.total += m

    def clear(self) -> None:
        self._head = 0
        self._count = 0

    def oldest(self) -> np.ndarray:
        """The oldest row (a view, valid until the next append)."""
        if not self._count:
            raise IndexError("the ring buffer is empty")
        return self._rows[self._head if self._count == self.capacity else 0]

    def to_array(self) -> np.ndarray:
        """(len, width) copy, oldest first."""
        if self._count < self.capacity:
            return self._rows[: self._count].copy()
        return np.concatenate([self._rows[self._head :], self._rows[: self._head]])

    def latest(self, m: int) -> np.ndarray:
        """The newest min(m, len) rows, oldest first."""
        m = min(int(m), self._count)
        if m <= 0:
            return np.empty((0, self.width))
        start = (self._head - m) % self.capacity
        if start + m <= self.capacity:
            return self._rows[start : start + m].copy()
        return np.concatenate([self._rows[start:], self._rows[: (start + m) % self.capacity]])
