#include "transport/device_channels.h"

#include "common/error.h"

namespace coll {
namespace transport {

collResult_t deviceStatusError(const volatile device::DeviceStatus* status, int rank, std::string* message) {
  if (status == nullptr) return collSuccess;
  const uint32_t error = status->error;
  if (error == device::kDeviceOk) return collSuccess;
  if (message != nullptr) {
    *message = error == device::kDeviceTimeout
                   ? formatString("a device kernel of rank %d waited past the timeout for rank %u (step %u)", rank,
                                  status->peer, status->step)
                   : formatString("the device kernels of rank %d were aborted", rank);
  }
  return error == device::kDeviceTimeout ? collTimeout : collRemoteError;
}

}  // namespace transport
}  // namespace coll
