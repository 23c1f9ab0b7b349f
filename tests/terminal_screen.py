"""A small model of a terminal screen, to see what a program that draws live leaves on it."""

from __future__ import annotations

import re

CSI = re.compile(r"\x1b\[(\??)([0-9;]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw`` (cursor up, erase line, CR, LF; colours and
    cursor visibility ignored)."""
    lines = [""]
    row = col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\x1b":
            m = CSI.match(raw, i)
            assert m is not None, repr(raw[i : i + 10])
            private, args, code = m.groups()
            n = int(args) if args.isdigit() else 1
            if not private and code == "A":
                row = max(0, row - n)
            elif not private and code == "K":
                lines[row] = "" if args == "2" else lines[row][:col]
            i = m.end()
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append("")
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + ch + line[col + 1 :]
            col += 1
        i += 1
    return [ln.rstrip() for ln in lines]
