// Communicator init: who the ranks are and whether they agree on the settings that shape plans,
// which transports connect them and their setup, what the planner may know, and the engines.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap_ops.h"
#include "common/cuda_device.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/net_interfaces.h"
#include "common/random.h"
#include "kernels/cpu/host_kernels.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"
#include "src/comm.h"
#include "src/trace/comm_watcher.h"
#include "topo/topology_log.h"
#include "transport/doorbell.h"
#include "transport/transport_table.h"

namespace coll {
namespace {

// What every rank tells the others first: where it runs, and a digest of each setting all ranks
// must share. Fixed size, so a rank of another build is told apart by its size alone.
struct InitInfo {
  transport::PeerInfo peer;
  uint32_t settingCount;
  uint64_t settings[kMaxSharedSettings];
  // Where this rank's survivors may meet for a shrink (src/ft/meeting_point.h), and a random
  // word of which every rank keeps rank 0's: the communicator's name in flight-recorder dumps.
  ft::MeetingCard meeting;
  uint64_t commToken;
};

InitInfo describeInit(int rank, const Params& params, const std::vector<SharedSetting>& shared) {
  InitInfo info{};
  fillRandom(&info.commToken, sizeof(info.commToken), "the communicator's trace token");
  info.peer = transport::describeLocalTransports(rank, params.hostId, params.transports);
  info.settingCount = static_cast<uint32_t>(shared.size());
  for (size_t i = 0; i < shared.size(); ++i) info.settings[i] = shared[i].digest;
  return info;
}

uint64_t nextCommunicatorId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

Communicator::Communicator(std::shared_ptr<bootstrap::Store> store, int nranks, int rank, const CommOptions& options)
    : id_(nextCommunicatorId()),
      store_(std::move(store)),
      nranks_(nranks),
      rank_(rank),
      options_(options),
      params_(processParams()),
      recorder_(params_.traceBuffer) {
  // The device this process already works on, if the calling thread has a current context;
  // asking creates none, so a host-only user on a GPU machine pays nothing (comm_device.cc).
  cudaDevice_.store(currentContextDevice());
  // Bound before the peers learn its address in the init records, so that a shrink finds every
  // survivor's meeting point even after the store's host died.
  if (const std::string address = store_->localAddress(); !address.empty())
    meetingListener_ = std::make_unique<ft::MeetingListener>(address);
  exchangePeers();
  topo::logLocalTopology();
  setupTransports();
  describePlanContext();
  startEngines();
  startWatching();
}

Communicator::~Communicator() {
  // The watcher first: it calls into the communicator (revoke, reports). An abort leaves at once;
  // a destruction that takes the store's server with it lets the peers read their notices first.
  if (watcher_ && !aborted_.load() && store_->ownsServer()) watcher_->awaitInboxesRead();
  watcher_.reset();
  // Device memory first: its launches may still run, and peers may still write into it.
  teardownDevice();
  // The host engine first: the transports' progress threads ring this rank's doorbell, which may
  // live in a shared memory segment, and pending sends are flushed before the closing frames.
  hostEngine_.reset();
  // What the lazy connections came to: grows with the plans' peers, not with the ranks.
  for (const auto& [name, usage] : transportUsage())
    if (usage.resources > 0 || std::string(usage.resourceKind) != "connections")  // self counts nothing
      COLL_INFO(kTransport, "comm %s rank %d/%d holds %s", options_.name.c_str(), rank_, nranks_,
                transport::describeUsage(name.c_str(), usage).c_str());
  for (auto it = domains_.rbegin(); it != domains_.rend(); ++it) it->reset();
}

Deadline Communicator::initDeadline() const { return Clock::now() + std::chrono::milliseconds(options_.timeoutMs); }

std::vector<bootstrap::Bytes> Communicator::gatherFromRanks(const std::string& tag, const bootstrap::Bytes& mine,
                                                            Deadline deadline) {
  if (exchange_) return exchange_->allGather(tag, mine, deadline);
  return bootstrap::allGather(*store_, tag, rank_, nranks_, mine, deadline);
}

void Communicator::exchangePeers() {
  static_assert(sizeof(InitInfo) % 8 == 0, "InitInfo has no tail padding to leak");
  const std::vector<SharedSetting> shared = sharedSettings(params_);
  InitInfo mine = describeInit(rank_, params_, shared);
  if (meetingListener_) mine.meeting = meetingListener_->card();
  if (mine.settingCount > static_cast<uint32_t>(kMaxSharedSettings))
    throwError(collInternalError, "%u shared settings, more than the %d InitInfo holds", mine.settingCount,
               kMaxSharedSettings);
  bootstrap::Bytes bytes(sizeof(InitInfo));
  memcpy(bytes.data(), &mine, sizeof(InitInfo));
  bootstrap::announceDepartureOnClose(
      *store_, formatString("rank %d (pid %d on %s)", rank_, static_cast<int>(getpid()), localHostName().c_str()),
      rank_);
  const auto start = Clock::now();
  if (params_.bootstrapBetweenRanks && bootstrap::RankExchange::usableWith(*store_))
    exchange_ = std::make_unique<bootstrap::RankExchange>(store_, rank_, nranks_);
  std::vector<bootstrap::Bytes> all = gatherFromRanks("peers", bytes, initDeadline());
  COLL_INFO(kInit, "communicator init: %d ranks' peer records gathered in %lld ms (%s)", nranks_,
            elapsedMs(start, Clock::now()), exchange_ ? "between the ranks" : "through the store");
  peers_.resize(nranks_);
  meetingCards_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    // Peer data arrives through the store from other processes: check its size before use.
    if (all[r].size() != sizeof(InitInfo))
      throwError(collRemoteError,
                 "rank %d sent %zu bytes of peer information, expected %zu (a different "
                 "libcollective version?)",
                 r, all[r].size(), sizeof(InitInfo));
    InitInfo theirs;
    memcpy(&theirs, all[r].data(), sizeof(InitInfo));
    peers_[r] = theirs.peer;
    meetingCards_[r] = theirs.meeting;
    meetingCards_[r].host[sizeof(meetingCards_[r].host) - 1] = '\0';  // bytes from the network
    if (r == 0) commToken_ = theirs.commToken;
    if (peers_[r].rank != r) throwError(collRemoteError, "rank %d announced itself as rank %d", r, peers_[r].rank);
    if (theirs.settingCount != mine.settingCount)
      throwError(collRemoteError, "rank %d shares %u settings, this rank %u (a different libcollective version?)", r,
                 theirs.settingCount, mine.settingCount);
    // Ranks that planned differently would wait on each other forever: name what differs.
    std::string differing;
    for (uint32_t i = 0; i < mine.settingCount; ++i) {
      if (theirs.settings[i] == mine.settings[i]) continue;
      differing += (differing.empty() ? "" : ", ") + std::string(shared[i].name);
      if (shared[i].plain)
        differing +=
            formatString(" is %llu on rank %d and %llu on rank %d", static_cast<unsigned long long>(theirs.settings[i]),
                         r, static_cast<unsigned long long>(mine.settings[i]), rank_);
    }
    if (!differing.empty())
      throwError(collInvalidUsage,
                 "communicator init: rank %d has different settings from rank %d (%s): every rank must use the same "
                 "values of the variables that shape plans and transports (docs/env.md)",
                 r, rank_, differing.c_str());
  }
}

// The slot when no two ranks share memory (network transports alone, one rank per host) and the
// slot setting leaves it to us: a quarter of the frames and system calls per byte. Over TCP on
// loopback, broadcast, reduce, scatter and point-to-point measured faster with it at 1-16 MiB and
// all-reduce the same (docs/performance.md, "Defaults, and the measurement behind each"); shared
// memory keeps 128 KiB, whose slots must stay in the caches.
constexpr size_t kNetworkOnlySlotBytes = 512 << 10;

void Communicator::setupTransports() {
  // Each transport's own variables, as its entry in the table read them.
  transportSettings_ = params_.transportSettings;
  // A single copy makes the sender wait until its receiver has read its buffer. Where ranks
  // outnumber the cores the receiver is often not running then, and the FIFO's copy, after which
  // the sender goes on, measured faster with 4 ranks on 2 cores; with a core each the single copy
  // wins (docs/performance.md, "Defaults, and the measurement behind each").
  transportSettings_.singleCopyWindow = transportSettings_.singleCopyBytesGiven || !ranksShareCores();
  if (!transportSettings_.singleCopyWindow)
    COLL_INFO(kInit,
              "rank %d: %d ranks share this machine's %ld cores: shared-memory single copies off in their window "
              "(above it by measurement)",
              rank_, ranksOnThisMachine(), sysconf(_SC_NPROCESSORS_ONLN));
  transportSettings_.oneshotBytes = params_.oneshotBytes;
  transportSettings_.rendezvousAddress = store_->localAddress();
  transportSettings_.timeoutMs = options_.timeoutMs;
  transportSettings_.jobSecret = store_->secret();
  transportSettings_.transports = params_.transports;
  // Every rank chooses from the same table, settings and peer descriptions: a pair that no
  // transport connects is refused on every rank alike, and all agree on which domains exist.
  routes_ = transport::chooseRoutes(peers_, rank_, params_.transports, transport::MemoryKind::kHost);
  // Every rank knows every host's groups (routes.h), so all choose the same slot.
  const bool nobodySharesMemory = std::all_of(routes_.localGroups.begin(), routes_.localGroups.end(),
                                              [](const std::vector<int>& group) { return group.size() == 1; });
  if (!transportSettings_.slotBytesGiven && nobodySharesMemory && nranks_ > 1)
    transportSettings_.slotBytes = kNetworkOnlySlotBytes;
  createDomains(routes_, &transportSettings_, &domains_, &routeTo_);
  const auto start = Clock::now();
  runDomainSetup(domains_, "", initDeadline());
  COLL_INFO(kInit, "communicator init: transports set up in %lld ms", elapsedMs(start, Clock::now()));
  // The rank's doorbell: where peers in other processes can ring it, if any domain offers that.
  for (auto& domain : domains_)
    if (transport::Doorbell* shared = domain->sharedDoorbell(); shared != nullptr && bell_ == &localBell_)
      bell_ = shared;
  for (auto& domain : domains_) domain->useDoorbell(bell_);
}

void Communicator::createDomains(const transport::Routes& routes, const transport::TransportSettings* settings,
                                 std::vector<std::unique_ptr<transport::Domain>>* domains,
                                 std::vector<transport::Domain*>* routeTo) {
  if (routeTo != nullptr) routeTo->assign(nranks_, nullptr);
  for (const transport::TransportEntry* entry : routes.used) {
    transport::DomainArgs args;
    args.rank = rank_;
    args.nranks = nranks_;
    args.peers = &peers_;
    args.members = routes.membersOf(entry);
    args.settings = settings;
    args.setupWatch = [this](const std::vector<int>& awaited) {
      bootstrap::throwIfAnyOfDeparted(*store_, awaited, "connecting the transports", initDeadline());
    };
    domains->push_back(entry->create(args));
    if (routeTo != nullptr)
      for (int peer : args.members) (*routeTo)[peer] = domains->back().get();
  }
}

void Communicator::runDomainSetup(std::vector<std::unique_ptr<transport::Domain>>& domains, const std::string& prefix,
                                  Deadline deadline) {
  for (auto& domain : domains) {
    for (int round = 0; round < domain->setupRounds(); ++round) {
      std::string card = domain->card(round);
      std::string tag = prefix + "setup/" + domain->name() + "/" + std::to_string(round);
      std::vector<bootstrap::Bytes> all = gatherFromRanks(tag, bootstrap::Bytes(card.begin(), card.end()), deadline);
      std::vector<std::string> cards;
      for (const auto& c : all) cards.emplace_back(c.begin(), c.end());
      domain->connect(round, cards, deadline);
    }
  }
  bootstrap::barrier(*store_, prefix + "setup/connected", rank_, nranks_, deadline);
  for (auto& domain : domains) domain->setupDone();
}

void Communicator::describePlanContext() {
  PlanContext& ctx = planContext_;
  ctx.nranks = nranks_;
  algorithms::describeHostLayout(ctx, routes_.localGroups);
  describeNetworkLink(ctx, routes_.used, params_.linkCosts);
  // The native algorithms need every rank in one domain that maps all their memory.
  for (auto& domain : domains_) {
    transport::LocalMemory* m = domain->localMemory();
    if (m != nullptr && static_cast<int>(m->localRanks().size()) == nranks_) localMemory_ = m;
  }
  ctx.oneshotAvailable = localMemory_ != nullptr;
  ctx.directReadAvailable = localMemory_ != nullptr && localMemory_->crossMemoryReads();
  ctx.directReadBytes = params_.directReadBytes;
  ctx.ranksOutnumberCores = ranksShareCores();
  ctx.oneshotBytes = params_.oneshotBytes;
  ctx.slotBytes = transportSettings_.slotBytes;
  ctx.fifoDepth = 0;
  for (auto& domain : domains_)
    if (int depth = domain->fifoDepth(); depth > 0)
      ctx.fifoDepth = ctx.fifoDepth == 0 ? depth : std::min(ctx.fifoDepth, depth);
  ctx.overrides = params_.algoOverride;
  ctx.overridesWhereRunnable = params_.algoOverrideWhereRunnable;
}

int Communicator::ranksOnThisMachine() const {
  int ranks = 0;
  for (const auto& p : peers_) ranks += p.kernelHash == peers_[rank_].kernelHash ? 1 : 0;
  return ranks;
}

bool Communicator::ranksShareCores() const { return ranksOnThisMachine() > sysconf(_SC_NPROCESSORS_ONLN); }

void Communicator::startEngines() {
  // Spinning only pays when every waiting rank has a core; otherwise it steals the core that
  // the rank we wait for needs, so oversubscribed ranks yield at once. Even with a core each, a
  // short spin: when the scheduler (or the hypervisor) puts two ranks on one core for a while, a
  // long spin made every 8-byte call as slow as the spin, a short one much less so, and with a
  // core each both measured the same (docs/performance.md, "Defaults, and the measurement behind
  // each").
  const int64_t spinNs =
      params_.spinMicros >= 0 ? static_cast<int64_t>(params_.spinMicros) * 1000 : (ranksShareCores() ? 0 : 5000);
  HostEngineArgs args;
  args.rank = rank_;
  args.nranks = nranks_;
  args.connections = this;
  args.bell = bell_;
  for (auto& domain : domains_)
    if (transport::ProgressDriver* driver = domain->progressDriver()) args.drivers.push_back(driver);
  args.localMemory = localMemory_;
  args.planContext = &planContext_;
  args.streamingBytes = params_.streamingBytes;
  args.spinNs = spinNs;
  const bool fenceFree = transport::ringWithoutFenceIfPossible(params_.membarrier);
  // Single copies above the window by measurement, unless the user set the window's top or turned
  // single copies off (a window's bottom of 0); where ranks outnumber cores, measured by rank 0 for
  // all (per-rank measurement did not find the faster way there: host_engine.h).
  if (!transportSettings_.singleCopyMaxBytesGiven && transportSettings_.singleCopyBytes > 0) {
    args.pointToPointSingleCopyMax = transportSettings_.singleCopyMaxBytes;
    args.pointToPointRankZeroChooses = ranksShareCores();
  }
  args.timeoutMs = options_.timeoutMs;
  args.healthCheck = [this] { healthCheck(); };
  args.describeStall = [this] { return describeStall(); };
  hostEngine_ = std::make_unique<HostEngine>(std::move(args));
  std::string transports;
  for (auto& domain : domains_) transports += (transports.empty() ? "" : ", ") + std::string(domain->name());
  COLL_INFO(kInit,
            "comm %s rank %d/%d ready: transports %s; %d rank(s) share this machine's cores, spin %lld ns; "
            "doorbells rung %s; host kernels: %s",
            options_.name.c_str(), rank_, nranks_, transports.c_str(), ranksOnThisMachine(),
            static_cast<long long>(spinNs), fenceFree ? "without a fence (membarrier)" : "after a fence",
            kernels::activeHostKernels().name);
}

transport::SendConnection* Communicator::sendConnection(int peer) { return routeTo_[peer]->sendConnection(peer); }

transport::RecvConnection* Communicator::recvConnection(int peer) { return routeTo_[peer]->recvConnection(peer); }

const char* Communicator::transportBetween(int a, int b) const {
  return transport::chooseRoutes(peers_, a, params_.transports, transport::MemoryKind::kHost).toRank[b]->name;
}

std::string Communicator::addresses() const {
  std::string text;
  for (const auto& domain : domains_) {
    std::string address = domain->address();
    if (!address.empty()) text += (text.empty() ? "" : ", ") + std::string(domain->name()) + " " + address;
  }
  return text;
}

std::vector<std::pair<std::string, transport::DomainUsage>> Communicator::transportUsage() const {
  std::vector<std::pair<std::string, transport::DomainUsage>> all;
  for (const auto& domain : domains_)
    if (domain) all.emplace_back(domain->name(), domain->usage());
  return all;
}

}  // namespace coll
