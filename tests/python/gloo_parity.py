"""Runs the same call on the "collective" group and on a gloo group of the same ranks, so a test
can require the same outputs, or the same exception type, as gloo's on the same inputs.

The default group is "collective" (start_process_group); `GlooTwin()` makes the gloo group once
(all ranks must create it, in the same order as any other group).
"""
import torch.distributed as dist


class GlooTwin:
    def __init__(self):
        self.group = dist.new_group(backend="gloo")

    def outcome(self, call, group):
        """call(group) -> ("ok", value) or ("raised", exception type, message)."""
        try:
            return ("ok", call(group))
        except Exception as error:  # the type is what the test compares
            return ("raised", type(error), str(error).splitlines()[0] if str(error) else "")

    def both(self, call):
        """(ours, gloo's) outcomes of call(group) on each group, ours first."""
        return self.outcome(call, None), self.outcome(call, self.group)


def same_exception_type(check, ours, theirs, what):
    """Both raised, and an exception of the same type."""
    check.true(ours[0] == "raised", f"{what}: ours did not raise (gloo raised {theirs[1:]})")
    check.true(theirs[0] == "raised", f"{what}: gloo did not raise (ours raised {ours[1:]})")
    check.true(ours[1] is theirs[1], f"{what}: ours raised {ours[1].__name__}, gloo {theirs[1].__name__}")


def run_against_gloo(name, tests):
    """Joins the "collective" group, makes the gloo twin, runs each test(check, twin, rank, ranks)
    and reports; the main() of every test that compares with gloo."""
    from common import start_process_group

    rank, ranks, check = start_process_group()
    twin = GlooTwin()
    for test in tests:
        test(check, twin, rank, ranks)
    dist.barrier()
    dist.destroy_process_group()
    check.summary(name)
