// COLL_IB_HCA: which RDMA devices and ports the verbs transport may use, in NCCL_IB_HCA's syntax,
// so that a cluster's existing settings carry over. A pure parser and matcher (no libibverbs), so
// that it is testable anywhere.
//
//   ""                   every device, every port
//   "mlx5_0:1,mlx5_1"    mlx5_0's port 1, and any port of mlx5_1
//   "^mlx5_1"            every device but mlx5_1
//   "=mlx5_1"            exactly mlx5_1 (without "=", a name matches every device it begins:
//                        "mlx5_1" also selects mlx5_10)
//   "^=mlx5_1"           every device but exactly mlx5_1
#pragma once

#include <string>
#include <vector>

namespace coll {
namespace transport {

struct VerbsHcaSpec {
  struct Item {
    std::string device;
    int port = 0;  // 0: any port
  };
  bool exclude = false;  // "^": the items name what is left out
  bool exact = false;    // "=": names match whole, not as prefixes
  std::vector<Item> items;
};

// Throws CollError(collInvalidUsage) naming COLL_IB_HCA for an empty name or a port that is not a
// number in 1..255.
VerbsHcaSpec parseVerbsHcaSpec(const std::string& text);
// Whether `port` of `device` is one the spec allows.
bool verbsHcaSelects(const VerbsHcaSpec& spec, const std::string& device, int port);

}  // namespace transport
}  // namespace coll
