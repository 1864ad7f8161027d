// A launcher-started job on one host without COLL_STORE_SECRET (bootstrap/host_secret.h): its
// store listens on loopback only, under a random secret in a file only its user can read (before:
// it listened where MASTER_ADDR pointed, under an all-zero secret that any client could present).
// The same job seen from another network namespace is tests/multihost's "onehost" mode.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "bootstrap/host_secret.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/tcp_store.h"
#include "common/net_interfaces.h"
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

// This host's first non-loopback IPv4 address, or "" when it has none.
std::string externalAddress() {
  for (const InterfaceAddress& own : listInterfaces())
    if (!own.loopback && own.family == AF_INET) return own.address;
  return "";
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

// A one-host launch (LOCAL_WORLD_SIZE == WORLD_SIZE), no secret, files under a private TMPDIR.
class OneHostJob : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/coll-host-secret-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    tmp_ = folder;
    env_.set("TMPDIR", tmp_);
  }
  void TearDown() override { EXPECT_EQ(system(("rm -rf " + tmp_).c_str()), 0); }

  LaunchEnv rankEnv(int rank, int size, uint16_t port, const std::string& masterAddr) const {
    LaunchEnv env;
    env.rank = rank;
    env.size = size;
    env.localRank = rank;
    env.localSize = size;
    env.masterAddr = masterAddr;
    env.masterPort = port;
    env.source = "env";
    return env;
  }
  EnvGuard env_{{"COLL_STORE_SECRET", "COLL_STORE_ALLOW_NO_SECRET", "TMPDIR"}};
  std::string tmp_;
};

// The case: MASTER_ADDR is this host's network address and the launcher says every rank is
// local. The job runs; a client presenting the all-zero key is refused; nothing listens on the
// network address; the secret file is 0600 in a 0700 folder and goes with the job.
TEST_F(OneHostJob, WithoutASecretRunsOnLoopbackUnderARandomSecretOnlyItsUserCanRead) {
  const std::string external = externalAddress();
  const std::string master = external.empty() ? "127.0.0.1" : external;
  const uint16_t port = freePort();
  std::shared_ptr<Store> stores[3];
  std::thread late([&] { stores[1] = connectLaunchStore(rankEnv(1, 3, port, master), in(10000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stores[0] = connectLaunchStore(rankEnv(0, 3, port, master), in(10000));
  stores[2] = connectLaunchStore(rankEnv(2, 3, port, master), in(10000));
  late.join();
  ASSERT_TRUE(stores[1]);
  stores[2]->set("card", toBytes("rank 2"));
  EXPECT_EQ(toString(stores[1]->get("card", in(5000))), "rank 2");
  EXPECT_NE(stores[0]->secret(), Secret{}) << "the job runs under the all-zero secret";
  EXPECT_EQ(stores[1]->secret(), stores[0]->secret());

  const std::string message =
      expectCollError(collInvalidUsage, [&] { TcpStoreClient stranger("127.0.0.1", port, Secret{}, in(3000)); });
  EXPECT_NE(message.find("wrong secret"), std::string::npos) << message;
  if (!external.empty()) expectCollError(collTimeout, [&] { connectWithDeadline(external, port, in(300)); });

  const std::string path = hostSecretPath(port);
  EXPECT_EQ(path.rfind(tmp_ + "/libcollective-" + std::to_string(geteuid()) + "/", 0), 0u) << path;
  EXPECT_EQ(modeOf(path), 0600u) << path;
  EXPECT_EQ(modeOf(path.substr(0, path.rfind('/'))), 0700u);
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(parseHostSecret(text), std::optional<Secret>(stores[0]->secret()));
  for (auto& store : stores) store.reset();
  EXPECT_EQ(access(path.c_str(), F_OK), -1) << "rank 0 left " << path << " behind";
}

// A rank that starts first reads the file an earlier job left on this port; the store refuses
// that secret, and the rank reads the file again once rank 0 has replaced it.
TEST_F(OneHostJob, ARankThatReadsAnEarlierJobsFileJoinsWithTheNewOne) {
  const uint16_t port = freePort();
  const std::string path = hostSecretPath(port);
  {
    Secret stale{};
    stale.fill(0x11);
    HostSecretFile earlier(path, stale);
    ASSERT_EQ(link(path.c_str(), (path + ".kept").c_str()), 0);  // survives `earlier`
  }
  ASSERT_EQ(rename((path + ".kept").c_str(), path.c_str()), 0);
  std::shared_ptr<Store> rank1;
  std::string error;
  std::thread first([&] {
    try {
      rank1 = connectLaunchStore(rankEnv(1, 2, port, "127.0.0.1"), in(10000));
    } catch (const CollError& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto rank0 = connectLaunchStore(rankEnv(0, 2, port, "127.0.0.1"), in(10000));
  first.join();
  ASSERT_EQ(error, "");
  EXPECT_EQ(rank1->secret(), rank0->secret());
}

TEST_F(OneHostJob, AFolderOrFileOthersCouldUseIsRefused) {
  const uint16_t port = freePort();
  const std::string path = hostSecretPath(port);
  const std::string folder = path.substr(0, path.rfind('/'));
  ASSERT_EQ(mkdir(folder.c_str(), 0755), 0);
  ASSERT_EQ(chmod(folder.c_str(), 0755), 0);
  std::string message =
      expectCollError(collInvalidUsage, [&] { connectLaunchStore(rankEnv(0, 2, port, "127.0.0.1"), in(3000)); });
  EXPECT_NE(message.find(folder), std::string::npos) << message;
  EXPECT_NE(message.find("mode 755"), std::string::npos) << message;
  EXPECT_NE(message.find("COLL_STORE_SECRET"), std::string::npos) << message;
  ASSERT_EQ(chmod(folder.c_str(), 0700), 0);
  {
    std::ofstream file(path);
    file << formatHostSecret(Secret{});
  }
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  message = expectCollError(collInvalidUsage, [&] { readHostSecret(path, in(1000)); });
  EXPECT_NE(message.find("mode 644"), std::string::npos) << message;
}

// Another user (nobody) can neither read the file nor join with a key it could guess. Needs root
// to become another user.
TEST_F(OneHostJob, AnotherUserCannotReadTheSecretOrJoin) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: becoming another user needs root (uid " << geteuid() << ")";
  const uint16_t port = freePort();
  const std::string path = hostSecretPath(port);
  ASSERT_EQ(chmod(tmp_.c_str(), 0755), 0);  // mkdtemp's folder: let nobody reach the user's own
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  // Forked before this process starts the store's thread.
  const pid_t child = fork();
  if (child == 0) {
    char byte = 0;
    if (read(go[0], &byte, 1) != 1) _exit(5);
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
    if (open(path.c_str(), O_RDONLY) >= 0 || errno != EACCES) _exit(3);
    try {
      TcpStoreClient stranger("127.0.0.1", port, Secret{}, in(3000));
      _exit(4);
    } catch (const CollError&) {
    }
    _exit(0);
  }
  auto rank0 = connectLaunchStore(rankEnv(0, 2, port, "127.0.0.1"), in(10000));
  ASSERT_EQ(access(path.c_str(), F_OK), 0);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exit " << WEXITSTATUS(status) << " (2: could not become nobody, 3: read the file, 4: joined, 5: no go)";
}

TEST(HostSecret, TheFileHoldsSixtyFourHexDigitsAndANewline) {
  Secret secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(i * 37 + 1);
  const std::string text = formatHostSecret(secret);
  EXPECT_EQ(text.size(), 65u);
  EXPECT_EQ(parseHostSecret(text), std::optional<Secret>(secret));
  EXPECT_FALSE(parseHostSecret(text.substr(0, 64)));
  EXPECT_FALSE(parseHostSecret(text + "\n"));
  EXPECT_FALSE(parseHostSecret("g" + text.substr(1)));
  EXPECT_FALSE(parseHostSecret(""));
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
