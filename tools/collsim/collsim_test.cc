// The simulator's checks on large jobs (docs/algorithms.md, "Large jobs, simulated"). Each test
// derives what it expects from the algorithms' definitions (a ring's neighbours, a binomial
// tree's parent and children, Bruck's distances), never from figures the tool printed:
//   - a rank's connections are exactly the peers its schedule uses, and both ends agree;
//   - peers per rank stay O(1) for rings and O(log n) for trees and Bruck;
//   - the bootstrap's O(log n) exchange costs a rank at most 2 log2(n) messages;
//   - the planner's choice is the cheapest by its own model.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/plan/planner.h"
#include "tools/collsim/survey.h"
#include "tools/collsim/tables.h"

namespace collsim {
namespace {

using coll::Algo;
using coll::CollType;

constexpr size_t kSmall = 8;
constexpr size_t kLarge = size_t{1} << 30;

int log2Ceil(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

std::set<int> peersOf(const std::vector<PeerTraffic>& list) {
  std::set<int> peers;
  for (const PeerTraffic& t : list) peers.insert(t.peer);
  return peers;
}

// The binomial tree over `n` members rooted at member 0: member v's parent clears v's lowest set
// bit; its children add each power of two below that bit (every power below n for the root).
std::set<int> binomialNeighbours(int v, int n) {
  std::set<int> peers;
  if (v > 0) peers.insert(v & (v - 1));
  const int limit = v == 0 ? n : (v & -v);
  for (int bit = 1; bit < limit && v + bit < n; bit <<= 1) peers.insert(v + bit);
  return peers;
}

struct Job {
  JobShape shape;
  TransportShape transports = defaultTransportShape();
  coll::PlanContext ctx;
  explicit Job(int n, int h) : shape{n, h}, ctx(planContextFor(shape, transports)) {}
  CallStudy study(CollType type, size_t bytes, Algo algo, int allUpTo = 1024) const {
    return studyCall(shape, transports, ctx, callOfBytes(type, bytes, shape.nranks), algo,
                     ranksToExamine(shape, allUpTo, 16));
  }
};

struct ExpectedPeers {
  std::set<int> sendTo, receiveFrom;
};

// Every examined rank's send and receive peers must equal `expected(rank)`, and both ends of every
// connection agree.
template <typename Expected>
void expectPeers(const CallStudy& study, const JobShape& shape, Expected expected) {
  EXPECT_TRUE(study.problems.empty()) << study.problems.front();
  for (int rank : ranksToExamine(shape, 1024, 16)) {
    const RankTraffic& t = study.traffic.at(rank);
    const ExpectedPeers want = expected(rank);
    EXPECT_EQ(peersOf(t.sends), want.sendTo)
        << coll::algoName(study.algo) << " rank " << rank << " of " << shape.nranks;
    EXPECT_EQ(peersOf(t.recvs), want.receiveFrom)
        << coll::algoName(study.algo) << " rank " << rank << " of " << shape.nranks;
  }
}

TEST(Connections, RingRankHoldsExactlyItsTwoNeighbours) {
  for (auto [n, h] : {std::pair{1024, 8}, {1024, 128}, {16384, 2048}}) {
    Job job(n, h);
    // Both sizes where the sample is small; all 1024 ranks' 1 GiB rings are walked by Messages.
    for (size_t bytes : n > 1024 ? std::vector<size_t>{kSmall, kLarge} : std::vector<size_t>{kSmall}) {
      CallStudy s = job.study(CollType::kAllReduce, bytes, Algo::kRing);
      // Ranks sit on hosts in blocks, so the host-ordered ring is rank order.
      expectPeers(s, job.shape, [n = n](int r) { return ExpectedPeers{{(r + 1) % n}, {(r + n - 1) % n}}; });
      EXPECT_EQ(s.maxPeers, 2);
      EXPECT_LE(s.maxNetPeers, 2);
    }
  }
}

TEST(Connections, BinomialTreeRankHoldsItsParentAndChildren) {
  for (auto [n, h] : {std::pair{1024, 8}, {2048, 512}, {16384, 64}}) {
    Job job(n, h);
    CallStudy s = job.study(CollType::kAllReduce, kSmall, Algo::kTree);
    // Up the tree and back down: the parent and the children both ways.
    expectPeers(s, job.shape, [n = n](int r) {
      return ExpectedPeers{binomialNeighbours(r, n), binomialNeighbours(r, n)};
    });
    EXPECT_EQ(s.maxPeers, log2Ceil(n));  // the root: one child per level
  }
}

TEST(Connections, TwoLevelRankHoldsItsHostTreeAndTheLeadersRing) {
  for (auto [n, h] : {std::pair{1024, 8}, {1024, 512}, {8192, 2048}}) {
    Job job(n, h);
    const int ppn = n / h;
    CallStudy s = job.study(CollType::kAllReduce, kLarge, Algo::kHier);
    expectPeers(s, job.shape, [ppn, h = h](int r) {
      const int host = r / ppn, first = host * ppn;
      ExpectedPeers peers;
      for (int local : binomialNeighbours(r - first, ppn)) peers.sendTo.insert(first + local);
      peers.receiveFrom = peers.sendTo;
      if (r == first && h > 1) {  // the leaders' ring
        peers.sendTo.insert((host + 1) % h * ppn);
        peers.receiveFrom.insert((host + h - 1) % h * ppn);
      }
      return peers;
    });
    EXPECT_LE(s.maxPeers, log2Ceil(ppn) + 2);
  }
}

TEST(Connections, DoubleTreeRankHoldsAtMostThreePeersPerTree) {
  for (auto [n, h] : {std::pair{1024, 64}, {4096, 512}}) {
    Job job(n, h);
    CallStudy s = job.study(CollType::kAllReduce, kLarge, Algo::kDoubleTree);
    EXPECT_TRUE(s.problems.empty()) << s.problems.front();
    EXPECT_LE(s.maxPeers, 6);
    EXPECT_GE(s.maxPeers, 3);  // some rank is inner in a tree
  }
}

TEST(Connections, BruckRankHoldsOnePeerEachWayPerDoubling) {
  for (auto [n, h] : {std::pair{1024, 8}, {3 * 1024, 3 * 64}, {16384, 2048}}) {
    Job job(n, h);
    CallStudy s = job.study(CollType::kAllGather, kSmall, Algo::kBruck);
    EXPECT_TRUE(s.problems.empty()) << s.problems.front();
    for (const auto& [rank, t] : s.traffic) {
      std::set<int> to, from;
      for (int d = 1; d < n; d *= 2) to.insert((rank - d + n) % n), from.insert((rank + d) % n);
      EXPECT_EQ(peersOf(t.sends), to) << "rank " << rank << " of " << n;
      EXPECT_EQ(peersOf(t.recvs), from) << "rank " << rank << " of " << n;
    }
    EXPECT_LE(s.maxPeers, 2 * log2Ceil(n));
  }
}

TEST(Connections, OneSidedConnectionIsCaught) {
  // Poison one end: an extra send the receiver's schedule never takes, then a short one.
  Job job(1024, 8);
  const coll::CollCall call = callOfBytes(CollType::kAllReduce, kSmall, 1024);
  const coll::Plan plan = coll::planCall(call, job.ctx);
  coll::Schedule s5 = coll::buildSchedule(call, plan, 5, job.ctx);
  const RankTraffic t6 =
      walkSchedule(6, 1024, coll::buildSchedule(call, plan, 6, job.ctx), 1, job.transports.slotBytes);
  const RankTraffic t9 =
      walkSchedule(9, 1024, coll::buildSchedule(call, plan, 9, job.ctx), 1, job.transports.slotBytes);
  EXPECT_EQ(connectionMismatch(walkSchedule(5, 1024, s5, 1, job.transports.slotBytes), t6), "");
  s5.add(1).sendTo(9);
  EXPECT_NE(connectionMismatch(walkSchedule(5, 1024, s5, 1, job.transports.slotBytes), t9), "");
  s5.steps.pop_back();
  s5.add(1).sendTo(6);
  EXPECT_NE(connectionMismatch(walkSchedule(5, 1024, s5, 1, job.transports.slotBytes), t6), "");
}

TEST(Connections, EverySurveyedCallUsesBothEndsOfEveryConnection) {
  // Every collective at both sizes, on a sample (every rank's peers are checked above): all-to-all
  // and gather make every rank a partner, which makes walking them all slow.
  SurveyOptions options;
  options.allRanksUpTo = 256;
  options.extraRanks = 8;
  for (auto [n, h] : {std::pair{1024, 8}, {2048, 2048}, {16384, 512}}) {
    if (n == 16384) options.sizes = {kSmall};  // its rings take the longest to build
    ShapeSurvey survey = surveyShape({n, h}, defaultTransportShape(), options);
    const std::vector<std::string> problems = survey.problems();
    EXPECT_TRUE(problems.empty()) << problems.front();
    // A lazy transport never holds more than today's eager one, and the planner's plans need
    // O(log n) peers, not n.
    EXPECT_LE(survey.lazyChosen.fifoBytes, survey.eager.fifoBytes);
    EXPECT_LE(survey.lazyChosen.peers, 2 * log2Ceil(n) + 4) << n << " ranks on " << h << " hosts";
  }
}

TEST(Memory, RingFifosAreTheNeighboursOnly) {
  // Rank r receives from r-1 and sends to r+1: a shared-memory FIFO of its own when r-1 shares
  // its host, a socket FIFO per direction that leaves the host.
  Job job(1024, 128);
  const TransportShape& tr = job.transports;
  CallStudy s = job.study(CollType::kAllReduce, kLarge, Algo::kRing);
  for (const auto& [r, t] : s.traffic) {
    const int prev = (r + 1023) % 1024, next = (r + 1) % 1024;
    const bool prevLocal = prev / 8 == r / 8, nextLocal = next / 8 == r / 8;
    const uint64_t want =
        tr.slotBytes * ((prevLocal ? tr.shmFifoDepth : tr.netFifoDepth) + (nextLocal ? 0 : tr.netFifoDepth));
    EXPECT_EQ(lazyHoldings({&t}, job.shape, tr).fifoBytes, want) << "rank " << r;
  }
  const Holdings eager = eagerHoldings(job.shape, tr);
  EXPECT_EQ(eager.peers, 1023);
  EXPECT_EQ(eager.sockets, (1024 - 8) * tr.socketsPerPeer);
}

TEST(Messages, RingSendsTwiceTheDataOverNInSlotSizedMessages) {
  Job job(1024, 8);
  CallStudy s = job.study(CollType::kAllReduce, kLarge, Algo::kRing);
  const uint64_t want = 2 * uint64_t{1023} * (kLarge / 1024);  // 2(n-1)/n of the data
  for (const auto& [rank, t] : s.traffic) {
    EXPECT_EQ(t.bytesSent, want) << "rank " << rank;
    EXPECT_EQ(t.messagesSent, want / job.transports.slotBytes) << "rank " << rank;  // 1 MiB blocks: whole slots
  }
  // One rank per host (its last) sends off the host, so the host's link carries one rank's share.
  EXPECT_EQ(s.busiestHostNetBytes, want);
}

TEST(Bootstrap, LogRoundsCostARankAtMostTwoLog2nMessages) {
  for (int n : {1024, 2048, 3000, 4096, 8192, 16384}) {
    const JobShape shape{n, 1};
    const BootstrapCost rounds = logRoundsAllGather(n, ranksToExamine(shape, 1024, 16));
    const int log2n = log2Ceil(n);
    EXPECT_EQ(rounds.rounds, log2n);
    EXPECT_LE(rounds.messagesPerRank, uint64_t(2 * log2n)) << n;
    EXPECT_LE(rounds.storeRequestsPerRank, uint64_t(1 + log2n)) << n;
    EXPECT_LE(rounds.peersPerRank, 2 * log2n) << n;
    EXPECT_EQ(rounds.blocksReceivedPerRank, uint64_t(n - 1)) << n;  // still every other rank's blob
    const BootstrapCost store = storeAllGather(n);
    EXPECT_EQ(store.storeRequestsTotal, uint64_t(n) * uint64_t(n));
    EXPECT_LT(rounds.storeRequestsTotal * 50, store.storeRequestsTotal) << n;
  }
}

TEST(Planner, ChoiceIsTheCheapestEligibleRowByItsOwnModel) {
  const TransportShape tr = defaultTransportShape();
  for (int n : {1024, 2048, 4096, 8192, 16384})
    for (int h : {8, 64, 512, 2048}) {
      if (h > n) continue;
      const coll::PlanContext ctx = planContextFor({n, h}, tr);
      for (size_t bytes : choiceSizes()) {
        const coll::CollCall call = callOfBytes(CollType::kAllReduce, bytes, n);
        const Algo chosen = coll::planCall(call, ctx).algo;
        const double chosenUs = coll::algorithmRow(chosen).modelUs(call, ctx);
        int candidates = 0;
        for (const coll::AlgorithmRow& row : coll::algorithmTable()) {
          if (row.selection != coll::Selection::kModel || !coll::serves(row, call.type) ||
              row.peersPerStep(ctx) > ctx.maxStepPeers || !row.canRun(call, ctx, nullptr) || !row.eligible(call, ctx))
            continue;
          ++candidates;
          EXPECT_LE(chosenUs, row.modelUs(call, ctx)) << n << " ranks on " << h << " hosts, " << bytes << " B: chose "
                                                      << coll::algoName(chosen) << " over " << row.name;
        }
        EXPECT_GE(candidates, 4) << "ring, dbtree, tree and hier are all candidates across hosts";
      }
    }
}

TEST(Shapes, BadShapeIsAnInvalidArgumentNamingIt) {
  for (auto [n, h] : {std::pair{1024, 0}, {8, 16}, {1000, 3}}) {
    try {
      checkShape({n, h});
      ADD_FAILURE() << n << " ranks on " << h << " hosts accepted";
    } catch (const coll::CollError& e) {
      EXPECT_EQ(e.code(), collInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " ranks on " + std::to_string(h) + " hosts"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace collsim
