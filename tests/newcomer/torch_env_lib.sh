# Shared by the newcomer tests: whether PYENV holds a torch 2.x, and how many python.torch2 tests a
# build folder registers.

# Prints torch's version and returns 0 when PYENV's interpreter imports a torch of line 2 or later.
torch2_version() {
  local pyenv=$1 version
  [ -x "$pyenv/bin/python" ] || return 1
  version=$(env -u PYTHONPATH "$pyenv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null) || return 1
  [ "${version%%.*}" -ge 2 ] 2>/dev/null || return 1
  echo "$version"
}

# The number of tests named python.torch2.* that ctest lists in BUILD_DIR.
torch2_test_count() {
  ctest --test-dir "$1" -N -R '^python\.torch2\.' 2>/dev/null | sed -n 's/^Total Tests: //p'
}
