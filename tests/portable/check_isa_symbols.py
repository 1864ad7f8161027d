#!/usr/bin/env python3
"""Fails when an instruction-set variant of the host kernels shares an inline symbol with other code.

kernels/cpu/isa/<variant>.cc compile the same reduce loops with different -m flags. Inline
functions and template instantiations are emitted as weak symbols in each object that uses them,
and the linker keeps one copy per name: a weak symbol that two variants (or a variant and baseline
code) both define could leave baseline code calling an AVX-512 copy, which dies with SIGILL on an
older CPU. kernels/cpu/isa_namespace.h prevents that by putting each variant's code in its own
namespace; this checks the objects: every weak symbol a variant defines must carry that namespace.
Strong symbols need no check: two definitions of one would not link.

usage: check_isa_symbols.py NM OBJECT...   (objects outside a cpu/isa/ folder are ignored)
       check_isa_symbols.py --self-test   shows that a planted weak std:: symbol is reported
"""
import os
import subprocess
import sys

WEAK_TYPES = set("WwVvu")


def namespace_tag(variant):
    # How coll::kernels::<variant> appears in an Itanium-mangled name (its first occurrence is never
    # abbreviated by a substitution).
    return "4coll7kernels%d%s" % (len(variant), variant)


def offenders(variant, nm_lines):
    """The weak symbols of `nm -g --defined-only -P` output that lie outside the variant's namespace,
    and how many lie inside."""
    bad, good = [], 0
    for line in nm_lines:
        fields = line.split()
        if len(fields) < 2 or fields[1] not in WEAK_TYPES:
            continue
        if namespace_tag(variant) in fields[0]:
            good += 1
        else:
            bad.append(fields[0])
    return bad, good


def check(nm, objects):
    failed = False
    checked = 0
    for obj in objects:
        if os.sep + "isa" + os.sep not in obj:
            continue
        variant = os.path.basename(obj).split(".")[0]
        out = subprocess.run([nm, "-g", "--defined-only", "-P", obj], capture_output=True, text=True, check=True)
        bad, good = offenders(variant, out.stdout.splitlines())
        checked += 1
        if bad:
            print("%s: %d weak symbols outside coll::kernels::%s:" % (variant, len(bad), variant))
            for name in bad:
                demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
                print("  " + (demangled or name))
        elif good == 0:
            # The loops are templates: none at all means this looked at the wrong file.
            print("%s: no weak symbol in coll::kernels::%s, so the loops are not in this object" % (variant, variant))
        else:
            print("%s: %d weak symbols, all in coll::kernels::%s" % (variant, good, variant))
        failed = failed or bool(bad) or good == 0
    if checked == 0:
        print("no object from a cpu/isa/ folder among the arguments")
        return 1
    return 1 if failed else 0


def self_test():
    planted = ["_ZN4coll7kernels4avx26detail11ReduceLoopsIfE3runEv W 0 10",
               "_ZSt3minImERKT_S2_S2_ W 0 10",  # std::min<unsigned long>, as a variant might emit it
               "_ZN4coll7kernels15avx2ReduceLoopsE D 0 10"]
    bad, good = offenders("avx2", planted)
    if bad != ["_ZSt3minImERKT_S2_S2_"] or good != 1:
        print("self-test: expected the planted std::min to be reported, got %s (%d in the namespace)" % (bad, good))
        return 1
    print("self-test: the planted weak std::min was reported; the namespaced and the strong symbols were not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    return check(sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
