// Unpredictable bytes from the kernel (getrandom): secrets, nonces and segment names that a
// stranger on the machine must not guess.
#pragma once

#include <cstddef>

namespace coll {

// Fills `bytes` bytes at `data`; throws collSystemError naming `what` when the kernel refuses.
void fillRandom(void* data, size_t bytes, const char* what);

}  // namespace coll
