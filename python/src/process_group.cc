#include "process_group.h"

#include <Python.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>

#include "library_call.h"

namespace torch_collective {
namespace {

// Calls that write at most this many bytes are left to their caller for a moment (work_queue.h):
// for them the hand-over to the worker and back costs more than the call, and a caller that waits
// at once runs the call itself. Larger ones go to the worker at once, so that an asynchronous one
// (a DDP bucket) starts while the caller works on. 0: every call goes to the worker at once.
size_t callerRunLimitBytes() {
  static const size_t limit = [] {
    const char* value = std::getenv("TORCH_COLLECTIVE_SMALL_CALL_BYTES");
    if (value == nullptr || *value == '\0') return size_t{64} << 10;
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(value, &end, 10);
    TORCH_CHECK(end != nullptr && *end == '\0' && value[0] != '-',
                "collective backend: TORCH_COLLECTIVE_SMALL_CALL_BYTES=", value,
                ": expected a number of bytes (0 hands every call to the worker at once)");
    return static_cast<size_t>(bytes);
  }();
  return limit;
}

// Whether the library receives from any source on this communicator (any_source.h).
bool libraryReceivesFromAnySource(collComm_t comm) {
  int available = 0;
  checkResult(collCommRecvAnyAvailable(comm, &available));
  return available != 0;
}

// What a call writes, for the small-call limit. A sparse tensor's all-reduce folds on the CPU
// (composed_reductions.cc): never small.
size_t bytesOf(const std::vector<at::Tensor>& tensors) {
  size_t bytes = 0;
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined()) continue;
    if (tensor.is_sparse()) return SIZE_MAX;
    bytes += tensor.nbytes();
  }
  return bytes;
}

}  // namespace

ProcessGroupCollective::ProcessGroupCollective(int rank, int size, const std::string& uniqueId, int timeoutMs,
                                               c10::intrusive_ptr<c10d::Store> store)
    : BackendBase(rank, size),
      comm_(rank, size, uniqueId, timeoutMs),
      store_(std::move(store)),
      anySource_(std::make_shared<AnySourceMatcher>(store_, getRank(), getSize(),
                                                    libraryReceivesFromAnySource(comm_.handle()))),
      queue_(WorkQueue::create()),
      flightRecording_(std::make_shared<FlightRecording>(comm_.timeoutMs())) {}

ProcessGroupCollective::ProcessGroupCollective(collComm_t comm, int timeoutMs, c10::intrusive_ptr<c10d::Store> store)
    : BackendBase(Communicator::rankOf(comm), Communicator::sizeOf(comm)),
      comm_(comm, timeoutMs),
      store_(std::move(store)),
      anySource_(std::make_shared<AnySourceMatcher>(store_, getRank(), getSize(),
                                                    libraryReceivesFromAnySource(comm_.handle()))),
      queue_(WorkQueue::create()),
      flightRecording_(std::make_shared<FlightRecording>(comm_.timeoutMs())) {}

ProcessGroupCollective::~ProcessGroupCollective() {
  // The communicator must outlive every queued call, and the calls must not wait for a Work that
  // a caller may still hold: run them all now. When Python destroys the group it holds the GIL,
  // and the worker may need it to finish: dropping the last reference to a tensor that has a
  // Python object takes the GIL. So let go of it while we wait, or both wait forever.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* released = PyEval_SaveThread();
    queue_->shutdown();
    PyEval_RestoreThread(released);
  } else {
    queue_->shutdown();
  }
}

void ProcessGroupCollective::checkRoot(int64_t root, const char* op) const {
  TORCH_CHECK(root >= 0 && root < getSize(), "collective backend: ", op, ": root ", root,
              " is out of range: expected 0 <= root < ", getSize());
}

void ProcessGroupCollective::checkPeer(int peer, const char* op) const {
  TORCH_CHECK(peer >= 0 && peer < getSize(), "collective backend: ", op, ": peer ", peer,
              " is out of range: expected 0 <= peer < ", getSize());
  TORCH_CHECK(peer != getRank(), "collective backend: ", op, ": peer ", peer, " is this rank itself");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                               const std::vector<at::Tensor>& inputs,
                                                               std::shared_ptr<DeviceCall> device,
                                                               std::function<void()> issue,
                                                               std::function<void()> finish, CallKind kind,
                                                               CallerWaits waits, int peer) {
  const bool small = isSmallHostCall(kind, device, bytesOf(outputs));
  c10::intrusive_ptr<CollectiveWork> work = makeWork(type, std::move(outputs), inputs, device, peer);
  return queueCall(work, device, std::move(issue), std::move(finish), kind, waits, small);
}

c10::intrusive_ptr<CollectiveWork> ProcessGroupCollective::makeWork(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                                    const std::vector<at::Tensor>& inputs,
                                                                    const std::shared_ptr<DeviceCall>& device,
                                                                    int peer) {
  // UNKNOWN: split and the ZeRO library calls, which are not torch operations.
  if (type != c10d::OpType::UNKNOWN && !isPointToPoint(type)) ++sequenceNumber_;
  // Torch's hook sees torch's operations only, and so does the backend's own recording.
  FlightEntry entry;
  if (type != c10d::OpType::UNKNOWN && flightRecording_->attached()) {
    entry = flightRecording_->record(type, getRank(), peer, sequenceNumber_.load(), inputs, outputs);
  }
  auto work = c10::make_intrusive<CollectiveWork>(getRank(), type, std::move(outputs), inputs, queue_, device);
  if (entry.id) work->setFlightEntry(flightRecording_, entry);
  work->setCompletionHooks(completionHooks_);
  return work;
}

bool ProcessGroupCollective::isSmallHostCall(CallKind kind, const std::shared_ptr<DeviceCall>& device, size_t bytes) {
  return kind == CallKind::kCollective && !device && bytes <= callerRunLimitBytes();
}

bool ProcessGroupCollective::callerMayRunNow() {
  std::lock_guard<std::mutex> lock(coalescingMutex_);
  // A group with calls on CUDA tensors hands all of them to the worker at once: its barrier
  // waits on the device.
  return !coalescing_ && !lastDeviceCall_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::queueCall(const c10::intrusive_ptr<CollectiveWork>& work,
                                                                 const std::shared_ptr<DeviceCall>& device,
                                                                 std::function<void()> issue,
                                                                 std::function<void()> finish, CallKind kind,
                                                                 CallerWaits waits, bool small) {
  QueuedCall call;
  call.kind = kind;
  call.issue = std::move(issue);
  call.finish = std::move(finish);
  call.work = work;
  {
    std::lock_guard<std::mutex> lock(coalescingMutex_);
    if (device) lastDeviceCall_ = device;
    call.forCaller = small && !lastDeviceCall_;
    if (coalescing_) {
      coalesced_.push_back(std::move(call));
      lastCoalescedWork_ = work;
      return work;
    }
  }
  if (call.forCaller && waits == CallerWaits::kAtOnce && queue_->runNow(call)) return work;
  std::vector<QueuedCall> calls;
  calls.push_back(std::move(call));
  queue_->post(std::move(calls), /*together=*/false);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::barrier(const c10d::BarrierOptions& opts) {
  collComm_t comm = comm_.handle();
  // A host barrier; like NCCL's, it also waits for this group's earlier calls on CUDA tensors to
  // finish on the device, so that after it every rank's earlier calls are done.
  std::shared_ptr<DeviceCall> lastDeviceCall;
  {
    std::lock_guard<std::mutex> lock(coalescingMutex_);
    lastDeviceCall = lastDeviceCall_;
  }
  int timeoutMs = comm_.timeoutMs();
  return enqueue(
      c10d::OpType::BARRIER, {}, {}, nullptr,
      [comm, lastDeviceCall, timeoutMs] {
        if (lastDeviceCall) lastDeviceCall->waitOnHost(timeoutMs);
        checkResult(collBarrier(comm, nullptr));
      },
      nullptr, CallKind::kCollective, waitsOf(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::enqueueLibraryCall(
    const char* op, std::vector<at::Tensor> tensors, std::function<collResult_t(collComm_t, collStream_t)> call) {
  collComm_t comm = comm_.handle();
  std::shared_ptr<DeviceCall> device = deviceCallOf(op, tensors);
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  return enqueue(c10d::OpType::UNKNOWN, tensors, tensors, std::move(device),
                 [comm, call, stream] { checkResult(call(comm, stream)); });
}

bool ProcessGroupCollective::attachFlightRecorder(const std::string& groupName, const std::string& groupDescription,
                                                  const std::vector<uint64_t>& globalRanks, int globalRank) {
  return flightRecording_->attach(groupName, groupDescription, globalRanks, globalRank);
}

void ProcessGroupCollective::startCoalescing() {
  std::lock_guard<std::mutex> lock(coalescingMutex_);
  TORCH_CHECK(!coalescing_, "collective backend: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  lastCoalescedWork_.reset();
}

#if TORCH_COLLECTIVE_COALESCING_RETURNS_WORK
c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::endCoalescing() {
#else
void ProcessGroupCollective::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work> >& /*reqs*/) {
#endif
  std::vector<QueuedCall> calls;
  c10::intrusive_ptr<c10d::Work> last;
  {
    std::lock_guard<std::mutex> lock(coalescingMutex_);
    TORCH_CHECK(coalescing_, "collective backend: endCoalescing called without startCoalescing");
    coalescing_ = false;
    calls.swap(coalesced_);
    last = std::move(lastCoalescedWork_);
  }
  if (!calls.empty()) queue_->post(std::move(calls), /*together=*/true);
#if TORCH_COLLECTIVE_COALESCING_RETURNS_WORK
  // The calls of a batch complete together: the last one's Work stands for all of them.
  return last;
#endif
}

}  // namespace torch_collective
