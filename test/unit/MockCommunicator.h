//===- MockCommunicator.h - N ranks of one process on threads -------------===//
//
// A Communicator for unit tests without MPI: the ranks of a MockWorld are
// threads of the test process and share its memory. A collective is matched
// by its sequence number in the group: each member posts its buffers, and the
// last to arrive moves the data for all of them (so non-blocking operations
// may be waited for in any order); point-to-point operations are matched by
// (source, destination, tag) in order. Every wait has a deadline, like MPI's
// watchdog: the error names the ranks that did not arrive. After a timeout
// the operation stays pending (its buffers still belong to it): end the test.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include <functional>
#include <memory>

namespace partita::test {

struct MockGroup;

class MockWorld {
public:
  /// `timeoutSeconds`: how long any wait may take (> 0).
  explicit MockWorld(int size, double timeoutSeconds = 30);
  int size() const { return size_; }
  /// Rank `rank`'s communicator over the whole world.
  std::unique_ptr<rt::Communicator> communicator(int rank) const;
  /// Runs `body` for every rank, each on its own thread with its own
  /// communicator, and joins them.
  void run(const std::function<void(int rank, rt::Communicator &comm)> &body) const;

private:
  int size_;
  std::shared_ptr<MockGroup> world_;
};

} // namespace partita::test
