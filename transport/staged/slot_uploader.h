// The receive side of copy-then-reduce staging (COLL_STAGED_RECV=copy): what a peer sent lands in
// the pinned slot as always, then a copy engine moves it into a slot in device memory, and only
// then is the slot marked full, so the kernels reduce from device memory instead of reading the
// pinned slot across PCIe. The proxy starts the copies and polls them; it never waits on one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coll {
namespace transport {

class SlotUploader {
 public:
  virtual ~SlotUploader() = default;  // waits for the copies still running
  // Starts copying `bytes` from pinned host memory to device memory, after the copies started
  // before it. Returns its number: 1 for the first, then one more each time. Throws CollError.
  virtual uint64_t start(void* device, const void* host, size_t bytes) = 0;
  // The number of the last copy known to be complete (0: none); copies complete in order.
  virtual uint64_t completed() = 0;
};

}  // namespace transport
}  // namespace coll
