// One rank of the multi-host tests (netns_cluster.sh starts it on each simulated host, through
// collrun or directly). It initializes from the launcher's environment and then:
//
//   multihost_rank cases   every collective x type x op x count x root x in-place against the
//                          independent reference, then the same on communicators split by host
//                          parity and by rank parity; exits 1 listing failures.
//   multihost_rank loop    all-reduces until a call fails (a link taken down, a host killed):
//                          prints "READY" after the first call and, on failure, one line
//                          "rank R: FAILED after T ms: <error>: <message>", then exits 3.
//                          A call must never hang: the launcher's deadline catches that.
//   multihost_rank probe HOST PORT
//                          no rank: a stranger who presents the all-zero key to the rendezvous
//                          store at HOST:PORT; prints "PROBE REFUSED: <why>" (exit 0) or, let in,
//                          "PROBE JOINED" (exit 1).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tcp_store.h"
#include "collective.h"
#include "collective_cases.h"
#include "common/error.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> runSplitCases(collComm_t world, int rank, int nranks, int color, const char* what) {
  collComm_t child = nullptr;
  std::vector<std::string> failures;
  if (collCommSplit(world, color, rank, &child, nullptr) != collSuccess) {
    failures.push_back(std::string("collCommSplit by ") + what + ": " + collGetLastError(world));
    return failures;
  }
  int childRank = 0, childSize = 0;
  collCommUserRank(child, &childRank);
  collCommCount(child, &childSize);
  for (const std::string& f :
       colltest::runCases(child, childRank, childSize, colltest::standardCases(childSize, false)))
    failures.push_back(std::string("split by ") + what + ": " + f);
  collCommDestroy(child);
  return failures;
}

int runAllCases(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures = colltest::runCases(comm, rank, nranks, colltest::standardCases(nranks, false));
  int node = 0;
  if (const char* nodeRank = getenv("NODE_RANK")) node = atoi(nodeRank);
  for (const std::string& f : runSplitCases(comm, rank, nranks, node % 2, "host parity")) failures.push_back(f);
  for (const std::string& f : runSplitCases(comm, rank, nranks, rank % 2, "rank parity")) failures.push_back(f);
  for (size_t i = 0; i < failures.size() && i < 20; ++i)
    fprintf(stderr, "rank %d: FAIL %s\n", rank, failures[i].c_str());
  printf("rank %d of %d: %zu case failure(s)\n", rank, nranks, failures.size());
  return failures.empty() ? 0 : 1;
}

int loopUntilFailure(collComm_t comm, int rank) {
  std::vector<float> data(1 << 18, 1.0f);
  auto start = Clock::now();
  for (long iteration = 0;; ++iteration) {
    collResult_t rc = collAllReduce(data.data(), data.data(), data.size(), collFloat32, collSum, comm, nullptr);
    if (rc != collSuccess) {
      long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      printf("rank %d: FAILED after %lld ms at iteration %ld: %s: %s\n", rank, ms, iteration, collGetErrorString(rc),
             collGetLastError(comm));
      fflush(stdout);
      _exit(3);  // the communicator is broken; do not wait for peers in destroy
    }
    if (iteration == 0) {
      printf("rank %d: READY\n", rank);
      fflush(stdout);
    }
    // Values stay bounded (they would overflow to inf after enough doublings otherwise).
    if (iteration % 16 == 15) std::fill(data.begin(), data.end(), 1.0f);
  }
}

int probeWithTheZeroKey(const char* host, const char* port) {
  try {
    coll::bootstrap::TcpStoreClient stranger(host, static_cast<uint16_t>(atoi(port)), coll::bootstrap::Secret{},
                                             coll::deadlineAfter(std::chrono::seconds(3)));
    stranger.set("probe/was-here", {1});
    printf("PROBE JOINED: the store at %s:%s took the all-zero key and a write\n", host, port);
    return 1;
  } catch (const coll::CollError& e) {
    printf("PROBE REFUSED: %s\n", e.what());
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "probe") == 0) return probeWithTheZeroKey(argv[2], argv[3]);
  if (argc != 2 || (strcmp(argv[1], "cases") != 0 && strcmp(argv[1], "loop") != 0)) {
    fprintf(stderr, "usage: %s cases|loop   (rank and rendezvous from the launcher's environment)\n", argv[0]);
    fprintf(stderr, "       %s probe HOST PORT\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  collComm_t comm = nullptr;
  collResult_t rc = collCommInitFromEnv(&comm, nullptr);
  if (rc != collSuccess) {
    fprintf(stderr, "collCommInitFromEnv: %s: %s\n", collGetErrorString(rc), collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, nranks = 0;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &nranks);
  int status = strcmp(argv[1], "cases") == 0 ? runAllCases(comm, rank, nranks) : loopUntilFailure(comm, rank);
  collCommDestroy(comm);
  return status;
}
