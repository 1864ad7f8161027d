// shrink_after_kill: the time from a SIGKILL to a working shrunk communicator (docs/performance.md,
// "Surviving a lost rank"). Each round starts N ranks (processes that init from the environment,
// rank 0 hosting the store, as under collrun), lets the survivors block in an all-reduce the
// victim never joins, kills the victim, and times on every survivor: the failure noticed, the
// shrink returned, and the first all-reduce on the shrunk communicator done. It prints each round
// and the medians over rounds of the slowest survivor's times.
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"

namespace {

constexpr int kMaxRanks = 256;

struct Board {
  std::atomic<int> ready[kMaxRanks];
  std::atomic<int64_t> noticed[kMaxRanks], shrunk[kMaxRanks], working[kMaxRanks];
  std::atomic<int> failed;
};

struct Options {
  int ranks = 4;
  int victim = -1;  // default: ranks / 2
  int rounds = 5;
  int timeoutMs = 60000;
};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void usage(FILE* out) {
  fprintf(out,
          "usage: shrink_after_kill [--ranks N] [--victim R] [--rounds K] [--timeout-ms T]\n"
          "  Starts N ranks as processes on this host (rank 0 hosts the rendezvous store, as under\n"
          "  collrun), kills rank R (default N/2; 0 loses the store's host) while the others wait in\n"
          "  an all-reduce, and times on every survivor: kill -> failure noticed, kill -> shrink\n"
          "  returned, kill -> first all-reduce on the shrunk communicator done. K rounds (default 5),\n"
          "  each with fresh processes; prints each round and the medians of the slowest survivor.\n"
          "  Settings of the library (COLL_TRANSPORTS, COLL_AGREE_TIMEOUT_MS, ...) come from the\n"
          "  environment. N is at most %d.\n",
          kMaxRanks);
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](int* out) {
      if (i + 1 >= argc) return false;
      *out = atoi(argv[++i]);
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      exit(0);
    }
    bool ok = arg == "--ranks"        ? value(&o->ranks)
              : arg == "--victim"     ? value(&o->victim)
              : arg == "--rounds"     ? value(&o->rounds)
              : arg == "--timeout-ms" ? value(&o->timeoutMs)
                                      : false;
    if (!ok) return false;
  }
  if (o->victim < 0) o->victim = o->ranks / 2;
  return o->ranks >= 2 && o->ranks <= kMaxRanks && o->victim < o->ranks && o->rounds >= 1;
}

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

// One rank of a round: init, one all-reduce with everyone, then wait in an all-reduce the victim
// never joins; after the failure, shrink and all-reduce on the shrunk communicator.
int rankMain(const Options& o, int rank, Board& board) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = o.timeoutMs;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm, &config) != collSuccess) {
    fprintf(stderr, "rank %d: init: %s\n", rank, collGetLastError(nullptr));
    return 1;
  }
  float value = 1.0f;
  if (collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr) != collSuccess) return 1;
  board.ready[rank].store(1);
  if (rank == o.victim) pause();  // until the SIGKILL
  collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr);
  board.noticed[rank].store(nowNs());
  collComm_t shrunk = nullptr;
  if (collCommShrink(comm, nullptr, 0, &shrunk, nullptr, COLL_SHRINK_ABORT) != collSuccess) {
    fprintf(stderr, "rank %d: shrink: %s\n", rank, collGetLastError(comm));
    board.failed.store(1);
    return 1;
  }
  board.shrunk[rank].store(nowNs());
  value = 1.0f;
  if (collAllReduce(&value, &value, 1, collFloat, collSum, shrunk, nullptr) != collSuccess ||
      value != static_cast<float>(o.ranks - 1)) {
    fprintf(stderr, "rank %d: the shrunk communicator's all-reduce: %s\n", rank, collGetLastError(shrunk));
    board.failed.store(1);
    return 1;
  }
  board.working[rank].store(nowNs());
  collCommDestroy(shrunk);
  collCommDestroy(comm);
  return 0;
}

struct Round {
  double noticedMs, shrunkMs, workingMs;  // the slowest survivor's, from the kill
};

bool runRound(const Options& o, Board& board, Round* out) {
  memset(static_cast<void*>(&board), 0, sizeof(Board));
  const std::string port = std::to_string(freePort());
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      setenv("COLL_DEBUG", "NONE", 0);  // the table alone, unless asked
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      _exit(rankMain(o, r, board));
    }
    pids.push_back(pid);
  }
  auto allReady = [&] {
    for (int r = 0; r < o.ranks; ++r)
      if (board.ready[r].load() == 0) return false;
    return true;
  };
  while (!allReady() && board.failed.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Let the survivors settle into their wait (asleep on their doorbells, as a real job would be).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t killedAt = nowNs();
  kill(pids[o.victim], SIGKILL);
  bool ok = true;
  for (int r = 0; r < o.ranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (r != o.victim && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) ok = false;
  }
  if (!ok || board.failed.load()) return false;
  *out = {0, 0, 0};
  for (int r = 0; r < o.ranks; ++r) {
    if (r == o.victim) continue;
    out->noticedMs = std::max(out->noticedMs, (board.noticed[r].load() - killedAt) / 1e6);
    out->shrunkMs = std::max(out->shrunkMs, (board.shrunk[r].load() - killedAt) / 1e6);
    out->workingMs = std::max(out->workingMs, (board.working[r].load() - killedAt) / 1e6);
  }
  return true;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  void* page = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  Board& board = *static_cast<Board*>(page);
  printf("# shrink_after_kill: %d ranks, victim rank %d, %d rounds\n", o.ranks, o.victim, o.rounds);
  printf("# round  noticed_ms  shrunk_ms  working_ms   (kill -> the slowest survivor's)\n");
  std::vector<double> noticed, shrunk, working;
  for (int round = 0; round < o.rounds; ++round) {
    Round r;
    if (!runRound(o, board, &r)) {
      fprintf(stderr, "shrink_after_kill: round %d failed (a survivor's output above says why)\n", round);
      return 1;
    }
    printf("%7d  %10.1f  %9.1f  %10.1f\n", round, r.noticedMs, r.shrunkMs, r.workingMs);
    fflush(stdout);
    noticed.push_back(r.noticedMs);
    shrunk.push_back(r.shrunkMs);
    working.push_back(r.workingMs);
  }
  printf("# median  %10.1f  %9.1f  %10.1f   ms, %d ranks\n", median(noticed), median(shrunk), median(working),
         o.ranks);
  return 0;
}
