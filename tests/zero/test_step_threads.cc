// The threads of the host optimizer step (zero/step_threads.h): how a shard is cut, that the
// pieces really run on other threads, that two callers at once and a forked process each get
// their pieces run, and where the thread count comes from. A program of its own, without the
// optimizer cases (their half-precision helpers need GCC), so that tools/sanitize.sh runs it under
// ThreadSanitizer; test_optimizer_step.cc checks that any count gives one thread's bits.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "zero/step_threads.h"

namespace {
namespace steptest {
using coll::zero::forEachPiece;
using coll::zero::kElementsPerThread;

struct Piece {
  size_t begin, end;
  std::thread::id thread;
};

std::vector<Piece> piecesOf(size_t count, int threads, size_t alignment) {
  std::mutex mutex;
  std::vector<Piece> pieces;
  forEachPiece(count, threads, alignment, [&](size_t begin, size_t end) {
    // Long enough that the helpers wake before the caller could run every piece itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mutex);
    pieces.push_back({begin, end, std::this_thread::get_id()});
  });
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  return pieces;
}

TEST(StepThreads, PiecesCoverTheShardOnceAlignedAndRunOnSeveralThreads) {
  const size_t count = 5 * kElementsPerThread + 12345;
  const std::vector<Piece> pieces = piecesOf(count, 4, 1024);
  ASSERT_EQ(pieces.size(), 4u);
  size_t next = 0;
  std::set<std::thread::id> threads;
  for (const Piece& p : pieces) {
    EXPECT_EQ(p.begin, next);
    EXPECT_EQ(p.begin % 1024, 0u) << p.begin;
    EXPECT_LT(p.begin, p.end);
    next = p.end;
    threads.insert(p.thread);
  }
  EXPECT_EQ(next, count);
  EXPECT_GT(threads.size(), 1u) << "every piece ran on one thread";
}

TEST(StepThreads, AShardTooSmallToShareRunsWholeOnTheCallingThread) {
  for (size_t count : {size_t(0), size_t(1), 2 * kElementsPerThread - 1}) {
    const std::vector<Piece> pieces = piecesOf(count, 8, 1024);
    ASSERT_EQ(pieces.size(), 1u) << count;
    EXPECT_EQ(pieces[0].begin, 0u);
    EXPECT_EQ(pieces[0].end, count);
    EXPECT_EQ(pieces[0].thread, std::this_thread::get_id());
  }
  // At most one piece per kElementsPerThread elements, whatever the threads asked for.
  EXPECT_EQ(piecesOf(3 * kElementsPerThread, 8, 1024).size(), 3u);
}

// Writes piece-dependent values into out with `threads` threads; "" when every element holds its own.
std::string fillWith(int threads, std::vector<uint32_t>& out) {
  forEachPiece(out.size(), threads, 64, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = uint32_t(i * 2654435761u);
  });
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != uint32_t(i * 2654435761u)) return "element " + std::to_string(i) + " not written";
  return "";
}

TEST(StepThreads, TwoCallersAtOnceEachGetTheirPiecesRun) {
  std::vector<std::string> problems(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round) {
        std::vector<uint32_t> out(4 * kElementsPerThread + 99 * size_t(c + round), 0);
        problems[c] += fillWith(4, out);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(problems[0], "");
  EXPECT_EQ(problems[1], "");
}

TEST(StepThreads, AForkedProcessRunsEveryPieceWithoutTheParentsHelpers) {
  std::vector<uint32_t> out(4 * kElementsPerThread, 0);
  ASSERT_EQ(fillWith(4, out), "");  // the helpers exist now
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);  // a call waiting on helpers or locks the fork did not bring would hang here
    std::vector<uint32_t> again(4 * kElementsPerThread, 0);
    _exit(fillWith(4, again).empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// Sets or clears the variables for one check, and puts them back.
class ThreadVariables {
 public:
  ThreadVariables(const char* zeroThreads, const char* ompThreads) {
    for (auto& [name, value] : saved_) {
      const char* old = std::getenv(name);
      value = old == nullptr ? "" : old;
      unsetenv(name);
    }
    if (zeroThreads != nullptr) setenv("COLL_ZERO_THREADS", zeroThreads, 1);
    if (ompThreads != nullptr) setenv("OMP_NUM_THREADS", ompThreads, 1);
  }
  ~ThreadVariables() {
    for (const auto& [name, value] : saved_) {
      if (value.empty()) {
        unsetenv(name);
      } else {
        setenv(name, value.c_str(), 1);
      }
    }
  }

 private:
  std::pair<const char*, std::string> saved_[2] = {{"COLL_ZERO_THREADS", ""}, {"OMP_NUM_THREADS", ""}};
};

int threadsWith(const char* zeroThreads, const char* ompThreads) {
  ThreadVariables variables(zeroThreads, ompThreads);
  return coll::zero::readStepThreads();
}

TEST(StepThreads, TheCountComesFromCollZeroThreadsThenOpenMpsVariable) {
  EXPECT_EQ(threadsWith(nullptr, nullptr), 1);
  EXPECT_EQ(threadsWith(nullptr, "6"), 6);
  EXPECT_EQ(threadsWith(nullptr, "8,2"), 8);  // OpenMP's nested levels: the outermost
  EXPECT_EQ(threadsWith("3", "6"), 3);
  EXPECT_EQ(threadsWith("", "6"), 6);  // empty is unset
  for (const char* refused : {"0", "-2", "four", "4x"}) EXPECT_EQ(threadsWith(nullptr, refused), 1) << refused;
  EXPECT_EQ(threadsWith(nullptr, "100000"), 256);
}

TEST(StepThreads, ABadCollZeroThreadsIsRefusedNamingIt) {
  for (const char* bad : {"0", "257", "two"}) {
    ThreadVariables variables(bad, "4");
    try {
      coll::zero::readStepThreads();
      ADD_FAILURE() << "COLL_ZERO_THREADS=" << bad << " was taken";
    } catch (const coll::CollError& e) {
      EXPECT_NE(std::string(e.what()).find("COLL_ZERO_THREADS"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace steptest
}  // namespace
