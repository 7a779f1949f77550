//===- InputRoles.cpp - what the runtime feeds a program's inputs ----------===//
#include "runtime/session/InputRoles.h"
#include "compiler/plan/Names.h"
#include "llvm/ADT/STLExtras.h"

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

static const char *kRoleOptions =
    "the training loop feeds token ids (the one integer [batch, seq] input, or launch --ids-input NAME), labels, "
    "attention_mask (ones) and position_ids (0..seq-1)";

std::optional<InputRole> namedRole(const TensorSpec &in) {
  if (in.name == "labels")
    return InputRole::Labels;
  if (in.name == kFillableInputs[0])
    return InputRole::AttentionMask;
  if (in.name == kFillableInputs[1] && !isFloat(in.type.dtype))
    return InputRole::PositionIds;
  if (in.name == optimizer_io::kLossScale && in.type.dtype == DType::F32 && in.type.shape.empty())
    return InputRole::LossScale;
  return std::nullopt;
}

llvm::Expected<std::map<std::string, InputRole>> trainingInputRoles(const std::vector<TensorSpec> &inputs,
                                                                    llvm::StringRef idsInput, int64_t batch,
                                                                    int64_t seq) {
  auto cannotFeed = [](const TensorSpec &in) {
    return fail("input '" + in.name + "' (" + in.type.str() + "): the training loop cannot feed it; " +
                kRoleOptions);
  };
  if (!idsInput.empty()) {
    std::string names;
    for (const TensorSpec &in : inputs)
      names += (names.empty() ? "" : ", ") + in.name;
    if (!llvm::any_of(inputs, [&](const TensorSpec &in) { return in.name == idsInput; }))
      return fail("--ids-input " + idsInput + ": the program has no such input (its inputs: " + names + ")");
  }
  // Roles first, then the shapes, in input order.
  std::map<std::string, InputRole> roles;
  std::vector<const TensorSpec *> candidates; // integer rank-2 inputs without a role yet
  for (const TensorSpec &in : inputs) {
    bool integer = !isFloat(in.type.dtype);
    if (in.name == idsInput)
      roles[in.name] = InputRole::Ids;
    else if (auto role = namedRole(in))
      roles[in.name] = *role;
    else if (integer && in.type.shape.size() == 2 && idsInput.empty())
      candidates.push_back(&in);
    else
      return cannotFeed(in);
  }
  if (idsInput.empty()) {
    if (candidates.size() != 1) {
      std::string names;
      for (const TensorSpec *c : candidates)
        names += (names.empty() ? "'" : ", '") + c->name + "'";
      return fail(candidates.empty() ? std::string("the program has no integer [batch, seq] token-id input; ") +
                                           kRoleOptions
                                     : "inputs " + names + ": which one holds the token ids? " + kRoleOptions);
    }
    roles[candidates[0]->name] = InputRole::Ids;
  }
  for (const TensorSpec &in : inputs) {
    InputRole role = roles.at(in.name);
    const Shape &s = in.type.shape;
    if ((role == InputRole::Ids || role == InputRole::Labels) && isFloat(in.type.dtype))
      return fail("input '" + in.name + "' (" + in.type.str() + "): token ids and labels must be integers");
    bool fits = s == Shape{batch, seq} || (role == InputRole::PositionIds && s == Shape{1, seq}) ||
                role == InputRole::LossScale;
    if (!fits)
      return fail("the plan was compiled for " + in.name + " " + in.type.str() + ", but --batch " +
                  llvm::Twine(batch) + " --seq " + llvm::Twine(seq) + " were given");
  }
  return roles;
}

Tensor constantFeed(InputRole role, const TensorType &type) {
  const Shape &s = type.shape;
  std::vector<double> values(numElements(s), 1.0);
  if (role == InputRole::PositionIds)
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<double>(static_cast<int64_t>(i) % s.back());
  return Tensor::fromDoubles(type.dtype, s, values);
}

std::optional<Shape> tokenIdsShape(const llvm::StringMap<Tensor> &given) {
  std::optional<Shape> shape;
  for (const auto &entry : given) {
    const Tensor &t = entry.second;
    if (isFloat(t.dtype()) || t.shape().size() != 2 ||
        namedRole(TensorSpec{entry.getKey().str(), TensorType{t.dtype(), t.shape(), true}}))
      continue;
    if (shape && *shape != t.shape())
      return std::nullopt; // token ids of two shapes: which is [batch, seq]?
    shape = t.shape();
  }
  return shape;
}

llvm::Expected<std::vector<std::string>> fillRoleInputs(const std::vector<TensorSpec> &inputs,
                                                        llvm::StringMap<Tensor> &given) {
  std::optional<Shape> idsShape = tokenIdsShape(given);
  std::vector<std::string> filled;
  for (const TensorSpec &in : inputs) {
    if (given.count(in.name))
      continue;
    auto give = [&](const llvm::Twine &why) {
      return fail("input '" + in.name + "' (" + in.type.str() + ") was not given" + why + ": give it with --input " +
                  in.name + "=FILE.npy");
    };
    std::optional<InputRole> role = namedRole(in);
    if (role != InputRole::AttentionMask && role != InputRole::PositionIds)
      return give(" (only attention_mask and position_ids are filled when missing)");
    if (!idsShape)
      return give(", and there are no token ids (one integer [batch, seq] input) to take its shape from");
    int64_t batch = (*idsShape)[0], seq = (*idsShape)[1];
    const Shape &s = in.type.shape;
    if (!(s == Shape{batch, seq} || (role == InputRole::PositionIds && s == Shape{1, seq}))) {
      std::string fits = "[" + std::to_string(batch) + ", " + std::to_string(seq) + "]";
      if (role == InputRole::PositionIds)
        fits += " or [1, " + std::to_string(seq) + "]";
      return give(", and its shape is not the token ids' " + fits);
    }
    given[in.name] = constantFeed(*role, in.type);
    filled.push_back("filled " + in.name + " (" + in.type.str() + ") with " +
                     (role == InputRole::AttentionMask ? std::string("ones (every token is real)")
                                                       : "0.." + std::to_string(seq - 1) + " in every row"));
  }
  return filled;
}

} // namespace partita
