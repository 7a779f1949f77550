//===- EinsumOp.cpp - Einsum (explicit or implicit output, no ellipsis) ---===//
//
// torch.outer and some attention formulations export as Einsum. Inference
// follows the equation; the evaluator is a direct sum over every index
// assignment (used for folding and by the reference CPU kernel).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include <map>

namespace partita {

namespace {

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

llvm::Expected<Equation> parseEquation(const Node &n, size_t operands) {
  auto fail = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "node " + n.describe() + ": " + m);
  };
  std::string eq;
  for (char c : n.stringAttr("equation", ""))
    if (c != ' ')
      eq += c;
  if (eq.find("...") != std::string::npos)
    return fail("Einsum with an ellipsis is not supported");
  Equation e;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    e.inputs.push_back(lhs.substr(start, comma - start));
  e.inputs.push_back(lhs.substr(start));
  if (e.inputs.size() != operands)
    return fail("equation '" + eq + "' names " + llvm::Twine(e.inputs.size()) + " operands, the node has " +
                llvm::Twine(operands));
  if (arrow != std::string::npos) {
    e.output = eq.substr(arrow + 2);
  } else { // implicit: letters used once, in alphabetical order
    std::map<char, int> count;
    for (const auto &s : e.inputs)
      for (char c : s)
        ++count[c];
    for (const auto &[c, k] : count)
      if (k == 1)
        e.output += c;
  }
  return e;
}

llvm::Expected<std::map<char, int64_t>> letterSizes(const Node &n, const Equation &e,
                                                    const std::vector<Shape> &shapes) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (e.inputs[i].size() != shapes[i].size())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "node " + n.describe() + ": operand " + llvm::Twine(i) + " has rank " +
                                         llvm::Twine(shapes[i].size()) + ", the equation says " +
                                         llvm::Twine(e.inputs[i].size()));
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      char c = e.inputs[i][d];
      auto it = size.find(c);
      if (it != size.end() && it->second != shapes[i][d] && it->second != 1 && shapes[i][d] != 1)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "node " + n.describe() + ": index '" + llvm::Twine(c) + "' has sizes " +
                                           llvm::Twine(it->second) + " and " + llvm::Twine(shapes[i][d]));
      size[c] = std::max(it == size.end() ? 1 : it->second, shapes[i][d]);
    }
  }
  return size;
}

} // namespace

void registerEinsumOp(OpRegistry &r) {
  r.add("Einsum",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 auto e = parseEquation(c.node, c.types.size());
                 if (!e)
                   return e.takeError();
                 std::vector<Shape> shapes;
                 for (size_t i = 0; i < c.types.size(); ++i)
                   shapes.push_back(c.type(i).shape);
                 auto size = letterSizes(c.node, *e, shapes);
                 if (!size)
                   return size.takeError();
                 Shape out;
                 for (char ch : e->output) {
                   if (!size->count(ch))
                     return c.error("output index '" + llvm::Twine(ch) + "' is not in any operand");
                   out.push_back(size->at(ch));
                 }
                 o.push_back(TensorType{c.type(0).dtype, out, true});
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 auto e = parseEquation(n, in.size());
                 if (!e)
                   return e.takeError();
                 std::vector<Shape> shapes;
                 for (const auto &t : in)
                   shapes.push_back(t.shape());
                 auto size = letterSizes(n, *e, shapes);
                 if (!size)
                   return size.takeError();
                 std::string letters;
                 for (const auto &[ch, s] : *size)
                   letters += ch;
                 Shape outShape;
                 for (char ch : e->output)
                   outShape.push_back(size->at(ch));
                 std::vector<double> out(static_cast<size_t>(numElements(outShape)), 0.0);
                 std::vector<std::vector<double>> vals;
                 for (const auto &t : in)
                   vals.push_back(t.toDoubles());
                 std::map<char, int64_t> idx;
                 int64_t total = 1;
                 for (char ch : letters)
                   total *= size->at(ch);
                 for (int64_t flat = 0; flat < total; ++flat) {
                   int64_t rem = flat;
                   for (auto it = letters.rbegin(); it != letters.rend(); ++it) {
                     idx[*it] = rem % size->at(*it);
                     rem /= size->at(*it);
                   }
                   double prod = 1.0;
                   for (size_t i = 0; i < in.size(); ++i) {
                     int64_t off = 0;
                     for (size_t d = 0; d < shapes[i].size(); ++d)
                       off = off * shapes[i][d] + (shapes[i][d] == 1 ? 0 : idx[e->inputs[i][d]]);
                     prod *= vals[i][off];
                   }
                   int64_t o = 0;
                   for (size_t d = 0; d < e->output.size(); ++d)
                     o = o * outShape[d] + idx[e->output[d]];
                   out[o] += prod;
                 }
                 return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), outShape, out)};
               },
               1, -1})
      .with(OpTrait::Contraction);
}

} // namespace partita
