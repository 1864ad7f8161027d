"""Prints what CMake needs to build the torch_collective extension, one `key=value` a line.

Run by python/CMakeLists.txt with the interpreter named by COLL_TORCH_PYTHON. Exits non-zero, with
the reason on stderr, when torch cannot be imported.
"""
import sys
import sysconfig

try:
    import torch
    import torch.utils.cpp_extension as cpp_extension
except Exception as error:  # any import failure means "no torch here"; say which
    sys.stderr.write(f"cannot import torch: {error}\n")
    sys.exit(1)

print(f"version={torch.__version__}")
print(f"cxx11_abi={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
print(f"include_dirs={'|'.join(cpp_extension.include_paths())}")  # '|': CMake splits lines at ';'
print(f"library_dir={cpp_extension.library_paths()[0]}")
print(f"python_include={sysconfig.get_paths()['include']}")
print(f"cuda={torch.version.cuda or ''}")  # empty for a CPU-only torch
print(f"extension_suffix={sysconfig.get_config_var('EXT_SUFFIX')}")
