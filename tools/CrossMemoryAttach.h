//===- CrossMemoryAttach.h - may ranks read each other's memory? ----------===//
//
// Open MPI's shared-memory transport (vader) moves a large message with one
// copy by Linux's cross-memory attach (process_vm_readv): the receiver reads
// the sender's buffer itself. Without it a message past the eager limit goes
// by rendezvous in fragments, each pushed only while the sender is inside an
// MPI call: a pipeline stage computing between its kernels delays what the
// next stage waits for (interleaved 1F1B's idle was 2-3x its formula so).
// A container without ptrace rights forbids the call, and vader then fails
// the job; so launch probes first, two sibling processes as MPI's ranks are.
//===----------------------------------------------------------------------===//
#pragma once

namespace partita {

/// Whether one child of this process can read another's memory with
/// process_vm_readv (forks two short-lived children).
bool crossMemoryAttachWorks();

} // namespace partita
