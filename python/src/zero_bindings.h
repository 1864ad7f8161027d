// torch_collective._C's ZeRO functions (include/collective_zero.h on tensors), which
// torch_collective.zero builds its engine on.
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_collective {

void registerZeroBindings(pybind11::module& module);

}  // namespace torch_collective
