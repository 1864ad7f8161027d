// A hang explains itself: one rank skips one collective; every rank's output names that rank and
// that call within the timeout plus 2 s, and colltrace over the ranks' dumps prints the same line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"
#include "rank_job.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimeoutMs = 4000;
constexpr int kSkipper = 3;
// What every rank must print: rank 3 stayed out of all-reduce #3 (1024 floats) after #2.
const char* const kLine =
    "ranks 0-2 wait in all_reduce #3 (4 KiB float); rank 3 last completed #2 and is in no call";

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool fileHas(const std::string& path, const char* text) {
  FILE* file = fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  std::string all;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), file)) > 0) all.append(buffer, got);
  fclose(file);
  return all.find(text) != std::string::npos;
}

// Whether this process's own stderr (a file: rank_job.h) holds `text` yet.
bool ownOutputHas(const char* text) { return fileHas("/proc/self/fd/2", text); }

std::vector<std::string> skipOneCollective(collComm_t comm, int rank) {
  std::vector<std::string> failures;
  std::vector<float> data(1024, 1.0f);
  for (int call = 1; call <= 2; ++call)
    if (collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr) != collSuccess)
      return {failure(rank, std::string("call ") + std::to_string(call) + ": " + collGetLastError(comm))};
  const auto start = Clock::now();
  const double limit = kTimeoutMs / 1000.0 + 2.0;
  if (rank == kSkipper) {
    // Stays out of call #3, and watches its own output for the report the others send.
    while (!ownOutputHas(kLine) && secondsSince(start) < limit + 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double seen = secondsSince(start);
    if (seen > limit) failures.push_back(failure(rank, "the hang line reached this rank after " + std::to_string(seen) + " s"));
  } else {
    collResult_t rc = collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr);
    const double took = secondsSince(start);
    const std::string message = collGetLastError(comm);
    if (rc == collSuccess) failures.push_back(failure(rank, "call #3 succeeded without rank 3"));
    if (took > limit) failures.push_back(failure(rank, "call #3 returned after " + std::to_string(took) + " s"));
    // A rank whose peer timed out first fails with that peer's error; its output has the line.
    if (rc == collTimeout && message.find(kLine) == std::string::npos)
      failures.push_back(failure(rank, "the timeout's message lacks the hang line: " + message));
    if (!ownOutputHas(kLine)) failures.push_back(failure(rank, "its output lacks the hang line"));
  }
  collCommDestroy(comm);
  return failures;
}

std::string runCommand(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  *status = pclose(pipe);
  return output;
}

TEST(Hang, EveryRankNamesTheRankAndTheCallAndColltraceAgrees) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = kTimeoutMs;
  char pattern[] = "/tmp/colltrace-test.XXXXXX";
  const std::string traces = mkdtemp(pattern);
  RankJob job(
      4, [](collComm_t comm, int rank, int, SharedBoard&) { return skipOneCollective(comm, rank); },
      // 1.5 s for the peers' answers: a loaded machine (CI runs two tests at once) may be slow to
      // schedule a watcher, and the report still comes before the timeout plus 2 s (design value).
      {"COLL_TRACE_DIR=" + traces, "COLL_TRACE_PROBE_MS=1500"}, &config);
  auto failures = job.wait(90);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(job.output(r).find(kLine), std::string::npos) << "rank " << r << ":\n" << job.output(r);
    if (getenv("COLLFT_SHOW_OUTPUT") != nullptr) printf("---- rank %d\n%s", r, job.output(r).c_str());
  }

  int status = -1;
  const std::string printed = runCommand(std::string(COLLTRACE_PATH) + " " + traces + " 2>&1", &status);
  EXPECT_EQ(status, 0) << printed;
  EXPECT_NE(printed.find(kLine), std::string::npos) << printed;
  if (getenv("COLLFT_SHOW_OUTPUT") != nullptr) printf("---- colltrace\n%s", printed.c_str());
  const std::string cleanup = "rm -rf '" + traces + "'";
  EXPECT_EQ(system(cleanup.c_str()), 0);
}

}  // namespace
}  // namespace colltest

namespace colltest {
namespace {

// SIGUSR1 (COLL_TRACE_DUMP_ON=signal) dumps every communicator within about a second,
// collCommDumpTrace writes where it is told, and collCommAbort dumps; all are traces colltrace
// reads.
std::vector<std::string> dumpOnRequest(collComm_t comm, int rank, const std::string& traces) {
  std::vector<std::string> failures;
  float value = 1.0f;
  for (int i = 0; i < 3; ++i) collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr);
  const std::string mine = traces + "/api.rank" + std::to_string(rank) + ".txt";
  if (collCommDumpTrace(comm, mine.c_str()) != collSuccess || !fileHas(mine, "state=completed"))
    failures.push_back(failure(rank, std::string("collCommDumpTrace: ") + collGetLastError(comm)));
  kill(getpid(), SIGUSR1);
  const auto start = Clock::now();
  auto dumped = [&] {
    std::string command = "grep -l 'rank=" + std::to_string(rank) + " .*reason=signal' " + traces +
                          "/colltrace.*.txt >/dev/null 2>&1";
    return system(command.c_str()) == 0;
  };
  while (!dumped() && secondsSince(start) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!dumped()) failures.push_back(failure(rank, "no dump 10 s after SIGUSR1"));
  collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr);  // nobody leaves before the others dumped
  // collCommAbort dumps too (COLL_TRACE_DUMP_ON has abort): rank 1's last record is the call above.
  if (rank == 1) {
    collCommAbort(comm);
    std::string command = "grep -l 'rank=1 .*reason=abort' " + traces + "/colltrace.*.txt >/dev/null 2>&1";
    if (system(command.c_str()) != 0) failures.push_back(failure(rank, "no dump on collCommAbort"));
  } else {
    collCommDestroy(comm);
  }
  return failures;
}

TEST(FlightRecorder, DumpsOnSigusr1OnRequestAndOnAbort) {
  char pattern[] = "/tmp/colltrace-signal.XXXXXX";
  const std::string traces = mkdtemp(pattern);
  RankJob job(
      2, [&](collComm_t comm, int rank, int, SharedBoard&) { return dumpOnRequest(comm, rank, traces); },
      {"COLL_TRACE_DIR=" + traces, "COLL_TRACE_DUMP_ON=signal,abort"});
  auto failures = job.wait(60);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
  int status = -1;
  const std::string printed = runCommand(std::string(COLLTRACE_PATH) + " --calls 2 " + traces + " 2>&1", &status);
  // Rank 0's newest dump is the signal's, after call #3; rank 1's the abort's, after #4.
  EXPECT_NE(printed.find("rank 0 last completed #3 and is in no call; rank 1 last completed #4 and is in no call"),
            std::string::npos)
      << printed;
  const std::string cleanup = "rm -rf '" + traces + "'";
  EXPECT_EQ(system(cleanup.c_str()), 0);
}

}  // namespace
}  // namespace colltest
