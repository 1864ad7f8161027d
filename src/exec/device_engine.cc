#include "src/exec/device_engine.h"

#include <cuda_runtime.h>

namespace coll {

DeviceEngine::DeviceEngine(transport::DeviceChannels& channels, int rank, int nranks, const Params& params,
                           int timeoutMs)
    : channels_(channels), rank_(rank), launcher_(channels, timeoutMs) {
  context_.rank = rank;
  context_.nranks = nranks;
  context_.mode = channels.kernelsConcurrent() ? DeviceMode::kConcurrent : DeviceMode::kSerialized;
  context_.forced = params.protocol;
  context_.overrides = params.algoOverride;
}

void DeviceEngine::enqueue(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff,
                           void* recvbuff, collStream_t stream) {
  DeviceProgramView view;
  view.steps = program.steps.data();
  view.nsteps = program.steps.size();
  view.launches = program.launches.data();
  view.nlaunches = program.launches.size();
  view.protocol = program.protocol;
  view.geometry = program.geometry;
  view.avgDivisor = program.avgDivisor;
  launcher_.enqueue(view, type, op, sendbuff, recvbuff, static_cast<cudaStream_t>(stream));
}

void DeviceEngine::run(const CollCall& call, collStream_t stream) {
  if (call.count == 0 && call.type != CollType::kBarrier) return;
  enqueue(planDeviceCall(call, context_), call.datatype, call.op, call.sendbuff, call.recvbuff, stream);
}

void DeviceEngine::runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) {
  enqueue(planDevicePointToPoint(calls, context_), collUint8, collSum, nullptr, nullptr, stream);
}

collResult_t DeviceEngine::pollError(std::string* message) const {
  return transport::deviceStatusError(channels_.hostStatus(), rank_, message);
}

}  // namespace coll
