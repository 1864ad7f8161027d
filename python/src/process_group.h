// libcollective as a torch.distributed backend: every operation DDP and the usual examples use,
// on CPU tensors and (in a build with CUDA support) CUDA tensors. Each call checks its arguments
// and stages its buffers on the calling thread, then queues the library calls on the
// communicator's worker thread (work_queue.h) and returns a Work at once; errors from the library
// reach Python as RuntimeError with the library's message. A call on CUDA tensors passes the
// caller's current stream to the library (device_call.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "any_source.h"
#include "communicator.h"
#include "device_call.h"
#include "flight_recording.h"
#include "library_call.h"
#include "tensor_staging.h"
#include "torch_compat.h"
#include "work_queue.h"

namespace torch_collective {

class ProcessGroupCollective : public BackendBase {
 public:
  // Joins the communicator that `uniqueId` names (see Communicator). `store` is the group's
  // torch store: the monitored barrier reports arrivals through it, so that a rank that never
  // comes can be named even when the library's own calls would only time out.
  ProcessGroupCollective(int rank, int size, const std::string& uniqueId, int timeoutMs,
                         c10::intrusive_ptr<c10d::Store> store);
  // Takes over `comm`, a communicator made from this group's (collCommSplit).
  ProcessGroupCollective(collComm_t comm, int timeoutMs, c10::intrusive_ptr<c10d::Store> store);
  // Lets every queued call finish (or fail) first.
  ~ProcessGroupCollective() override;

  const std::string getBackendName() const override { return "collective"; }

  // The number of collectives issued on this group so far, the same on every rank: every rank
  // starts at 0, as on torch 2.x, so there is nothing to agree on first and setting it is a no-op.
  // Sends and receives are not counted (as NCCL's on 2.x, Gloo's on 1.13): they involve only some
  // ranks, and torch 2.x's DETAIL checks compare the number across all ranks at each collective,
  // so counting them (as Gloo 2.x does) fails the next collective of a group of 3 or more ranks.
  uint64_t getSequenceNumberForGroup() override { return sequenceNumber_.load(); }
#if TORCH_VERSION_MAJOR < 2
  void setSequenceNumberForGroup() override {}
#endif

  // collectives.cc
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                           std::vector<at::Tensor>& inputTensors,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                        std::vector<at::Tensor>& inputTensors,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputTensors,
                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // coalesced.cc: several tensors packed into one library call.
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
#if TORCH_COLLECTIVE_HAS_TENSOR_COALESCED
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
#endif

  // group_control.cc
  // Rank 0 waits up to the timeout for every rank to arrive and names those that did not (all of
  // them with waitAllRanks, else the first); the others learn the outcome from rank 0.
  void monitoredBarrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions(), bool waitAllRanks = false) override;
#if TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT
  bool supportsSplitting() const override { return true; }
  // What split_group copies for the new group: the name and this group's timeout.
  c10::intrusive_ptr<Options> getBackendOptions() override;
  // Every rank of this group calls it; those in `ranks` (ranks of this group) get the new group.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  // Fails the call in progress and every queued one (collCommAbort), at once.
  void abort() override;
  // Torch's Flight Recorder hook retires its entries through these (completion_hooks.h).
  bool supportsCompletionHooks() const override { return true; }
  void registerCompletionHook(int64_t hookId, c10d::CompletionHook hook) override {
    completionHooks_->add(hookId, std::move(hook));
  }
  void unregisterCompletionHook(int64_t hookId) override { completionHooks_->remove(hookId); }
  // fault_tolerance.cc: torch_collective.shrink_group hands torch this backend's survivors.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags = 0,
                                           const c10::intrusive_ptr<Options>& optsOverride = nullptr) override;
  // Lets every queued call finish, then releases the communicator.
  void shutdown() override;
#endif

  // point_to_point.cc
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  // Runs alone (not batched with held calls, which start first), since it must learn its source
  // from the store before the library can receive (any_source.h); the Work's sourceRank() says it.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors, std::vector<at::Tensor>& inputTensors,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;

  // fault_tolerance.cc. collCommRevoke: every pending and later call, on every rank, fails.
  void revoke();
  // collCommShrink behind the queued calls (revoking first with `abortFirst`): keeps the survivors'
  // backend and returns the ranks they agreed to leave out, ascending.
  std::vector<int> prepareShrink(const std::vector<int64_t>& exclude, bool abortFirst);
  // The backend prepareShrink made, if `exclude` is the list the survivors agreed on (else throws,
  // naming it, and keeps the backend for a call with the right list).
  c10::intrusive_ptr<ProcessGroupCollective> takeShrunk(const std::vector<int64_t>& exclude);
  collComm_t handle() const { return comm_.handle(); }
  // Records this group's calls in torch's Flight Recorder from now on, in place of torch's hook
  // (flight_recording.h); false where the recorder is off or this torch line has none.
  bool attachFlightRecorder(const std::string& groupName, const std::string& groupDescription,
                            const std::vector<uint64_t>& globalRanks, int globalRank);

  // Queues `call` (library calls on this group's communicator, e.g. the collZero* functions of
  // zero_bindings.cc) behind the group's other calls on its worker thread. `tensors` are the
  // buffers it uses: the Work keeps them alive until the call is done. On CUDA tensors (all on
  // one device) the call gets the caller's current stream of that device, as a collective does;
  // on CPU tensors a NULL stream. `op` names the call in errors.
  c10::intrusive_ptr<c10d::Work> enqueueLibraryCall(const char* op, std::vector<at::Tensor> tensors,
                                                    std::function<collResult_t(collComm_t, collStream_t)> call);

  // batch_isend_irecv: the calls in between are posted together, as one group.
  void startCoalescing() override;
#if TORCH_COLLECTIVE_COALESCING_RETURNS_WORK
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
#else
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;
#endif

 private:
  // Queues `issue` (the library calls) and `finish` (copies into the caller's tensors after
  // success) on the worker thread; returns the call's Work, which holds `outputs` and records the
  // shapes of `inputs` for the profiler. `device` (deviceCallFor) is null for host tensors; for
  // CUDA tensors both run with its stream current.
  // `waits` (callerWaitsAtOnce) lets a small host call run at once on the calling thread
  // (WorkQueue::runNow) and return its Work complete.
  enum class CallerWaits { kLater, kAtOnce };
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         const std::vector<at::Tensor>& inputs, std::shared_ptr<DeviceCall> device,
                                         std::function<void()> issue, std::function<void()> finish = nullptr,
                                         CallKind kind = CallKind::kCollective,
                                         CallerWaits waits = CallerWaits::kLater, int peer = -1);
  template <typename Options>
  static CallerWaits waitsOf(const Options& opts) {
    return callerWaitsAtOnce(opts) ? CallerWaits::kAtOnce : CallerWaits::kLater;
  }
  // enqueue's two halves. The first counts the call, records it (torch's Flight Recorder) and
  // makes its Work; the second runs or queues it.
  c10::intrusive_ptr<CollectiveWork> makeWork(c10d::OpType type, std::vector<at::Tensor> outputs,
                                              const std::vector<at::Tensor>& inputs,
                                              const std::shared_ptr<DeviceCall>& device, int peer);
  c10::intrusive_ptr<c10d::Work> queueCall(const c10::intrusive_ptr<CollectiveWork>& work,
                                           const std::shared_ptr<DeviceCall>& device, std::function<void()> issue,
                                           std::function<void()> finish, CallKind kind, CallerWaits waits, bool small);
  // Whether a collective writing `bytes` is small enough to leave to its caller: on host tensors,
  // at most TORCH_COLLECTIVE_SMALL_CALL_BYTES.
  static bool isSmallHostCall(CallKind kind, const std::shared_ptr<DeviceCall>& device, size_t bytes);
  // Whether no open coalescing block or earlier call on CUDA tensors keeps a small call from its
  // caller.
  bool callerMayRunNow();
  // For the calls on one tensor, used in place: stages it, queues `call(buffer, count, stream)`
  // (collResult_t) and, when the call writes the tensor, copies the buffer back into it
  // afterwards. A small host collective that its caller waits for at once runs here, without a
  // closure on the heap.
  enum class Writes { kNo, kYes };
  template <typename TensorCall>
  c10::intrusive_ptr<c10d::Work> enqueueOnTensor(c10d::OpType type, const char* op, const at::Tensor& tensor,
                                                 TensorCall call, Writes writes = Writes::kYes,
                                                 CallKind kind = CallKind::kCollective,
                                                 CallerWaits waits = CallerWaits::kLater, int peer = -1);
  // Sends `sends[p]` to and receives `recvs[p]` from every rank p in one group; this rank's own
  // pair is copied. Both all_to_all forms.
  c10::intrusive_ptr<c10d::Work> exchangeWithEveryRank(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                       const std::vector<at::Tensor>& inputs,
                                                       std::shared_ptr<DeviceCall> device, std::vector<Segment> sends,
                                                       std::vector<Segment> recvs, collDataType_t datatype,
                                                       size_t elementSize, std::function<void()> finish);
  // composed_reductions.cc: all-reduce with BAND, BOR, BXOR, which the library does not reduce
  // with, as an all-gather and a fold on each rank.
  static bool isBitwiseOp(const c10d::ReduceOp& reduceOp);
  c10::intrusive_ptr<c10d::Work> bitwiseAllreduce(const at::Tensor& tensor, const c10d::ReduceOp& reduceOp);
  // The sum of sparse COO tensors: every rank's indices and values gathered, then coalesced.
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(const at::Tensor& tensor, const c10d::ReduceOp& reduceOp);
  void checkRoot(int64_t root, const char* op) const;
  void checkPeer(int peer, const char* op) const;
  // deviceCallFor on this group's streams (device_call.h).
  std::shared_ptr<DeviceCall> deviceCallOf(const char* op, const std::vector<at::Tensor>& tensors) {
    return deviceCallFor(op, tensors, callStreams_.get());
  }
  std::shared_ptr<DeviceCall> deviceCallOf(const char* op, const at::Tensor& tensor) {
    return deviceCallFor(op, tensor, callStreams_.get());
  }

  Communicator comm_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::shared_ptr<AnySourceMatcher> anySource_;  // used by queued calls, which may outlive this
  std::atomic<uint64_t> sequenceNumber_{0};  // counted where calls are issued: see enqueue
  uint64_t monitoredBarriers_ = 0;  // numbers each monitored barrier's keys in the store
  std::shared_ptr<WorkQueue> queue_;  // Works keep a weak reference, to start held calls
  std::mutex coalescingMutex_;
  bool coalescing_ = false;
  std::vector<QueuedCall> coalesced_;
  c10::intrusive_ptr<c10d::Work> lastCoalescedWork_;
  // The last call queued on CUDA tensors (guarded by coalescingMutex_): barrier waits for it.
  std::shared_ptr<DeviceCall> lastDeviceCall_;
  std::shared_ptr<CallStreams> callStreams_ = makeCallStreams();  // null: the callers' current streams
  std::shared_ptr<CompletionHooks> completionHooks_ = std::make_shared<CompletionHooks>();
  std::shared_ptr<FlightRecording> flightRecording_;
  // A shrink's new backend until it is handed over (fault_tolerance.cc).
  std::mutex shrinkMutex_;
  uint64_t shrinks_ = 0;
  c10::intrusive_ptr<ProcessGroupCollective> shrunk_;
  std::vector<int> shrunkWithout_;
};

template <typename TensorCall>
c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::enqueueOnTensor(c10d::OpType type, const char* op,
                                                                       const at::Tensor& tensor, TensorCall call,
                                                                       Writes writes, CallKind kind, CallerWaits waits,
                                                                       int peer) {
  std::shared_ptr<DeviceCall> device = deviceCallOf(op, tensor);
  const IssueOnCallStream issuing(device);
  std::vector<at::Tensor> tensors{tensor};
  c10::intrusive_ptr<CollectiveWork> work = makeWork(type, tensors, tensors, device, peer);
  StagedTensor data(tensor);
  const bool small = isSmallHostCall(kind, device, tensor.nbytes());
  if (small && waits == CallerWaits::kAtOnce && callerMayRunNow()) {
    auto body = [&] {
      checkResult(call(data.data(), data.count(), nullptr));
      if (writes == Writes::kYes) data.copyBack();
    };
    if (queue_->runNow(*work, CallBody(body))) return work;
  }
  std::function<void()> finish;
  if (writes == Writes::kYes) finish = [data] { data.copyBack(); };
  collStream_t stream = streamOf(device);
  return queueCall(
      work, device, [data, call, stream] { checkResult(call(data.data(), data.count(), stream)); }, std::move(finish),
      kind, waits, small);
}

}  // namespace torch_collective
