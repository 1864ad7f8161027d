#include "tests/cuda/api_args.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/cuda/gpu_ranks.h"

namespace colltest {

bool parseApiArgs(int argc, char** argv, const char* usage, ApiArgs* args, const ExtraOption& extra) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
      args->ranks = splitRankCounts(argv[++i]);
    } else if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
      args->modes = splitCommaList(argv[++i]);
    } else if (!strcmp(argv[i], "--hosts") && i + 1 < argc) {
      args->hosts = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      setenv(kGpuTestFilterVar, argv[++i], 1);
    } else if (!extra || !extra(argc, argv, i)) {
      fprintf(stderr, "usage: %s\n", usage);
      return false;
    }
  }
  return true;
}

}  // namespace colltest
