#include "bootstrap/launch_env.h"

#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bootstrap/host_secret.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "common/hmac.h"
#include "common/list_spec.h"
#include "common/logging.h"
#include "common/socket.h"

namespace coll {
namespace bootstrap {

namespace {

// A one-host job's store (connectOneHostStore) needs no network.
const char* const kLoopback = "127.0.0.1";
// How long a rank whose secret the store refused waits for rank 0 to replace a stale file.
constexpr auto kStaleSecretGrace = std::chrono::seconds(5);

const char* const kLaunchHint =
    "; launch with collrun, torchrun, mpirun -x MASTER_ADDR -x MASTER_PORT, or srun, or set RANK, WORLD_SIZE, "
    "MASTER_ADDR and MASTER_PORT";

// Unset and empty mean the same: launch scripts often export VAR= to clear a value.
const char* envValue(const char* name) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

[[noreturn]] void notSet(const std::string& what) {
  throwError(collInvalidUsage, "collCommInitFromEnv: %s not set%s", what.c_str(), kLaunchHint);
}

int parseInt(const char* name, const char* text, long min, long max) {
  char* end = nullptr;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    throwError(collInvalidUsage, "collCommInitFromEnv: %s='%s' is not an integer%s", name, text, kLaunchHint);
  }
  if (value < min || value > max) {
    throwError(collInvalidUsage, "collCommInitFromEnv: %s=%ld is outside [%ld, %ld]", name, value, min, max);
  }
  return static_cast<int>(value);
}

int requireInt(const char* name, long min, long max) {
  const char* text = envValue(name);
  if (text == nullptr) notSet(std::string(name) + " is");
  return parseInt(name, text, min, max);
}

int optionalInt(const char* name, long min, long max) {
  const char* text = envValue(name);
  return text == nullptr ? -1 : parseInt(name, text, min, max);
}

// SLURM_TASKS_PER_NODE is a run-length list such as "4(x2),3": nodes 0-1 run 4 tasks, node 2
// runs 3. Returns the count for `node`, or -1 when the list is malformed or too short.
int slurmTasksOnNode(const std::string& spec, int node) {
  int first = 0;
  for (const std::string& item : splitList(spec)) {
    char* rest = nullptr;
    long tasks = strtol(item.c_str(), &rest, 10);
    long repeat = 1;
    if (rest == item.c_str() || tasks < 1) return -1;
    if (*rest == '(') {
      if (rest[1] != 'x') return -1;
      char* close = nullptr;
      repeat = strtol(rest + 2, &close, 10);
      if (repeat < 1 || close == nullptr || strcmp(close, ")") != 0) return -1;
    } else if (*rest != '\0') {
      return -1;
    }
    if (node < first + repeat) return tasks > INT_MAX ? -1 : static_cast<int>(tasks);
    first += static_cast<int>(std::min<long>(repeat, INT_MAX - first));
  }
  return -1;
}

LaunchEnv readEnvSource() {
  LaunchEnv env;
  env.source = "env";
  env.size = requireInt("WORLD_SIZE", 1, INT_MAX);
  env.rank = requireInt("RANK", 0, INT_MAX);
  env.localRank = optionalInt("LOCAL_RANK", 0, INT_MAX);
  env.localSize = optionalInt("LOCAL_WORLD_SIZE", 1, INT_MAX);
  return env;
}

LaunchEnv readMpiSource() {
  LaunchEnv env;
  env.source = "mpi";
  if (envValue("OMPI_COMM_WORLD_RANK") != nullptr || envValue("OMPI_COMM_WORLD_SIZE") != nullptr) {
    env.size = requireInt("OMPI_COMM_WORLD_SIZE", 1, INT_MAX);
    env.rank = requireInt("OMPI_COMM_WORLD_RANK", 0, INT_MAX);
    env.localRank = optionalInt("OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX);
    env.localSize = optionalInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1, INT_MAX);
  } else if (envValue("PMI_RANK") != nullptr || envValue("PMI_SIZE") != nullptr) {
    // MPICH and Intel MPI (Hydra).
    env.size = requireInt("PMI_SIZE", 1, INT_MAX);
    env.rank = requireInt("PMI_RANK", 0, INT_MAX);
    env.localRank = optionalInt("MPI_LOCALRANKID", 0, INT_MAX);
    env.localSize = optionalInt("MPI_LOCALNRANKS", 1, INT_MAX);
  } else {
    notSet("COLL_BOOTSTRAP=mpi but OMPI_COMM_WORLD_RANK and PMI_RANK are");
  }
  return env;
}

LaunchEnv readSlurmSource() {
  LaunchEnv env;
  env.source = "slurm";
  env.size = requireInt("SLURM_NTASKS", 1, INT_MAX);
  env.rank = requireInt("SLURM_PROCID", 0, INT_MAX);
  env.localRank = optionalInt("SLURM_LOCALID", 0, INT_MAX);
  const char* perNode = envValue("SLURM_TASKS_PER_NODE");
  int node = optionalInt("SLURM_NODEID", 0, INT_MAX);
  if (perNode != nullptr && node >= 0) env.localSize = slurmTasksOnNode(perNode, node);
  return env;
}

std::string chooseSource() {
  if (const char* forced = envValue("COLL_BOOTSTRAP")) {
    for (const char* name : {"env", "mpi", "slurm"}) {
      if (strcasecmp(forced, name) == 0) return name;
    }
    throwError(collInvalidUsage, "collCommInitFromEnv: COLL_BOOTSTRAP='%s' is not one of env, mpi, slurm", forced);
  }
  if (envValue("RANK") != nullptr || envValue("WORLD_SIZE") != nullptr) return "env";
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"}) {
    if (envValue(name) != nullptr) return "mpi";
  }
  if (envValue("SLURM_PROCID") != nullptr) return "slurm";
  notSet("RANK and WORLD_SIZE are");
}

// Keeps rank 0's server (and a one-host job's secret file) alive exactly as long as the store
// handed to the communicator.
class ServerOwningStore : public Store {
 public:
  ServerOwningStore(std::unique_ptr<TcpStoreServer> server, std::shared_ptr<Store> client,
                    std::unique_ptr<HostSecretFile> secretFile = nullptr)
      : server_(std::move(server)), secretFile_(std::move(secretFile)), client_(std::move(client)) {}
  void set(const std::string& key, const Bytes& value) override { client_->set(key, value); }
  Bytes get(const std::string& key, Deadline deadline) override { return client_->get(key, deadline); }
  int64_t add(const std::string& key, int64_t delta) override { return client_->add(key, delta); }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override { client_->wait(keys, deadline); }
  bool check(const std::vector<std::string>& keys) override { return client_->check(keys); }
  // Forwarded like every other call: the socket transport and the ranks' bootstrap exchange listen
  // where rank 0 reaches its own store, as every other rank does.
  std::string localAddress() const override { return client_->localAddress(); }
  Secret secret() const override { return client_->secret(); }
  void setOnDisconnect(const std::string& key, const Bytes& value) override { client_->setOnDisconnect(key, value); }
  bool ownsServer() const override { return true; }

 private:
  // Declared first so it is destroyed last, after the client's connection is closed.
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<HostSecretFile> secretFile_;
  std::shared_ptr<Store> client_;
};

// Rank 0's store on bindHost:MASTER_PORT, or an error that says the port is taken.
std::unique_ptr<TcpStoreServer> startLaunchStore(const std::string& bindHost, const LaunchEnv& env,
                                                 const Secret& secret) {
  try {
    return std::make_unique<TcpStoreServer>(bindHost, static_cast<uint16_t>(env.masterPort), secret);
  } catch (const CollError& e) {
    throwError(e.code(),
               "collCommInitFromEnv: rank 0 cannot host the rendezvous store on MASTER_PORT=%d: %s "
               "(is another job or an earlier run using this port?)",
               env.masterPort, e.what());
  }
}

// The secret in `path` once it differs from `stale`, or `stale` when it has not changed by `until`.
Secret hostSecretChangedFrom(const std::string& path, const Secret& stale, Deadline until) {
  for (;;) {
    try {
      const Secret now = readHostSecret(path, Clock::now());
      if (now != stale) return now;
    } catch (const CollError& e) {
      if (e.code() != collTimeout) throw;
    }
    if (Clock::now() >= until) return stale;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A job on this host alone with no COLL_STORE_SECRET (host_secret.h): the store listens on
// loopback, under a random secret that rank 0 leaves in a file only this user can read.
std::shared_ptr<Store> connectOneHostStore(const LaunchEnv& env, Deadline deadline) {
  const auto port = static_cast<uint16_t>(env.masterPort);
  const std::string path = hostSecretPath(env.masterPort);
  if (env.rank == 0) {
    const Secret secret = randomSecret();
    COLL_INFO(kBootstrap, "rendezvous store: a one-host job without COLL_STORE_SECRET, listening on %s:%d only",
              kLoopback, env.masterPort);
    std::unique_ptr<TcpStoreServer> server = startLaunchStore(kLoopback, env, secret);
    auto file = std::make_unique<HostSecretFile>(path, secret);
    auto client = std::make_shared<TcpStoreClient>(kLoopback, port, secret, deadline);
    return std::make_shared<ServerOwningStore>(std::move(server), std::move(client), std::move(file));
  }
  Secret secret = readHostSecret(path, deadline);
  for (;;) {
    try {
      return std::make_shared<TcpStoreClient>(kLoopback, port, secret, deadline);
    } catch (const CollError& e) {
      if (e.code() != collInvalidUsage) throw;
      // Read before rank 0 replaced an earlier job's file: the store holds the new one.
      const Secret again = hostSecretChangedFrom(path, secret, std::min(deadline, Clock::now() + kStaleSecretGrace));
      if (again == secret) throw;
      secret = again;
    }
  }
}

}  // namespace

LaunchEnv detectLaunchEnv() {
  std::string source = chooseSource();
  LaunchEnv env = source == "env" ? readEnvSource() : source == "mpi" ? readMpiSource() : readSlurmSource();
  if (env.rank >= env.size) {
    throwError(collInvalidUsage, "collCommInitFromEnv: rank %d (from the %s launcher variables) is outside [0, %d)",
               env.rank, source.c_str(), env.size);
  }
  if (env.localRank >= 0 && env.localSize > 0 && env.localRank >= env.localSize) {
    throwError(collInvalidUsage, "collCommInitFromEnv: local rank %d is outside [0, local size %d)", env.localRank,
               env.localSize);
  }
  const char* addr = envValue("MASTER_ADDR");
  if (addr == nullptr && source == "slurm") addr = envValue("SLURM_LAUNCH_NODE_IPADDR");
  if (addr == nullptr) notSet("MASTER_ADDR is");
  env.masterAddr = addr;
  env.masterPort = requireInt("MASTER_PORT", 1, 65535);
  COLL_INFO(kBootstrap, "launch environment (%s): rank %d of %d, local %d of %d, store %s:%d", source.c_str(), env.rank,
            env.size, env.localRank, env.localSize, env.masterAddr.c_str(), env.masterPort);
  return env;
}

Secret launchSecret() {
  Secret secret{};
  const char* text = envValue("COLL_STORE_SECRET");
  if (text == nullptr) return secret;
  // Any string becomes 32 key bytes the same way on every rank. The result is exactly as hard to
  // guess as the string: collrun makes 32 random bytes (64 hex digits), and so should scripts.
  static const char kLabel[] = "libcollective COLL_STORE_SECRET v2";
  const Digest256 derived = hmacSha256({kLabel, sizeof(kLabel) - 1}, {{text, strlen(text)}});
  std::copy(derived.begin(), derived.end(), secret.begin());
  return secret;
}

bool launchSpansHosts(const LaunchEnv& env) {
  if (env.localSize > 0 && env.localSize == env.size) return false;
  // A loopback MASTER_ADDR is reachable from this host only: whatever the launcher said (or did
  // not say) about local ranks, the job cannot span hosts.
  try {
    for (const SocketAddress& address : resolveAddresses(env.masterAddr, 0))
      if (!address.isLoopback()) return true;
    return false;
  } catch (const CollError&) {
    return true;  // the client's connect says what is wrong with the name
  }
}

void checkLaunchSecretPolicy(const LaunchEnv& env) {
  if (envValue("COLL_STORE_SECRET") != nullptr || !launchSpansHosts(env)) return;
  const char* optOut = envValue("COLL_STORE_ALLOW_NO_SECRET");
  if (optOut != nullptr && strcmp(optOut, "1") == 0) {
    if (env.rank == 0) {
      COLL_WARN(kBootstrap,
                "COLL_STORE_ALLOW_NO_SECRET=1: this job spans hosts and runs WITHOUT authentication: anyone who can "
                "reach %s:%d can join it, read its connection details and write its rendezvous keys",
                env.masterAddr.c_str(), env.masterPort);
    }
    return;
  }
  throwError(collInvalidUsage,
             "collCommInitFromEnv: this job's ranks may span hosts (%d ranks, %d on this host, MASTER_ADDR=%s) and "
             "COLL_STORE_SECRET is not set, so anyone who can reach MASTER_ADDR:MASTER_PORT could join it. Give every "
             "rank the same secret: `export COLL_STORE_SECRET=$(collrun --new-secret)` before mpirun -x "
             "COLL_STORE_SECRET, srun or torchrun (collrun --nnodes passes it to its ranks, or reads it with "
             "--secret-file FILE). To run without authentication anyway, set COLL_STORE_ALLOW_NO_SECRET=1",
             env.size, env.localSize, env.masterAddr.c_str());
}

std::string launchStoreBindHost(const std::string& masterAddr, bool singleNode,
                                const std::vector<InterfaceAddress>& interfaces) {
  std::vector<SocketAddress> resolved;
  try {
    resolved = resolveAddresses(masterAddr, 0);
  } catch (const CollError&) {
    return "";  // the client's connect says what is wrong with the name
  }
  for (const SocketAddress& address : resolved) {
    const std::string host = address.host();
    if (address.isLoopback()) {
      // A loopback literal reaches this host only, from anywhere; a name, only what it resolves to here.
      if (singleNode || masterAddr == host) return host;
      continue;
    }
    for (const InterfaceAddress& own : interfaces)
      if (own.address == host) return host;
  }
  return "";
}

std::shared_ptr<Store> connectLaunchStore(const LaunchEnv& env, Deadline deadline) {
  if (env.masterPort < 1 || env.masterPort > 65535) {
    throwError(collInvalidArgument, "connectLaunchStore: MASTER_PORT=%d is outside [1, 65535]", env.masterPort);
  }
  checkLaunchSecretPolicy(env);
  if (envValue("COLL_STORE_SECRET") == nullptr && !launchSpansHosts(env)) return connectOneHostStore(env, deadline);
  const Secret secret = launchSecret();
  const auto port = static_cast<uint16_t>(env.masterPort);
  std::unique_ptr<TcpStoreServer> server;
  if (env.rank == 0) {
    const bool singleNode = env.localSize == env.size;
    const std::string bindHost = launchStoreBindHost(env.masterAddr, singleNode, listInterfaces());
    COLL_INFO(kBootstrap, "rendezvous store: MASTER_ADDR=%s, listening on %s", env.masterAddr.c_str(),
              bindHost.empty() ? "every interface (MASTER_ADDR is not one of this host's addresses)" : bindHost.c_str());
    server = startLaunchStore(bindHost, env, secret);
  }
  auto client = std::make_shared<TcpStoreClient>(env.masterAddr, port, secret, deadline);
  if (!server) return client;
  return std::make_shared<ServerOwningStore>(std::move(server), std::move(client));
}

}  // namespace bootstrap
}  // namespace coll
