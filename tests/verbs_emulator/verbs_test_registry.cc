// Every test process gets its own emulator registry (and so cannot meet another test's QPs or keys
// when ctest runs tests side by side); its children inherit the name. Removed when the process
// ends normally.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

class PrivateRegistry : public ::testing::Environment {
 public:
  void SetUp() override {
    path_ = "/dev/shm/coll-verbs-emu-test-" + std::to_string(getpid());
    setenv("COLL_VERBS_EMU_REGISTRY", path_.c_str(), 1);
  }
  void TearDown() override { unlink(path_.c_str()); }

 private:
  std::string path_;
};

[[maybe_unused]] ::testing::Environment* const registered = ::testing::AddGlobalTestEnvironment(new PrivateRegistry);

}  // namespace
