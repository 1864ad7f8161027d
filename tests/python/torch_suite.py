"""PyTorch's own distributed test suite with the collective backend standing in for gloo.

    PYTHONPATH=build/python/torch2.15 /opt/collective-py/bin/python tests/python/torch_suite.py \\
        --backend collective --json /tmp/suite-collective-2.15.json
    ... --backend gloo --json /tmp/suite-gloo-2.15.json
    python3 tests/python/torch_suite.py --compare /tmp/suite-gloo-2.15.json /tmp/suite-collective-2.15.json

The suite is torch's torch/testing/_internal/distributed/distributed_test.py, which ships with
torch (pip's and Debian's), run the way torch's test/distributed/test_distributed_spawn.py runs it
(that runner does not ship): BACKEND=gloo, every test on --world-size processes. With --backend
collective our creator is registered under gloo's name (torch 2.x: Backend.register_backend; 1.13
builds gloo groups itself, so its ProcessGroupGloo is replaced), so the suite runs every gloo test
on our backend and takes every gloo branch. The one difference it must be told of is the profiler
events' name: ours are "collective:<operation>" where it looks for "gloo:<operation>", so its
get_profiling_event looks for ours.

--compare prints how many of the tests gloo passes ours passes, and each that ours does not with
the first line of its failure. Every test's outcome goes to --json. torch's test module needs
expecttest (PyPI only); where it is missing (Debian's python3), a plain TestCase stands in: no
test of this suite uses what it adds.
"""
import argparse
import json
import re
import os
import sys
import time
import types
import unittest

STAND_IN_VARIABLE = "TORCH_COLLECTIVE_SUITE_STAND_IN"
START_VARIABLE = "TORCH_COLLECTIVE_SUITE_START"


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["collective", "gloo"], default="collective",
                        help="the backend the suite's gloo tests run on (default: collective)")
    parser.add_argument("--world-size", type=int, default=2, help="processes per test (default: 2)")
    parser.add_argument("--spawn", action="store_true",
                        help="start each test's processes as torch's runner does (spawn: each imports torch "
                             "anew, several seconds a test here) instead of forking this one")
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        help="run only tests whose name contains this (repeatable)")
    parser.add_argument("--tests-from", help="a file of test names, one a line: run only those")
    parser.add_argument("--json", help="write every test's outcome here")
    parser.add_argument("--expect-pass", action="store_true",
                        help="exit 1 unless every test run passed (or was skipped)")
    parser.add_argument("--compare", nargs=2, metavar=("GLOO_JSON", "OURS_JSON"),
                        help="compare two --json files instead of running")
    return parser.parse_args()


def provide_expecttest():
    try:
        import expecttest  # noqa: F401
    except ImportError:
        shim = types.ModuleType("expecttest")
        shim.ACCEPT = False
        shim.TestCase = unittest.TestCase
        sys.modules["expecttest"] = shim


def stand_in_for_gloo():
    """Makes init_process_group("gloo") and new_group(backend="gloo") build our backend."""
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    import torch_collective

    def creator(store, rank, size, timeout):
        return torch_collective.create_backend(store, rank, size, timeout)

    if int(torch.__version__.split(".")[0]) >= 2:
        dist.Backend.register_backend("gloo", creator, devices=["cpu"])
    else:
        # torch 1.13 builds gloo groups itself, through the module's ProcessGroupGloo; under
        # TORCH_DISTRIBUTED_DEBUG=DETAIL it also builds a real gloo group that checks the calls
        # (_create_process_group_wrapper), which stays gloo.
        real_gloo = c10d.ProcessGroupGloo

        def process_group_gloo(store, rank, size, timeout=c10d.default_pg_timeout):
            if sys._getframe(1).f_code.co_name == "_create_process_group_wrapper":
                return real_gloo(store, rank, size, timeout)
            return creator(store, rank, size, timeout)

        c10d.ProcessGroupGloo = process_group_gloo

    import torch.testing._internal.distributed.distributed_test as suite

    looked_up = suite.get_profiling_event

    def our_profiling_event(name, profiler, *args, **kwargs):
        return looked_up(name.replace("gloo:", "collective:"), profiler, *args, **kwargs)

    suite.get_profiling_event = our_profiling_event


# Module level, so that the processes the suite spawns (which import this file as __mp_main__)
# set up the same way as the parent.
os.environ.setdefault("BACKEND", "gloo")
os.environ.setdefault("WORLD_SIZE", "2")
if __name__ == "__main__":
    ARGUMENTS = parse_arguments()
    os.environ["WORLD_SIZE"] = str(ARGUMENTS.world_size)
    os.environ[STAND_IN_VARIABLE] = "1" if ARGUMENTS.backend == "collective" else "0"
    os.environ[START_VARIABLE] = "spawn" if ARGUMENTS.spawn else "fork"
    os.environ.setdefault("PYTORCH_PRINT_REPRO_ON_FAILURE", "0")
    sys.argv = sys.argv[:1]  # torch's common_utils parses the command line when imported
if not (__name__ == "__main__" and ARGUMENTS.compare):
    provide_expecttest()
    from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend

    if os.environ.get(STAND_IN_VARIABLE) == "1":
        stand_in_for_gloo()

    import torch.multiprocessing

    class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            if os.environ.get(START_VARIABLE) == "spawn":
                self._spawn_processes()
            else:
                self._start_processes(torch.multiprocessing.get_context("fork").Process)


class Recorder(unittest.TestResult):
    """Each test's outcome and the first line of what went wrong."""

    def __init__(self):
        super().__init__()
        self.outcomes = {}
        self.started = 0.0

    def startTest(self, test):
        super().startTest(test)
        self.started = time.monotonic()

    def record(self, test, outcome, detail=""):
        name = test.id().rsplit(".", 1)[-1]
        lines = [line.split("] ", 1)[-1].strip() for line in str(detail).splitlines() if line.strip()]
        # A skip's reason is its only line; of a failure, the last line naming an exception (the
        # child's, which the parent's message quotes), else the last line.
        errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Timeout)\b", line)]
        summary = errors[-1] if errors else (lines[-1] if lines else "")
        self.outcomes[name] = {"outcome": outcome, "seconds": round(time.monotonic() - self.started, 1),
                               "detail": summary[:400]}
        print(f"{name}: {outcome} ({self.outcomes[name]['seconds']} s) {summary[:160]}", flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.record(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.record(test, "fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self.record(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.record(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.record(test, "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.record(test, "unexpected success")


def selected_tests(arguments):
    names = unittest.TestLoader().getTestCaseNames(TestDistBackendWithSpawn)
    if arguments.tests_from:
        with open(arguments.tests_from) as file:
            wanted = {line.strip() for line in file if line.strip() and not line.startswith("#")}
        names = [name for name in names if name in wanted]
    if arguments.patterns:
        names = [name for name in names if any(pattern in name for pattern in arguments.patterns)]
    return names


def run(arguments):
    import torch

    names = selected_tests(arguments)
    print(f"torch {torch.__version__}, backend {arguments.backend} standing in for gloo, "
          f"world size {arguments.world_size}: {len(names)} tests", flush=True)
    recorder = Recorder()
    unittest.TestSuite(TestDistBackendWithSpawn(name) for name in names).run(recorder)
    counts = {}
    for result in recorder.outcomes.values():
        counts[result["outcome"]] = counts.get(result["outcome"], 0) + 1
    print(", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())), flush=True)
    if arguments.json:
        with open(arguments.json, "w") as file:
            json.dump({"torch": torch.__version__, "backend": arguments.backend, "world_size": arguments.world_size,
                       "results": recorder.outcomes}, file, indent=1, sort_keys=True)
    failed = [name for name, result in recorder.outcomes.items() if result["outcome"] not in ("pass", "skip")]
    return 1 if arguments.expect_pass and failed else 0


def compare(gloo_path, ours_path):
    with open(gloo_path) as file:
        gloo = json.load(file)
    with open(ours_path) as file:
        ours = json.load(file)
    passed_by_gloo = sorted(name for name, result in gloo["results"].items() if result["outcome"] == "pass")
    not_passed = [name for name in passed_by_gloo if ours["results"].get(name, {}).get("outcome") != "pass"]
    print(f"torch {ours['torch']}, world size {ours['world_size']}: ours passes "
          f"{len(passed_by_gloo) - len(not_passed)} of the {len(passed_by_gloo)} tests gloo passes")
    for name in not_passed:
        result = ours["results"].get(name, {"outcome": "not run", "detail": ""})
        print(f"  {name}: {result['outcome']}: {result['detail']}")
    extra = sorted(name for name, result in ours["results"].items()
                   if result["outcome"] == "pass" and gloo["results"].get(name, {}).get("outcome") != "pass")
    if extra:
        print(f"ours also passes {len(extra)} that gloo does not: {', '.join(extra)}")
    return 0


if __name__ == "__main__":
    sys.exit(compare(*ARGUMENTS.compare) if ARGUMENTS.compare else run(ARGUMENTS))
