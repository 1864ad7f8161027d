#!/usr/bin/env python3
"""Fails on a comment that quotes a measured figure (CONTRIBUTING.md: comments say why; measured
figures belong in docs/performance.md, with the command, date and machine that made them).

It reads the comments of C, C++ and CUDA sources (// and /* */), of CMake files, shell scripts and
Python (# lines and docstrings), and flags a number followed by a time or throughput unit (ns, us,
ms, s, min, GB/s, MiB/s, ...), a speedup ("1.8x faster", "2x slower", "12% faster"), or a count of
instructions or cycles. A comment that wants the reason of a measurement says so and points at the
section: "measured faster; docs/performance.md, section X".

Design values read the same as measurements: a 100 us tick, a 5 s deadline. So a whole timing,
percentage or ratio counts as a design value unless its line speaks of a measurement ("took",
"against", "faster", "->", ...). Where a design value still reads as measured, its comment carries
the marker "(design value)", which covers the run of consecutive comment lines it stands in, or
the pattern goes into ALLOWED below. A script's usage text (option defaults) is not a comment.

usage: tools/check_comment_figures.py [--root DIR]
       tools/check_comment_figures.py --self-test     plants a figure in a copy and expects failure
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Folders of code; docs/ and the folders' README.md files are documentation and not read.
FOLDERS = ["src", "topo", "zero", "transport", "kernels", "bootstrap", "common", "include", "python",
           "tools", "cmake", "benchmarks", "tests", "examples"]
C_LIKE = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
HASH = (".cmake", ".sh", ".py")
SKIP_DIRS = {".git", "__pycache__"}
MARKER = "(design value)"
SELF = os.path.join("tools", "check_comment_figures.py")

NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?"
TIME = r"(?:ns|us|µs|ms|s|sec|secs|seconds?|min|mins|minutes?|hours?)(?![\w/])"
RATE = r"(?:[KMGT]i?B/s|[KMGT]bit/s|[KMGT]b/s|Gbps|Mbps|ops/s)"
# Read as a measurement wherever they stand: a throughput, a speedup or share of time, a count of
# instructions or cycles, a timing or ratio with a fraction or a range (13.4 us, 46-57 us, 1.2-1.3x).
ALWAYS = re.compile(
    NUMBER + r"\s?" + RATE
    + r"|" + NUMBER + r"\s?(?:x|%|times)\s+(?:faster|slower|quicker|longer|shorter|the\s+time|as\s+long)\b"
    + r"|(?<![\w.])\d+(?:,\d{3})*\s+(?:instructions|cycles|cache misses)\b"
    + r"|(?<![\w.])\d+(?:\.\d+|\s*-\s*\d+(?:\.\d+)?)\s?(?:" + TIME + r"|x(?!\w))",
    re.IGNORECASE)
# A whole timing, a percentage or a ratio reads as a design value (a 5 s deadline, 2x the slots)
# unless the line also speaks of a measurement. Sizes are left alone: they say what was measured.
MAYBE = re.compile(NUMBER + r"\s?(?:" + TIME + r"|%|x(?!\w))", re.IGNORECASE)
MEASURED = re.compile(
    r"\b(?:took|taking|measured|median|medians|faster|slower|against|instead of|vs|versus|ran|runs? at|"
    r"a call|per call|on this machine|cost|costs|about|roughly|saving|saved|lost|gained|grew|errs)\b"
    r"|->|~|\u2192", re.IGNORECASE)


def figure(comment):
    """The first measured-looking figure in a comment line, or None."""
    match = ALWAYS.search(comment)
    if match:
        return match.group(0)
    match = MAYBE.search(comment)
    if match and MEASURED.search(comment):
        return match.group(0)
    return None


# Figures that are design values wherever they stand, as (path or "" for any, a substring of the
# line). Keep it short: a marker in the comment itself says more to the next reader.
ALLOWED = [
    ("", "4.096 us"),  # InfiniBand's unit of the ack timeout (the specification's, not measured)
]


def comments_c(text):
    """(line number, comment text) of every // and /* */ comment, skipping string literals."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in "\"'":
            # A raw string R"(...)" is rare in this code; treat it as an ordinary one.
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield line, text[i + 2:j]
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                yield line + k, part
            line += text.count("\n", i, j)
            i = j + 2
        else:
            i += 1


def comments_hash(text, python):
    """(line number, comment text) of # comments; in Python also the docstrings' lines. A # inside a
    quoted string is not a comment; good enough for the quoting these scripts use."""
    in_doc = None
    for number, raw in enumerate(text.split("\n"), 1):
        if python:
            stripped = raw.strip()
            if in_doc:
                yield number, raw
                if in_doc in stripped:
                    in_doc = None
                continue
            for quote in ('"""', "'''"):
                if stripped.startswith(quote) or re.match(r"^[rRbBuU]?" + quote, stripped):
                    body = stripped.split(quote, 1)[1]
                    yield number, body
                    if quote not in body:
                        in_doc = quote
                    break
            if in_doc:
                continue
        quote = None
        for k, ch in enumerate(raw):
            if quote:
                if ch == "\\":
                    continue
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#" and not (k and raw[k - 1] == "$"):  # ${#array[@]}, $# in shell
                if raw[k:k + 2] == "#!" and number == 1:
                    break
                yield number, raw[k + 1:]
                break


def files(root):
    names = [os.path.join(root, f) for f in os.listdir(root) if f == "CMakeLists.txt"]
    for folder in FOLDERS:
        for directory, dirs, entries in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(entries):
                if name == "CMakeLists.txt" or name.endswith(C_LIKE + HASH):
                    names.append(os.path.join(directory, name))
    # Other top-level folders with code (topology tools and the like) but not build trees or docs.
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if (os.path.isdir(path) and entry not in FOLDERS and entry not in SKIP_DIRS and entry != "docs"
                and not entry.startswith((".", "build", "install"))):
            for directory, dirs, entries in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
                for name in sorted(entries):
                    if name == "CMakeLists.txt" or name.endswith(C_LIKE + HASH):
                        names.append(os.path.join(directory, name))
    return names


def in_marked_block(number, commented, marked):
    """Whether the run of consecutive comment lines around `number` holds the marker."""
    for step in (-1, 1):
        n = number
        while n in commented:
            if n in marked:
                return True
            n += step
    return False


def findings(root):
    out = []
    for path in files(root):
        rel = os.path.relpath(path, root)
        if rel == SELF:  # its docstring and patterns show what it looks for
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if rel.endswith(C_LIKE):
            found = comments_c(text)
        else:
            found = comments_hash(text, rel.endswith(".py"))
        lines = text.split("\n")
        found = list(found)
        commented = {number for number, _ in found}
        marked = {number for number, comment in found if MARKER in comment}
        for number, comment in found:
            found_figure = figure(comment)
            if not found_figure:
                continue
            line = lines[number - 1] if number <= len(lines) else comment
            if any(p in ("", rel) and s in line for p, s in ALLOWED) or in_marked_block(number, commented, marked):
                continue
            out.append(f"{rel}:{number}: \"{found_figure}\": {comment.strip()}")
    return out


def check(root):
    problems = findings(root)
    if problems:
        print(f"{len(problems)} comment(s) quote what looks like a measured figure. Move the figure to "
              "docs/performance.md and keep the reason (\"measured faster; docs/performance.md, section X\"), "
              f"or, for a design value, end the comment with \"{MARKER}\":")
        for problem in problems:
            print("  " + problem)
        return 1
    print("no comment quotes a measured figure")
    return 0


def self_test(root):
    """Copies src/ and tools/, plants a timing in a C++ comment and in a shell comment, and expects
    both reported; then expects the unplanted copy, and a planted design value, to pass."""
    with tempfile.TemporaryDirectory() as scratch:
        for folder in ("src", "tools"):
            shutil.copytree(os.path.join(root, folder), os.path.join(scratch, folder), symlinks=True)
        clean = subprocess.run([sys.executable, __file__, "--root", scratch], capture_output=True, text=True)
        if clean.returncode != 0:
            print("self-test: the unplanted copy failed:\n" + clean.stdout)
            return 1
        with open(os.path.join(scratch, "src", "planted.cc"), "w") as f:
            f.write('// The ring is used here: 1.8x faster than the tree.\n'
                    'int planted = 0;\n'
                    'const char* s = "42 ms";  // the tick is 100 us ' + MARKER + '\n'
                    'int also_planted = 0;\n'
                    '/* Before this it took\n   58 s against 29. */\n')
        with open(os.path.join(scratch, "tools", "planted.sh"), "w") as f:
            f.write('#!/bin/bash\necho "# 3 s"  # a warm build took 17 min here\n')
        planted = subprocess.run([sys.executable, __file__, "--root", scratch], capture_output=True, text=True)
        print(planted.stdout, end="")
        wanted = ["src/planted.cc:1:", "src/planted.cc:6:", "tools/planted.sh:2:"]
        unwanted = ["src/planted.cc:3:", "src/planted.cc:5:"]
        if (planted.returncode == 0 or not all(w in planted.stdout for w in wanted)
                or any(u in planted.stdout for u in unwanted)):
            print("self-test: the planted figures were not reported as expected "
                  f"(wanted {wanted}, not {unwanted})")
            return 1
    print("self-test: the planted figures were reported; the design value and the clean copy passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=here, help="the repository to check (default: this one)")
    parser.add_argument("--self-test", action="store_true", help="show that a planted figure fails")
    args = parser.parse_args()
    if args.self_test:
        return self_test(os.path.abspath(args.root))
    return check(os.path.abspath(args.root))


if __name__ == "__main__":
    sys.exit(main())
