#include "tests/staged/staged_ranks.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "bootstrap/bootstrap_ops.h"
#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "src/call_tag.h"
#include "tests/staged/host_kernel.h"
#include "transport/transport_table.h"
#include "transport/verbs/verbs_domain.h"

namespace coll {
namespace staging_test {
namespace {

constexpr auto kSetupTimeout = std::chrono::seconds(60);

bootstrap::Bytes bytesOf(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  return bootstrap::Bytes(p, p + size);
}

}  // namespace

std::string StagedRankOptions::defaultTransports() {
  const char* set = getenv("COLL_STAGED_TEST_TRANSPORTS");
  return set != nullptr && *set != '\0' ? set : "^shm,p2p";
}

StagedRank::StagedRank(bootstrap::Store& store, int rank, int nranks, const StagedRankOptions& options)
    : rank_(rank), nranks_(nranks), options_(options) {
  const Deadline deadline = deadlineAfter(kSetupTimeout);
  transport::PeerInfo self = transport::describeLocalRank(rank, "");
  // As init does: a rank offers verbs only where they are asked for and a device answers.
  self.verbsDevice = transport::verbsRequested(options.transports) && transport::verbsUsableHere() ? 1 : 0;
  for (const bootstrap::Bytes& b :
       bootstrap::allGather(store, "staged/peers", rank, nranks, bytesOf(&self, sizeof self), deadline)) {
    transport::PeerInfo info;
    if (b.size() != sizeof info) throwError(collInternalError, "a peer description of %zu bytes", b.size());
    memcpy(&info, b.data(), sizeof info);
    peers_.push_back(info);
  }
  settings_.slotBytes = options.frameBytes;
  settings_.netFifoDepth = options.fifoDepth;
  settings_.shmFifoDepth = options.fifoDepth;
  settings_.socketsPerPeer = 1;
  settings_.socketBufferBytes = options.socketBufferBytes;
  settings_.timeoutMs = options.timeoutMs;
  settings_.transports = options.transports;
  settings_.stagedCopyReceive = options.copyReceive;
  settings_.jobSecret.fill(0x5a);
  transport::DomainArgs args;
  args.rank = rank;
  args.nranks = nranks;
  args.peers = &peers_;
  for (int r = 0; r < nranks; ++r) args.members.push_back(r);
  args.settings = &settings_;
  domain_ = std::make_unique<transport::StagedDomain>(args, transport::makeHostStagingMemory(),
                                                      smallGeometry(device::Protocol::kSimple));
  for (int round = 0; round < domain_->setupRounds(); ++round) {
    const std::string card = domain_->card(round);
    std::vector<std::string> cards;
    for (const bootstrap::Bytes& b : bootstrap::allGather(store, "staged/setup/" + std::to_string(round), rank, nranks,
                                                          bytesOf(card.data(), card.size()), deadline))
      cards.emplace_back(b.begin(), b.end());
    domain_->connect(round, cards, deadline);
  }
  bootstrap::barrier(store, "staged/connected", rank, nranks, deadline);
  domain_->setupDone();
}

StagedRank::~StagedRank() = default;

size_t StagedRank::enqueue(const StagedCase& c) {
  auto call = std::make_unique<Call>();
  call->c = c;
  call->buffers = buffersFor(c, rank_);
  const CollCall collCall = callFor(c, call->buffers);
  call->program = programFor(c, collCall, rank_, nullptr);
  const DeviceProgram& p = call->program;
  // As the device engine does: the call's tag on every frame (src/call_tag.h).
  domain_->beginCall(transport::CallShape{p.steps.data(), static_cast<uint32_t>(p.steps.size()),
                                          static_cast<uint32_t>(p.elemSize), p.geometry, collectiveTagOf(collCall),
                                          &describeCallTag});
  calls_.push_back(std::move(call));
  return calls_.size() - 1;
}

bool StagedRank::runKernel(size_t index, unsigned seed) {
  Call& call = *calls_[index];
  HostKernelArgs args;
  args.program = &call.program;
  args.type = call.c.datatype;
  args.op = call.c.op;
  args.sendBuffer = call.buffers.send.data();
  args.recvBuffer = call.buffers.recv.data();
  args.table = &domain_->hostTable();
  args.status = domain_->deviceStatus();  // host memory stands for the device's: one view
  args.timeoutNs = options_.kernelTimeoutNs;
  args.rank = rank_;
  HostKernel kernel(args);
  return kernel.runToEnd(seed);
}

std::string StagedRank::check(size_t index) const {
  return checkOutput(calls_[index]->c, calls_[index]->buffers, rank_);
}

std::string StagedRank::error(collResult_t* code) const {
  std::string message;
  *code = domain_->pollError(rank_, &message);
  return *code == collSuccess ? "" : message;
}

std::vector<std::string> runStagedThreads(int n, const StagedRankOptions& options,
                                          const std::function<std::string(StagedRank& rank, int r)>& body) {
  bootstrap::MemoryStore store;
  std::vector<std::string> failures(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        StagedRank me(store, r, n, options);
        failures[r] = body(me, r);
      } catch (const std::exception& e) {
        failures[r] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  std::vector<std::string> out;
  for (const std::string& f : failures)
    if (!f.empty()) out.push_back(f);
  return out;
}

}  // namespace staging_test
}  // namespace coll
