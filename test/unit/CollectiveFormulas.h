//===- CollectiveFormulas.h - each collective against a closed form -------===//
//
// Every member of a group calls the same check with its own communicator (a
// mock rank's thread, or an MPI process); each check runs the blocking form
// and the non-blocking one (start, then wait or test) on rank-dependent
// values and compares every element with its closed form. Failures are
// GoogleTest failures traced with the rank.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"

namespace partita::test {

/// Sum and max, f32 and i64: rank r holds (r + 1) * (i + 1) (sum:
/// (i + 1) n (n + 1) / 2) and 1000 r - i (max: 1000 (n - 1) - i).
void checkAllReduce(rt::Communicator &comm);
/// Block r of the result is rank r's 100 r + i.
void checkAllGather(rt::Communicator &comm);
/// Rank r sends r + 10 b + i in block b; rank m gets n (n - 1) / 2 + n (10 m + i).
void checkReduceScatter(rt::Communicator &comm);
/// The last rank's 7 i + 3 reaches every rank.
void checkBroadcast(rt::Communicator &comm);
/// Rank 0 and 1 exchange blocking messages; a ring of non-blocking ones with
/// two tags received in the opposite order of sending.
void checkSendRecv(rt::Communicator &comm);
/// Several operations in flight at once, waited for in reverse order, one
/// polled with test(); a finished handle is refused.
void checkOverlapped(rt::Communicator &comm);
/// splitGroup by parity: each half's all-reduce of ranks sums its own half.
void checkSplit(rt::Communicator &comm);
/// All of the above, in that order.
void checkEveryCollective(rt::Communicator &comm);

} // namespace partita::test
