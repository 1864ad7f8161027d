#!/usr/bin/env python3
"""The end of tools/test.sh: what ran, what failed, and every family of tests that did not run, why.

Reads two things the build folder holds after a run:
  - test_families_not_registered.txt, written at configure time (cmake/test_families.cmake): the
    families that configure left out, each with its reason (no torch 2.x environment, no CUDA, ...);
  - the JUnit file that `ctest --output-junit` wrote: each test's status and output, from which the
    tests that skipped themselves at run time (SKIP_RETURN_CODE 77, or GoogleTest's "[  SKIPPED ]"
    through gtest_discover_tests' SKIP_REGULAR_EXPRESSION) are grouped by family, each with the
    line in which it said why.

A family that is neither run nor named here cannot exist: that is the point of this summary.
"""
import argparse
import collections
import pathlib
import re
import sys
import xml.etree.ElementTree as ElementTree

SKIP_LINE = re.compile(r"SKIPPED|[Ss]kipped|not run|cannot run|no CUDA device|not found|missing")


def family_of(test_name):
    """The family a test belongs to: its name's first part, with the torch line for python tests."""
    match = re.match(r"(python\.torch[0-9]+\.[0-9]+)\.", test_name)
    if match:
        return match.group(1)
    return test_name.split(".", 1)[0].split("/", 1)[0]


def skip_reason(output):
    """The line of a skipped test's output that says why, else its last non-empty line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if SKIP_LINE.search(line) and not line.startswith("[ RUN"):
            return line[:200]
    return lines[-1][:200] if lines else "(it printed nothing)"


def read_results(junit_path):
    """(passed, failed names, {family: [(test, reason)]} skipped) from ctest's JUnit file."""
    passed, failed = 0, []
    skipped = collections.defaultdict(list)
    root = ElementTree.parse(junit_path).getroot()
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        output = "".join(node.text or "" for node in case.iter("system-out"))
        if case.find("failure") is not None or case.get("status") == "fail":
            failed.append(name)
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            skipped[family_of(name)].append((name, skip_reason(output)))
        else:
            passed += 1
    return passed, failed, skipped


def read_not_registered(report_path):
    entries = []
    if not report_path.exists():
        return None
    for line in report_path.read_text().splitlines():
        if "\t" in line:
            family, reason = line.split("\t", 1)
            entries.append((family, reason))
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("junit", type=pathlib.Path, help="the file ctest --output-junit wrote")
    args = parser.parse_args()

    print("\n== test.sh summary ==")
    not_registered = read_not_registered(args.build_dir / "test_families_not_registered.txt")
    if args.junit.exists():
        passed, failed, skipped = read_results(args.junit)
        total_skipped = sum(len(tests) for tests in skipped.values())
        print(f"{passed + len(failed) + total_skipped} tests run by ctest: {passed} passed, "
              f"{len(failed)} failed, {total_skipped} skipped themselves")
        for name in failed:
            print(f"  FAILED  {name}")
        if skipped:
            print("Skipped at run time, by family:")
            for family, tests in sorted(skipped.items()):
                reasons = collections.Counter(reason for _, reason in tests)
                reason, _ = reasons.most_common(1)[0]
                more = f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
                print(f"  {family}: {len(tests)} test{'s' if len(tests) != 1 else ''}: {reason}{more}")
    else:
        print(f"no ctest results at {args.junit}: ctest did not finish")
    if not_registered is None:
        print("Families left out at configure: unknown (no test_families_not_registered.txt: configure first)")
    elif not_registered:
        print("Families left out at configure (not registered, so not run):")
        for family, reason in not_registered:
            print(f"  {family}: {reason}")
    else:
        print("Families left out at configure: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
