// The socket transport's listeners flooded while a real job uses them (CMake runs this binary with
// COLL_TRANSPORTS=net, so every pair of ranks talks over sockets). Sockets open at first use:
// after init, every rank's listener gets 1,100 silent connections, re-opened as the listener
// closes them (tests/common/connection_flood.h), and only then do the ranks make their first
// collectives, whose dials must get through (before: the listener refused connections beyond
// 1024 in their handshake, the real peer's among them, and the first collective failed at once,
// with a warning line per refused connection).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "collective.h"
#include "common/socket.h"
#include "rank_launcher.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "tests/common/connection_flood.h"

namespace {

constexpr int kRanks = 3;
constexpr size_t kFloodPerListener = 1100;

// Where a rank's socket transport listens ("net 127.0.0.1:41235" in its addresses).
bool netListenerOf(collComm_t comm, std::string* host, uint16_t* port) {
  const std::string addresses = coll::communicatorOf(comm)->addresses();
  const size_t at = addresses.find("net ");
  if (at == std::string::npos) return false;
  const size_t end = addresses.find(',', at);
  return coll::splitHostPort(addresses.substr(at + 4, end == std::string::npos ? std::string::npos : end - at - 4),
                             host, port);
}

// The ranks hand their listeners to the flooding thread (rank 0's) and wait until the floods are up.
struct FloodBoard {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<std::string, uint16_t>> listeners{kRanks};
  int published = 0;
  bool floodsUp = false;
  std::vector<std::unique_ptr<colltest::ConnectionFlood>> floods;
};

std::vector<std::string> allReduceUnderFlood(FloodBoard& board, collComm_t comm, int rank) {
  const std::string me = "rank " + std::to_string(rank) + ": ";
  std::string host;
  uint16_t port = 0;
  if (!netListenerOf(comm, &host, &port))
    return {me + "no socket listener in " + coll::communicatorOf(comm)->addresses()};
  {
    std::unique_lock<std::mutex> lock(board.mutex);
    board.listeners[rank] = {host, port};
    ++board.published;
    board.changed.notify_all();
    if (rank == 0) {
      board.changed.wait(lock, [&] { return board.published == kRanks; });
      for (const auto& [floodHost, floodPort] : board.listeners)
        board.floods.push_back(std::make_unique<colltest::ConnectionFlood>(floodHost, floodPort, kFloodPerListener));
      for (auto& flood : board.floods)
        if (!flood->waitForOpened(kFloodPerListener, 30)) return {me + "a flood did not get going"};
      board.floodsUp = true;
      board.changed.notify_all();
    } else {
      board.changed.wait(lock, [&] { return board.floodsUp; });
    }
  }
  std::vector<float> data(1 << 16);
  for (int call = 0; call < 20; ++call) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(rank + 1 + call);
    if (collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr) != collSuccess)
      return {me + "all-reduce " + std::to_string(call) + " failed: " + collGetLastError(comm)};
    const float expected = static_cast<float>(kRanks * (kRanks + 1) / 2 + kRanks * call);
    if (data[0] != expected || data.back() != expected)
      return {me + "all-reduce " + std::to_string(call) + " gave " + std::to_string(data[0])};
  }
  return {};
}

size_t linesContaining(const std::string& text, const std::string& what) {
  size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines += line.find(what) != std::string::npos ? 1 : 0;
  return lines;
}

TEST(NetFlood, ListenersFloodedWithSilentConnectionsLetTheRealPeersConnect) {
  FloodBoard board;
  // A rank whose peer cannot connect fails; the others then wait for it no longer than this.
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 20000;
  ::testing::internal::CaptureStderr();
  const std::vector<std::string> failures = colltest::runAsThreads(
      kRanks, [&](collComm_t comm, int rank, int) { return allReduceUnderFlood(board, comm, rank); }, &config);
  uint64_t closed = 0;
  for (auto& flood : board.floods) {
    closed += flood->counters().closed.load();
    flood->stop();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  printf("the listeners closed %llu silent connections; %zu log lines\n", static_cast<unsigned long long>(closed),
         linesContaining(log, "[coll WARN]"));
  EXPECT_TRUE(failures.empty()) << colltest::joinFailures(failures);
  EXPECT_EQ(board.floods.size(), static_cast<size_t>(kRanks));
  EXPECT_LE(linesContaining(log, "[coll WARN]"), kRanks * 22u) << log.substr(0, 3000);
}

}  // namespace
