#include "src/exec/device_engine.h"

#include <chrono>
#include <thread>

#include "common/cuda_check.h"
#include "common/cuda_device.h"
#include "common/logging.h"
#include "src/call_tag.h"

namespace coll {

// The channels a host node hands over to, for as long as the engine lives: a node the stream
// reaches only after the engine is gone (its drain gave up at destroy) finds none and does nothing.
struct DeviceEngine::HandOverGate {
  std::mutex mutex;
  transport::DeviceChannels* channels = nullptr;  // under mutex; null once the engine is destroyed
};

// What a host node hands over: a copy of the call's steps, which the shape points into.
struct DeviceEngine::HandOver {
  std::shared_ptr<HandOverGate> gate;
  std::vector<device::DeviceStep> steps;
  transport::CallShape shape;
  bool once = false;  // an eager call's: freed by its host node
};

namespace {

// What the channels' host side learns of a call whose steps are `steps` (the program's, or a
// host node's copy of them).
transport::CallShape callShape(const std::vector<device::DeviceStep>& steps, const DeviceProgram& program,
                               uint64_t tag) {
  return transport::CallShape{steps.data(),
                              static_cast<uint32_t>(steps.size()),
                              static_cast<uint32_t>(program.elemSize),
                              program.geometry,
                              tag,
                              &describeCallTag};
}

// Runs on CUDA's host-callback thread: no CUDA call, no throw. A host side that failed has
// already asked the kernels to stop (the status word), which is how the call ends.
void CUDART_CB handOverFromStream(void* data) {
  auto* handOver = static_cast<DeviceEngine::HandOver*>(data);
  {
    std::lock_guard<std::mutex> lock(handOver->gate->mutex);
    try {
      if (handOver->gate->channels != nullptr) handOver->gate->channels->beginCall(handOver->shape);
    } catch (const std::exception& e) {
      COLL_WARN(kColl, "a device call's hand-over from its stream: %s", e.what());
    }
  }
  if (handOver->once) delete handOver;
}

}  // namespace

DeviceEngine::DeviceEngine(transport::DeviceChannels& channels, int rank, int nranks, const Params& params,
                           int timeoutMs, const DeviceLayout* layout, transport::ExchangeRecords exchangeRecords)
    : channels_(channels),
      rank_(rank),
      launcher_(channels, timeoutMs),
      handOverGate_(std::make_shared<HandOverGate>()),
      exchangeRecords_(std::move(exchangeRecords)) {
  handOverGate_->channels = &channels;
  if (layout != nullptr) {
    context_.layout = *layout;
    context_.staged = layout->staged;
  }
  context_.rank = rank;
  context_.nranks = nranks;
  context_.mode = channels.kernelsConcurrent() ? DeviceMode::kConcurrent : DeviceMode::kSerialized;
  context_.forced = params.protocol;
  context_.overrides = params.algoOverride;
  context_.overridesWhereRunnable = params.algoOverrideWhereRunnable;
  context_.sharedAddressSpace = channels.sharedAddressSpace();
  context_.callBuffersMapped = channels.mapsCallBuffers();
  // No timing: the event only orders launches, and timing events cost more to record.
  COLL_CUDACHECK(cudaEventCreateWithFlags(&lastLaunch_, cudaEventDisableTiming));
}

DeviceEngine::~DeviceEngine() {
  {
    std::lock_guard<std::mutex> lock(handOverGate_->mutex);
    handOverGate_->channels = nullptr;
  }
  // Errors are ignored: teardown, possibly after the device failed.
  if (side_ != nullptr) cudaStreamDestroy(side_);
  if (lastLaunch_ != nullptr) cudaEventDestroy(lastLaunch_);
}

bool DeviceEngine::capturing(collStream_t stream) const {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  COLL_CUDACHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture));
  return capture == cudaStreamCaptureStatusActive;
}

void DeviceEngine::enqueue(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff,
                           void* recvbuff, collStream_t stream, uint64_t tag) {
  // The caller's thread may have another device current (a stream of ours can be used from
  // anywhere): launch with ours, and give the caller's back.
  CurrentDeviceScope scope(channels_.device());
  enqueueOn(program, type, op, sendbuff, recvbuff, stream, tag, capturing(stream));
}

void DeviceEngine::enqueueOn(const DeviceProgram& program, collDataType_t type, collRedOp_t op, const void* sendbuff,
                             void* recvbuff, collStream_t stream, uint64_t tag, bool capturing) {
  if (program.direct ? program.count == 0 : program.launches.empty()) return;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Staged peers' proxy learns of an eager call when it is enqueued; a captured one must reach it
  // at every replay, from the stream, and from then on every call does so, in stream order.
  if (capturing && context_.staged) handOverInStreamOrder_ = true;
  // Launches that ended hold no stream wait any more: keep the list abort releases short.
  if (!capturing && order_.anyLaunch() && cudaEventQuery(lastLaunch_) == cudaSuccess) launcher_.forgetPendingWaits();
  const LaunchOrder::Before before = order_.before(stream, capturing);
  if (before.wait)
    COLL_CUDACHECK(cudaStreamWaitEvent(s, lastLaunch_, before.external ? cudaEventWaitExternal : cudaEventWaitDefault));
  if (program.direct) {
    // Rank processes: every rank's buffers mapped here first, from descriptions all ranks exchange.
    const bool mapped = !context_.sharedAddressSpace;
    const char* sends[device::kMaxDevicePeers] = {};
    char* recvs[device::kMaxDevicePeers] = {};
    if (mapped) {
      if (capturing)
        throwError(collInvalidUsage,
                   "rank %d: the direct all-reduce of rank processes maps their buffers call by call, which a CUDA "
                   "graph cannot replay: capture it with another algorithm",
                   rank_);
      if (!exchangeRecords_) throwError(collInternalError, "rank %d: no way to exchange call buffers", rank_);
      channels_.mapCallBuffers(
          sendbuff, recvbuff, program.count * program.elemSize, exchangeRecords_,
          [this] { COLL_CUDACHECK(cudaEventSynchronize(lastLaunch_)); }, sends, recvs);
    }
    launcher_.enqueueDirect(rank_, context_.nranks, program.count, program.avgDivisor, type, op, sendbuff, recvbuff, s,
                            mapped ? sends : nullptr, mapped ? recvs : nullptr);
  } else {
    DeviceProgramView view;
    view.steps = program.steps.data();
    view.nsteps = program.steps.size();
    view.launches = program.launches.data();
    view.nlaunches = program.launches.size();
    view.protocol = program.protocol;
    view.geometry = program.geometry;
    view.avgDivisor = program.avgDivisor;
    // Staged channels plan the call's slices before its kernels can post the first one.
    if (context_.staged && handOverInStreamOrder_) {
      handOverOnStream(program, tag, s, capturing);
    } else {
      channels_.beginCall(callShape(program.steps, program, tag));
    }
    launcher_.enqueue(view, type, op, sendbuff, recvbuff, s);
  }
  COLL_CUDACHECK(
      cudaEventRecordWithFlags(lastLaunch_, s, before.external ? cudaEventRecordExternal : cudaEventRecordDefault));
  order_.recorded(stream, capturing);
}

void DeviceEngine::handOverOnStream(const DeviceProgram& program, uint64_t tag, cudaStream_t stream, bool captured) {
  auto handOver = std::make_unique<HandOver>();
  handOver->gate = handOverGate_;
  handOver->steps = program.steps;
  handOver->shape = callShape(handOver->steps, program, tag);
  handOver->once = !captured;
  COLL_CUDACHECK(cudaLaunchHostFunc(stream, handOverFromStream, handOver.get()));
  if (captured) {
    captured_.push_back(std::move(handOver));
  } else {
    handOver.release();  // the host node frees it
  }
}

void DeviceEngine::run(const CollCall& call, collStream_t stream) {
  if (movesNothing(call)) return;
  CurrentDeviceScope scope(channels_.device());
  // The plan depends on it (mapped call buffers are not for a graph), and so does the launch.
  context_.capturing = capturing(stream);
  enqueueOn(planDeviceCall(call, context_), call.datatype, call.op, call.sendbuff, call.recvbuff, stream,
            collectiveTagOf(call), context_.capturing);
}

void DeviceEngine::runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) {
  enqueue(planDevicePointToPoint(calls, context_), collUint8, collSum, nullptr, nullptr, stream);
}

collResult_t DeviceEngine::pollError(std::string* message) const { return channels_.pollError(rank_, message); }

void DeviceEngine::abort() {
  aborted_.store(true);
  channels_.requestAbort();
  try {
    releaseStreamWaits();
  } catch (const CollError& e) {
    // Abort must not fail: drain() tries again, and the device error is what the caller sees.
    COLL_WARN(kColl, "rank %d: releasing stream waits on abort: %s", rank_, e.what());
  }
}

void DeviceEngine::releaseStreamWaits() {
  CurrentDeviceScope scope(channels_.device());
  std::lock_guard<std::mutex> lock(sideMutex_);
  // Non-blocking: a side stream must not wait for the legacy stream, which a held stream may be.
  if (side_ == nullptr) COLL_CUDACHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
  launcher_.releasePendingWaits(side_);
}

void DeviceEngine::drain(Deadline deadline) {
  if (!order_.anyLaunch()) return;
  CurrentDeviceScope scope(channels_.device());
  for (;;) {
    const cudaError_t rc = cudaEventQuery(lastLaunch_);
    if (rc == cudaSuccess) {
      channels_.drain(deadline);
      return;
    }
    if (rc != cudaErrorNotReady) COLL_CUDACHECK(rc);
    if (Clock::now() >= deadline)
      throwError(collTimeout, "rank %d: the last device launch did not end before the deadline (%llu launches)", rank_,
                 order_.launches());
    // A release can lose a race with the stream it releases (stream_waits.h): repeat it.
    if (aborted_.load()) releaseStreamWaits();
    std::this_thread::sleep_for(std::chrono::milliseconds(aborted_.load() ? 10 : 1));
  }
}

std::unique_ptr<Engine> makeDeviceEngine(transport::DeviceChannels& channels, int rank, int nranks,
                                         const Params& params, int timeoutMs, const DeviceLayout* layout,
                                         transport::ExchangeRecords exchangeRecords) {
  return std::make_unique<DeviceEngine>(channels, rank, nranks, params, timeoutMs, layout, std::move(exchangeRecords));
}

}  // namespace coll
