// The staging proxy: one thread per staged domain that moves device calls' slices between the
// kernels' slots in pinned host memory and the host transports (staged_connection.h), in the
// order the calls were launched. NCCL's proxy thread is the model; nothing here needs CUDA, so the
// host tests run it against a stand-in for the kernels (tests/staged).
//
// Ordering: the device engine hands each call over (enqueue) just before it launches the call's
// kernels on the user's stream, and launches of one communicator never overlap (launch_order.h),
// so the proxy's order is the stream's. A call's plans are queued per connection; a connection
// starts the next call's plan when the previous one is done, which is also when its slots are
// all free again (sequence numbers restart in every call, device_step.h).
//
// Waiting: the proxy spins briefly after it moved something, then sleeps on its doorbell (which
// the carriers ring when a frame or a credit comes) for at most 50 us at a time, since the
// kernels' flags ring nothing; while a receiver's copies into device memory run it does not sleep
// (they ring nothing either, and end within microseconds). While it drives, it pumps the carriers
// itself; while it sleeps or has nothing to do, their own progress threads take over
// (transport.h, ProgressDriver).
//
// Failures end every call with an error, never a hang:
//   - a carrier's health check fails (a peer died, broke its connection or announced a failure):
//     the proxy fails with that error;
//   - a sender that holds slices the kernel posted sees no progress on its host connection for
//     the timeout (the receiver stopped taking frames): collTimeout naming the peer. Waiting for
//     the kernel, or for frames the kernel waits for, is bounded by the kernel's own waits, which
//     time out on no progress (device_sync.cuh) and report in the status word;
//   - the kernels report an error (a wait timed out, an abort): the proxy stops with it.
// A proxy that fails asks the kernels to stop (the status word's abort), drops what it holds and
// keeps the error for the domain's health check and collCommGetAsyncError.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"
#include "common/clock.h"
#include "kernels/cuda/channel_layout.h"
#include "transport/domain.h"
#include "transport/staged/staged_connection.h"

namespace coll {
namespace transport {

struct StagedLink {
  int peer = -1;
  Domain* carrier = nullptr;   // the host domain that reaches the peer
  char* sendRegion = nullptr;  // host views of the pinned regions (staged_domain.h)
  char* recvRegion = nullptr;
  DeviceSlots recvDevice;  // copy-then-reduce: where received slots are copied (else none)
};

struct StagingProxyArgs {
  int rank = 0;
  std::vector<StagedLink> links;  // one per staged peer (not this rank itself)
  std::vector<Domain*> carriers;  // every host domain the links use
  StagingLayout layout{};
  size_t frameBytes = 0;                   // the carriers' slot size
  Doorbell* bell = nullptr;                // the carriers ring it
  device::DeviceStatus* status = nullptr;  // host view of the kernels' status word
  int timeoutMs = 300000;
  int64_t spinNs = 100000;  // how long to spin after a move before sleeping
};

class StagingProxy {
 public:
  explicit StagingProxy(StagingProxyArgs args);
  ~StagingProxy();  // stops and joins the thread; what is queued is dropped
  StagingProxy(const StagingProxy&) = delete;
  StagingProxy& operator=(const StagingProxy&) = delete;

  // A call about to be launched: plans every staged connection it uses. From the launching
  // thread, in launch order. Throws the proxy's error if it failed.
  void enqueue(const CallShape& call);
  // Records the first failure, asks the kernels to stop and drops what is queued.
  void fail(collResult_t code, const std::string& message);
  // collSuccess, or the failure (and its message).
  collResult_t error(std::string* message) const;
  // Waits until every queued slice changed hands; throws the failure, or collTimeout at the
  // deadline.
  void drain(Deadline deadline);
  // For logs and tests: the calls handed over so far.
  uint64_t calls() const { return calls_.load(); }

 private:
  struct Link {
    StagedLink where;
    StagedSender sender;
    StagedReceiver receiver;
    SendConnection* sendConnection = nullptr;  // asked for at first use (domain.h's lazy contract)
    RecvConnection* recvConnection = nullptr;
    int64_t blockedSinceNs = 0;  // the sender holds posted slices and its host FIFO is full since
  };
  struct Queued {
    size_t link;
    StagedDirection direction;
    ConnectionPlan plan;
  };
  struct Round {
    bool moved = false;
    bool busy = false;     // something is left to move
    bool copying = false;  // a receiver waits for its copies into device memory alone
  };

  void run();
  Round progressLinks();
  bool takeQueued();
  void checkHealth();
  void tellCarriers(ProgressDriver::Executor state);
  void idleWait(int64_t sinceMoveNs);
  void checkSendTimeouts(int64_t nowNs) const;

  StagingProxyArgs args_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<int> linkOfPeer_;  // rank -> index in links_, or -1
  std::vector<ProgressDriver*> drivers_;
  ProgressDriver::Executor driverState_ = ProgressDriver::Executor::kReturned;
  mutable std::mutex mutex_;  // queue_, failure, the wake-ups
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::vector<Queued> queue_;
  bool idle_ = true;  // under mutex_: nothing queued, nothing left to move
  collResult_t failure_ = collSuccess;
  std::string failureMessage_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> calls_{0};
  int64_t lastHealthNs_ = 0;
  std::thread thread_;
};

}  // namespace transport
}  // namespace coll
