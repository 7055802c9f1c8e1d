"""Progress bars for long valuation runs (tqdm); silent unless asked for."""

from __future__ import annotations

import time
from typing import Any

from tqdm.auto import tqdm


class RunProgress:
    """A bar driven by a completion fraction in [0, 1], with a free-form postfix."""

    def __init__(self, enabled: bool, desc: str, resolution: int = 1000) -> None:
        self.enabled = enabled
        self.resolution = resolution
        self._bar: Any = None
        self._done = 0
        self._last = 0.0
        self._postfix: dict[str, Any] = {}
        if enabled:
            self._bar = tqdm(total=resolution, desc=desc, unit="%", leave=True,
                             bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}")

    def update(self, completion: float, **postfix: Any) -> None:
        if self._bar is None:
            return
        target = round(min(max(completion, 0.0), 1.0) * self.resolution)
        if target > self._done:
            self._bar.update(target - self._done)
            self._done = target
        now = time.monotonic()
        self._postfix = postfix or self._postfix
        if postfix and now - self._last > 0.2:  # postfix formatting is slow; rate-limit it
            self._bar.set_postfix(postfix, refresh=False)
            self._last = now

    def close(self) -> None:
        if self._bar is not None:
            if self._done < self.resolution:
                self._bar.update(self.resolution - self._done)
            if self._postfix:  # the final figures, whatever the rate limit skipped
                self._bar.set_postfix(self._postfix, refresh=False)
            self._bar.close()
            self._bar = None
