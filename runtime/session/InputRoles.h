//===- InputRoles.h - what the runtime feeds a program's inputs -----------===//
//
// The inputs a program takes that the runtime can feed without a file: the
// training loop feeds every input by its role; inference (run, launch) fills
// an attention mask or position ids the user did not give.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace partita {

/// What an input holds.
enum class InputRole {
  Ids,           // the token ids
  Labels,        // the next tokens (add-loss's input)
  AttentionMask, // ones: every token is real
  PositionIds,   // 0..seq-1 in every row
  LossScale,     // fp16's loss scale (f32[]), the backward's seed: the trainer's LossScaler sets it
};

/// The role an input has by its name (Hugging Face's): `labels`,
/// `attention_mask`, and `position_ids` when it is an integer input; and
/// `loss_scale` (f32[]), autodiff{loss-scale=1}'s.
std::optional<InputRole> namedRole(const TensorSpec &in);

/// The role of every input of a training program: the named roles; the token
/// ids are the input named by `idsInput` (--ids-input) or else the one integer
/// [batch, seq] input left. An input the loop cannot feed, or a shape other
/// than [batch, seq] ([1, seq] for position ids), is an error naming it and
/// the role options.
llvm::Expected<std::map<std::string, InputRole>> trainingInputRoles(const std::vector<TensorSpec> &inputs,
                                                                    llvm::StringRef idsInput, int64_t batch,
                                                                    int64_t seq);

/// The tensor fed to an input of role AttentionMask (ones) or PositionIds
/// (0..seq-1 along the last dimension), in the input's dtype and shape.
Tensor constantFeed(InputRole role, const TensorType &type);

/// [batch, seq] of the token ids among `given`: the integer rank-2 tensors
/// without a named role, when they all have that one shape.
std::optional<Shape> tokenIdsShape(const llvm::StringMap<Tensor> &given);

/// The names of the inputs fillRoleInputs may fill (namedRole's).
inline const char *const kFillableInputs[] = {"attention_mask", "position_ids"};

/// Inference: every input of `inputs` missing from `given` whose role is
/// attention_mask or position_ids is added to `given`, filled as the training
/// loop fills it, when its shape is the token ids' [batch, seq] ([1, seq] for
/// position ids); the token ids: tokenIdsShape. Returns one line per filled input, saying what it holds. Any
/// other missing input is an error naming it and the flag that gives it.
llvm::Expected<std::vector<std::string>> fillRoleInputs(const std::vector<TensorSpec> &inputs,
                                                        llvm::StringMap<Tensor> &given);

} // namespace partita
