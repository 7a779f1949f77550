//===- Calibrate.cpp ------------------------------------------------------===//
#include "tools/Calibrate.h"
#include "compiler/ir/Parser.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/HeapSettings.h"
#include "runtime/executor/Program.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/MemoryBuffer.h"
#include <algorithm>
#include <chrono>
#include <mpi.h>
#include <omp.h>
#include <thread>
#include <unistd.h>

namespace partita {

namespace {
/// The middle of `v` (the upper one of an even count).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The median milliseconds of running IR `text` on inputs of zeros.
llvm::Expected<double> medianMillis(const std::string &text, int repeat) {
  auto g = parseGraph(text, "calibrate");
  if (!g)
    return g.takeError();
  llvm::StringMap<Tensor> inputs;
  for (const Value *in : (*g)->inputs())
    inputs[in->name()] = Tensor::zeros(in->type().dtype, in->type().shape);
  RunOptions ro;
  ro.repeat = repeat;
  auto r = runOnDevice(**g, inputs, ro);
  if (!r)
    return r.takeError();
  return r->millis[r->millis.size() / 2];
}

/// The device's rates, measured by this rank with `threads` threads (every
/// rank of the worker at once: what each of a node's devices gets when all
/// are busy).
llvm::Expected<planner::Machine> measureDevice(const std::function<void(const std::string &)> &say) {
  planner::Machine m;
  // Products.
  const double productFlops = 2.0 * 1024 * 1024 * 4096;
  auto fp32 = medianMillis("graph @mm(%a: f32[1024,1024], %b: f32[1024,4096]) opset 17 {\n"
                           "  %c = MatMul(%a, %b) : f32[1024,4096]\n  return %c\n}\n",
                           9);
  if (!fp32)
    return fp32.takeError();
  m.matmulFlops["fp32"] = productFlops / (*fp32 / 1e3);
  auto bf16 = medianMillis("graph @mm(%a: bf16[1024,1024], %b: bf16[1024,4096]) opset 17 {\n"
                           "  %aw = Cast(%a) {to = 1} : f32[1024,1024]\n"
                           "  %bw = Cast(%b) {to = 1} : f32[1024,4096]\n"
                           "  %c = MatMul(%aw, %bw) : f32[1024,4096]\n  return %c\n}\n",
                           9);
  if (!bf16)
    return bf16.takeError();
  m.matmulFlops["bf16"] = productFlops / (*bf16 / 1e3);
  m.matmulFlops["fp16"] = m.matmulFlops["fp32"]; // no fp16 GEMM on the CPU: widened to float32
  say(llvm::formatv("matmul: {0:f1} GFLOP/s float32, {1:f1} GFLOP/s bf16", m.matmulFlops["fp32"] / 1e9,
                         m.matmulFlops["bf16"] / 1e9)
               .str());
  // Memory bandwidth: 64M float32 + 64M float32 -> 64M float32.
  auto add = medianMillis("graph @add(%a: f32[67108864], %b: f32[67108864]) opset 17 {\n"
                          "  %c = Add(%a, %b) : f32[67108864]\n  return %c\n}\n",
                          5);
  if (!add)
    return add.takeError();
  m.memoryBandwidth = 3.0 * 4 * 67108864 / (*add / 1e3);
  auto tanh = medianMillis("graph @t(%a: f32[262144]) opset 17 {\n  %c = Tanh(%a) : f32[262144]\n  return %c\n}\n", 41);
  if (!tanh)
    return tanh.takeError();
  m.transcendentalFlops = 262144.0 / (*tanh / 1e3);
  // The cheap ops as the runtime runs them: a fused chain (tanh GELU of a
  // [512, 3072] activation: 8 multiplies and adds and a tanh per element),
  // less its tanh at the rate just measured.
  const double elements = 512.0 * 3072;
  auto gelu = medianMillis("graph @g(%x: f32[512,3072]) opset 17 {\n"
                           "  %c0 = Constant() {value = dense<f32[]>[0.044715]} : f32[]\n"
                           "  %c1 = Constant() {value = dense<f32[]>[0.797884583]} : f32[]\n"
                           "  %c2 = Constant() {value = dense<f32[]>[1.0]} : f32[]\n"
                           "  %c3 = Constant() {value = dense<f32[]>[0.5]} : f32[]\n"
                           "  %t1 = Mul(%x, %x) : f32[512,3072]\n  %t2 = Mul(%t1, %x) : f32[512,3072]\n"
                           "  %t3 = Mul(%t2, %c0) : f32[512,3072]\n  %t4 = Add(%x, %t3) : f32[512,3072]\n"
                           "  %t5 = Mul(%t4, %c1) : f32[512,3072]\n  %t6 = Tanh(%t5) : f32[512,3072]\n"
                           "  %t7 = Add(%t6, %c2) : f32[512,3072]\n  %t8 = Mul(%t7, %c3) : f32[512,3072]\n"
                           "  %y = Mul(%x, %t8) : f32[512,3072]\n  return %y\n}\n",
                           21);
  if (!gelu)
    return gelu.takeError();
  const double cheapSeconds = *gelu / 1e3 - elements / m.transcendentalFlops;
  m.vectorFlops = cheapSeconds > 0 ? 8 * elements / cheapSeconds : 8 * elements / (*gelu / 1e3);
  // Kernel overhead: 200 dependent tiny products.
  std::string chain = "graph @chain(%x0: f32[4,4], %w: f32[4,4]) opset 17 {\n";
  for (int i = 0; i < 200; ++i)
    chain += "  %x" + std::to_string(i + 1) + " = MatMul(%x" + std::to_string(i) + ", %w) : f32[4,4]\n";
  chain += "  return %x200\n}\n";
  auto tiny = medianMillis(chain, 21);
  if (!tiny)
    return tiny.takeError();
  m.kernelOverhead = *tiny / 1e3 / 200;
  say(llvm::formatv("memory bandwidth {0:f1} GB/s, vector {1:f2} Gelem/s (fused multiplies and adds), {2:f2} Gelem/s (tanh), "
                         "{3:f1} us per kernel",
                         m.memoryBandwidth / 1e9, m.vectorFlops / 1e9, m.transcendentalFlops / 1e9, m.kernelOverhead * 1e6)
               .str());
  return m;
}

/// The share of a gradient bucket's all-reduce that computing beside it
/// hides, as the runtime overlaps them (Program::run starts the reduction,
/// moves it along between kernels and waits for it later): a chain of
/// float32 products alone, a 25 MB all-reduce (the bucket size) alone, then
/// the all-reduce started and the products run while it goes, every rank at
/// once. 1 when the pair takes the longer one's time, 0 when the sum of both.
llvm::Expected<double> measureOverlap(rt::Communicator &comm) {
  std::string text = "graph @chain(%x0: f32[512,1024], %w: f32[1024,1024]) opset 17 {\n";
  const int products = 4;
  for (int i = 0; i < products; ++i)
    text += "  %x" + std::to_string(i + 1) + " = MatMul(%x" + std::to_string(i) + ", %w) : f32[512,1024]\n";
  text += "  return %x" + std::to_string(products) + "\n}\n";
  auto g = parseGraph(text, "calibrate");
  if (!g)
    return g.takeError();
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  if (!program)
    return program.takeError();
  llvm::StringMap<Tensor> inputs;
  for (const Value *in : (*g)->inputs())
    inputs[in->name()] = Tensor::zeros(in->type().dtype, in->type().shape);
  std::vector<float> bucket(size_t(25) << 18, 1.0f); // 25 MB
  int handle = -1;
  (*program)->setAfterEachKernel([&] {
    if (handle >= 0)
      comm.progress();
  });
  RunOptions once;
  auto time = [&](bool compute, bool reduce) -> llvm::Expected<double> {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    if (reduce) {
      auto h = comm.startAllReduce(bucket.data(), bucket.size(), DType::F32);
      if (!h)
        return h.takeError();
      handle = *h;
    }
    if (compute)
      if (auto r = runLoaded(**program, device, inputs, once); !r)
        return r.takeError();
    if (reduce) {
      if (auto err = comm.wait(handle))
        return std::move(err);
      handle = -1;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> alone, reducing, both;
  for (int i = 0; i < 8; ++i) { // interleaved, so a drift of the machine touches all three alike
    for (auto [compute, reduce, into] : {std::make_tuple(true, false, &alone), std::make_tuple(false, true, &reducing),
                                         std::make_tuple(true, true, &both)}) {
      auto t = time(compute, reduce);
      if (!t)
        return t.takeError();
      if (i > 0) // the first: oneDNN's JIT, first-touch pages
        into->push_back(*t);
    }
  }
  const double a = median(alone), r = median(reducing), b = median(both);
  const double hidden = (a + r - b) / std::min(a, r);
  return std::clamp(hidden, 0.0, 1.0);
}

} // namespace

llvm::Expected<planner::Machine> calibrateThisMachine(int devicesPerNode,
                                                      const std::function<void(const std::string &)> &progress) {
  // Everything is measured by ranks of this binary under mpirun, as many as
  // a node's devices (at least two, for the link), each with its share of
  // the cores, all at once.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int ranks = std::max(2, devicesPerNode);
  const int threads = std::max(1, cores / ranks);
  auto mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("mpirun not found on PATH (install openmpi-bin): the machine is measured by MPI ranks");
  const std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<128> out;
  if (auto ec = llvm::sys::fs::createTemporaryFile("partita-calibrate", "json", out))
    return fail("cannot create a temporary file: " + ec.message());
  const std::string n = std::to_string(ranks), t = std::to_string(threads);
  std::vector<llvm::StringRef> args{*mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n", n,
                                    self,    "plan",  "--calibrate-worker", "--threads", t};
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::None};
  std::string message;
  progress("measuring with " + n + " ranks of " + t + " thread(s) under mpirun");
  int rc = llvm::sys::ExecuteAndWait(*mpirun, args, llvm::None, redirects, 600, 0, &message);
  auto text = llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  if (rc != 0 || !text)
    return fail("the measurement under mpirun failed (exit " + llvm::Twine(rc) + (message.empty() ? "" : ": ") +
                message + ")");
  llvm::StringRef printed = (*text)->getBuffer();
  for (llvm::StringRef line : llvm::split(printed.split("\n{").first, '\n'))
    if (!line.empty())
      progress(line.str());
  auto m = planner::parseMachine(printed.substr(printed.find("\n{") + 1), "the calibration's output");
  if (!m)
    return m.takeError();
  m->devicesPerNode = devicesPerNode;
  m->halfGemmThroughReshapes = false; // the CPU runtime's FusionPlan: a widening read directly or through a transpose
  m->name = "this machine, measured by partita plan --calibrate (" + std::to_string(devicesPerNode) +
            " rank(s) per node, " + t + " thread(s) each)";
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  m->memoryBytes = static_cast<double>(pages) * static_cast<double>(pageSize) / std::max(1, devicesPerNode);
  m->sources = {"measured on this machine by partita plan --calibrate: Partita's own CPU kernels and MPI communicator, "
                "every rank measuring at once",
                "inter_node: a single machine has one link; both get the MPI figures measured between local ranks"};
  return m;
}

int calibrateWorker(int threads) {
  rt::keepLargeAllocationsOnTheHeap(); // as a launched rank does
  MPI_Init(nullptr, nullptr);
  omp_set_num_threads(std::max(1, threads));
  auto comm = rt::MpiCommunicator::world();
  const bool first = comm->rank() == 0;
  MPI_Barrier(MPI_COMM_WORLD);
  auto device = measureDevice([&](const std::string &line) {
    if (first)
      std::printf("%s\n", line.c_str());
  });
  if (!device) {
    std::fprintf(stderr, "partita plan --calibrate: rank %d: %s\n", comm->rank(), llvm::toString(device.takeError()).c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  auto time = [&](size_t count, int iters) {
    std::vector<float> buf(count, 1.0f);
    std::vector<double> seconds;
    for (int i = 0; i < iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      llvm::consumeError(comm->allReduce(buf.data(), count, DType::F32));
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(seconds);
  };
  const int n = comm->size();
  // A ring all-reduce: 2(n-1) steps, each rank moving 2(n-1)/n of the
  // buffer. The latency from 8 bytes; the bus bandwidth at each size from
  // 64 KB to 64 MB (it is not one figure: small messages stay in cache, the
  // node's shared-memory collectives start at 1 MB, large ones run at
  // memory speed), the link's headline bandwidth the largest size's.
  const double steps = 2.0 * (n - 1);
  const double latency = time(2, 200) / steps;
  std::vector<std::pair<double, double>> measured;
  std::string table;
  for (size_t count = size_t(16) << 10; count <= size_t(16) << 20; count *= 4) {
    const double bytes = 4.0 * static_cast<double>(count);
    const double seconds = time(count, count <= (size_t(256) << 10) ? 41 : count <= (size_t(4) << 20) ? 15 : 9);
    const double moved = steps / n * bytes;
    measured.emplace_back(moved, moved / std::max(1e-9, seconds - steps * latency));
    const bool mb = bytes >= (1 << 20);
    table += llvm::formatv("{0}{1} {2}: {3:f2}", table.empty() ? "" : ", ",
                           static_cast<int64_t>(bytes) / (mb ? 1 << 20 : 1 << 10),
                           mb ? "MB" : "KB", measured.back().second / 1e9)
                 .str();
  }
  const double bandwidth = measured.back().second;
  auto overlap = measureOverlap(*comm);
  if (!overlap) {
    std::fprintf(stderr, "partita plan --calibrate: rank %d: %s\n", comm->rank(), llvm::toString(overlap.takeError()).c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  device->collectiveOverlap = *overlap;
  if (first) {
    std::printf("overlap: %.0f%% of a 25 MB all-reduce hides behind products run beside it\n", *overlap * 100);
    std::printf("links: %.2f us latency; bus bandwidth (GB/s) by all-reduce size over %d ranks: %s\n", latency * 1e6, n,
                table.c_str());
    device->devicesPerNode = n;
    device->memoryBytes = 1; // the parent fills it in
    device->intraNode = planner::Link{bandwidth, latency, 1, measured};
    device->interNode = device->intraNode;
    std::printf("%s", planner::machineJson(*device).c_str());
  }
  MPI_Finalize();
  return 0;
}

} // namespace partita
