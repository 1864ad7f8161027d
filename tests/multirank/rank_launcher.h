// Runs a function on n ranks, as threads of this process or as forked processes, each with its
// own communicator built from one unique id (the real TCP rendezvous store and shared memory).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collective.h"

namespace colltest {

// The body of one rank: returns failure descriptions (empty when the rank passed).
using RankBody = std::function<std::vector<std::string>(collComm_t comm, int rank, int nranks)>;

// One failure per line, for a test's failure message.
std::string joinFailures(const std::vector<std::string>& failures);

std::vector<std::string> runAsThreads(int nranks, const RankBody& body, collConfig_t* config = nullptr);
// Threads that rendezvous through an in-memory store instead of the TCP one.
std::vector<std::string> runAsThreadsWithMemoryStore(int nranks, const RankBody& body);
// Each child reports its failures through a pipe and its exit status; a child that dies or hangs
// past timeoutSeconds is a failure too.
std::vector<std::string> runAsProcesses(int nranks, const RankBody& body, int timeoutSeconds = 120);

// What a rank reports when its init fails (rc, collGetLastError): failures, or none if expected.
using InitFailureBody = std::function<std::vector<std::string>(int rank, collResult_t rc, const std::string& message)>;
// For runs whose init must succeed: an init failure is reported as the rank's failure.
InitFailureBody initMustSucceed();
// Like runAsProcesses, with setup(rank) run in each child before init (e.g. setenv), and each
// communicator made with `config` (null: the defaults).
std::vector<std::string> runAsProcessesWithSetup(int nranks, const std::function<void(int rank)>& setup,
                                                 const RankBody& body, const InitFailureBody& onInitFailure,
                                                 int timeoutSeconds = 120, collConfig_t* config = nullptr);

}  // namespace colltest
