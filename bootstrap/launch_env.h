// Where collCommInitFromEnv learns rank, size and the rendezvous address: the variables that
// launchers set (collrun and torchrun, mpirun, srun).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "common/net_interfaces.h"

namespace coll {
namespace bootstrap {

struct LaunchEnv {
  int rank = 0;
  int size = 0;
  int localRank = -1;  // -1 when the launcher did not say
  int localSize = -1;  // -1 when the launcher did not say
  std::string masterAddr;
  int masterPort = 0;
  std::string source;  // "env", "mpi" or "slurm"
};

// Reads, by precedence: RANK/WORLD_SIZE (+LOCAL_RANK/LOCAL_WORLD_SIZE) ("env", set by collrun
// and torchrun); OMPI_COMM_WORLD_RANK/_SIZE (+_LOCAL_RANK/_LOCAL_SIZE), else PMI_RANK/PMI_SIZE
// (+MPI_LOCALRANKID/MPI_LOCALNRANKS) ("mpi"); SLURM_PROCID/SLURM_NTASKS (+SLURM_LOCALID, and the
// local size from SLURM_TASKS_PER_NODE and SLURM_NODEID) ("slurm"). COLL_BOOTSTRAP=env|mpi|slurm
// forces one source. Every source needs MASTER_ADDR and MASTER_PORT; Slurm's MASTER_ADDR
// defaults to SLURM_LAUNCH_NODE_IPADDR. Throws collInvalidUsage for a missing, malformed or
// out-of-range value, naming the variable.
LaunchEnv detectLaunchEnv();

// The secret launcher-started ranks share: COLL_STORE_SECRET through HMAC-SHA256 to 32 bytes, or
// all zeros when unset, which only a job that may span hosts with COLL_STORE_ALLOW_NO_SECRET=1
// uses (a one-host job without it gets a random one: host_secret.h).
Secret launchSecret();

// Whether the job's ranks may run on more than one host: the launcher did not say that every
// rank is local, and MASTER_ADDR is not a loopback address.
bool launchSpansHosts(const LaunchEnv& env);

// Throws collInvalidUsage, saying how to set one, when a job that may span hosts has no
// COLL_STORE_SECRET; COLL_STORE_ALLOW_NO_SECRET=1 lets it run, with a WARN on rank 0.
void checkLaunchSecretPolicy(const LaunchEnv& env);

// Rank 0 starts a TcpStoreServer on MASTER_PORT where launchStoreBindHost says; every rank (0
// included) connects to MASTER_ADDR:MASTER_PORT, retrying until the deadline. A job on one host
// without COLL_STORE_SECRET instead listens and connects on 127.0.0.1:MASTER_PORT, under a random
// secret that rank 0 leaves in a file only its user can read (host_secret.h). On rank 0 the
// returned store keeps the server (and that file) alive for as long as the store lives.
std::shared_ptr<Store> connectLaunchStore(const LaunchEnv& env, Deadline deadline);

// Where rank 0's store listens: the address MASTER_ADDR names when it is one of this host's
// interfaces' (so a single-node job with MASTER_ADDR=127.0.0.1 listens on loopback only, out of
// reach of other hosts), else every interface (""): MASTER_ADDR then names this host by an
// address that is not an interface's own (behind NAT, say), or, in a multi-node job, by a name
// that resolves to loopback here (Debian's /etc/hosts maps the host name to 127.0.1.1) while the
// other nodes resolve it to a real address. `interfaces` is this host's.
std::string launchStoreBindHost(const std::string& masterAddr, bool singleNode,
                                const std::vector<InterfaceAddress>& interfaces);

}  // namespace bootstrap
}  // namespace coll
