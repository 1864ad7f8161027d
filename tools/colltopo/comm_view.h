// colltopo --comm: run under a launcher (collrun, mpirun, srun), every rank joins one
// communicator and rank 0 prints the job as the library sees it: each rank's host, process and
// CPU binding, the transport between every pair, the host groups, the ring order, the trees, and
// the all-reduce algorithm the planner would pick at a few sizes with its modelled times.
#pragma once

namespace colltopo {

// Returns the exit status; only rank 0 prints (text, or one JSON document).
int printCommunicatorView(bool json);

}  // namespace colltopo
