// The device engine: runs device-memory calls on the caller's CUDA stream. Each call is planned
// like a host call (same planner and schedules, with the device protocol's slot geometry and
// the device's limit on peers per step), lowered to device steps (src/plan/device_program.h) and
// enqueued by the launcher over a device-memory domain's channels (transport/device_channels.h):
// no host wait. The kernels report failures through host-mapped memory, which pollError reads.
// Built only with CUDA.
#pragma once

#include <memory>

#include "src/exec/device_launcher.h"
#include "src/exec/engine.h"
#include "src/params.h"
#include "src/plan/device_program.h"
#include "transport/device_channels.h"

namespace coll {

class DeviceEngine : public Engine {
 public:
  // params: COLL_ALGO and COLL_PROTO; timeoutMs bounds every wait of a kernel.
  DeviceEngine(transport::DeviceChannels& channels, int rank, int nranks, const Params& params, int timeoutMs);
  const char* name() const override { return "device"; }
  void run(const CollCall& call, collStream_t stream) override;
  void runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) override;
  collResult_t pollError(std::string* message) const override;
  void abort() override { channels_.requestAbort(); }

  // Enqueues a program planned elsewhere (the GPU tests plan with their own protocol choices).
  void enqueue(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff, void* recvbuff,
               collStream_t stream);

 private:
  transport::DeviceChannels& channels_;
  int rank_;
  DeviceCallContext context_;
  DeviceLauncher launcher_;
};

}  // namespace coll
