#include "tools/collsim/call_study.h"

#include <algorithm>

#include "common/error.h"
#include "src/collective_table.h"
#include "src/plan/planner.h"

namespace collsim {
namespace {

// The examined rank's peers whose schedules are built to check both ends of the connections.
std::vector<int> partnersOf(const std::vector<PeerTraffic>& list) {
  std::vector<int> partners;
  const size_t n = list.size(), take = std::min<size_t>(n, kPartnersChecked);
  for (size_t i = 0; i < take; ++i) partners.push_back(list[i * n / take].peer);
  return partners;
}

void addMismatch(const RankTraffic& from, const RankTraffic& to, std::vector<std::string>& problems) {
  std::string mismatch = connectionMismatch(from, to);
  if (!mismatch.empty()) problems.push_back(std::move(mismatch));
}

}  // namespace

coll::CollCall callOfBytes(coll::CollType type, size_t bytes, int nranks) {
  coll::CollCall call;
  call.type = type;
  call.datatype = collUint8;
  call.elemSize = 1;
  call.op = collSum;
  // The size is the larger buffer, as the perf programs mean it (the collective's row).
  // A size split into blocks keeps at least one element per block.
  const size_t multiple = coll::largestMultiple(type, nranks);
  call.count = multiple <= 1 ? bytes * multiple : std::max<size_t>(1, bytes / multiple);
  return call;
}

std::vector<coll::Algo> scheduleAlgorithms(const coll::CollCall& call, const coll::PlanContext& ctx) {
  std::vector<coll::Algo> algos;
  for (const coll::AlgorithmRow& row : coll::algorithmTable())
    if (coll::serves(row, call.type) && row.build != nullptr && row.peersPerStep(ctx) <= ctx.maxStepPeers &&
        row.canRun(call, ctx, nullptr))
      algos.push_back(row.id);
  return algos;
}

CallStudy studyCall(const JobShape& shape, const TransportShape& transports, const coll::PlanContext& context,
                    const coll::CollCall& call, coll::Algo algo, const std::vector<int>& ranks) {
  // The planner itself, forced to `algo` as COLL_ALGO would: it sets the step size and refuses
  // an algorithm that cannot run here.
  coll::Algo overrides[static_cast<int>(coll::CollType::kCount)] = {};
  overrides[static_cast<int>(call.type)] = algo;
  coll::PlanContext ctx = context;
  ctx.overrides = overrides;
  const coll::Plan plan = coll::planCall(call, ctx);
  const coll::AlgorithmRow& row = coll::algorithmRow(algo);

  CallStudy study;
  study.algo = algo;
  study.modelUs = row.modelUs(call, context);
  study.eligible = row.eligible(call, context);
  auto trafficOf = [&](int rank) -> const RankTraffic& {
    auto it = study.traffic.find(rank);
    if (it == study.traffic.end()) {
      const coll::Schedule schedule = coll::buildSchedule(call, plan, rank, ctx);
      it = study.traffic.emplace(rank, walkSchedule(rank, shape.nranks, schedule, call.elemSize, transports.slotBytes))
               .first;
    }
    return it->second;
  };
  double peerSum = 0;
  for (int rank : ranks) {
    const RankTraffic& t = trafficOf(rank);  // std::map: stays valid while partners are added
    const Holdings h = lazyHoldings({&t}, shape, transports);
    ++study.examined;
    peerSum += h.peers;
    study.maxPeers = std::max(study.maxPeers, h.peers);
    study.maxNetPeers = std::max(study.maxNetPeers, h.netPeers);
    study.maxSendPeers = std::max(study.maxSendPeers, static_cast<int>(t.sends.size()));
    study.maxRecvPeers = std::max(study.maxRecvPeers, static_cast<int>(t.recvs.size()));
    study.maxMessages = std::max(study.maxMessages, t.messagesSent);
    study.maxBytes = std::max(study.maxBytes, t.bytesSent);
    study.maxSteps = std::max(study.maxSteps, t.steps);
    if (h.fifoBytes >= study.worstHoldings.fifoBytes) study.worstHoldings = h;
    for (int peer : partnersOf(t.sends)) addMismatch(t, trafficOf(peer), study.problems);
    for (int peer : partnersOf(t.recvs)) addMismatch(trafficOf(peer), t, study.problems);
  }
  study.meanPeers = study.examined > 0 ? peerSum / study.examined : 0;
  if (static_cast<int>(ranks.size()) == shape.nranks) {
    std::vector<uint64_t> leaving(static_cast<size_t>(shape.nhosts), 0);
    for (int rank : ranks)
      for (const PeerTraffic& p : study.traffic.at(rank).sends)
        if (!shape.sameHost(rank, p.peer)) leaving[static_cast<size_t>(shape.hostOf(rank))] += p.bytes;
    study.busiestHostNetBytes = *std::max_element(leaving.begin(), leaving.end());
  }
  return study;
}

}  // namespace collsim
