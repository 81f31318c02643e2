"""``python -m ember.ops describe aten.mm.default``: every place an op's rules live."""

from __future__ import annotations

import sys

import ember.core  # noqa: F401  (importing ember runs the meta-package, where installed: every package registers)
from ember.library.describe import describe


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "describe":
        print("usage: python -m ember.ops describe OP [OP ...]   (OP: aten.mm.default, aten::add.Tensor, mm)")
        return 2
    for i, name in enumerate(argv[1:]):
        try:
            text = describe(name)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 1
        print(("\n" if i else "") + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
