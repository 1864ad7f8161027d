#include <gtest/gtest.h>

#include <thread>

#include "bootstrap/launch_env.h"
#include "common/hmac.h"
#include "common/socket.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::EnvGuard;
using testing::expectCollError;
using testing::freePort;
using testing::in;
using testing::toBytes;
using testing::toString;

const std::vector<std::string> kLaunchVars = {"COLL_BOOTSTRAP",
                                              "RANK",
                                              "WORLD_SIZE",
                                              "LOCAL_RANK",
                                              "LOCAL_WORLD_SIZE",
                                              "MASTER_ADDR",
                                              "MASTER_PORT",
                                              "OMPI_COMM_WORLD_RANK",
                                              "OMPI_COMM_WORLD_SIZE",
                                              "OMPI_COMM_WORLD_LOCAL_RANK",
                                              "OMPI_COMM_WORLD_LOCAL_SIZE",
                                              "PMI_RANK",
                                              "PMI_SIZE",
                                              "MPI_LOCALRANKID",
                                              "MPI_LOCALNRANKS",
                                              "SLURM_PROCID",
                                              "SLURM_NTASKS",
                                              "SLURM_LOCALID",
                                              "SLURM_NODEID",
                                              "SLURM_TASKS_PER_NODE",
                                              "SLURM_LAUNCH_NODE_IPADDR",
                                              "COLL_STORE_SECRET",
                                              "COLL_STORE_ALLOW_NO_SECRET"};

class LaunchEnvTest : public ::testing::Test {
 protected:
  EnvGuard env_{kLaunchVars};

  void setMaster() {
    env_.set("MASTER_ADDR", "10.1.2.3");
    env_.set("MASTER_PORT", "29500");
  }
  std::string expectUsageError() {
    return expectCollError(collInvalidUsage, [] { detectLaunchEnv(); });
  }
};

TEST_F(LaunchEnvTest, TorchrunStyleVariables) {
  env_.set("RANK", "3");
  env_.set("WORLD_SIZE", "8");
  env_.set("LOCAL_RANK", "1");
  env_.set("LOCAL_WORLD_SIZE", "4");
  setMaster();
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "env");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_EQ(e.localSize, 4);
  EXPECT_EQ(e.masterAddr, "10.1.2.3");
  EXPECT_EQ(e.masterPort, 29500);
}

TEST_F(LaunchEnvTest, EnvTakesPrecedenceOverMpiAndSlurm) {
  env_.set("RANK", "0");
  env_.set("WORLD_SIZE", "2");
  env_.set("OMPI_COMM_WORLD_RANK", "1");
  env_.set("OMPI_COMM_WORLD_SIZE", "4");
  env_.set("SLURM_PROCID", "2");
  env_.set("SLURM_NTASKS", "5");
  setMaster();
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "env");
  EXPECT_EQ(e.size, 2);
  EXPECT_EQ(e.localRank, -1);  // not given
  EXPECT_EQ(e.localSize, -1);
}

TEST_F(LaunchEnvTest, OpenMpiVariables) {
  env_.set("OMPI_COMM_WORLD_RANK", "5");
  env_.set("OMPI_COMM_WORLD_SIZE", "6");
  env_.set("OMPI_COMM_WORLD_LOCAL_RANK", "2");
  env_.set("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
  env_.set("SLURM_PROCID", "0");
  env_.set("SLURM_NTASKS", "1");
  setMaster();
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "mpi");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.size, 6);
  EXPECT_EQ(e.localRank, 2);
  EXPECT_EQ(e.localSize, 3);
}

TEST_F(LaunchEnvTest, PmiVariables) {
  env_.set("PMI_RANK", "1");
  env_.set("PMI_SIZE", "2");
  env_.set("MPI_LOCALRANKID", "1");
  env_.set("MPI_LOCALNRANKS", "2");
  setMaster();
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "mpi");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.size, 2);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_EQ(e.localSize, 2);
}

TEST_F(LaunchEnvTest, SlurmVariablesWithLaunchNodeAsDefaultMaster) {
  env_.set("SLURM_PROCID", "9");
  env_.set("SLURM_NTASKS", "11");
  env_.set("SLURM_LOCALID", "1");
  env_.set("SLURM_NODEID", "2");
  env_.set("SLURM_TASKS_PER_NODE", "4(x2),3");
  env_.set("SLURM_LAUNCH_NODE_IPADDR", "10.9.9.9");
  env_.set("MASTER_PORT", "12345");
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.rank, 9);
  EXPECT_EQ(e.size, 11);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_EQ(e.localSize, 3);
  EXPECT_EQ(e.masterAddr, "10.9.9.9");
  EXPECT_EQ(e.masterPort, 12345);
  env_.set("MASTER_ADDR", "10.1.1.1");  // an explicit MASTER_ADDR wins
  EXPECT_EQ(detectLaunchEnv().masterAddr, "10.1.1.1");
  env_.set("SLURM_TASKS_PER_NODE", "4(x2");  // malformed: local size unknown, not an error
  EXPECT_EQ(detectLaunchEnv().localSize, -1);
}

TEST_F(LaunchEnvTest, CollBootstrapForcesASource) {
  env_.set("RANK", "0");
  env_.set("WORLD_SIZE", "1");
  env_.set("SLURM_PROCID", "3");
  env_.set("SLURM_NTASKS", "4");
  setMaster();
  env_.set("COLL_BOOTSTRAP", "slurm");
  LaunchEnv e = detectLaunchEnv();
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.rank, 3);
  env_.set("COLL_BOOTSTRAP", "mpi");
  std::string message = expectUsageError();
  EXPECT_NE(message.find("OMPI_COMM_WORLD_RANK and PMI_RANK are not set"), std::string::npos) << message;
  env_.set("COLL_BOOTSTRAP", "pmix");
  message = expectUsageError();
  EXPECT_NE(message.find("COLL_BOOTSTRAP='pmix'"), std::string::npos) << message;
}

TEST_F(LaunchEnvTest, NothingSetNamesTheWaysToLaunch) {
  std::string message = expectUsageError();
  EXPECT_NE(message.find("collCommInitFromEnv: RANK and WORLD_SIZE are not set; launch with collrun, torchrun, "
                         "mpirun -x MASTER_ADDR -x MASTER_PORT, or srun, or set RANK, WORLD_SIZE, MASTER_ADDR and "
                         "MASTER_PORT"),
            std::string::npos)
      << message;
}

TEST_F(LaunchEnvTest, MissingVariablesAreNamed) {
  env_.set("RANK", "0");
  std::string message = expectUsageError();
  EXPECT_NE(message.find("WORLD_SIZE is not set; launch with"), std::string::npos) << message;
  env_.set("WORLD_SIZE", "2");
  message = expectUsageError();
  EXPECT_NE(message.find("MASTER_ADDR is not set"), std::string::npos) << message;
  env_.set("MASTER_ADDR", "localhost");
  message = expectUsageError();
  EXPECT_NE(message.find("MASTER_PORT is not set"), std::string::npos) << message;
  env_.set("MASTER_PORT", "");  // empty counts as unset
  message = expectUsageError();
  EXPECT_NE(message.find("MASTER_PORT is not set"), std::string::npos) << message;
  env_.set("MASTER_PORT", "1");
  EXPECT_EQ(detectLaunchEnv().masterPort, 1);
}

TEST_F(LaunchEnvTest, MalformedAndOutOfRangeValues) {
  setMaster();
  env_.set("WORLD_SIZE", "4");
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  for (const Case& c :
       {Case{"RANK", "abc", "RANK='abc' is not an integer"}, Case{"RANK", "1x", "RANK='1x'"},
        Case{"RANK", "-1", "RANK=-1 is outside"}, Case{"RANK", "4", "rank 4"}, Case{"RANK", "99999999999", "RANK="},
        Case{"MASTER_PORT", "0", "MASTER_PORT=0 is outside"}, Case{"MASTER_PORT", "65536", "MASTER_PORT=65536"},
        Case{"LOCAL_RANK", "x", "LOCAL_RANK='x'"}, Case{"WORLD_SIZE", "0", "WORLD_SIZE=0 is outside"}}) {
    env_.set("RANK", "1");
    env_.set("WORLD_SIZE", "4");
    env_.set("MASTER_PORT", "29500");
    env_.set("LOCAL_RANK", "0");
    env_.set(c.name, c.value);
    std::string message = expectUsageError();
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << "=" << c.value << ": " << message;
  }
  env_.set("RANK", "1");
  env_.set("WORLD_SIZE", "4");
  env_.set("LOCAL_RANK", "2");
  env_.set("LOCAL_WORLD_SIZE", "2");
  std::string message = expectUsageError();
  EXPECT_NE(message.find("local rank 2"), std::string::npos) << message;
}

TEST_F(LaunchEnvTest, LaunchSecretIsAKeyedHashOfCollStoreSecret) {
  EXPECT_EQ(launchSecret(), Secret{});
  env_.set("COLL_STORE_SECRET", "job-1234");
  Secret a = launchSecret();
  EXPECT_EQ(a, launchSecret());
  EXPECT_NE(a, Secret{});
  env_.set("COLL_STORE_SECRET", "job-1235");
  Secret b = launchSecret();
  EXPECT_NE(a, b);
  // The four 8-byte words differ from each other (the expansion is not one word repeated).
  EXPECT_NE(std::vector<uint8_t>(b.begin(), b.begin() + 8), std::vector<uint8_t>(b.begin() + 8, b.begin() + 16));
  // HMAC-SHA256 keyed with the version label, computed independently of launchSecret.
  static const char kLabel[] = "libcollective COLL_STORE_SECRET v2";
  const Digest256 expected = hmacSha256({kLabel, sizeof(kLabel) - 1}, {{"job-1235", 8}});
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), b.begin()));
}

// A job that may span hosts never runs without a secret unless the user opts out by name.
TEST_F(LaunchEnvTest, MultiHostJobWithoutASecretIsRefusedUnlessTheUserOptsOut) {
  LaunchEnv env;
  env.rank = 1;
  env.size = 4;
  env.localSize = 2;  // two hosts
  env.masterAddr = "10.1.2.3";
  env.masterPort = 29500;
  EXPECT_TRUE(launchSpansHosts(env));
  std::string message = expectCollError(collInvalidUsage, [&] { checkLaunchSecretPolicy(env); });
  for (const char* fragment : {"COLL_STORE_SECRET is not set", "collrun --new-secret", "COLL_STORE_ALLOW_NO_SECRET=1",
                               "4 ranks, 2 on this host", "MASTER_ADDR=10.1.2.3"})
    EXPECT_NE(message.find(fragment), std::string::npos) << fragment << ": " << message;
  // The launcher said nothing about local ranks: the job may span hosts.
  env.localSize = -1;
  expectCollError(collInvalidUsage, [&] { checkLaunchSecretPolicy(env); });
  // An explicit opt-out runs (rank 0 logs a WARN), and so does any secret.
  env_.set("COLL_STORE_ALLOW_NO_SECRET", "1");
  checkLaunchSecretPolicy(env);
  env_.set("COLL_STORE_ALLOW_NO_SECRET", "yes");  // only "1" opts out
  expectCollError(collInvalidUsage, [&] { checkLaunchSecretPolicy(env); });
  env_.set("COLL_STORE_SECRET", "0123456789abcdef");
  checkLaunchSecretPolicy(env);
}

TEST_F(LaunchEnvTest, OneHostJobsNeedNoSecret) {
  LaunchEnv env;
  env.size = 4;
  env.localSize = 4;
  env.masterAddr = "10.1.2.3";
  EXPECT_FALSE(launchSpansHosts(env));
  checkLaunchSecretPolicy(env);
  env.localSize = -1;  // unknown, but the store is on loopback: no other host can reach it
  env.masterAddr = "127.0.0.1";
  EXPECT_FALSE(launchSpansHosts(env));
  checkLaunchSecretPolicy(env);
}

LaunchEnv localEnv(int rank, int size, uint16_t port) {
  LaunchEnv e;
  e.rank = rank;
  e.size = size;
  e.masterAddr = "127.0.0.1";
  e.masterPort = port;
  e.source = "env";
  return e;
}

TEST_F(LaunchEnvTest, RankZeroHostsTheStoreAndEveryoneConnects) {
  env_.set("COLL_STORE_SECRET", "shared");
  uint16_t port = freePort();
  std::shared_ptr<Store> stores[3];
  // Ranks 1 and 2 start first: they retry until rank 0's server is up.
  std::thread r1([&] { stores[1] = connectLaunchStore(localEnv(1, 3, port), in(5000)); });
  std::thread r2([&] { stores[2] = connectLaunchStore(localEnv(2, 3, port), in(5000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stores[0] = connectLaunchStore(localEnv(0, 3, port), in(5000));
  r1.join();
  r2.join();
  ASSERT_TRUE(stores[1] && stores[2]);
  stores[2]->set("from2", toBytes("x"));
  EXPECT_EQ(toString(stores[0]->get("from2", in(2000))), "x");
  EXPECT_EQ(stores[1]->add("n", 1) + stores[0]->add("n", 1), 3);

  // A rank of another job (other secret) is refused by rank 0's store.
  env_.set("COLL_STORE_SECRET", "other-job");
  std::string message = expectCollError(collInvalidUsage, [&] { connectLaunchStore(localEnv(1, 3, port), in(2000)); });
  EXPECT_NE(message.find("wrong secret"), std::string::npos) << message;

  // Rank 0's store owns the server: once it is gone, the others see the connection close.
  stores[0].reset();
  expectCollError(collRemoteError, [&] { stores[1]->get("never", in(3000)); });
}

TEST(LaunchStoreBindHost, ListensWhereMasterAddrPoints) {
  const std::vector<InterfaceAddress> interfaces = listInterfaces();
  // A loopback literal: loopback only, whatever the launcher says about nodes.
  EXPECT_EQ(launchStoreBindHost("127.0.0.1", true, interfaces), "127.0.0.1");
  EXPECT_EQ(launchStoreBindHost("127.0.0.1", false, interfaces), "127.0.0.1");
  EXPECT_EQ(launchStoreBindHost("::1", false, interfaces), "::1");
  // A name that resolves to loopback here: loopback for a single-node job; every interface for a
  // multi-node one, whose other nodes may resolve it to this host's real address.
  const std::string local = launchStoreBindHost("localhost", true, interfaces);
  EXPECT_TRUE(local == "127.0.0.1" || local == "::1") << local;
  EXPECT_EQ(launchStoreBindHost("localhost", false, interfaces), "");
  // One of this host's interface addresses: that address.
  for (const InterfaceAddress& own : interfaces) {
    if (own.loopback || own.family != AF_INET) continue;
    EXPECT_EQ(launchStoreBindHost(own.address, false, interfaces), own.address);
  }
  // Not this host's (TEST-NET-1), or not resolvable: every interface.
  EXPECT_EQ(launchStoreBindHost("192.0.2.1", false, interfaces), "");
  EXPECT_EQ(launchStoreBindHost("no-such-host.invalid", true, interfaces), "");
}

// A single-node job's store (MASTER_ADDR=127.0.0.1) cannot be reached from another host: it does
// not listen on this host's external addresses. (Before, it listened on every interface.)
TEST_F(LaunchEnvTest, SingleNodeStoreIsNotReachableFromOutside) {
  std::string external;
  for (const InterfaceAddress& own : listInterfaces())
    if (!own.loopback && own.family == AF_INET) external = own.address;
  if (external.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address to try from";
  env_.set("COLL_STORE_SECRET", "shared");
  const uint16_t port = freePort();
  auto store = connectLaunchStore(localEnv(0, 1, port), in(5000));
  store->set("k", toBytes("v"));
  expectCollError(collTimeout, [&] { connectWithDeadline(external, port, in(300)); });
}

TEST_F(LaunchEnvTest, RankZeroReportsABusyPort) {
  Fd busy = listenOn("", 0);
  uint16_t port = localAddressOf(busy.get()).port();
  std::string message = expectCollError(collSystemError, [&] { connectLaunchStore(localEnv(0, 2, port), in(500)); });
  EXPECT_NE(message.find("MASTER_PORT=" + std::to_string(port)), std::string::npos) << message;
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
