#include "transport/verbs/verbs_domain.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/logging.h"
#include "transport/verbs/verbs_card.h"
#include "transport/verbs/verbs_domain_impl.h"

namespace coll {
namespace transport {
namespace {

constexpr auto kProbeInterval = std::chrono::milliseconds(200);
constexpr auto kGoodbyeTimeout = std::chrono::seconds(2);  // a closing rank waits this long at most
// Beyond the slots: a goodbye, a failure notice and the landing records the mailbox holds.
constexpr int kExtraRecvs = 2 + kVerbsMailboxEntries;
// Beyond the slots: a credit, a probe, a notice, an acknowledgement and the records in flight.
constexpr int kExtraSends = 4 + kVerbsMailboxEntries;
constexpr size_t kWordBytes = 64;  // a credit word, on its own cache line

const VerbsAvailability& availability() {
  static const VerbsAvailability probed = probeVerbs();
  return probed;
}

// Per peer: its receive slots, our send slots (each with room for its tag: verbsSlotStride), then
// the credit word it writes, the source of ours, the word its probes land on, and the landings'
// mailboxes and words (verbs_landing.h).
size_t perPeerBytes(size_t slotBytes, int depth) {
  return 2 * verbsSlotStride(slotBytes) * depth + 3 * kWordBytes + verbsLandingBytes();
}

}  // namespace

bool verbsUsableHere() { return availability().available(); }

std::unique_ptr<Domain> makeVerbsDomain(const DomainArgs& args) {
  if (!verbsUsableHere())
    throwError(collInternalError, "verbs transport: unavailable (%s)", availability().reason.c_str());
  return std::make_unique<VerbsDomain>(args, availability().api);
}

VerbsDomain::VerbsDomain(const DomainArgs& args, std::shared_ptr<const VerbsApi> api)
    : myRank_(args.rank),
      settings_(*args.settings),
      members_(args.members),
      depth_(args.settings->netFifoDepth),
      api_(std::move(api)),
      peerIndex_(args.nranks, -1),
      callerMemory_(api_, args.settings->ibZcopyBytes, args.rank) {}

VerbsDomain::~VerbsDomain() {
  if (arrivedAhead_ > 0)
    COLL_INFO(kTransport, "rank %d: verbs transport: %llu slot(s) arrived ahead of an earlier one (reordered across QPs)",
              myRank_, static_cast<unsigned long long>(arrivedAhead_));
  if (ready_ && !failed_.load()) sayGoodbye();
  destroyResources();
}

VerbsPeer* VerbsDomain::peerOf(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peerIndex_.size()) || peerIndex_[rank] < 0)
    throwError(collInternalError, "verbs transport: no connection to rank %d", rank);
  return &peers_[peerIndex_[rank]]->state;
}

void VerbsDomain::makeResources() {
  device_ = std::make_unique<VerbsDevice>(api_, settings_.ibHca, settings_.ibGidIndex);
  COLL_INFO(kTransport, "rank %d: verbs transport chose %s", myRank_, device_->placement().c_str());
  callerMemory_.usePd(device_->pd());
  // Every lane can hold a whole FIFO's writes and receives: simple, and the slots bound it anyway.
  const int perPeerWrs = (depth_ + kExtraSends + depth_ + kExtraRecvs) * settings_.ibQpsPerConnection;
  const int cqe = perPeerWrs * static_cast<int>(members_.size());
  if (cqe > device_->maxCqe())
    throwError(collInvalidUsage,
               "verbs transport: %zu peers at %d slots and %d QPs each need %d completion entries; %s has %d (lower "
               "COLL_NET_FIFO_DEPTH or COLL_IB_QPS_PER_CONNECTION)",
               members_.size(), depth_, settings_.ibQpsPerConnection, cqe, device_->name().c_str(),
               device_->maxCqe());
  cq_ = api_->createCq(device_->context(), cqe, nullptr, nullptr, 0);
  if (cq_ == nullptr)
    throwError(collSystemError, "verbs transport: ibv_create_cq(%d) failed: %s", cqe, strerror(errno));
  const size_t each = perPeerBytes(settings_.slotBytes, depth_);
  memoryBytes_ = each * members_.size();
  if (posix_memalign(&memory_, 4096, memoryBytes_) != 0)
    throwError(collSystemError, "verbs transport: no memory for %zu bytes of slots", memoryBytes_);
  std::memset(memory_, 0, memoryBytes_);
  mr_ = api_->regMr(device_->pd(), memory_, memoryBytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr_ == nullptr)
    throwError(collSystemError, "verbs transport: ibv_reg_mr of %zu bytes failed: %s", memoryBytes_, strerror(errno));
  address_ = device_->name() + ":" + std::to_string(device_->portNumber()) + " lid " +
             std::to_string(device_->port().lid) + " gid index " + std::to_string(device_->gidIndex());
}

std::string VerbsDomain::card(int) {
  if (members_.empty()) return "";
  makeResources();
  VerbsCard card;
  std::memcpy(card.header.gid, device_->gid().raw, sizeof(card.header.gid));
  card.header.lid = device_->port().lid;
  card.header.activeMtu = device_->port().active_mtu;
  card.header.rkey = mr_->rkey;
  card.header.depth = static_cast<uint32_t>(depth_);
  card.header.slotBytes = settings_.slotBytes;
  card.header.qpsPerPeer = static_cast<uint32_t>(settings_.ibQpsPerConnection);
  const size_t each = perPeerBytes(settings_.slotBytes, depth_);
  for (size_t i = 0; i < members_.size(); ++i) {
    auto peer = std::make_unique<Peer>();
    VerbsPeer& p = peer->state;
    p.rank = members_[i];
    p.index = static_cast<int>(i);
    uint8_t* base = static_cast<uint8_t*>(memory_) + i * each;
    const size_t slots = verbsSlotStride(settings_.slotBytes) * depth_;
    p.recvSlots = base;
    p.sendSlots = base + slots;
    p.creditIn = reinterpret_cast<uint64_t*>(base + 2 * slots);
    p.creditOut = reinterpret_cast<uint64_t*>(base + 2 * slots + kWordBytes);
    p.probeIn = reinterpret_cast<uint64_t*>(base + 2 * slots + 2 * kWordBytes);
    p.credit.source = p.creditOut;
    placeVerbsLanding(p.landing, base + 2 * slots + 3 * kWordBytes, depth_);
    p.inFlight.assign(depth_, 0);
    p.callerRegion.assign(depth_, -1);
    p.sizes.assign(depth_, 0);
    p.tags.assign(depth_, 0);
    p.present.assign(depth_, 0);
    peerIndex_[p.rank] = static_cast<int>(peers_.size());
    peers_.push_back(std::move(peer));
    for (int lane = 0; lane < settings_.ibQpsPerConnection; ++lane) {
      uint32_t maxInline = 0;
      p.qps.push_back(createRcQp(*device_, cq_, depth_ + kExtraSends, depth_ + kExtraRecvs, &maxInline));
      p.maxInline = lane == 0 ? maxInline : std::min(p.maxInline, maxInline);
      verbsQpToInit(*device_, p.qps.back(), p.rank);
      // Every receive is posted before any peer can write: nobody is ever not ready.
      std::lock_guard<std::mutex> lock(mutex_);
      for (int r = 0; r < depth_ + kExtraRecvs; ++r)
        if (!postRecvLocked(p, lane)) throwError(collSystemError, "verbs transport: %s", failure_.c_str());
      VerbsCardEntry entry;
      entry.rank = p.rank;
      entry.qpn = p.qps.back()->qp_num;
      entry.slotsAddr = reinterpret_cast<uint64_t>(p.recvSlots);
      entry.creditAddr = reinterpret_cast<uint64_t>(p.creditIn);
      entry.probeAddr = reinterpret_cast<uint64_t>(p.probeIn);
      entry.mailboxAddr = reinterpret_cast<uint64_t>(p.landing.mailbox);
      entry.acknowledgementAddr = reinterpret_cast<uint64_t>(p.landing.acknowledgedIn);
      card.entries.push_back(entry);
    }
  }
  return encodeVerbsCard(card);
}

void VerbsDomain::connect(int, const std::vector<std::string>& cards, Deadline) {
  const int nranks = static_cast<int>(peerIndex_.size());
  for (auto& peer : peers_) {
    VerbsPeer& p = peer->state;
    VerbsCard theirs = parseVerbsCard(cards.at(p.rank), p.rank, nranks, depth_, settings_.slotBytes,
                                      static_cast<uint32_t>(settings_.ibQpsPerConnection));
    const std::vector<VerbsCardEntry> entries = verbsCardEntriesFor(theirs, p.rank, myRank_);
    p.remoteSlots = entries[0].slotsAddr;
    p.remoteCredit = entries[0].creditAddr;
    p.remoteProbe = entries[0].probeAddr;
    p.credit.remote = p.remoteCredit;
    p.landing.remoteMailbox = entries[0].mailboxAddr;
    p.landing.acknowledgement.remote = entries[0].acknowledgementAddr;
    p.remoteKey = theirs.header.rkey;
    VerbsPath path;
    path.remoteLid = theirs.header.lid;
    std::memcpy(path.remoteGid.raw, theirs.header.gid, sizeof(path.remoteGid.raw));
    const uint32_t mtu = std::min<uint32_t>(theirs.header.activeMtu, device_->port().active_mtu);
    path.mtu = static_cast<ibv_mtu>(std::max<uint32_t>(mtu, IBV_MTU_256));
    path.timeout = settings_.ibTimeout;
    path.retryCount = settings_.ibRetryCount;
    // Lane i connects to the peer's lane i: both number them the same way.
    for (size_t lane = 0; lane < p.qps.size(); ++lane) {
      path.remoteQpn = entries[lane].qpn;
      verbsQpToRts(*device_, p.qps[lane], path, p.rank);
    }
    peer->send = std::make_unique<VerbsSendConnection>(*this, p);
    peer->recv = std::make_unique<VerbsRecvConnection>(*this, p);
  }
  if (!peers_.empty())
    COLL_INFO(kTransport, "rank %d: verbs transport on %s, %zu queue pair(s) at RTS", myRank_, address_.c_str(),
              peers_.size() * settings_.ibQpsPerConnection);
}

SendConnection* VerbsDomain::sendConnection(int peer) {
  peerOf(peer);
  return peers_[peerIndex_[peer]]->send.get();
}

RecvConnection* VerbsDomain::recvConnection(int peer) {
  peerOf(peer);
  return peers_[peerIndex_[peer]]->recv.get();
}

bool VerbsDomain::postRecvLocked(VerbsPeer& peer, int lane) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  // A receive's "slot" is its lane, so that its completion reposts on the same QP.
  wr.wr_id = verbsWrId(peer.index, VerbsWork::kRecv, static_cast<uint32_t>(lane));
  // Writes with immediate land where the writer says: the receive carries no buffer.
  int rc = VerbsApi::postRecv(peer.qps[lane], &wr, &bad);
  if (rc == 0) return true;
  failLocked(
      formatString("verbs connection to rank %d: ibv_post_recv failed: %s", peer.rank, strerror(rc > 0 ? rc : errno)));
  return false;
}

bool VerbsDomain::postWriteLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local,
                                  uint32_t bytes, uint64_t remote, const uint32_t* imm) {
  return postWriteFromLocked(peer, lane, work, slot, local, mr_->lkey, bytes, nullptr, 0, remote, peer.remoteKey, imm);
}

bool VerbsDomain::postWriteFromLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local,
                                      uint32_t lkey, uint32_t payloadBytes, const void* trailer, uint32_t trailerBytes,
                                      uint64_t remote, uint32_t rkey, const uint32_t* imm) {
  ibv_sge sges[2];
  int count = 0;
  if (payloadBytes > 0) sges[count++] = {reinterpret_cast<uint64_t>(local), payloadBytes, lkey};
  if (trailerBytes > 0) sges[count++] = {reinterpret_cast<uint64_t>(trailer), trailerBytes, mr_->lkey};
  const uint32_t bytes = payloadBytes + trailerBytes;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = verbsWrId(peer.index, work, slot);
  wr.sg_list = count > 0 ? sges : nullptr;
  wr.num_sge = count;
  wr.opcode = imm != nullptr ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  if (imm != nullptr) wr.imm_data = *imm;
  // Every request is signaled: its completion frees its slot or its one-in-flight flag, and an
  // error completion is how a failed write is learned.
  wr.send_flags = IBV_SEND_SIGNALED | (bytes > 0 && bytes <= peer.maxInline ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  int rc = VerbsApi::postSend(peer.qps[lane], &wr, &bad);
  if (rc == 0) return true;
  failLocked(
      formatString("verbs connection to rank %d: ibv_post_send failed: %s", peer.rank, strerror(rc > 0 ? rc : errno)));
  return false;
}

void VerbsDomain::pollLocked() {
  if (cq_ == nullptr) return;
  ibv_wc wc[16];
  for (;;) {
    int n = VerbsApi::pollCq(cq_, 16, wc);
    if (n < 0) {
      failLocked("verbs transport: ibv_poll_cq failed");
      return;
    }
    for (int i = 0; i < n; ++i) completeLocked(wc[i]);
    if (n < 16) return;
  }
}

void VerbsDomain::completeLocked(const ibv_wc& wc) {
  int index = -1;
  VerbsWork work;
  uint32_t slot = 0;
  decodeVerbsWrId(wc.wr_id, &index, &work, &slot);
  if (index < 0 || index >= static_cast<int>(peers_.size()))
    return failLocked("verbs transport: a completion for no peer");
  VerbsPeer& peer = peers_[index]->state;
  // A data write's slot and the caller's buffer it read are free once it completed, whether it
  // succeeded or not: the device reads neither any more.
  const bool data = work == VerbsWork::kData && slot < peer.inFlight.size();
  const bool fromCaller = data && peer.callerRegion[slot] >= 0;
  const bool intoLanding = data && peer.landing.landedWrite[slot];
  if (data) {
    peer.inFlight[slot] = 0;
    peer.landing.landedWrite[slot] = 0;
    if (peer.callerRegion[slot] >= 0) {
      callerMemory_.writeCompleted(peer.callerRegion[slot]);
      peer.callerRegion[slot] = -1;
      --peer.callerWritesInFlight;
    }
  }
  if (work == VerbsWork::kLanding && peer.landing.recordWritesInFlight > 0) --peer.landing.recordWritesInFlight;
  if (wc.status != IBV_WC_SUCCESS) {
    // A peer that said goodbye may be gone: what fails towards it now means nothing.
    if (peer.departed) return;
    static const char* const kWhat[] = {"?",      "data write", "credit write",   "liveness probe",
                                        "notice", "receive",    "landing record", "landing acknowledgement"};
    const uint32_t w = static_cast<uint32_t>(work) < 8 ? static_cast<uint32_t>(work) : 0;
    // A write into a landing that fails after its call failed (the landing withdrawn, its key
    // deregistered) fails here, at the sender (verbs_landing.h).
    return failLocked(formatString("verbs connection to rank %d: a %s%s completed with %s%s", peer.rank, kWhat[w],
                                   fromCaller ? " from the caller's buffer" : "",
                                   verbsStatusText(*api_, wc.status).c_str(),
                                   intoLanding ? " (written into that rank's receive buffer, zero-copy)" : ""));
  }
  switch (work) {
    case VerbsWork::kData:
    case VerbsWork::kLanding:
      break;
    case VerbsWork::kCredit:
      verbsCountWritten(*this, peer, peer.credit, VerbsWork::kCredit, peer.released);
      break;
    case VerbsWork::kAcknowledgement:
      verbsCountWritten(*this, peer, peer.landing.acknowledgement, VerbsWork::kAcknowledgement,
                        peer.landing.recordsTaken);
      break;
    case VerbsWork::kProbe:
      peer.probeOutstanding = false;
      break;
    case VerbsWork::kNotice:
      peer.noticeOutstanding = false;
      break;
    case VerbsWork::kRecv:
      if (slot >= peer.qps.size()) return failLocked("verbs transport: a receive completion for no queue pair");
      arrivedLocked(peer, static_cast<int>(slot), wc);
      break;
    default:
      failLocked("verbs transport: a completion of unknown kind");
  }
}

std::string VerbsDomain::acceptDataLocked(VerbsPeer& peer, int lane, uint32_t imm, uint32_t bytes) {
  // The immediate holds the low 29 bits of the sequence number; the full one is the first
  // unfilled number plus its distance, which must fall inside the credit window and on the lane
  // the sender stripes that number to.
  const uint32_t seq = imm & kVerbsSeqMask;
  const uint64_t ahead = (seq - static_cast<uint32_t>(peer.arrived)) & kVerbsSeqMask;
  const uint64_t full = peer.arrived + ahead;
  // Written into the slot, the payload is followed by its tag; landed in our buffer, it is alone.
  const bool landed = (imm & kVerbsLandedBit) != 0;
  const uint32_t payload = landed ? bytes : bytes - static_cast<uint32_t>(kVerbsTagBytes);
  if (full >= peer.released + static_cast<uint64_t>(depth_) || (!landed && bytes < kVerbsTagBytes) ||
      payload > settings_.slotBytes || full % peer.qps.size() != static_cast<uint64_t>(lane) ||
      peer.present[full % depth_])
    return formatString(
        "slot %u of %u bytes arrived on queue pair %d out of order, beyond its credit or without its tag (next "
        "expected slot %llu)",
        seq, bytes, lane, static_cast<unsigned long long>(peer.arrived));
  // Flagged as written into our buffer: only where our landing expects it (verbs_landing.h).
  std::string bad = acceptVerbsArrival(peer, full, payload, landed, depth_);
  if (!bad.empty()) return bad;
  // Counted so that a test can tell reordering across QPs really happened (logged at close).
  if (full != peer.arrived) ++arrivedAhead_;
  uint64_t tag = peer.landing.offer.tag;
  if (!landed) std::memcpy(&tag, peer.recvSlots + (full % depth_) * verbsSlotStride(settings_.slotBytes) + payload, sizeof(tag));
  peer.tags[full % depth_] = tag;
  peer.sizes[full % depth_] = payload;
  peer.present[full % depth_] = 1;
  while (peer.present[peer.arrived % depth_]) {
    peer.present[peer.arrived % depth_] = 0;
    ++peer.arrived;
  }
  return "";
}

void VerbsDomain::arrivedLocked(VerbsPeer& peer, int lane, const ibv_wc& wc) {
  const auto kind = static_cast<VerbsImm>(wc.imm_data >> 30);
  if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0)
    return failLocked(formatString("verbs connection to rank %d: a receive without immediate", peer.rank));
  std::string bad;
  if (kind == VerbsImm::kGoodbye) {
    peer.departed = true;
  } else if (kind == VerbsImm::kFailed) {
    return failLocked(formatString("rank %d failed (its verbs transport said so)", peer.rank));
  } else if (kind == VerbsImm::kData) {
    // The bytes came from another process: its sequence, lane, size, credit and landing are checked.
    bad = acceptDataLocked(peer, lane, wc.imm_data, wc.byte_len);
  } else {
    // A landing record: its receive goes back first, since the acknowledgement lets the peer
    // write the next record, which needs one.
    if (!postRecvLocked(peer, lane)) return;
    bad = takeVerbsLandingRecord(*this, peer, wc.imm_data & kVerbsImmLowBits);
    if (bad.empty()) return;
  }
  if (!bad.empty()) return failLocked(formatString("verbs connection to rank %d: %s", peer.rank, bad.c_str()));
  postRecvLocked(peer, lane);
}

void VerbsDomain::breakPeerLocked(VerbsPeer& peer, const std::string& message) {
  failLocked(message);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  for (ibv_qp* qp : peer.qps) api_->modifyQp(qp, &attr, IBV_QP_STATE);
}

void VerbsDomain::failLocked(const std::string& message) {
  if (failed_.load()) return;
  failure_ = message;
  failed_.store(true, std::memory_order_release);
  COLL_INFO(kTransport, "rank %d: %s", myRank_, message.c_str());
  if (bell_ != nullptr) forceRingDoorbell(bell_);
}

void VerbsDomain::watchLocked() {
  pollLocked();
  if (!ready_ || failed_.load()) return;
  const Deadline now = Clock::now();
  for (auto& peer : peers_) {
    VerbsPeer& p = peer->state;
    if (__atomic_load_n(p.creditIn, __ATOMIC_ACQUIRE) > p.posted)
      return failLocked(formatString("verbs connection to rank %d: it returned more slots than were sent", p.rank));
    if (__atomic_load_n(p.landing.acknowledgedIn, __ATOMIC_ACQUIRE) > p.landing.recordsSent)
      return failLocked(
          formatString("verbs connection to rank %d: it acknowledged more landing records than were sent", p.rank));
    if (p.departed || p.probeOutstanding || now < p.nextProbe) continue;
    // A write into a word the peer never reads: it fails once the peer's QP is gone. It carries
    // bytes, since a zero-byte write may be answered without touching the peer's memory at all.
    p.nextProbe = now + kProbeInterval;
    p.probeOutstanding =
        postWriteLocked(p, 0, VerbsWork::kProbe, 0, p.creditOut, sizeof(uint64_t), p.remoteProbe, nullptr);
  }
}

void VerbsDomain::checkPeers() const {
  // The interface's health check is const; here it must poll and probe, which change only the
  // connections' bookkeeping.
  auto* self = const_cast<VerbsDomain*>(this);
  std::lock_guard<std::mutex> lock(mutex_);
  self->watchLocked();
  if (failed_.load()) throwError(collRemoteError, "%s", failure_.c_str());
}

void VerbsDomain::executorState(Executor state) {
  if (state != Executor::kReturned) return;
  std::lock_guard<std::mutex> lock(mutex_);
  pollLocked();
  callerMemory_.callReturned();
}

DomainUsage VerbsDomain::usage() const {
  // Every member's QPs are made and connected at setup (no connection is made lazily).
  DomainUsage usage;
  usage.resourceKind = "queue pairs";
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t inPlace = 0, offered = 0, writesInPlace = 0;  // zero-copy receives (verbs_landing.h)
  for (const auto& peer : peers_) {
    usage.sendPeers.push_back(peer->state.rank);
    usage.recvPeers.push_back(peer->state.rank);
    usage.resources += static_cast<int>(peer->state.qps.size());
    inPlace += peer->state.landing.receivedInPlace;
    offered += peer->state.landing.recordsSent;
    writesInPlace += peer->state.landing.writesInPlace;
  }
  usage.counts = {{"zero-copy writes", callerMemory_.writes()},
                  {"caller buffers registered", callerMemory_.made()},
                  {"refused", callerMemory_.failed()},
                  {"held", callerMemory_.live()},
                  {"landings offered", offered},
                  {"writes into receivers' buffers", writesInPlace},
                  {kReceivedInPlace, inPlace}};
  return usage;
}

void VerbsDomain::progressOnce() {
  std::lock_guard<std::mutex> lock(mutex_);
  pollLocked();
}

void VerbsDomain::announceFailure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_.load()) {
    failure_ = "this rank's communicator failed: " + reason;
    failed_.store(true);
  }
  if (!ready_) return;
  const uint32_t imm = static_cast<uint32_t>(VerbsImm::kFailed) << 30;
  for (auto& peer : peers_) {
    VerbsPeer& p = peer->state;
    if (p.departed || p.noticeOutstanding) continue;
    p.noticeOutstanding = postWriteLocked(p, 0, VerbsWork::kNotice, 0, nullptr, 0, p.remoteCredit, &imm);
  }
}

template <typename Done>
bool VerbsDomain::drainLocked(Done done, Deadline deadline) {
  while (!done()) {
    if (failed_.load() || Clock::now() >= deadline) return false;
    pollLocked();
  }
  return true;
}

void VerbsDomain::sayGoodbye() {
  // The device may still read slots that were posted: wait for those, and for the credits owed,
  // then tell every member this rank leaves on purpose.
  std::lock_guard<std::mutex> lock(mutex_);
  const Deadline deadline = Clock::now() + kGoodbyeTimeout;
  auto quiet = [this] {
    for (auto& peer : peers_) {
      const VerbsPeer& p = peer->state;
      if (p.credit.outstanding || p.probeOutstanding || p.noticeOutstanding || p.landing.acknowledgement.outstanding ||
          p.landing.recordWritesInFlight > 0)
        return false;
      for (uint8_t busy : p.inFlight)
        if (busy) return false;
    }
    return true;
  };
  if (!drainLocked(quiet, deadline)) return;
  const uint32_t imm = static_cast<uint32_t>(VerbsImm::kGoodbye) << 30;
  for (auto& peer : peers_) {
    VerbsPeer& p = peer->state;
    p.noticeOutstanding = !p.departed && postWriteLocked(p, 0, VerbsWork::kNotice, 0, nullptr, 0, p.remoteCredit, &imm);
  }
  drainLocked(quiet, deadline);
}

void VerbsDomain::destroyResources() {
  for (auto& peer : peers_)
    for (ibv_qp* qp : peer->state.qps) api_->destroyQp(qp);
  // No QP is left to read a caller's buffer or write into a landing (the executor withdraws every
  // landing before its call returns: any left are a failed call's); the PD they were registered in
  // goes below.
  for (auto& peer : peers_)
    if (peer->state.landing.mr != nullptr) callerMemory_.releaseLanding(peer->state.landing.mr);
  callerMemory_.releaseAll();
  if (mr_ != nullptr) api_->deregMr(mr_);
  if (cq_ != nullptr) api_->destroyCq(cq_);
  free(memory_);
  device_.reset();
  peers_.clear();
  mr_ = nullptr;
  cq_ = nullptr;
  memory_ = nullptr;
}

}  // namespace transport
}  // namespace coll
