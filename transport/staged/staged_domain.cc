#include "transport/staged/staged_domain.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "common/logging.h"
#include "transport/staged/staged_carriers.h"

namespace coll {
namespace transport {

StagedDomain::StagedDomain(const DomainArgs& args, std::unique_ptr<StagingMemory> memory,
                           device::ChannelGeometry geometry)
    : rank_(args.rank),
      nranks_(args.nranks),
      device_(args.settings->device),
      peers_(*args.peers),
      settings_(*args.settings),
      members_(args.members),
      setupWatch_(args.setupWatch),
      memory_(std::move(memory)),
      layout_{geometry},
      frameBytes_(args.settings->slotBytes) {
  carrierOf_.assign(nranks_, nullptr);
  for (const StagedCarrier& c : stagedCarriers(peers_, rank_, settings_.transports)) {
    DomainArgs carrierArgs = args;
    carrierArgs.members = c.members;
    carriers_.push_back(c.entry->create(carrierArgs));
    for (int peer : c.members) carrierOf_[peer] = carriers_.back().get();
  }
  for (int peer : members_)
    if (peer != rank_ && carrierOf_[peer] == nullptr)
      throwError(collInternalError, "staged: no host transport carries rank %d's device memory to rank %d", rank_,
                 peer);
  try {
    allocate();
  } catch (...) {
    release();
    throw;
  }
}

StagedDomain::~StagedDomain() { release(); }

void StagedDomain::allocate() {
  const size_t bytes = layout_.regionBytes();
  regions_.resize(nranks_);
  table_.assign(nranks_, device::PeerChannels{});
  for (int peer : members_) {
    if (peer == rank_) {
      selfRegion_ = memory_->allocateDevice(bytes);
      table_[peer] = layout_.channels(static_cast<char*>(selfRegion_), static_cast<char*>(selfRegion_));
      continue;
    }
    Regions& r = regions_[peer];
    r.send = memory_->allocateMapped(bytes);
    r.recv = memory_->allocateMapped(bytes);
    table_[peer] = layout_.channels(r.recv.device, r.send.device);
    if (settings_.stagedCopyReceive) {
      r.deviceSlots = memory_->allocateDevice(layout_.slotsBytes());
      table_[peer].recvSlots = static_cast<char*>(r.deviceSlots);
      if (!uploader_) uploader_ = memory_->makeUploader();
    }
  }
  status_ = memory_->allocateMapped(sizeof(device::DeviceStatus));
  laneBarrier_ = static_cast<unsigned long long*>(memory_->allocateDevice(sizeof(unsigned long long)));
  scratch_ = memory_->allocateDevice(16);
  deviceTable_ = static_cast<device::PeerChannels*>(memory_->allocateDevice(sizeof(device::PeerChannels) * nranks_));
}

void StagedDomain::release() noexcept {
  // The proxy first (it reads the regions and drives the carriers), then the carriers (they
  // flush what is queued and say goodbye), then the memory.
  proxy_.reset();
  carriers_.clear();
  if (!memory_) return;
  uploader_.reset();  // waits for its copies, which write the device slots
  for (Regions& r : regions_) {
    memory_->freeDevice(r.deviceSlots);
    memory_->freeMapped(r.send);
    memory_->freeMapped(r.recv);
  }
  regions_.clear();
  memory_->freeDevice(selfRegion_);
  memory_->freeMapped(status_);
  memory_->freeDevice(laneBarrier_);
  memory_->freeDevice(scratch_);
  memory_->freeDevice(deviceTable_);
  selfRegion_ = nullptr;
  laneBarrier_ = nullptr;
  scratch_ = nullptr;
  deviceTable_ = nullptr;
  status_ = MappedBlock{};
}

int StagedDomain::setupRounds() const {
  int rounds = 1;
  for (const auto& c : carriers_) rounds = std::max(rounds, c->setupRounds());
  return rounds;
}

std::string StagedDomain::card(int round) {
  StagedCard card;
  card.header = StagedCardHeader{kStagedCardMagic,
                                 rank_,
                                 round,
                                 static_cast<uint32_t>(carriers_.size()),
                                 stagingLayoutDigest(layout_, frameBytes_),
                                 memory_->gpuIdentity(),
                                 memory_->mpsClient() ? 1 : 0,
                                 memory_->residentBlocks()};
  for (const auto& c : carriers_) card.carrierCards.push_back(round < c->setupRounds() ? c->card(round) : "");
  return encodeStagedCard(card);
}

void StagedDomain::connect(int round, const std::vector<std::string>& cards, Deadline deadline) {
  if (static_cast<int>(cards.size()) != nranks_)
    throwError(collInternalError, "staged setup: %zu cards for %d ranks", cards.size(), nranks_);
  std::vector<StagedCard> parsed;
  const uint64_t digest = stagingLayoutDigest(layout_, frameBytes_);
  for (int r = 0; r < nranks_; ++r)
    parsed.push_back(parseStagedCard(cards[r], r, round, static_cast<uint32_t>(carriers_.size()), digest));
  if (round == 0) decideConcurrency(parsed);
  for (size_t i = 0; i < carriers_.size(); ++i) {
    if (round >= carriers_[i]->setupRounds()) continue;
    std::vector<std::string> carrierCards;
    for (const StagedCard& c : parsed) carrierCards.push_back(c.carrierCards[i]);
    carriers_[i]->connect(round, carrierCards, deadline);
  }
  if (round == setupRounds() - 1) uploadTable();
}

// As the P2P transport decides (p2p_domain.cc): kernels may wait on each other when no GPU is
// shared by several processes (unless all are MPS clients) and every GPU holds all its ranks'
// lanes at once. The ranks' kernels here wait on proxies that wait on the peers' kernels, so the
// rule is the same; every rank decides from the same cards.
void StagedDomain::decideConcurrency(const std::vector<StagedCard>& cards) {
  struct Use {
    std::set<uint64_t> processes;
    bool allMps = true;
    int ranks = 0;
    int residentBlocks = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Use> gpus;
  for (int r = 0; r < nranks_; ++r) {
    const StagedCardHeader& h = cards[r].header;
    Use& use = gpus[{peers_[r].kernelHash, h.gpuIdentity}];
    use.processes.insert(peers_[r].processToken);
    use.allMps = use.allMps && h.mpsClient != 0;
    ++use.ranks;
    use.residentBlocks = h.residentBlocks;
  }
  kernelsConcurrent_ = true;
  for (const auto& [gpu, use] : gpus) {
    if (use.processes.size() > 1 && !use.allMps) kernelsConcurrent_ = false;
    if (use.residentBlocks > 0 && use.ranks * static_cast<int>(layout_.geometry.lanes) > use.residentBlocks)
      kernelsConcurrent_ = false;
  }
}

void StagedDomain::uploadTable() {
  memory_->copyToDevice(deviceTable_, table_.data(), sizeof(device::PeerChannels) * nranks_);
}

void StagedDomain::setupDone() {
  for (auto& c : carriers_) c->setupDone();
  // As the communicator does for its own domains: the doorbell local peers can ring, if a
  // carrier (shared memory) offers one.
  Doorbell* bell = &ownBell_;
  for (auto& c : carriers_)
    if (Doorbell* shared = c->sharedDoorbell(); shared != nullptr && bell == &ownBell_) bell = shared;
  for (auto& c : carriers_) c->useDoorbell(bell);
  StagingProxyArgs args;
  args.rank = rank_;
  for (int peer : members_)
    if (peer != rank_)
      args.links.push_back({peer, carrierOf_[peer], regions_[peer].send.host, regions_[peer].recv.host,
                            DeviceSlots{uploader_.get(), static_cast<char*>(regions_[peer].deviceSlots),
                                        static_cast<int64_t>(settings_.timeoutMs) * 1000000}});
  for (auto& c : carriers_) args.carriers.push_back(c.get());
  args.layout = layout_;
  args.frameBytes = frameBytes_;
  args.bell = bell;
  args.status = reinterpret_cast<device::DeviceStatus*>(status_.host);
  args.timeoutMs = settings_.timeoutMs;
  proxy_ = std::make_unique<StagingProxy>(std::move(args));
  COLL_INFO(kTransport,
            "staged: rank %d stages device memory to %zu ranks through %s over %zu host transport(s) (%s kernels; "
            "%s)",
            rank_, members_.size(), memory_->describe().c_str(), carriers_.size(),
            kernelsConcurrent_ ? "concurrent" : "serialized",
            settings_.stagedCopyReceive ? "received slices copied into device memory, then reduced"
                                        : "received slices reduced from pinned memory");
}

SendConnection* StagedDomain::sendConnection(int peer) {
  throwError(collInternalError, "staged carries device memory: no host connection to rank %d", peer);
}

RecvConnection* StagedDomain::recvConnection(int peer) {
  throwError(collInternalError, "staged carries device memory: no host connection to rank %d", peer);
}

collResult_t StagedDomain::pollError(int rank, std::string* message) const {
  if (proxy_) {
    const collResult_t proxy = proxy_->error(message);
    if (proxy != collSuccess) return proxy;
  }
  // An idle proxy checks nothing: a peer that failed since (and told this rank through a
  // carrier) is found here, when the communicator polls.
  try {
    for (const auto& c : carriers_) c->checkPeers();
  } catch (const CollError& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  return deviceStatusError(hostStatus(), rank, message);
}

void StagedDomain::checkPeers() const {
  std::string message;
  const collResult_t code = pollError(rank_, &message);
  if (code != collSuccess) throwError(code, "%s", message.c_str());
}

void StagedDomain::announceFailure(const std::string& reason) {
  if (proxy_) proxy_->fail(collRemoteError, reason);
  requestAbort();
}

void StagedDomain::requestAbort() {
  if (status_.host != nullptr)
    __atomic_store_n(&reinterpret_cast<device::DeviceStatus*>(status_.host)->abort, 1u, __ATOMIC_RELEASE);
  if (proxy_) proxy_->fail(collRemoteError, formatString("rank %d: its device calls were aborted", rank_));
}

void StagedDomain::beginCall(const CallShape& call) {
  if (!proxy_) throwError(collInternalError, "staged: a call before setup ended");
  proxy_->enqueue(call);
}

void StagedDomain::drain(Deadline deadline) {
  if (proxy_) proxy_->drain(deadline);
}

bool StagedDomain::adoptPeers(const DeviceChannels& other, const std::vector<int>& ranks) {
  for (int r : ranks) {
    if (r < 0 || r >= nranks_ || std::find(members_.begin(), members_.end(), r) != members_.end())
      throwError(collInternalError, "staged: asked to adopt rank %d, which it serves or which does not exist", r);
    table_[r] = other.hostTable()[r];
  }
  kernelsConcurrent_ = kernelsConcurrent_ && other.kernelsConcurrent();
  uploadTable();
  return true;
}

DomainUsage StagedDomain::usage() const {
  DomainUsage usage;
  for (int peer : members_)
    if (peer != rank_) usage.sendPeers.push_back(peer);
  usage.recvPeers = usage.sendPeers;
  usage.resources = static_cast<int>(2 * usage.sendPeers.size());
  usage.resourceKind = "pinned regions";
  if (proxy_) usage.counts.emplace_back("calls staged", proxy_->calls());
  return usage;
}

std::unique_ptr<Domain> makeStagedDomain(const DomainArgs& args) {
  return std::make_unique<StagedDomain>(args, makeDeviceStagingMemory(args.settings->device));
}

}  // namespace transport
}  // namespace coll
