"""The dumps' timeline (validation/xla/xla_timeline.py): values the buffer
assignment puts in one place are one buffer where their ranges overlap or
meet (an elementwise fusion written over the operand that dies there), and
stay apart across a gap or in another place. Hand-made ranges; the standard
library alone.
usage: python3 test_xla_timeline.py SOURCE_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "validation", "xla"))
import xla_timeline  # pylint: disable=wrong-import-position


def main():
    # a: [0, 4] and b: [4, 6] share a place (b written over a at 4): one
    # buffer [0, 6]; c: [8, 9] in the same place after a gap: its own; d
    # overlaps a in another place: its own
    raw = {"a{}": (0, 4, 100), "b{}": (4, 6, 100), "c{}": (8, 9, 60), "d{}": (2, 3, 50)}
    place = {"a{}": ("allocation 3", 0), "b{}": ("allocation 3", 0), "c{}": ("allocation 3", 0),
             "d{}": ("allocation 3", 128)}
    merged = xla_timeline.merge_shared(raw, place)
    assert merged == {"a{}": (0, 6, 100), "c{}": (8, 9, 60), "d{}": (2, 3, 50)}, merged
    live = xla_timeline.curve(list("0123456789"), merged)
    # at 4 the two values of one place count once: 100, not 200
    assert live == [100, 100, 150, 150, 100, 100, 100, 0, 60, 60], live
    # a value the assignment does not list keeps a place of its own
    alone = xla_timeline.merge_shared({"e{}": (1, 2, 7), "f{}": (1, 2, 7)}, {})
    assert alone == {"e{}": (1, 2, 7), "f{}": (1, 2, 7)}, alone
    print("xla_timeline: ok")


if __name__ == "__main__":
    main()
