#!/usr/bin/env python3
"""Prints the include graph between libcollective's folders and fails on an edge that runs the
wrong way, or on a folder that is not where its layer says (docs/architecture.md, "Layers").

The library's layers, bottom up, one top-level folder each; a file may include its own layer and
the layers below it:

  0  common/      errors, logging, hashing, fds, clock and deadlines, list specs, interfaces, sockets
  1  kernels/     host and device arithmetic          topo/   what a host is made of
  2  bootstrap/   rendezvous stores, unique id, launch environments
  3  transport/   the domain interface, shm/, net/, p2p/
  4  src/         the core: API, communicator, planning, algorithms, execution
  5  zero/        ZeRO on the core's C API

include/ (the public headers) may be included from anywhere and includes nothing of ours. Two
layers on one level (kernels and topo) must not include each other. Above the library sit its
users (tools/, benchmarks/, tests/, python/, examples/): they may include any layer, and their own
folder, but not each other's.

Folders follow layers: each layer is one top-level folder (none sits inside another's), every
top-level folder that holds sources is a layer, include/ or a user, and each coll_add_layer() in
the CMake files names the folder this table gives its layer.

The core names no transport: each transport's settings, costs and peer description come with its
row of the transport table (transport/README.md), so a new transport is a folder and a row. No
file under src/ (code or comment) may name one: a path into a transport's folder, a transport's
word (TRANSPORT_WORDS, also inside identifiers: shmFifoDepth, kVerbs), a prefix of a transport's
variables (TRANSPORT_VARIABLES), or a string literal that is a name or a link name of the table
(transport/transport_table.cc). "socket" and "network" stay generic words: the core opens TCP
sockets itself (src/ft), and CPUs have sockets.

The build enforces the same order (cmake/layers.cmake: each layer compiles with only its own
include root and those of the layers it links); this script says it in words, for CI and for
reviewers, and also catches what the build's roots cannot see.

usage: tools/check_layers.py [--root DIR] [--quiet]
       tools/check_layers.py --self-test     plants an upward include, a stray folder and a
                                             transport's name in the core, and expects each failure
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (folder, unit, level), one top-level folder per layer; the CMake target is coll_<unit>.
LIBRARY = [
    ("common/", "common", 0),
    ("kernels/", "kernels", 1),
    ("topo/", "topo", 1),
    ("bootstrap/", "bootstrap", 2),
    ("transport/", "transport", 3),
    ("src/", "core", 4),
    ("zero/", "zero", 5),
]
PUBLIC = ("include/", "api")
USERS = ["tools/", "benchmarks/", "tests/", "python/", "examples/"]
SOURCE_EXTENSIONS = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
SKIP_DIRS = {".git", "__pycache__"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

# What names a transport in the core (src/): its word, alone or inside an identifier (any case),
# and the prefixes of its variables. The table's names and link names come from the table itself.
CORE = "src/"
TRANSPORT_WORDS = {"shm", "verbs", "p2p", "ipc", "rdma", "infiniband"}
TRANSPORT_VARIABLES = re.compile(r"\bCOLL_(SHM|NET|SOCKET|IB|VERBS|P2P|STAGED)_\w*")
TABLE = "transport/transport_table.cc"
TABLE_NAMES = re.compile(r'/\*(?:name|price)=\*/\{?"(\w+)"')
# String literals that spell a table name by coincidence, with why: (file, literal).
NOT_A_TRANSPORT = {
    ("src/plan/planner.cc", '"p2p"'): "the point-to-point schedule's name in traces",
}
WORD = re.compile(r"[A-Za-z0-9_]+")
WORD_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')


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


def kept_dirs(rel_dir, dirs):
    """The folders of `dirs` to walk into. At the top, not the build trees (build/, build-*/: generated
    files and links back into the sources), an install/ tree, nor the hidden folders that git
    ignores (.gpu/ holds an installed copy of the headers for the GPU machine)."""
    top = rel_dir == "."
    return [d for d in dirs
            if d not in SKIP_DIRS and not (top and (d.startswith("build") or d.startswith(".") or d == "install"))]


def source_files(root):
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        dirs[:] = kept_dirs(rel_dir, dirs)
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


ADD_LAYER = re.compile(r"coll_add_layer\(\s*coll_(\w+)\s+([^\s)]+)")


def folder_problems(root):
    """Where the folders disagree with the layers: a layer inside another's folder, sources in a
    top-level folder that is no layer, or a CMake layer built from another folder than its row."""
    problems = []
    for folder, unit, _ in LIBRARY:
        if folder.count("/") != 1:
            problems.append(f"{folder}: the {unit} layer's folder sits inside another folder; each layer has a top-level one")
    known = {folder for folder, _, _ in LIBRARY} | {PUBLIC[0]} | set(USERS)
    for path in source_files(root):
        top = path.split(os.sep)[0] + "/"
        if os.sep in path and top not in known:
            problems.append(f"{path}: {top} holds sources but is no layer, include/ or user folder (tools/check_layers.py, LIBRARY)")
            known.add(top)  # once per folder
    folders = {unit: folder.rstrip("/") for folder, unit, _ in LIBRARY}
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        dirs[:] = kept_dirs(rel_dir, dirs)
        if "CMakeLists.txt" not in files:
            continue
        cmake_path = os.path.normpath(os.path.join(rel_dir, "CMakeLists.txt"))
        with open(os.path.join(directory, "CMakeLists.txt"), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = ADD_LAYER.search(line)
                if not match or match.group(1) == "target":  # the function's own definition
                    continue
                unit, folder = match.group(1), match.group(2)
                if unit not in folders:
                    problems.append(f"{cmake_path}:{number}: layer coll_{unit} has no row in tools/check_layers.py")
                elif folder != folders[unit]:
                    problems.append(f"{cmake_path}:{number}: coll_{unit} is built from {folder}/, its row says {folders[unit]}/")
    return problems


def transport_name_problems(root):
    """Every place a core file names a transport (see the module's doc)."""
    names = set()
    table = os.path.join(root, TABLE)
    if os.path.exists(table):
        with open(table, encoding="utf-8") as f:
            names = set(TABLE_NAMES.findall(f.read()))
    transport_dir = os.path.join(root, "transport")
    folders = sorted(d for d in os.listdir(transport_dir) if os.path.isdir(os.path.join(transport_dir, d))) \
        if os.path.isdir(transport_dir) else []
    folder_path = re.compile(r"\btransport/(" + "|".join(map(re.escape, folders)) + r")\b") if folders else None
    problems = []
    for path in sorted(source_files(root)):
        if not path.startswith(CORE):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                for allowed_path, literal in NOT_A_TRANSPORT:
                    if allowed_path == path:
                        line = line.replace(literal, '""')
                found = []
                if folder_path and folder_path.search(line):
                    found.append(f"a transport's folder ({folder_path.search(line).group(0)})")
                variable = TRANSPORT_VARIABLES.search(line)
                if variable:
                    found.append(f"a transport's variable ({variable.group(0)})")
                words = {part.lower() for token in WORD.findall(line) for part in WORD_PART.findall(token)}
                words |= {token.lower() for token in WORD.findall(line)}
                for word in sorted(words & TRANSPORT_WORDS):
                    found.append(f"the word {word!r}")
                for literal in LITERAL.findall(line):
                    if literal[1:-1] in names and (path, literal) not in NOT_A_TRANSPORT:
                        found.append(f"the table's name {literal}")
                if found:
                    problems.append(f"{path}:{number}: names a transport: " + "; ".join(found))
    return problems


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
    misplaced = folder_problems(root)
    named = transport_name_problems(root)
    if problems:
        print(f"\n{len(problems)} include(s) against the layer order (docs/architecture.md):")
        for problem in problems:
            print("  " + problem)
    if misplaced:
        print(f"\n{len(misplaced)} folder(s) against the layers (docs/architecture.md):")
        for problem in misplaced:
            print("  " + problem)
    if named:
        print(f"\n{len(named)} line(s) of the core that name a transport (transport/README.md, \"Adding a "
              "transport\"):")
        for problem in named:
            print("  " + problem)
    if problems or misplaced or named:
        return 1
    if not quiet:
        print("\nno include runs upward or sideways; every layer has its own top-level folder; the core names "
              "no transport")
    return 0


def self_test(root):
    """Copies the library's folders, plants an include of the core in common/, and expects the
    check to fail naming it; then plants a source in a folder that is no layer and expects that
    named too; the unplanted copy must pass."""
    with tempfile.TemporaryDirectory() as scratch:
        for folder in [folder.rstrip("/") for folder, _, _ in LIBRARY] + ["include"]:
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
        os.remove(os.path.join(scratch, "common", "planted.h"))
        os.makedirs(os.path.join(scratch, "stray"))
        with open(os.path.join(scratch, "stray", "planted.cc"), "w") as f:
            f.write('#include "src/comm.h"\n')
        planted = subprocess.run([sys.executable, __file__, "--root", scratch], capture_output=True, text=True)
        print(planted.stdout, end="")
        if planted.returncode == 0 or "stray/ holds sources but is no layer" not in planted.stdout:
            print("self-test: the planted source outside every layer (stray/planted.cc) was not reported")
            return 1
        shutil.rmtree(os.path.join(scratch, "stray"))
        with open(os.path.join(scratch, "src", "planted.cc"), "w") as f:
            f.write('// Deep FIFOs for the ring.\nint plantedDepth() { return fifoDepth("net", "COLL_SHM_FIFO_DEPTH"); }\n'
                    'bool plantedVerbsRoutes = false;\n')
        planted = subprocess.run([sys.executable, __file__, "--root", scratch], capture_output=True, text=True)
        print(planted.stdout, end="")
        wanted = ["src/planted.cc:2: names a transport", "COLL_SHM_FIFO_DEPTH", "\"net\"",
                  "src/planted.cc:3: names a transport: the word 'verbs'"]
        if planted.returncode == 0 or any(w not in planted.stdout for w in wanted) or "planted.cc:1:" in planted.stdout:
            print("self-test: the planted transport names in the core (src/planted.cc) were not reported as expected")
            return 1
    print("self-test: the planted upward include, the source outside every layer and the transport names in "
          "the core were reported; the clean copy passed")
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
