// What the verbs tests share: one side of a reliable connection over a loaded verbs library (the
// emulator, mostly), child processes whose every wait is bounded, and small messages between a
// test and its child over pipes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/verbs/verbs_api.h"

namespace coll {
namespace verbs_test {

// The emulator built beside the tests (CMake passes its path).
std::shared_ptr<const transport::VerbsApi> loadEmulator();

// What a peer needs to write into this side: sent through a pipe, as the transport will send it
// through the bootstrap store.
struct ConnectionInfo {
  uint32_t qpn = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

// One device context, PD, CQ, RC QP and a registered buffer of `bytes`. Throws std::runtime_error
// naming the call that failed.
class VerbsEndpoint {
 public:
  VerbsEndpoint(std::shared_ptr<const transport::VerbsApi> api, size_t bytes);
  ~VerbsEndpoint();
  VerbsEndpoint(const VerbsEndpoint&) = delete;
  VerbsEndpoint& operator=(const VerbsEndpoint&) = delete;

  ConnectionInfo info() const;
  // RESET -> INIT -> RTR -> RTS towards `remoteQpn`; stops after `last` (IBV_QPS_INIT, ...).
  void connect(uint32_t remoteQpn, int last = IBV_QPS_RTS);
  void postRecv(uint64_t wrId);
  // Posts one signaled RDMA write of buffer()[0, bytes) to (addr, rkey), with `imm` when set.
  int postWrite(const ConnectionInfo& to, uint32_t bytes, const uint32_t* imm = nullptr, bool inlineData = false);
  // Polls the CQ until one completion arrives or `timeoutMs` passes (false then).
  bool pollOne(ibv_wc* wc, int timeoutMs);
  // Deregisters the buffer (ibv_dereg_mr): the key info() gave opens nothing any more.
  void deregister();

  std::vector<uint8_t>& buffer() { return buffer_; }
  ibv_qp* qp() { return qp_; }
  const transport::VerbsApi& api() const { return *api_; }

 private:
  std::shared_ptr<const transport::VerbsApi> api_;
  std::vector<uint8_t> buffer_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
};

// A pipe pair between a test and one child. Reads wait at most `timeoutMs` and throw past it.
class Channel {
 public:
  Channel();
  ~Channel();
  // In the child after fork: keep its ends (and the parent its own).
  void becomeChild();
  void becomeParent();
  void send(const void* data, size_t bytes);
  void receive(void* data, size_t bytes, int timeoutMs = 10000);

 private:
  int toChild_[2];
  int toParent_[2];
  int in_ = -1, out_ = -1;
};

// Runs `body` in a forked child, which exits with its return value (1 and a message on stderr
// when it throws).
pid_t forkChild(const std::function<int()>& body);
// The child's exit status, or -1 after `timeoutMs` (the child is then killed).
int waitChild(pid_t pid, int timeoutMs);

}  // namespace verbs_test
}  // namespace coll
