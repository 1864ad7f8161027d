// Sockets are opened at first use (transport/domain.h), so a rank can wait for a peer's dial long
// after init. It stops waiting as soon as the communicator's setup watch says a rank left the job
// (DomainArgs::setupWatch, which the health check consults while a connection is incomplete); a
// dial to a listener that is gone fails at once. Before the watch, both waited for the timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "transport/net/net_domain.h"

namespace coll {
namespace transport {
namespace {

using coll::Clock;

class NetSetupWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    peers_.resize(2);
    for (int r = 0; r < 2; ++r) peers_[r].rank = r;
    settings_.netFifoDepth = 4;
    settings_.slotBytes = 4096;
    settings_.timeoutMs = 30000;
    settings_.socketsPerPeer = 1;
    settings_.jobSecret.fill(0x17);
  }
  // Rank `rank` of 2 whose watch throws once `left_` is set (as the store's departure notice would).
  DomainArgs argsFor(int rank) {
    DomainArgs args;
    args.rank = rank;
    args.nranks = 2;
    args.peers = &peers_;
    args.members = {1 - rank};
    args.settings = &settings_;
    args.setupWatch = [this](const std::vector<int>& awaited) {
      ++watched_;
      lastAwaited_ = awaited;
      bool waitedFor = std::find(awaited.begin(), awaited.end(), gone_) != awaited.end();
      if (left_.load() && waitedFor)
        throwError(collRemoteError, "rank %d lost its connection to the rendezvous store", gone_);
    };
    return args;
  }
  // Sets up `domain`, asks for its connection to `peer`, and runs health checks (as the
  // executor's waits do) while another thread sets `left_` after 300 ms; returns the error the
  // checks ended with and, in *seconds, how long it took.
  std::string checkUntilTheWatchFires(NetDomain& domain, const std::vector<std::string>& cards, int peer,
                                      double* seconds) {
    std::thread leaver([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      left_.store(true);
    });
    const auto start = Clock::now();
    std::string error = "no error within 30 s";
    try {
      domain.connect(0, cards, coll::deadlineAfter(std::chrono::seconds(30)));
      domain.useDoorbell(&bell_);
      domain.sendConnection(peer);
      while (Clock::now() - start < std::chrono::seconds(30)) {
        domain.progressOnce();
        domain.checkPeers();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collRemoteError);
      error = e.what();
    }
    *seconds = std::chrono::duration<double>(Clock::now() - start).count();
    leaver.join();
    return error;
  }

  Doorbell bell_;
  std::vector<PeerInfo> peers_;
  TransportSettings settings_;
  std::atomic<bool> left_{false};
  std::atomic<int> watched_{0};
  std::vector<int> lastAwaited_;  // what the last watch was asked about
  int gone_ = -1;
};

TEST_F(NetSetupWatchTest, AListenerStopsWaitingForADiallerThatLeft) {
  NetDomain listener(argsFor(0));
  gone_ = 1;
  const std::string card = listener.card(0);
  double seconds = 0;
  const std::string error = checkUntilTheWatchFires(listener, {card, ""}, 1, &seconds);
  EXPECT_NE(error.find("rank 1 lost its connection to the rendezvous store"), std::string::npos) << error;
  EXPECT_LT(seconds, 2.0) << error;
  EXPECT_GE(watched_.load(), 1);
}

TEST_F(NetSetupWatchTest, ADialToAListenerThatLeftFailsAtOnce) {
  std::string card;
  {
    NetDomain gone(argsFor(0));
    card = gone.card(0);
  }  // its listener is closed: a connect to the card's port is refused
  NetDomain dialler(argsFor(1));
  gone_ = 0;
  double seconds = 0;
  const std::string error = checkUntilTheWatchFires(dialler, {card, dialler.card(0)}, 0, &seconds);
  EXPECT_NE(error.find("socket connection to rank 0"), std::string::npos) << error;
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_LT(seconds, 0.3) << "the refusal waited for the watch: " << error;
}

TEST_F(NetSetupWatchTest, ARankThatLeftButIsNotAwaitedDoesNotStopTheWait) {
  // After init, a rank that finished and destroyed its communicator has left the store as well:
  // a connection waiting for another rank's dial must go on waiting.
  NetDomain listener(argsFor(0));
  gone_ = 5;
  left_.store(true);
  std::string error;
  try {
    listener.connect(0, {listener.card(0), ""}, coll::deadlineAfter(std::chrono::seconds(30)));
    listener.useDoorbell(&bell_);
    listener.sendConnection(1);
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::milliseconds(1200)) {
      listener.progressOnce();
      listener.checkPeers();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const CollError& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "");
  EXPECT_GE(watched_.load(), 1);
  EXPECT_EQ(lastAwaited_, std::vector<int>{1}) << "the watch should be asked about the rank whose dial is awaited";
}

}  // namespace
}  // namespace transport
}  // namespace coll
