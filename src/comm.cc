#include "src/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include "bootstrap/bootstrap_ops.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/net_interfaces.h"
#include "common/socket.h"
#include "kernels/cpu/reduce.h"
#include "src/algorithms/algorithms.h"
#include "src/topo/topology_log.h"
#include "transport/shm/cross_memory.h"
#include "transport/transport_table.h"

namespace coll {
namespace {

template <typename T>
bootstrap::Bytes toBytes(const T& value) {
  bootstrap::Bytes bytes(sizeof(T));
  memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

// Peer data arrives through the store from other processes: check its size before use.
template <typename T>
T fromBytes(const bootstrap::Bytes& bytes, int fromRank, const char* what) {
  if (bytes.size() != sizeof(T))
    throwError(collRemoteError, "rank %d sent %zu bytes of %s, expected %zu (a different libcollective version?)",
               fromRank, bytes.size(), what, sizeof(T));
  T value;
  memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

// Where a rank keeps a known word, so that peers can check they may read its memory.
struct MemoryProbe {
  uint64_t address, value;
};

}  // namespace

transport::PeerInfo describeSelf(int rank, const Params& params) {
  transport::PeerInfo self;
  self.rank = rank;
  self.pid = static_cast<int32_t>(getpid());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::ifstream bootId("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(bootId, boot);
  // A network namespace is a host as far as sockets go: its loopback reaches only itself. Ranks
  // in different namespaces (containers, or the namespaces the multi-host tests build) are
  // therefore different hosts unless COLL_HOSTID says otherwise.
  char netns[64] = {0};
  ssize_t len = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
  std::string machine = std::string(host) + "/" + boot + "/" + (len > 0 ? std::string(netns, len) : "");
  self.machineHash = Fnv1a().add(machine).value();
  self.kernelHash = Fnv1a().add(std::string(host) + "/" + boot).value();
  std::string identity = params.hostId.empty() ? machine : params.hostId;
  self.hostHash = Fnv1a().add(identity).value();
  self.processToken = Fnv1a().add(machine).add(static_cast<uint64_t>(self.pid)).value();
  return self;
}

Communicator::Communicator(std::shared_ptr<bootstrap::Store> store, int nranks, int rank, const CommOptions& options)
    : store_(std::move(store)), nranks_(nranks), rank_(rank), options_(options), params_(processParams()) {
  // Besides where it runs, each rank shares a digest of the settings that shape plans: ranks
  // that planned differently would wait on each other forever, so a difference is refused here.
  struct InitInfo {
    transport::PeerInfo peer;
    uint64_t planSettings;
  } mine{describeSelf(rank, params_), planSettingsDigest(params_)};
  std::vector<bootstrap::Bytes> all =
      bootstrap::allGather(*store_, "peers", rank_, nranks_, toBytes(mine), initDeadline());
  peers_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    InitInfo theirs = fromBytes<InitInfo>(all[r], r, "peer information");
    peers_[r] = theirs.peer;
    if (peers_[r].rank != r) throwError(collRemoteError, "rank %d announced itself as rank %d", r, peers_[r].rank);
    if (theirs.planSettings != mine.planSettings)
      throwError(collInvalidUsage,
                 "communicator init: rank %d has different planning settings from rank %d (COLL_ALGO, "
                 "COLL_ONESHOT_BYTES, COLL_DIRECT_READ_BYTES, COLL_SHM_SLOT_BYTES or COLL_SHM_FIFO_DEPTH): every rank "
                 "must use the same values",
                 r, rank_);
  }
  topo::logLocalTopology();
  setupTransports();
  sends_.resize(nranks_);
  recvs_.resize(nranks_);
  executor_ = std::make_unique<Executor>(*this, nranks_);
  int localRanks = 0;  // ranks that share this machine's cores, whatever connects them
  for (const auto& p : peers_) localRanks += p.kernelHash == peers_[rank_].kernelHash ? 1 : 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  // Spinning only pays when every waiting rank has a core; otherwise it steals the core that
  // the rank we wait for needs, so oversubscribed ranks yield at once. Even with a core each, a
  // short spin: when the scheduler (or the hypervisor) puts two ranks on one core for a while, a
  // 50 us spin made every 8-byte all-reduce take 54 us, a 5 us one 8.5 us, and with a core each
  // both gave 0.20 us (docs/performance.md).
  spinNs_ = params_.spinMicros >= 0 ? static_cast<int64_t>(params_.spinMicros) * 1000 : (localRanks <= cpus ? 5000 : 0);
  COLL_INFO(kInit, "comm %s rank %d/%d ready: %d rank(s) share this machine's cores, %s, spin %lld ns",
            options_.name.c_str(), rank_, nranks_, localRanks, net_ ? "sockets to the others" : "no sockets",
            static_cast<long long>(spinNs_));
}

Communicator::~Communicator() {
  // Sockets first: their progress thread rings this rank's doorbell, which lives in the shared
  // memory segment, and pending sends are flushed before the closing frames.
  net_.reset();
}

Deadline Communicator::initDeadline() const { return Clock::now() + std::chrono::milliseconds(options_.timeoutMs); }

void Communicator::setupTransports() {
  // Every rank makes the same choice from the same table and peer information, so a pair that
  // no transport connects is refused on every rank alike. Today's transports decide by host, so
  // one representative rank per host stands for all of that host's ranks.
  std::vector<int> hostRepresentatives;
  for (int r = 0; r < nranks_; ++r) {
    bool seen = false;
    for (int rep : hostRepresentatives) seen = seen || peers_[rep].hostHash == peers_[r].hostHash;
    if (!seen) hostRepresentatives.push_back(r);
  }
  for (int a : hostRepresentatives) {
    for (int b : hostRepresentatives) {
      if (transport::chooseTransport(peers_[a], peers_[b], params_.transports) != nullptr) continue;
      throwError(collInvalidUsage,
                 "communicator init: no transport connects rank %d and rank %d (%s; COLL_TRANSPORTS=\"%s\"); this "
                 "build has: %s",
                 a, b, a == b ? "same host" : "different hosts", params_.transports.c_str(),
                 transport::transportNames().c_str());
    }
  }
  // Groups of ranks that share memory, in order of their lowest rank: every rank derives the
  // same groups from the same table. Shared memory serves this rank's group (itself included: a
  // send to self goes through its own segment); the table gives sockets to every other rank.
  planContext_.hosts.clear();
  for (int r = 0; r < nranks_; ++r) {
    bool placed = false;
    for (auto& host : planContext_.hosts) {
      const transport::TransportDescriptor* t =
          transport::chooseTransport(peers_[host[0]], peers_[r], params_.transports);
      if (std::string(t->name) != "shm") continue;
      host.push_back(r);
      placed = true;
      break;
    }
    if (!placed) planContext_.hosts.push_back({r});
  }
  std::vector<int> groupOf(nranks_);
  for (size_t g = 0; g < planContext_.hosts.size(); ++g)
    for (int r : planContext_.hosts[g]) groupOf[r] = static_cast<int>(g);
  const std::vector<int>& localRanks = planContext_.hosts[groupOf[rank_]];
  std::vector<int> netPeers;
  for (int r = 0; r < nranks_; ++r)
    if (groupOf[r] != groupOf[rank_]) netPeers.push_back(r);
  bool anyNet = planContext_.hosts.size() > 1;
  bool allLocal = !anyNet;

  bool localCanRead = setupSharedMemory(localRanks);
  if (anyNet) setupSockets(netPeers);
  if (allLocal) oneshot_ = std::make_unique<OneShot>(*shm_, rank_, nranks_);
  if (allLocal && localCanRead)
    directRead_ = std::make_unique<DirectRead>(*shm_, rank_, nranks_, params_.streamingBytes);
  planContext_.nranks = nranks_;
  planContext_.oneshotAvailable = allLocal;
  planContext_.directReadAvailable = allLocal && localCanRead;
  planContext_.directReadBytes = params_.directReadBytes;
  planContext_.oneshotBytes = shm_->config().oneshotBytes;
  planContext_.slotBytes = shm_->config().slotBytes;
  planContext_.fifoDepth = shm_->config().fifoDepth;
  planContext_.overrides = params_.algoOverride;
  planContext_.ringOrder = algorithms::hostOrderedRing(planContext_.hosts);
  planContext_.crossesNetwork = anyNet;
  // Which levels of the binomial tree (edges rank v - v+2^k) cross between groups: the cost
  // model charges those the network's latency.
  planContext_.treeNetLevels = 0;
  for (int bit = 1; bit < nranks_; bit <<= 1) {
    bool crosses = false;
    for (int v = 0; v + bit < nranks_ && !crosses; v += 2 * bit) crosses = groupOf[v] != groupOf[v + bit];
    planContext_.treeNetLevels += crosses ? 1 : 0;
  }
}

bool Communicator::setupSharedMemory(const std::vector<int>& localRanks) {
  // Every rank checks that it can read the memory of the other ranks on its host (cross-memory
  // attach). The same permission lets a process take another's file descriptor, so when all of
  // them can, segments are anonymous memfds handed over with pidfd_getfd: they have no name at
  // all and vanish with the last process, even one killed during init. Otherwise they are named
  // and unlinked once mapped. The exchanges run over every rank; each reads its host's entries.
  crossMemoryProbe_ = peers_[rank_].processToken ^ 0x636f6c6c70726f62ull;
  MemoryProbe probe{reinterpret_cast<uint64_t>(&crossMemoryProbe_), crossMemoryProbe_};
  std::vector<bootstrap::Bytes> probes =
      bootstrap::allGather(*store_, "cma-probe", rank_, nranks_, toBytes(probe), initDeadline());
  uint8_t canRead = probePeersMemory(probes, localRanks) ? 1 : 0;
  std::vector<bootstrap::Bytes> verdicts =
      bootstrap::allGather(*store_, "cma-verdict", rank_, nranks_, bootstrap::Bytes{canRead}, initDeadline());
  bool localCanRead = true;
  for (int r : localRanks) localCanRead = localCanRead && verdicts[r].size() == 1 && verdicts[r][0] == 1;

  transport::ShmConfig config;
  config.fifoDepth = params_.shmFifoDepth;
  config.slotBytes = params_.shmSlotBytes;
  config.oneshotBytes = params_.oneshotBytes;
  config.anonymousSegments = localCanRead && !params_.shmNamedSegments;
  shm_ = std::make_unique<transport::ShmDomain>(config, rank_, localRanks);
  std::string blob = shm_->blob();
  std::vector<bootstrap::Bytes> blobs =
      bootstrap::allGather(*store_, "shm", rank_, nranks_, bootstrap::Bytes(blob.begin(), blob.end()), initDeadline());
  std::vector<std::string> locators;
  for (int r : localRanks) locators.emplace_back(blobs[r].begin(), blobs[r].end());
  shm_->attach(locators);
  bootstrap::barrier(*store_, "shm-attached", rank_, nranks_, initDeadline());
  shm_->releaseLocator();
  bell_ = &shm_->myHeader()->doorbell;
  COLL_INFO(kInit, "rank %d: %d rank(s) on this host share memory; cross-memory reads %s", rank_,
            static_cast<int>(localRanks.size()), localCanRead ? "available" : "unavailable");
  return localCanRead;
}

void Communicator::setupSockets(const std::vector<int>& netPeers) {
  transport::NetConfig config;
  config.depth = params_.shmFifoDepth;
  config.slotBytes = params_.shmSlotBytes;
  config.socketsPerPeer = params_.socketsPerPeer;
  config.timeoutMs = options_.timeoutMs;
  net_ = std::make_unique<transport::NetDomain>(config, rank_, nranks_, bell_);
  std::string card;
  if (!netPeers.empty()) card = net_->listen(chooseSocketAddress());
  std::vector<bootstrap::Bytes> all =
      bootstrap::allGather(*store_, "net", rank_, nranks_, bootstrap::Bytes(card.begin(), card.end()), initDeadline());
  std::vector<std::string> cards;
  for (const auto& c : all) cards.emplace_back(c.begin(), c.end());
  net_->connectPeers(cards, netPeers, initDeadline());
  COLL_INFO(kInit, "rank %d: sockets to %d rank(s), %d per peer", rank_, static_cast<int>(netPeers.size()),
            params_.socketsPerPeer);
}

std::string Communicator::chooseSocketAddress() const {
  // Loopback reaches only the ranks of this kernel and network namespace; with any rank outside
  // it the transport needs a real interface: the one named by COLL_SOCKET_IFNAME, else the one
  // this rank reaches the rendezvous store through (the interface towards MASTER_ADDR).
  bool allOnThisMachine = true;
  for (const auto& p : peers_) allOnThisMachine = allOnThisMachine && p.machineHash == peers_[rank_].machineHash;
  std::vector<InterfaceAddress> interfaces = listInterfaces();
  std::string address, why;
  if (!params_.socketIfname.empty()) {
    address = chooseInterfaceAddress(interfaces, params_.socketIfname);
    why = "COLL_SOCKET_IFNAME=" + params_.socketIfname;
  } else if (allOnThisMachine) {
    address = "127.0.0.1";
    why = "every rank is on this host";
  } else {
    address = store_->localAddress();
    why = "the interface that reaches the rendezvous store";
    if (address.empty()) {
      address = chooseInterfaceAddress(interfaces, "");
      why = "the first interface that is not loopback";
    }
  }
  std::string name = "?";
  bool loopback = address == "127.0.0.1" || address == "::1";
  for (const auto& i : interfaces) {
    if (i.address != address) continue;
    name = i.name;
    loopback = loopback || i.loopback;
  }
  if (loopback && !allOnThisMachine)
    throwError(
        collInvalidUsage,
        "communicator init: rank %d would use loopback (%s) for sockets, but other ranks run on other hosts; set "
        "COLL_SOCKET_IFNAME to an interface they can reach, and MASTER_ADDR to a routable address",
        rank_, address.c_str());
  COLL_INFO(kInit, "rank %d: socket transport on interface %s (%s): %s", rank_, name.c_str(), address.c_str(),
            why.c_str());
  return address;
}

bool Communicator::probePeersMemory(const std::vector<bootstrap::Bytes>& probes, const std::vector<int>& localRanks) {
  bool ok = true;
  for (int r : localRanks) {
    if (r == rank_) continue;
    MemoryProbe theirs = fromBytes<MemoryProbe>(probes[r], r, "memory probe");
    if (!transport::probeCrossMemory(peers_[r].pid, theirs.address, &theirs.value, sizeof(theirs.value))) {
      COLL_INFO(kInit, "rank %d cannot read rank %d's memory (pid %d): large messages use the FIFO ring", rank_, r,
                peers_[r].pid);
      ok = false;
    }
  }
  return ok;
}

const char* Communicator::transportBetween(int a, int b) const {
  if (a == b) return "self";
  const transport::TransportDescriptor* t = transport::chooseTransport(peers_[a], peers_[b], params_.transports);
  return t ? t->name : "none";
}

transport::SendConnection* Communicator::sendConnection(int peer) {
  if (net_ && net_->connects(peer)) return net_->sendConnection(peer);
  if (!sends_[peer]) sends_[peer] = shm_->connectSend(peer);
  return sends_[peer].get();
}

transport::RecvConnection* Communicator::recvConnection(int peer) {
  if (net_ && net_->connects(peer)) return net_->recvConnection(peer);
  if (!recvs_[peer]) recvs_[peer] = shm_->connectRecv(peer);
  return recvs_[peer].get();
}

void Communicator::healthCheck() const {
  if (aborted_.load()) throwError(collRemoteError, "the communicator was aborted (collCommAbort)");
  if (shm_) shm_->checkPeers();
  if (net_) net_->checkPeers();
}

void Communicator::markFailed(collResult_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    if (asyncError_.load() != collSuccess) return;
    failureMessage_ = message;
    asyncError_.store(code);
  }
  COLL_WARN(kColl, "comm %s rank %d failed: %s", options_.name.c_str(), rank_, message.c_str());
  if (shm_) shm_->announceFailure(formatString("rank %d: %s", rank_, message.c_str()));
  if (net_) net_->announceFailure();
}

ProgressWaiter Communicator::makeWaiter(const char* what) const {
  auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeoutMs);
  return ProgressWaiter(bell_, spinNs_, deadline, health_, what, options_.timeoutMs, net_.get());
}

void Communicator::throwIfFailed() {
  if (asyncError_.load() == collSuccess) return;
  std::lock_guard<std::mutex> lock(failureMutex_);
  throwError(asyncError_.load(), "the communicator failed earlier and cannot be used: %s", failureMessage_.c_str());
}

void Communicator::abort() {
  aborted_.store(true);
  markFailed(collRemoteError, formatString("rank %d called collCommAbort", rank_));
  transport::forceRingDoorbell(bell_);
}

void Communicator::run(const CollCall& call) {
  if (call.type == CollType::kSend || call.type == CollType::kRecv) {
    runPointToPoint({call});
    return;
  }
  throwIfFailed();
  ProgressWaiter waiter = makeWaiter(collTypeName(call.type));
  try {
    if (params_.checkConsistency) checkConsistency(call, waiter);
    ++callCount_;
    runPlanned(call, waiter);
  } catch (const CollError& e) {
    if (e.code() != collInvalidArgument && e.code() != collInvalidUsage) markFailed(e.code(), e.what());
    throw;
  }
}

void Communicator::runPlanned(const CollCall& call, ProgressWaiter& waiter) {
  if (call.count == 0 && call.type != CollType::kBarrier) return;
  Plan plan = planCall(call, planContext_);
  if (plan.alternative == Algo::kAuto) {
    runPlan(call, plan, waiter);
    return;
  }
  // Two valid plans: rank 0 picks by measurement and tells the others in a one-byte one-shot
  // broadcast, so every rank runs the same one (tuner.h).
  uint8_t choice = 0;
  if (rank_ == 0) choice = tuner_.choose(call.count * call.elemSize, plan.algo, plan.alternative) == plan.algo ? 0 : 1;
  CollCall agree;
  agree.type = CollType::kBroadcast;
  agree.sendbuff = &choice;
  agree.recvbuff = &choice;
  agree.count = 1;
  agree.datatype = collUint8;
  agree.root = 0;
  oneshot_->run(agree, waiter);
  if (choice > 1) throwError(collRemoteError, "rank 0 sent plan choice %d, expected 0 or 1", choice);
  Algo chosen = choice == 0 ? plan.algo : plan.alternative;
  plan.algo = chosen;
  int64_t start = rank_ == 0 ? monotonicNs() : 0;
  runPlan(call, plan, waiter);
  if (rank_ == 0) tuner_.record(call.count * call.elemSize, chosen, (monotonicNs() - start) * 1e-9);
}

void Communicator::runPlan(const CollCall& call, const Plan& plan, ProgressWaiter& waiter) {
  COLL_TRACE(kColl, "rank %d %s count %zu %s: %s", rank_, collTypeName(call.type), call.count,
             kernels::dataTypeName(call.datatype), algoName(plan.algo));
  if (plan.algo == Algo::kOneShot) {
    oneshot_->run(call, waiter);
    return;
  }
  if (plan.algo == Algo::kDirectRead) {
    directRead_->run(call, waiter);
    return;
  }
  Schedule schedule = buildSchedule(call, plan, rank_, planContext_);
  ExecBuffers buffers;
  uint8_t barrierIn = 0, barrierOut = 0;
  buffers.send = call.type == CollType::kBarrier ? &barrierIn : call.sendbuff;
  buffers.recv = call.type == CollType::kBarrier ? &barrierOut : call.recvbuff;
  buffers.datatype = call.datatype;
  buffers.op = call.op;
  buffers.elemSize = call.elemSize;
  buffers.nranks = nranks_;
  buffers.streamOutput = params_.streamingBytes > 0 && call.count * call.elemSize >= params_.streamingBytes;
  executor_->run(schedule, buffers, waiter);
}

void Communicator::runPointToPoint(const std::vector<CollCall>& calls) {
  throwIfFailed();
  // Point-to-point moves bytes, whatever the datatypes: one byte-typed schedule serves calls of
  // different types, and every transfer progresses together.
  Schedule schedule = pointToPointSchedule(calls);
  if (schedule.steps.empty()) return;
  ProgressWaiter waiter = makeWaiter(calls.size() == 1 ? collTypeName(calls[0].type) : "GroupEnd");
  ExecBuffers buffers;
  buffers.datatype = collUint8;
  buffers.elemSize = 1;
  buffers.nranks = nranks_;
  try {
    executor_->run(schedule, buffers, waiter);
  } catch (const CollError& e) {
    markFailed(e.code(), e.what());
    throw;
  }
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, const CommOptions& options) {
  throwIfFailed();
  std::string tag = "split" + std::to_string(splitCount_++);
  int32_t mine[2] = {color, key};
  bootstrap::Bytes bytes(sizeof(mine));
  memcpy(bytes.data(), mine, sizeof(mine));
  std::vector<bootstrap::Bytes> all = bootstrap::allGather(*store_, tag, rank_, nranks_, bytes, initDeadline());
  if (color == COLL_SPLIT_NOCOLOR) return nullptr;
  struct Member {
    int key, rank;
  };
  std::vector<Member> members;
  for (int r = 0; r < nranks_; ++r) {
    if (all[r].size() != sizeof(mine)) throwError(collRemoteError, "collCommSplit: rank %d sent a malformed entry", r);
    int32_t theirs[2];
    memcpy(theirs, all[r].data(), sizeof(theirs));
    if (theirs[0] == color) members.push_back({theirs[1], r});
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const Member& a, const Member& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  int newRank = -1;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].rank == rank_) newRank = static_cast<int>(i);
  auto childStore = std::make_shared<bootstrap::PrefixStore>(tag + "/color" + std::to_string(color), store_);
  return std::make_unique<Communicator>(childStore, static_cast<int>(members.size()), newRank, options);
}

void Communicator::checkConsistency(const CollCall& call, ProgressWaiter& waiter) {
  // Every rank shares a fixed-size description of its call, so the exchange itself can never
  // mismatch; then each rank compares all descriptions and they all reach the same verdict.
  struct Description {
    uint64_t callIndex, count;
    int32_t type, datatype, op, root;
  } mine{};
  bool reduces =
      call.type == CollType::kAllReduce || call.type == CollType::kReduce || call.type == CollType::kReduceScatter;
  bool rooted = call.type == CollType::kBroadcast || call.type == CollType::kReduce || call.type == CollType::kGather ||
                call.type == CollType::kScatter;
  mine.callIndex = callCount_;
  mine.count = call.type == CollType::kBarrier ? 0 : call.count;
  mine.type = static_cast<int32_t>(call.type);
  mine.datatype = call.type == CollType::kBarrier ? 0 : call.datatype;
  mine.op = reduces ? call.op : 0;
  mine.root = rooted ? call.root : 0;
  std::vector<Description> all(nranks_);
  CollCall exchange;
  exchange.type = CollType::kAllGather;
  exchange.sendbuff = &mine;
  exchange.recvbuff = all.data();
  exchange.count = sizeof(Description);
  exchange.datatype = collUint8;
  exchange.elemSize = 1;
  runPlanned(exchange, waiter);
  for (int r = 1; r < nranks_; ++r) {
    const Description& d = all[r];
    const Description& first = all[0];
    if (memcmp(&d, &first, sizeof(Description)) == 0) continue;
    auto describe = [](const Description& x) {
      return formatString(
          "%s(count=%llu, datatype=%s, op=%s, root=%d) as call #%llu",
          collTypeName(static_cast<CollType>(std::min<int32_t>(x.type, int32_t(CollType::kCount) - 1))),
          static_cast<unsigned long long>(x.count), kernels::dataTypeName(static_cast<collDataType_t>(x.datatype)),
          kernels::redOpName(static_cast<collRedOp_t>(x.op)), x.root, static_cast<unsigned long long>(x.callIndex));
    };
    throwError(collInvalidUsage, "%s: COLL_CHECK: rank %d called %s but rank 0 called %s", collTypeName(call.type), r,
               describe(d).c_str(), describe(first).c_str());
  }
}

}  // namespace coll
