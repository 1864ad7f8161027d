#include "comm_view.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collective.h"
#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/algorithms.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "src/plan/planner.h"
#include "topo/cpu_list.h"
#include "topo/json_writer.h"

namespace colltopo {
namespace {

// What each rank tells rank 0 about itself: fixed-size, so one all-gather carries it.
struct RankCard {
  char host[64];
  char cpus[96];
  char listens[64];
  int32_t pid;
};

std::string boundCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return coll::topo::formatCpuList(cpus);
}

void copyText(char* dst, size_t size, const std::string& text) { snprintf(dst, size, "%s", text.c_str()); }

const size_t kSizes[] = {8, 64 << 10, 1 << 20, 16 << 20, 64 << 20};

// The schedule rows of the algorithm table that serve all-reduce: their models are compared.
std::vector<coll::Algo> allReduceAlgos() {
  std::vector<coll::Algo> algos;
  for (const coll::AlgorithmRow& row : coll::algorithmTable())
    if (coll::serves(row, coll::CollType::kAllReduce) && row.build != nullptr) algos.push_back(row.id);
  return algos;
}

std::string plannedAllReduce(const coll::PlanContext& context, size_t bytes) {
  coll::CollCall call;
  call.type = coll::CollType::kAllReduce;
  call.count = bytes / 4;
  call.datatype = collFloat32;
  call.elemSize = 4;
  call.op = collSum;
  coll::Plan plan = coll::planCall(call, context);
  return coll::algoName(plan.algo);
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : " ") + std::to_string(r);
  return out;
}

void printText(const coll::Communicator& comm, const std::vector<RankCard>& cards) {
  int n = comm.nranks();
  const coll::PlanContext& ctx = comm.planContext();
  printf("communicator: %d ranks in %zu shared-memory group(s)", n, ctx.hosts.empty() ? 1 : ctx.hosts.size());
  if (ctx.crossesNetwork)
    printf(", the network between groups (%s: %.1f us, %.1f GB/s in the cost model)", ctx.networkLinkName.c_str(),
           ctx.networkLink.latencyUs, ctx.networkLink.bytesPerUs / 1000);
  printf("\n");
  const std::vector<int> groupOf = coll::algorithms::hostIndexOfRanks(ctx.hosts, n);
  printf("\nranks:\n  %-5s %-16s %-6s %-8s %-14s %s\n", "rank", "hostname", "group", "pid", "cpus", "listens on");
  for (int r = 0; r < n; ++r)
    printf("  %-5d %-16s %-6d %-8d %-14s %s\n", r, cards[r].host, groupOf[r], cards[r].pid, cards[r].cpus,
           cards[r].listens[0] ? cards[r].listens : "-");
  printf("\ntransport between ranks (row: from, column: to):\n      ");
  for (int b = 0; b < n; ++b) printf(" %5d", b);
  printf("\n");
  for (int a = 0; a < n; ++a) {
    printf("  %3d ", a);
    for (int b = 0; b < n; ++b) printf(" %5s", comm.transportBetween(a, b));
    printf("\n");
  }
  printf("\nhost groups (shared memory within, first rank leads in two-level all-reduce):\n");
  for (size_t h = 0; h < ctx.hosts.size(); ++h) printf("  group %zu: ranks %s\n", h, joinRanks(ctx.hosts[h]).c_str());
  printf("\nring order (host by host): %s\n", joinRanks(ctx.ringOrder).c_str());
  printf("binomial tree (rank 0 root): levels crossing groups: %d\n", ctx.treeNetLevels);
  for (int r = 0; r < n; ++r) printf("  %d -> parent %d\n", r, coll::algorithms::binomialParent(n, r, 0));
  printf("\nall-reduce plan (modelled microseconds per algorithm, and the planner's choice):\n  %-10s", "size");
  for (coll::Algo algo : allReduceAlgos()) printf(" %10s", coll::algoName(algo));
  printf("  %s\n", "chosen");
  for (size_t bytes : kSizes) {
    std::string chosen = plannedAllReduce(ctx, bytes);
    printf("  %-10zu", bytes);
    for (coll::Algo algo : allReduceAlgos()) printf(" %10.1f", coll::modelAllReduceUs(algo, bytes, ctx));
    printf("  %s\n", chosen.c_str());
  }
}

void printJson(const coll::Communicator& comm, const std::vector<RankCard>& cards) {
  int n = comm.nranks();
  const coll::PlanContext& ctx = comm.planContext();
  coll::topo::JsonWriter w;
  using Layout = coll::topo::JsonWriter::Layout;
  w.beginObject().field("nranks", n).field("crosses_network", ctx.crossesNetwork);
  w.field("network_link", ctx.networkLinkName);
  w.key("ranks").beginArray();
  for (int r = 0; r < n; ++r)
    w.beginObject(Layout::kInline)
        .field("rank", r)
        .field("host", std::string(cards[r].host))
        .field("pid", cards[r].pid)
        .field("cpus", std::string(cards[r].cpus))
        .field("listens", std::string(cards[r].listens))
        .endObject();
  w.endArray();
  w.key("transports").beginArray();
  for (int a = 0; a < n; ++a) {
    w.beginArray(Layout::kInline);
    for (int b = 0; b < n; ++b) w.value(comm.transportBetween(a, b));
    w.endArray();
  }
  w.endArray();
  w.key("host_groups").beginArray();
  for (const auto& host : ctx.hosts) {
    w.beginArray(Layout::kInline);
    for (int r : host) w.value(r);
    w.endArray();
  }
  w.endArray();
  w.key("ring_order").beginArray(Layout::kInline);
  for (int r : ctx.ringOrder) w.value(r);
  w.endArray();
  w.key("binomial_tree_parents").beginArray(Layout::kInline);
  for (int r = 0; r < n; ++r) w.value(coll::algorithms::binomialParent(n, r, 0));
  w.endArray();
  w.key("allreduce_plan").beginArray();
  for (size_t bytes : kSizes) {
    w.beginObject(Layout::kInline).field("bytes", bytes).field("chosen", plannedAllReduce(ctx, bytes));
    for (coll::Algo algo : allReduceAlgos())
      w.field(std::string(coll::algoName(algo)) + "_us",
              static_cast<long long>(coll::modelAllReduceUs(algo, bytes, ctx)));
    w.endObject();
  }
  w.endArray();
  w.endObject();
  fputs(w.str().c_str(), stdout);
}

}  // namespace

int printCommunicatorView(bool json) {
  collComm_t handle = nullptr;
  if (collCommInitFromEnv(&handle, nullptr) != collSuccess) {
    fprintf(stderr, "colltopo --comm: %s\n(run it under a launcher: collrun -n N colltopo --comm)\n",
            collGetLastError(nullptr));
    return 1;
  }
  coll::Communicator& comm = *coll::communicatorOf(handle);
  RankCard mine{};
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  copyText(mine.host, sizeof(mine.host), host);
  copyText(mine.cpus, sizeof(mine.cpus), boundCpus());
  copyText(mine.listens, sizeof(mine.listens), comm.addresses());
  mine.pid = static_cast<int32_t>(getpid());
  std::vector<RankCard> cards(comm.nranks());
  collResult_t rc = collAllGather(&mine, cards.data(), sizeof(RankCard), collUint8, handle, nullptr);
  if (rc != collSuccess) {
    fprintf(stderr, "colltopo --comm: %s\n", collGetLastError(handle));
    collCommDestroy(handle);
    return 1;
  }
  for (RankCard& card : cards) {  // peers' bytes: make sure every string ends
    card.host[sizeof(card.host) - 1] = card.cpus[sizeof(card.cpus) - 1] = card.listens[sizeof(card.listens) - 1] = 0;
  }
  if (comm.rank() == 0) json ? printJson(comm, cards) : printText(comm, cards);
  fflush(stdout);
  collCommDestroy(handle);
  return 0;
}

}  // namespace colltopo
