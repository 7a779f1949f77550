//===- MockDevice.cpp - the mock device and its kernels -------------------===//
#include "MockDevice.h"
#include "runtime/kernels/KernelRegistry.h"
#include <gtest/gtest.h>
#include <cstring>

namespace partita::test {

void *MockDevice::handleFor(size_t block, size_t offset) const {
  void *&h = handles_[{block, offset}];
  if (!h) { // 16 MiB apart and never 0: arithmetic on one never lands on another
    h = reinterpret_cast<void *>((nextHandle_++ << 24) | 0x40);
    addresses_[h] = Address{block, offset};
  }
  return h;
}

void *MockDevice::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t id = nextBlock_++;
  blocks_[id].resize(bytes);
  return handleFor(id, 0);
}

void MockDevice::deallocate(void *p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = addresses_.find(p);
  if (it == addresses_.end() || it->second.offset != 0 || !blocks_.erase(it->second.block))
    ADD_FAILURE() << "mock device: deallocate of " << p << ", which is no live allocation";
}

void *MockDevice::offset(void *base, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = addresses_.find(base);
  if (it == addresses_.end()) {
    ADD_FAILURE() << "mock device: offset from unknown address " << base;
    return nullptr;
  }
  return handleFor(it->second.block, it->second.offset + bytes);
}

char *MockDevice::host(const void *address, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = addresses_.find(address);
  auto block = it == addresses_.end() ? blocks_.end() : blocks_.find(it->second.block);
  if (block == blocks_.end() || it->second.offset + bytes > block->second.size()) {
    ADD_FAILURE() << "mock device: " << address << " is no address of a live allocation with " << bytes
                  << " bytes left (host pointer arithmetic on a device address?)";
    return nullptr;
  }
  return const_cast<char *>(block->second.data()) + it->second.offset;
}

void MockDevice::copyFromHost(void *dst, const void *src, size_t bytes) {
  if (char *d = host(dst, bytes))
    std::memcpy(d, src, bytes);
  bytesFromHost_ += bytes;
}

void MockDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  if (const char *s = host(src, bytes))
    std::memcpy(dst, s, bytes);
  bytesToHost_ += bytes;
}

void MockDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  char *d = host(dst, bytes);
  const char *s = host(src, bytes);
  if (d && s)
    std::memmove(d, s, bytes);
}

namespace {

using Compute = void (*)(const std::vector<const float *> &in, float *out, const rt::KernelContext &ctx);

/// An f32 kernel of the mock device: resolves its views, then computes.
class MockKernel final : public rt::Kernel {
public:
  MockKernel(const Node &node, Compute compute) : node_(node), compute_(compute) {}
  llvm::Error run(rt::KernelContext &ctx) override {
    auto *device = dynamic_cast<MockDevice *>(&ctx.device);
    if (!device)
      return rt::kernelError(node_, "a mock kernel on a " + ctx.device.name() + " device");
    std::vector<const float *> in;
    for (const rt::TensorView &v : ctx.inputs)
      in.push_back(reinterpret_cast<const float *>(device->host(v.data, v.bytes())));
    float *out = reinterpret_cast<float *>(device->host(ctx.outputs[0].data, ctx.outputs[0].bytes()));
    for (const float *p : in)
      if (!p)
        return rt::kernelError(node_, "input not on the mock device");
    if (!out)
      return rt::kernelError(node_, "output not on the mock device");
    compute_(in, out, ctx);
    return llvm::Error::success();
  }

private:
  const Node &node_;
  Compute compute_;
};

void add(const std::vector<const float *> &in, float *out, const rt::KernelContext &ctx) {
  for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i)
    out[i] = in[0][i] + in[1][i];
}

void mul(const std::vector<const float *> &in, float *out, const rt::KernelContext &ctx) {
  for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i)
    out[i] = in[0][i] * in[1][i];
}

void relu(const std::vector<const float *> &in, float *out, const rt::KernelContext &ctx) {
  for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i)
    out[i] = in[0][i] > 0 ? in[0][i] : 0;
}

void matmul(const std::vector<const float *> &in, float *out, const rt::KernelContext &ctx) {
  int64_t m = ctx.inputs[0].shape[0], k = ctx.inputs[0].shape[1], n = ctx.inputs[1].shape[1];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += in[0][i * k + p] * in[1][p * n + j];
      out[i * n + j] = acc;
    }
}

/// A factory for `compute`, which needs f32 values and, for an elementwise
/// op, inputs of the output's shape (no broadcasting).
rt::KernelFactory factory(Compute compute, bool elementwise) {
  return [compute, elementwise](const Node &n) -> llvm::Expected<std::unique_ptr<rt::Kernel>> {
    for (const Value *v : n.inputs())
      if (!v || v->type().dtype != DType::F32 || (elementwise && v->type().shape != n.output()->type().shape))
        return rt::kernelError(n, "the mock device runs f32 values of one shape only");
    if (!elementwise && (n.input(0)->type().shape.size() != 2 || n.input(1)->type().shape.size() != 2))
      return rt::kernelError(n, "the mock device multiplies 2-D matrices only");
    return std::unique_ptr<rt::Kernel>(new MockKernel(n, compute));
  };
}

void registerMockKernels(rt::KernelRegistry &r) {
  r.add("Add", kMockDevice, factory(add, true));
  r.add("Mul", kMockDevice, factory(mul, true));
  r.add("Relu", kMockDevice, factory(relu, true));
  r.add("MatMul", kMockDevice, factory(matmul, false));
}

rt::KernelRegistry::Registrar mockKernels(registerMockKernels);

} // namespace

} // namespace partita::test
