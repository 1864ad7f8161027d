#!/usr/bin/env bash
# This build folder registers the same tests as a folder configured from scratch now, with the
# same settings: a folder configured before the machine had everything (tools/quickstart.sh's,
# before tools/test.sh installed the rest) must not keep a family out with a stale cached answer.
# Configure only, in a scratch folder.
# usage: families_match_test.sh BUILD_DIR SOURCE_DIR CMAKE
set -uo pipefail
build=$1 source_dir=$2 cmake=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The folder's own choices (COLL_* options, build type) go to the scratch configure.
settings=()
while IFS= read -r line; do
  [[ $line =~ ^(COLL_[A-Z0-9_]+|CMAKE_BUILD_TYPE):(BOOL|STRING)=(.*)$ ]] || continue
  settings+=("-D${BASH_REMATCH[1]}=${BASH_REMATCH[3]}")
done < <("$cmake" -N -L "$build" 2>/dev/null)
"$cmake" -S "$source_dir" -B "$scratch/build" -DCOLL_CCACHE=OFF "${settings[@]}" >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; echo "FAIL: the scratch configure failed"; exit 1; }
# A folder only configured lists the tests added by add_test, not yet GoogleTest's (discovered when
# their programs are built): every test the scratch folder lists must be in this folder too.
names() { ctest --test-dir "$1" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p' | grep -v '_NOT_BUILT$' | sort; }
names "$build" >"$scratch/mine" && names "$scratch/build" >"$scratch/fresh"
missing=$(comm -13 "$scratch/mine" "$scratch/fresh")
echo "tests registered: $(wc -l <"$scratch/mine") in $build; $(wc -l <"$scratch/fresh") (GoogleTest's not yet" \
     "discovered) configured from scratch with ${#settings[@]} settings"
status=0
if [ -n "$missing" ]; then
  echo "FAIL: $(wc -l <<<"$missing") tests a fresh configure registers are missing here, e.g.:"
  head -5 <<<"$missing"
  status=1
fi
if ! diff <(sort "$build/test_families_not_registered.txt") <(sort "$scratch/build/test_families_not_registered.txt"); then
  echo "FAIL: the families left out differ (< this folder, > from scratch); reconfigure: cmake -S $source_dir -B $build"
  status=1
fi
[ $status -eq 0 ] && echo ok
exit $status
