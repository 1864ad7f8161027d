// Runs a fuzz target over files, without libFuzzer: the seed corpora become regression tests in
// every build (gcc included), and a crash a fuzzer found can be replayed under a debugger.
// usage: fuzz_TARGET_replay FILE_OR_DIRECTORY...
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int runFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return 1;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0, failures = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat info {};
    if (stat(argv[i], &info) != 0) {
      std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(info.st_mode)) {
      failures += runFile(argv[i]);
      ++inputs;
      continue;
    }
    DIR* dir = opendir(argv[i]);
    while (dirent* entry = dir != nullptr ? readdir(dir) : nullptr) {
      if (entry->d_name[0] == '.') continue;
      failures += runFile(std::string(argv[i]) + "/" + entry->d_name);
      ++inputs;
    }
    if (dir != nullptr) closedir(dir);
  }
  std::printf("replay: %d inputs, %d unreadable\n", inputs, failures);
  return inputs == 0 || failures != 0 ? 1 : 0;
}
