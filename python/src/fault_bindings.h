// torch_collective._C's revoke, shrink and flight-recorder functions (fault_bindings.cc).
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_collective {

void registerFaultBindings(pybind11::module& module);

}  // namespace torch_collective
