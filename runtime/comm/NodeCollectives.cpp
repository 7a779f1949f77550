//===- NodeCollectives.cpp ------------------------------------------------===//
//
// The segment: a line of 64 bytes per member for its barrier flag, then two
// staging sets, each a slot of kSlotBytes per member and one for a result.
// Pieces alternate between the sets, so one barrier per piece keeps a member
// from refilling a set another still reads: a member fills the set of piece
// k + 2 only after the barrier of piece k + 1, which every member reaches
// only after it finished reading piece k. An all-reduce needs a second
// barrier per piece, between the reduction and the copy out.
//===----------------------------------------------------------------------===//
#include "runtime/comm/NodeCollectives.h"
#include "runtime/core/HalfConvert.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace partita::rt {

namespace {

constexpr size_t kFlagStride = 64; // one cache line per member's flag

size_t flagBytes(int size) { return (static_cast<size_t>(size) * kFlagStride + 4095) / 4096 * 4096; }

size_t setBytes(int size) { return static_cast<size_t>(size + 1) * NodeCollectives::kSlotBytes; }

void relax(int spins) {
  if (spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield(); // more ranks than cores (tests oversubscribe): let the others run
  }
}

/// The part [bound(r), bound(r + 1)) of `len` elements member r reduces,
/// cut at 64-byte lines so no two members write one line.
size_t bound(size_t len, size_t elem, int r, int size) {
  if (r >= size)
    return len;
  size_t unit = std::max<size_t>(1, 64 / elem);
  return std::min(len, len / unit * static_cast<size_t>(r) / static_cast<size_t>(size) * unit);
}

/// Collectives this large write their results around the cache: the result
/// does not fit it anyway, and a plain store first reads the line it writes
/// (for ownership), a third of the traffic. glibc's memcpy does the same for
/// large copies.
constexpr size_t kStreamBytes = size_t(32) << 20;

/// dst <- src, n bytes; `stream`: with non-temporal stores (the caller
/// fences before anyone reads dst).
void copyOut(char *dst, const char *src, size_t n, bool stream) {
#if defined(__SSE2__)
  if (stream && n >= 256) {
    size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
    std::memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
    std::memcpy(dst + i, src + i, n - i);
    return;
  }
#endif
  (void)stream;
  std::memcpy(dst, src, n);
}

/// Orders the non-temporal stores before what follows.
void fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <typename T> void fold(T *out, const T *in, size_t n, bool max) {
  if (max)
    for (size_t i = 0; i < n; ++i)
      out[i] = std::max(out[i], in[i]);
  else
    for (size_t i = 0; i < n; ++i)
      out[i] += in[i];
}

/// out[0, n) (+)= in[0, n), in `dtype`; halves are added in float32 and
/// rounded, as MpiCommunicator's half reduction does.
void combine(DType dtype, void *out, const void *in, size_t n, bool max) {
  switch (dtype) {
  case DType::F32:
    return fold(static_cast<float *>(out), static_cast<const float *>(in), n, max);
  case DType::F64:
    return fold(static_cast<double *>(out), static_cast<const double *>(in), n, max);
  default: // BF16, F16 (NodeCollectives::reduces)
    return combineHalfRows(dtype, static_cast<const uint16_t *>(in), static_cast<uint16_t *>(out),
                           static_cast<int64_t>(n), max);
  }
}

} // namespace

bool NodeCollectives::reduces(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 || dtype == DType::F16;
}

std::unique_ptr<NodeCollectives> NodeCollectives::create(void *mpiComm) {
  MPI_Comm comm = *reinterpret_cast<MPI_Comm *>(&mpiComm);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // PARTITA_NODE_COLLECTIVES=0 keeps every collective on MPI (a comparison,
  // or a transport problem); every member must agree, so the least wins.
  const char *env = std::getenv("PARTITA_NODE_COLLECTIVES");
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nodeSize = 0;
  MPI_Comm_size(node, &nodeSize);
  MPI_Comm_free(&node);
  int wanted = nodeSize == size && size > 1 && !(env && std::strcmp(env, "0") == 0), all = 0;
  MPI_Allreduce(&wanted, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all)
    return nullptr;
  size_t bytes = flagBytes(size) + 2 * setBytes(size);
  static int made = 0;
  char name[64] = {};
  int ok = 1, fd = -1;
  if (rank == 0) {
    std::snprintf(name, sizeof(name), "/partita-collectives-%d-%d", static_cast<int>(getpid()), made++);
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    // Reserved now: a full /dev/shm is a refusal here, not a SIGBUS later.
    ok = fd >= 0 && posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
    if (!ok && fd >= 0) {
      close(fd);
      shm_unlink(name);
      fd = -1;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok)
    return nullptr;
  MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm);
  if (rank != 0)
    fd = shm_open(name, O_RDWR, 0);
  void *p = fd >= 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0)
    close(fd);
  int mapped = p != MAP_FAILED, allMapped = 0;
  MPI_Allreduce(&mapped, &allMapped, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0) // every member has it mapped (or gave up): the name is no longer needed
    shm_unlink(name);
  if (!allMapped) {
    if (mapped)
      munmap(p, bytes);
    return nullptr;
  }
  return std::unique_ptr<NodeCollectives>(new NodeCollectives(static_cast<char *>(p), bytes, rank, size));
}

NodeCollectives::NodeCollectives(char *base, size_t bytes, int rank, int size)
    : base_(base), bytes_(bytes), rank_(rank), size_(size) {}

NodeCollectives::~NodeCollectives() { munmap(base_, bytes_); }

char *NodeCollectives::nextSet() { return base_ + flagBytes(size_) + (pieces_++ % 2) * setBytes(size_); }

void NodeCollectives::barrier() {
  ++epoch_;
  auto flag = [&](int r) { return reinterpret_cast<uint64_t *>(base_ + static_cast<size_t>(r) * kFlagStride); };
  __atomic_store_n(flag(rank_), epoch_, __ATOMIC_RELEASE);
  for (int r = 0; r < size_; ++r)
    for (int spins = 0; __atomic_load_n(flag(r), __ATOMIC_ACQUIRE) < epoch_; ++spins)
      relax(spins);
}

void NodeCollectives::allReduce(void *buf, size_t count, DType dtype, bool max) {
  size_t elem = dtypeSize(dtype), piece = kSlotBytes / elem;
  char *data = static_cast<char *>(buf);
  for (size_t off = 0; off < count; off += piece) {
    size_t len = std::min(piece, count - off);
    char *set = nextSet(), *result = slot(set, size_);
    std::memcpy(slot(set, rank_), data + off * elem, len * elem);
    barrier();
    size_t b = bound(len, elem, rank_, size_), e = bound(len, elem, rank_ + 1, size_);
    if (e > b) { // the members' sum of [b, e), in member order
      std::memcpy(result + b * elem, slot(set, 0) + b * elem, (e - b) * elem);
      for (int r = 1; r < size_; ++r)
        combine(dtype, result + b * elem, slot(set, r) + b * elem, e - b, max);
    }
    barrier();
    std::memcpy(data + off * elem, result, len * elem);
  }
}

void NodeCollectives::allGather(const void *send, void *recv, size_t count, size_t elem) {
  size_t piece = kSlotBytes / elem;
  const char *in = static_cast<const char *>(send);
  char *out = static_cast<char *>(recv);
  bool stream = count * elem * static_cast<size_t>(size_) >= kStreamBytes;
  for (size_t off = 0; off < count; off += piece) {
    size_t len = std::min(piece, count - off);
    char *set = nextSet();
    std::memcpy(slot(set, rank_), in + off * elem, len * elem);
    barrier();
    for (int r = 0; r < size_; ++r)
      copyOut(out + (static_cast<size_t>(r) * count + off) * elem, slot(set, r), len * elem, stream);
  }
  fence();
}

void NodeCollectives::reduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  size_t elem = dtypeSize(dtype), piece = std::max<size_t>(1, kSlotBytes / elem / static_cast<size_t>(size_));
  const char *in = static_cast<const char *>(send);
  char *out = static_cast<char *>(recv);
  bool stream = count * elem * static_cast<size_t>(size_) >= kStreamBytes;
  for (size_t off = 0; off < count; off += piece) {
    size_t len = std::min(piece, count - off);
    char *set = nextSet(), *mine = slot(set, rank_);
    for (int r = 0; r < size_; ++r) // this piece of every block, block r at r * len
      std::memcpy(mine + static_cast<size_t>(r) * len * elem, in + (static_cast<size_t>(r) * count + off) * elem,
                  len * elem);
    barrier();
    // The sum in cache (this member's part of the set's result slot), then out.
    size_t at = static_cast<size_t>(rank_) * len * elem;
    char *sum = slot(set, size_) + at;
    std::memcpy(sum, slot(set, 0) + at, len * elem);
    for (int r = 1; r < size_; ++r)
      combine(dtype, sum, slot(set, r) + at, len, false);
    copyOut(out + off * elem, sum, len * elem, stream);
  }
  fence();
}

} // namespace partita::rt
