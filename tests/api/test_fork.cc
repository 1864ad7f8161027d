// Fork safety, as docs/security.md states it: a process may fork after collGetUniqueId and after
// init. The child must not use the parent's communicators (their sockets, shared memory and
// threads belong to the parent), but may make its own, and may join the parent's id as a rank.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collective.h"

namespace {

// Waits for the child up to `seconds`; kills it past that. Its exit status, or -1 when killed.
int waitChild(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One rank alone: an id, init, an all-reduce, destroy. 0 when every step worked.
int soloCommunicator() {
  collUniqueId id;
  collComm_t comm = nullptr;
  float value = 2.0f;
  if (collGetUniqueId(&id) != collSuccess || collCommInitRank(&comm, 1, id, 0) != collSuccess) return 1;
  if (collAllReduce(&value, &value, 1, collFloat32, collSum, comm, nullptr) != collSuccess || value != 2.0f) return 2;
  return collCommDestroy(comm) == collSuccess ? 0 : 3;
}

TEST(Fork, AfterUniqueIdTheChildJoinsTheParentsId) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);  // its server's thread runs in this process now
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    collComm_t comm = nullptr;
    float value = 1.0f;
    if (collCommInitRank(&comm, 2, id, 1) != collSuccess) _exit(1);
    if (collAllReduce(&value, &value, 1, collFloat32, collSum, comm, nullptr) != collSuccess || value != 3.0f) _exit(2);
    collCommDestroy(comm);
    _exit(soloCommunicator() == 0 ? 0 : 3);  // and one of its own
  }
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 2, id, 0), collSuccess) << collGetLastError(nullptr);
  float value = 2.0f;
  EXPECT_EQ(collAllReduce(&value, &value, 1, collFloat32, collSum, comm, nullptr), collSuccess);
  EXPECT_EQ(value, 3.0f);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
  EXPECT_EQ(waitChild(pid, 60), 0);
}

// A child that ends with exit() (static destruction runs) while the parent's id server runs: it
// must not stop or join the parent's server (before: it joined a thread it did not have).
TEST(Fork, AChildThatExitsNormallyLeavesTheParentsServerAlone) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) exit(soloCommunicator());
  EXPECT_EQ(waitChild(pid, 30), 0);
  // The parent's server still answers.
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess) << collGetLastError(nullptr);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
}

TEST(Fork, AfterInitBothSidesMakeNewCommunicators) {
  collUniqueId id;
  collComm_t comm = nullptr;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(soloCommunicator());  // not the parent's communicator: a new one
  float value = 5.0f;
  EXPECT_EQ(collAllReduce(&value, &value, 1, collFloat32, collSum, comm, nullptr), collSuccess);
  EXPECT_EQ(value, 5.0f);
  EXPECT_EQ(soloCommunicator(), 0);
  EXPECT_EQ(waitChild(pid, 60), 0);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
}

// The environment is read once per process, and again in a forked child: a child that sets a
// variable before its first communicator gets what it set (here a value init must refuse), and
// the parent keeps what it read.
TEST(Fork, TheChildReadsTheEnvironmentItSetItself) {
  ASSERT_EQ(soloCommunicator(), 0);  // the parent has read the environment
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("COLL_ONESHOT_BYTES", "1", 1);  // below the least it takes
    collUniqueId id;
    collComm_t comm = nullptr;
    if (collGetUniqueId(&id) != collSuccess) _exit(1);
    const collResult_t rc = collCommInitRank(&comm, 1, id, 0);
    if (rc == collSuccess) _exit(2);
    _exit(rc == collInvalidUsage && strstr(collGetLastError(nullptr), "COLL_ONESHOT_BYTES") != nullptr ? 0 : 3);
  }
  EXPECT_EQ(waitChild(pid, 60), 0) << "2: the child's init used its parent's reading; 3: another error";
  EXPECT_EQ(soloCommunicator(), 0);
}

}  // namespace
