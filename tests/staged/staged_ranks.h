// Ranks of the staging tests with real staged domains (transport/staged): each rank describes
// itself, sets its domain up with the others through a store (in memory for threads, TCP for
// processes), hands its calls to the proxy as the device engine does, and runs the host stand-in
// for its kernels over the domain's pinned-memory stand-ins.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "tests/staged/staged_cases.h"
#include "transport/staged/staged_domain.h"

namespace coll {
namespace staging_test {

struct StagedRankOptions {
  // COLL_TRANSPORTS: staging everywhere, over sockets; COLL_STAGED_TEST_TRANSPORTS replaces it
  // (ctest runs the suite over the verbs emulator with "verbs,staged").
  std::string transports = defaultTransports();
  static std::string defaultTransports();
  int timeoutMs = 30000;                                  // the proxy's and the domain's
  uint64_t kernelTimeoutNs = 30ull * 1000 * 1000 * 1000;  // the stand-in kernel's waits
  size_t frameBytes = 80;                                 // the carriers' slots
  int fifoDepth = 2;
  size_t socketBufferBytes = 2 << 20;  // each socket's buffers (small: a stalled receiver stalls the sender soon)
  bool copyReceive = false;            // COLL_STAGED_RECV=copy: received slices copied into "device" slots
};

class StagedRank {
 public:
  // Collective over the n ranks of `store`: describes this rank, sets the domain up.
  StagedRank(bootstrap::Store& store, int rank, int nranks, const StagedRankOptions& options);
  ~StagedRank();
  transport::StagedDomain& domain() { return *domain_; }

  // Plans `c` for this rank and hands it to the proxy (the engine's beginCall); returns its index.
  size_t enqueue(const StagedCase& c);
  // Runs the stand-in kernel of call `index`; false when it stopped on an error (the status word).
  bool runKernel(size_t index, unsigned seed);
  // "" when call `index`'s output is right.
  std::string check(size_t index) const;
  // The domain's error, or "" (code in *code).
  std::string error(collResult_t* code) const;

 private:
  struct Call {
    StagedCase c;
    RankBuffers buffers;
    DeviceProgram program;
  };
  int rank_;
  int nranks_;
  std::vector<transport::PeerInfo> peers_;
  transport::TransportSettings settings_;
  StagedRankOptions options_;
  std::unique_ptr<transport::StagedDomain> domain_;
  std::vector<std::unique_ptr<Call>> calls_;
};

// Runs body(rank, r) on n ranks that are threads of this process, set up through an in-memory
// store; returns what failed (a body's non-empty answer, or what it threw).
std::vector<std::string> runStagedThreads(int n, const StagedRankOptions& options,
                                          const std::function<std::string(StagedRank& rank, int r)>& body);

}  // namespace staging_test
}  // namespace coll
