//===- NodeCollectives.h - collectives through one shared segment ---------===//
//
// A group whose members all run on one node does its large blocking
// all-reduces, all-gathers and reduce-scatters through a shared memory
// segment of its own instead of Open MPI's shared-memory transport. Open MPI
// moves each byte through a FIFO (copied in by the sender, out by the
// receiver) and its reductions through temporaries: large collectives ran at
// about 0.2 of the machine's copy bandwidth (issue 31). Here each member
// copies its piece into the segment once, the members reduce disjoint parts
// of it, and each copies the result out once, in pieces of kSlotBytes that
// stay in cache; the members meet at a barrier of flags in the segment.
// (DeepSpeed's CPU all-reduce does the same through /dev/shm.)
//
// The segment is a POSIX shared memory object, made by member 0 on the
// group's first large collective, opened by the others and unlinked as soon
// as every member has it mapped (a few milliseconds: only a rank that dies
// within them leaves a /dev/shm/partita-collectives-* behind). Without it
// (the group spans nodes, or /dev/shm has no room) the MPI path runs.
//
// Results are the same on every member (each part is reduced by one member,
// in member order) and the same whichever member count divides the buffer.
// Every member must make the same calls in the same order (as for MPI), and
// only after all of them arrived (MpiCommunicator::collective waits for that,
// and its watchdog ends a member stuck at a barrier).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include <cstddef>
#include <cstdint>
#include <memory>

namespace partita::rt {

class NodeCollectives {
public:
  /// Bytes each member stages per piece.
  static constexpr size_t kSlotBytes = size_t(512) << 10;

  /// Collective over `mpiComm` (an MPI_Comm): the segment when every member
  /// runs on this node and it could be made, else null.
  static std::unique_ptr<NodeCollectives> create(void *mpiComm);
  ~NodeCollectives();

  /// Whether reductions of `dtype` run here (float32, float64, bf16, fp16).
  static bool reduces(DType dtype);

  /// In-place sum (or max) of `count` elements.
  void allReduce(void *buf, size_t count, DType dtype, bool max);
  /// recv gets every member's `count` elements, member-major.
  void allGather(const void *send, void *recv, size_t count, size_t elemBytes);
  /// recv gets the sum of every member's block rank() (send: size() blocks of `count`).
  void reduceScatter(const void *send, void *recv, size_t count, DType dtype);

private:
  NodeCollectives(char *base, size_t bytes, int rank, int size);
  /// The staging set of the next piece (two alternate: see NodeCollectives.cpp).
  char *nextSet();
  char *slot(char *set, int member) const { return set + static_cast<size_t>(member) * kSlotBytes; }
  void barrier();

  char *base_;
  size_t bytes_;
  int rank_, size_;
  uint64_t epoch_ = 0;  // barriers passed
  uint64_t pieces_ = 0; // pieces staged, across calls
};

} // namespace partita::rt
