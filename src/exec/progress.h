// How a rank waits when nothing can move: spin briefly (peers usually answer within
// microseconds), then announce sleep on the rank's doorbell and futex-wait, so that more ranks
// than cores still run well. Every sleep first checks the call's deadline, the communicator's
// abort flag and the health of the peers: a wait can end in an error, never in a hang.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <vector>

#include "common/clock.h"
#include "src/algorithms/native.h"
#include "transport/doorbell.h"
#include "transport/transport.h"

namespace coll {

class ProgressWaiter final : public PeerWaiter {
 public:
  // healthCheck throws when a peer failed or the call was aborted; `what` names the call for the
  // timeout message, and describeStall (called only then) says which peers are to blame.
  // drivers: the transports this waiter drives on idle rounds and hands back to their own threads
  // while asleep (sockets); the vector must outlive the waiter.
  // The deadline is timeoutMs after the first idle round that reads the clock (a call that never
  // waits reads it not at all: at a few hundred nanoseconds a call, a clock read shows).
  // Inline, as are the drivers' notices when there are none (shared memory only): every call makes
  // a waiter, and an 8-byte call is a few hundred instructions in all.
  ProgressWaiter(transport::Doorbell* bell, int64_t spinNs, const std::function<void()>& healthCheck,
                 const std::function<std::string()>& describeStall, const char* what, int timeoutMs,
                 const std::vector<transport::ProgressDriver*>& drivers)
      : bell_(bell),
        drivers_(drivers),
        spinNs_(spinNs),
        healthCheck_(healthCheck),
        describeStall_(describeStall),
        what_(what),
        timeoutMs_(timeoutMs),
        spinning_(spinNs > 0) {
    tellDrivers(transport::ProgressDriver::Executor::kDriving);
  }
  ~ProgressWaiter() override {
    if (armed_) disarm();
    tellDrivers(transport::ProgressDriver::Executor::kReturned);
  }

  // Call after a round of progress that moved nothing.
  void idle() override;
  // Call after a round that moved something.
  void progressed() override;

 private:
  void disarm();
  void sleepUntilRung();
  [[noreturn]] void throwTimeout() const;
  void tellDrivers(transport::ProgressDriver::Executor state) {
    if (!drivers_.empty()) tellDriversNow(state);
  }
  void tellDriversNow(transport::ProgressDriver::Executor state);
  transport::Doorbell* bell_;
  const std::vector<transport::ProgressDriver*>& drivers_;
  int64_t spinNs_;
  int64_t deadlineNs_ = 0;  // on monotonicNs(); 0 until the first clock read
  const std::function<void()>& healthCheck_;
  const std::function<std::string()>& describeStall_;
  const char* what_;
  int timeoutMs_;
  int64_t idleStartNs_ = 0;
  int64_t lastHealthCheckNs_ = 0;
  bool spinning_ = true;
  uint32_t idleRounds_ = 0;
  bool armed_ = false;
  uint32_t snapshot_ = 0;
};

}  // namespace coll
