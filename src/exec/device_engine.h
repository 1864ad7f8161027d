// The device engine: runs device-memory calls on the caller's CUDA stream. Each call is planned
// like a host call (same planner and schedules, with the device protocol's slot geometry and
// the device's limit on peers per step), lowered to device steps (src/plan/device_program.h) and
// enqueued by the launcher over a device-memory domain's channels (transport/device_channels.h):
// no host wait. The launches of one engine are chained through one event across streams
// (launch_order.h). The kernels report failures through host-mapped memory, which pollError
// reads. Built only with CUDA; the communicator reaches it through makeDeviceEngine (engine.h).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "src/exec/device_launcher.h"
#include "src/exec/engine.h"
#include "src/exec/launch_order.h"
#include "src/params.h"
#include "src/plan/device_program.h"
#include "transport/device_channels.h"

namespace coll {

class DeviceEngine : public Engine {
 public:
  // params: COLL_ALGO and COLL_PROTO; timeoutMs bounds every wait of a kernel; layout (may be
  // null) groups the ranks for two-level plans and says that some peers are staged. Creates the
  // ordering event on the channels' device (which must be current).
  // exchangeRecords: an all-gather among the ranks through host memory, for rank processes whose
  // call buffers the channels map (the direct all-reduce under MPS).
  DeviceEngine(transport::DeviceChannels& channels, int rank, int nranks, const Params& params, int timeoutMs,
               const DeviceLayout* layout = nullptr, transport::ExchangeRecords exchangeRecords = nullptr);
  ~DeviceEngine() override;
  const char* name() const override { return "device"; }
  void run(const CollCall& call, collStream_t stream) override;
  void runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) override;
  collResult_t pollError(std::string* message) const override;
  // Asks the kernels to stop and releases serialized mode's stream waits (from any thread).
  void abort() override;
  // Waits for the last launch (eager, or a graph replay recorded since) to end, and for staged
  // slices to leave; after an abort, keeps releasing stream waits meanwhile. Throws collTimeout
  // at the deadline. A graph that holds calls of this engine must not be replayed after it is
  // destroyed (the graph's host nodes point into it), as with any communicator.
  void drain(Deadline deadline) override;

  // Enqueues a program planned elsewhere (the GPU tests plan with their own protocol choices).
  // tag: the call's (src/call_tag.h), which staged frames carry; 0 for a group of sends and
  // receives, or a program of no single call.
  void enqueue(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff, void* recvbuff,
               collStream_t stream, uint64_t tag = 0);

  // What a host node hands over, and the channels it hands over to (device_engine.cc).
  struct HandOver;
  struct HandOverGate;

 private:
  // Whether `stream` is capturing a CUDA graph; with this engine's device current.
  bool capturing(collStream_t stream) const;
  // enqueue's work, with this engine's device current, for a stream whose capture state is known.
  void enqueueOn(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff,
                 void* recvbuff, collStream_t stream, uint64_t tag, bool capturing);
  void releaseStreamWaits();
  // Hands a call's plan to the channels' host side (staged peers) from the stream itself, as a
  // host node; `captured`: kept for the engine's lifetime, since a graph may replay it any time.
  void handOverOnStream(const DeviceProgram& program, uint64_t tag, cudaStream_t stream, bool captured);

  transport::DeviceChannels& channels_;
  int rank_;
  DeviceCallContext context_;
  DeviceLauncher launcher_;
  cudaEvent_t lastLaunch_ = nullptr;  // recorded behind every launch (launch_order.h)
  LaunchOrder order_;
  std::mutex sideMutex_;
  cudaStream_t side_ = nullptr;  // created by the first abort, for releasing stream waits
  std::atomic<bool> aborted_{false};
  // Once a staged call was captured, every staged call reaches the host side through the stream
  // (handOverOnStream): replays hand theirs over when the stream reaches them, and the proxy must
  // see the calls in the kernels' order.
  bool handOverInStreamOrder_ = false;
  std::shared_ptr<HandOverGate> handOverGate_;
  transport::ExchangeRecords exchangeRecords_;
  std::vector<std::unique_ptr<HandOver>> captured_;  // the host nodes' data, for every replay
};

}  // namespace coll
