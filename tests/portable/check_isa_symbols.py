#!/usr/bin/env python3
"""Fails when an instruction-set variant shares an inline symbol with other code.

The host reduce loops (kernels/cpu/isa/<variant>.cc) and the ZeRO optimizer loops
(zero/isa/<variant>.cc) are compiled once per variant, each with different -m flags. Inline
functions and template instantiations are emitted as weak symbols in each object that uses them,
and the linker keeps one copy per name: a weak symbol that two variants (or a variant and baseline
code) both define could leave baseline code calling an AVX-512 copy, which dies with SIGILL on an
older CPU. kernels/cpu/isa_namespace.h prevents that by putting each variant's code in its own
namespace, coll::<layer>::<variant> (coll::kernels::avx2, coll::zero::avx2); this checks the
objects: every weak symbol a variant defines must lie in a namespace of that variant's name. (One
variant's objects in two layers may share one, coll::kernels::avx2::halfToFloat say: the same -m
flags built both copies, so either serves.) Strong symbols need no check: two definitions of one
would not link.

usage: check_isa_symbols.py NM OBJECT...   (objects outside a cpu/isa/ folder are ignored)
       check_isa_symbols.py --self-test   shows that a planted weak std:: symbol is reported
"""
import os
import subprocess
import sys

WEAK_TYPES = set("WwVvu")


def in_variant_namespace(symbol, variant):
    """Whether an Itanium-mangled name lies in coll::<layer>::<variant> for some layer: the
    nested-name prefix 4coll, then the layer's <length><name>, then the variant's (their first
    occurrence is never abbreviated by a substitution)."""
    tag = "%d%s" % (len(variant), variant)
    at = symbol.find("4coll")
    while at >= 0:
        digits = at + 5
        end = digits
        while end < len(symbol) and symbol[end].isdigit():
            end += 1
        if end > digits:
            layer_end = end + int(symbol[digits:end])
            if symbol.startswith(tag, layer_end):
                return True
        at = symbol.find("4coll", at + 1)
    return False


def offenders(variant, nm_lines):
    """The weak symbols of `nm -g --defined-only -P` output that lie outside the variant's namespace,
    and how many lie inside."""
    bad, good = [], 0
    for line in nm_lines:
        fields = line.split()
        if len(fields) < 2 or fields[1] not in WEAK_TYPES:
            continue
        if in_variant_namespace(fields[0], variant):
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
            print("%s: %d weak symbols outside coll::<layer>::%s:" % (obj, len(bad), variant))
            for name in bad:
                demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
                print("  " + (demangled or name))
        elif good == 0:
            # The loops are templates or inline functions: none at all means this looked at the wrong file.
            print("%s: no weak symbol in coll::<layer>::%s, so the loops are not in this object" % (obj, variant))
        else:
            print("%s: %d weak symbols, all in coll::<layer>::%s" % (obj, good, variant))
        failed = failed or bool(bad) or good == 0
    if checked == 0:
        print("no object from a cpu/isa/ folder among the arguments")
        return 1
    return 1 if failed else 0


def self_test():
    planted = ["_ZN4coll7kernels4avx26detail11ReduceLoopsIfE3runEv W 0 10",
               "_ZN4coll4zero4avx26detail4stepERK20collZeroStepConfig_tPfPKv W 0 10",
               "_ZSt3minImERKT_S2_S2_ W 0 10",  # std::min<unsigned long>, as a variant might emit it
               "_ZN4coll4zero7generic6detail4stepEv W 0 10",  # another variant's namespace
               "_ZN4coll7kernels8baseline11halfToFloatEt W 0 10",  # the baseline's
               "_ZN4coll7kernels15avx2ReduceLoopsE D 0 10"]
    bad, good = offenders("avx2", planted)
    want = ["_ZSt3minImERKT_S2_S2_", "_ZN4coll4zero7generic6detail4stepEv", "_ZN4coll7kernels8baseline11halfToFloatEt"]
    if bad != want or good != 2:
        print("self-test: expected %s to be reported, got %s (%d in the namespace)" % (want, bad, good))
        return 1
    print("self-test: the planted weak std::min, generic and baseline symbols were reported; the avx2 and the "
          "strong symbols were not")
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
