#!/usr/bin/env python3
"""Prints the include graph between libcollective's folders and fails on an edge that runs the
wrong way (docs/architecture.md, "Layers").

The library's layers, bottom up; a file may include its own layer and the layers below it:

  0  common/      errors, logging, hashing, fds, clock and deadlines, list specs, interfaces, sockets
  1  kernels/     host and device arithmetic          src/topo/   what a host is made of
  2  bootstrap/   rendezvous stores, unique id, launch environments
  3  transport/   the domain interface, shm/, net/, p2p/
  4  src/         the core: API, communicator, planning, algorithms, execution
  5  src/zero/    ZeRO on the core's C API

include/ (the public headers) may be included from anywhere and includes nothing of ours. Two
layers on one level (kernels and topo) must not include each other. Above the library sit its
users (tools/, benchmarks/, tests/, python/, examples/): they may include any layer, and their own
folder, but not each other's.

The build enforces the same order (cmake/layers.cmake: each layer compiles with only its own
include root and those of the layers it links); this script says it in words, for CI and for
reviewers, and also catches what the build's roots cannot see.

usage: tools/check_layers.py [--root DIR] [--quiet]
       tools/check_layers.py --self-test     plants an upward include in a copy and expects failure
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (prefix, unit, level). The first matching prefix wins, so the more specific come first.
LIBRARY = [
    ("common/", "common", 0),
    ("kernels/", "kernels", 1),
    ("src/topo/", "topo", 1),
    ("bootstrap/", "bootstrap", 2),
    ("transport/", "transport", 3),
    ("src/zero/", "zero", 5),
    ("src/", "core", 4),
]
PUBLIC = ("include/", "api")
USERS = ["tools/", "benchmarks/", "tests/", "python/", "examples/"]
SOURCE_EXTENSIONS = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
SKIP_DIRS = {".git", "__pycache__"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def unit_of(path):
    """(unit, level) of a repository-relative path; level None for users and the public header."""
    if path.startswith(PUBLIC[0]):
        return PUBLIC[1], None
    for prefix, unit, level in LIBRARY:
        if path.startswith(prefix):
            return unit, level
    for prefix in USERS:
        if path.startswith(prefix):
            return prefix.rstrip("/"), None
    return None, None


def source_files(root):
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        # Build trees (build/, build-*/) hold generated files and links back into the sources.
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (rel_dir == "." and d.startswith("build"))]
        for name in files:
            if name.endswith(SOURCE_EXTENSIONS):
                yield os.path.normpath(os.path.join(rel_dir, name))


def resolve(root, including, target):
    """The repository-relative file an include names: beside the including file first (quoted
    includes look there), then from a layer's include root, which mirrors the repository."""
    beside = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if os.path.isfile(os.path.join(root, beside)):
        return beside
    if os.path.isfile(os.path.join(root, "include", target)):
        return "include/" + target
    return os.path.normpath(target)


def verdict(source_unit, source_level, target_unit, target_level):
    """None when the edge is allowed, else why not."""
    if target_unit is None or source_unit == target_unit:
        return None
    if target_unit == PUBLIC[1]:
        return None
    if source_unit == PUBLIC[1]:
        return "the public header includes nothing of the library"
    if source_level is None:  # a user of the library
        if target_level is not None:
            return None
        return f"{source_unit}/ may use the library, not {target_unit}/"
    if target_level is None:
        return f"the library ({source_unit}) must not depend on {target_unit}/"
    if target_level > source_level:
        return f"upward: {source_unit} (level {source_level}) includes {target_unit} (level {target_level})"
    if target_level == source_level:
        return f"sideways: {source_unit} and {target_unit} are on one level"
    return None


def check(root, quiet=False):
    edges = {}  # (source unit, target unit) -> count
    problems = []
    for path in sorted(source_files(root)):
        source_unit, source_level = unit_of(path)
        if source_unit is None:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1))
                target_unit, target_level = unit_of(target)
                if target_unit is None or target_unit == source_unit:
                    continue
                edges[(source_unit, target_unit)] = edges.get((source_unit, target_unit), 0) + 1
                why = verdict(source_unit, source_level, target_unit, target_level)
                if why:
                    problems.append(f"{path}:{number}: #include \"{match.group(1)}\": {why}")
    order = [unit for _, unit, _ in sorted(LIBRARY, key=lambda entry: entry[2])] + [PUBLIC[1]]
    order += [prefix.rstrip("/") for prefix in USERS]
    if not quiet:
        print("include graph between folders (from -> to: includes), library layers bottom up:")
        for source in order:
            targets = sorted((t for s, t in edges if s == source), key=order.index)
            if not targets:
                continue
            parts = [f"{t} {edges[(source, t)]}" for t in targets]
            print(f"  {source:<10} -> " + ", ".join(parts))
    if problems:
        print(f"\n{len(problems)} include(s) against the layer order (docs/architecture.md):")
        for problem in problems:
            print("  " + problem)
        return 1
    if not quiet:
        print("\nno include runs upward or sideways")
    return 0


def self_test(root):
    """Copies the library's folders, plants an include of the core in common/, and expects the
    check to fail naming it; then expects the unplanted copy to pass."""
    with tempfile.TemporaryDirectory() as scratch:
        for folder in ("common", "kernels", "bootstrap", "transport", "src", "include"):
            shutil.copytree(os.path.join(root, folder), os.path.join(scratch, folder), symlinks=True)
        clean = subprocess.run([sys.executable, __file__, "--root", scratch, "--quiet"], capture_output=True, text=True)
        if clean.returncode != 0:
            print("self-test: the unplanted copy failed:\n" + clean.stdout)
            return 1
        with open(os.path.join(scratch, "common", "planted.h"), "w") as f:
            f.write('#pragma once\n#include "src/comm.h"\n')
        planted = subprocess.run([sys.executable, __file__, "--root", scratch], capture_output=True, text=True)
        print(planted.stdout, end="")
        if planted.returncode == 0 or "common/planted.h:2" not in planted.stdout or "upward" not in planted.stdout:
            print("self-test: the planted upward include (common/planted.h -> src/comm.h) was not reported")
            return 1
    print("self-test: the planted upward include was reported; the clean copy passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=here, help="the repository to check (default: this one)")
    parser.add_argument("--quiet", action="store_true", help="print only problems")
    parser.add_argument("--self-test", action="store_true", help="show that a planted upward include fails")
    args = parser.parse_args()
    if args.self_test:
        return self_test(os.path.abspath(args.root))
    return check(os.path.abspath(args.root), args.quiet)


if __name__ == "__main__":
    sys.exit(main())
